#include "plugin/wiring.h"

#include "k8s/relay.h"
#include "node_state/add_marks.h"
#include "node_state/commit_queue.h"
#include "node_state/file_lock.h"
#include "node_state/journal.h"
#include "node_state/node_name.h"
#include "node_state/pool_cache.h"
#include "plugin/claim_api_k8s.h"
#include "plugin/netlink_check.h"
#include "plugin/node_paths.h"
#include "store_k8s/k8s_store.h"

namespace allot::plugin {

using engine::Clock;

namespace {

// The node's relay keeps the metrics of the calls it serves: tell it how this one ended. A
// call that never reached the relay tells nobody (nothing listens, or it stopped answering).
std::function<void(const CallReport&)> reportToRelay(k8s::Client& client) {
    return [&client](const CallReport& r) {
        if (!client.relayInUse()) return;
        client.setDeadline(Clock::now() + std::chrono::milliseconds(200));
        (void)client.askRelay(k8s::relayOutcomePath(
            {r.command, r.outcome, r.network, static_cast<uint64_t>(r.took.count())}));
    };
}

}  // namespace

Outcome runProduction(const EnvMap& env, std::string_view stdinText) {
    logging::Logger log;
    auto envOr = [&](const char* key) {
        auto it = env.find(key);
        return it == env.end() ? std::string() : it->second;
    };
    Deps deps;
    deps.log = &log;
    deps.makeStore = [&log](const core::ValidatedConfig& c,
                            Clock::time_point deadline) -> Result<StoreHandle> {
        k8s::Client::Options o;
        o.deadline = deadline;
        o.relaySocket = c.raw.relaySocket.empty() ? k8s::kDefaultRelaySocket : c.raw.relaySocket;
        auto s = store::openK8sStore(c.raw.kubeconfig, c.raw.poolNamespace, o);
        if (!s) return s.error();
        if ((*s)->client().config().insecureSkipTlsVerify)
            log.error(
                "warning: TLS verification of the API server is off (insecure-skip-tls-verify in " +
                (c.raw.kubeconfig.empty() ? std::string("the in-cluster config")
                                          : c.raw.kubeconfig) +
                ")");
        std::string ns = (*s)->poolNamespace();
        auto claims = makeK8sClaimApi((*s)->client(), deadline);
        auto report = reportToRelay((*s)->client());  // before the store moves into the handle
        return StoreHandle{std::move(*s), ns, std::move(claims), std::move(report)};
    };
    deps.makeLocker = [](const core::ValidatedConfig& c) {
        return node_state::makeFileLocker(c.raw.lockDir.empty() ? kDefaultLockDir : c.raw.lockDir);
    };
    deps.makeCache = [](const core::ValidatedConfig& c) {
        return node_state::makeFileCache(c.raw.lockDir.empty() ? kDefaultLockDir : c.raw.lockDir);
    };
    deps.makeQueue = [](const core::ValidatedConfig& c) {
        return node_state::makeFileCommitQueue(c.raw.lockDir.empty() ? kDefaultLockDir
                                                                     : c.raw.lockDir);
    };
    deps.makeJournal = [](const core::ValidatedConfig& c) {
        return node_state::makeFileJournal(c.raw.journalDir.empty() ? kDefaultJournalDir
                                                                    : c.raw.journalDir);
    };
    deps.makeAddMarks = [] { return std::make_unique<node_state::FileAddMarks>(); };
    deps.checkInterface = checkInterfaceAddresses;
    std::string nodeEnv = envOr("NODENAME");
    deps.nodeName = [nodeEnv](const core::ValidatedConfig& c, const cni::NetConf& n) {
        return node_state::lookupNodeName(nodeEnv, n.flatFile, c.raw.configurationPath);
    };
    auto flat = env.find("ALLOT_FLAT_FILES");
    deps.flatFiles = cni::flatFiles(flat == env.end() ? nullptr : flat->second.c_str());
    return run(env, stdinText, deps);
}

}  // namespace allot::plugin
