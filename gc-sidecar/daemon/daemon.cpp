#include "gc-sidecar/daemon/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "cluster/k8s_cluster.h"
#include "cluster/watched.h"
#include "cni/net_config.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/stop.h"
#include "gc-sidecar/daemon/http_server.h"
#include "gc-sidecar/daemon/node_kubeconfig.h"
#include "gc-sidecar/daemon/schema_probe.h"
#include "gc-sidecar/daemon/uninstall.h"
#include "gc-sidecar/leader/claim_gc.h"
#include "gc-sidecar/leader/lease.h"
#include "gc-sidecar/leader/repair.h"
#include "gc-sidecar/leader/slice_controller.h"
#include "gc-sidecar/node/cri_runtime.h"
#include "gc-sidecar/node/pod_watch.h"
#include "gc-sidecar/node/reclaimer.h"
#include "gc-sidecar/node/sandbox_probe.h"
#include "gc-sidecar/relay/claim_copy.h"
#include "gc-sidecar/relay/relay_server.h"
#include "gc-sidecar/relay/slice_watch.h"
#include "json/json.h"
#include "k8s/ipam_claim.h"
#include "k8s/kubeconfig.h"
#include "k8s_api/resources.h"
#include "log/log.h"

namespace allot::gc {

using cluster::K8sCluster;

using cluster::Cluster;

namespace {

// Threads that must finish before exit (the watch threads may sit in a long-poll and are
// not waited for: nothing they hold needs cleaning up).
class Joiner {
  public:
    void spawn(std::function<void()> fn) {
        {
            std::lock_guard l(m_);
            ++running_;
        }
        std::thread([this, fn = std::move(fn)] {
            fn();
            {
                std::lock_guard l(m_);
                --running_;
            }
            cv_.notify_all();
        }).detach();
    }
    bool waitAll(std::chrono::steady_clock::time_point deadline) {
        std::unique_lock l(m_);
        return cv_.wait_until(l, deadline, [&] { return running_ == 0; });
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    int running_ = 0;
};

// The plugin's report of how an ADD or DEL ended (k8s::RelayOutcome), into the metrics.
std::optional<k8s::RelayResponse> cniOutcome(Metrics& metrics, const k8s::RelayRequest& r) {
    auto o = k8s::parseRelayOutcomePath(r.path);
    if (!o) return std::nullopt;
    metrics.observeCni(
        CniCall{o->command, o->network, o->outcome, static_cast<double>(o->micros) / 1e6});
    return k8s::RelayResponse{k8s::RelayResponse::Kind::Answered, 200, -1, ""};
}

// Tokens for the plugin's ServiceAccount ("ns/name") by TokenRequest, valid an hour and
// renewed once half of that has passed.
NodeKubeconfig::TokenSource pluginTokenSource(k8s::Client client, const std::string& sa) {
    struct State {
        k8s::Client client;
        std::string path, token;
        std::chrono::steady_clock::time_point at{};
    };
    const auto slash = sa.find('/');
    auto st =
        std::make_shared<State>(State{std::move(client),
                                      "/api/v1/namespaces/" + sa.substr(0, slash) +
                                          "/serviceaccounts/" + sa.substr(slash + 1) + "/token",
                                      "",
                                      {}});
    return [st, sa]() -> core::Result<std::string> {
        constexpr auto kLifetime = kPluginTokenLifetime;
        const auto now = std::chrono::steady_clock::now();
        if (!st->token.empty() && !pluginTokenDue(now - st->at)) return st->token;
        auto body = json::parse(R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                                R"("spec":{"expirationSeconds":3600}})");
        if (!body) return body.error();
        st->client.setDeadline(now + std::chrono::seconds(10));
        auto r = st->client.create(st->path, *body);
        if (!r) {
            if (!st->token.empty() && now - st->at < kLifetime - std::chrono::minutes(5))
                return st->token;  // the one we hold is still good
            return core::makeError(r.code(),
                                   "token for ServiceAccount " + sa + ": " + r.error().message);
        }
        const json::Value* s = r->find("status");
        const json::Value* t = s && s->isObject() ? s->find("token") : nullptr;
        if (!t || !t->isString() || t->asString().empty())
            return core::makeError(core::Errc::Decode,
                                   "TokenRequest for " + sa + " returned no token");
        st->token = t->asString();
        st->at = now;
        return st->token;
    };
}

// A watch-fed set of one kind (cluster/watched.h, cluster/pod_index.h), filled by an
// ObjectWatch: each object decoded once, as it arrives, into what the controller's passes read
// of it; a list goes straight in, an object at a time. `changed` runs after a list and after an
// event that changed what a pass reads (a Node's heartbeat does not).
template <typename Set, typename T>
class SetCopy : public WatchedCopy {
  public:
    SetCopy(Set& set, T (*decode)(const json::Value&), std::function<void()> changed)
        : set_(set), decode_(decode), changed_(std::move(changed)) {}
    void listBegin() override { set_.beginList(); }
    void listAdd(const json::Value& obj) override { set_.set(objectKey(obj), decode_(obj)); }
    void listCommit() override {
        set_.listed();
        changed_();
    }
    void apply(const k8s::WatchEvent& ev) override {
        using Type = k8s::WatchEvent::Type;
        bool changed = false;
        if (ev.type == Type::Added || ev.type == Type::Modified)
            changed = set_.set(objectKey(ev.object), decode_(ev.object));
        else if (ev.type == Type::Deleted)
            changed = set_.erase(objectKey(ev.object));
        if (changed) changed_();
    }
    void lost() override { set_.lost(); }
    // A kind the cluster does not serve (no NAD CRD) has no objects: known, and empty; unless
    // the set tells the two apart (IPAMClaims: none served decides nothing).
    void notServed() override {
        if constexpr (requires(Set & s) { s.notServed(); }) {
            set_.notServed();
        } else {
            set_.beginList();
            listCommit();
        }
    }

  private:
    Set& set_;
    T (*decode_)(const json::Value&);
    std::function<void()> changed_;
};

// Two allot-gc on one node (a rolling update) must not share a Lease identity: each would
// take the other's renewals for its own and both would lead.
Config withIdentity(const Config& given) {
    Config cfg = given;
    if (cfg.identityDefaulted) {
        std::random_device rd;
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%08x", rd());
        cfg.identity = cfg.nodeName + "_" + std::to_string(::getpid()) + "_" + suffix;
    }
    return cfg;
}

void tuneMalloc() {
    // Few malloc arenas: with one per thread, memory freed by one thread's work (a repair
    // pass, a relist) stays reserved in its arena and the resident size only grows.
    ::mallopt(M_ARENA_MAX, 2);
    // Fixed thresholds (no dynamic raising): big response bodies are mapped and unmapped
    // rather than left in the heap after use.
    ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
}

// The daemon's parts, built by named steps in start-up order; each step that can fail logs
// why and returns false (exit status 2).
class Daemon {
  public:
    explicit Daemon(Config cfg) : cfg_(std::move(cfg)) {}

    bool loadClusterConfig();
    void blockSignals();
    bool startRole();
    bool startShared();
    bool startReclaimer();
    bool startRepair();
    bool watchClusterObjects();
    bool startSlices();
    bool startClaims(RepairOptions& popts);
    bool bindHttp();
    bool bindRelay();
    bool writeNodeKubeconfig();
    void spawnThreads();
    void waitForSignal();
    [[noreturn]] void shutdown();

  private:
    void leaveNodeIfUninstalled();
    std::shared_ptr<SandboxRuntime> openRuntime();
    std::optional<k8s::Client> newClient();
    std::optional<std::vector<Cluster*>> clusters(int n);

    Config cfg_;
    sigset_t sigs_{};
    std::optional<k8s::ClusterConfig> cluster_;
    k8s::Client::Options copts_;
    Metrics metrics_;
    StopSignal stop_;
    std::mutex scanLock_;
    std::shared_ptr<PoolNamespaces> poolNamespaces_;  // shared by catch-up and repair
    std::vector<std::unique_ptr<K8sCluster>> owned_;
    std::unique_ptr<EventRecorder> recorder_;
    std::unique_ptr<Reclaimer> reclaimer_;
    PodNetworksIndex podIndex_;  // the pod watch's, for the relay's answers
    std::unique_ptr<PodWatch> watch_;
    std::unique_ptr<RepairLoop> repair_;
    std::unique_ptr<ClaimSource> claimSource_;
    ClaimNames claimNames_;  // the controller's IPAMClaim watch's
    std::unique_ptr<SliceCluster> sliceCluster_;
    std::unique_ptr<SliceController> slices_;
    std::unique_ptr<LeaderElector> elector_;
    HttpServer http_;
    std::unique_ptr<RelayServer> relay_;
    std::unique_ptr<NodeSliceCopy> sliceCopy_;
    std::unique_ptr<ClaimCopy> claimCopy_;
    // The controller's Nodes and NADs, and the copies they and the relay's answers come from.
    cluster::WatchedObjects watched_;
    std::vector<std::unique_ptr<WatchedCopy>> watchedCopies_;
    std::vector<std::unique_ptr<ObjectWatch>> copyWatches_;  // the relay's copies'
    std::unique_ptr<NodeKubeconfig> nodeKubeconfig_;
    Joiner joiner_;
};

bool Daemon::loadClusterConfig() {
    auto cluster = cfg_.kubeconfig.empty() ? k8s::inClusterConfig(cfg_.serviceAccountDir)
                                           : k8s::loadKubeconfig(cfg_.kubeconfig);
    if (!cluster) {
        logging::logError(cluster.error().message);
        return false;
    }
    if (cluster->insecureSkipTlsVerify)
        logging::logWarn(
            "warning: TLS verification of the API server is off (insecure-skip-tls-verify in " +
            cfg_.kubeconfig + ")");
    cluster_ = std::move(*cluster);
    copts_.requestTimeout = cfg_.requestTimeout;
    copts_.userAgent = "allot-gc/" + cfg_.nodeName;
    copts_.onThrottled = [this] { metrics_.addApiThrottled(); };
    return true;
}

// Signals are taken synchronously by the main thread only.
void Daemon::blockSignals() {
    sigemptyset(&sigs_);
    sigaddset(&sigs_, SIGTERM);
    sigaddset(&sigs_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs_, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

std::optional<k8s::Client> Daemon::newClient() {
    auto c = k8s::Client::fromConfig(*cluster_, copts_);
    if (!c) {
        logging::logError("API client: " + c.error().message);
        return std::nullopt;
    }
    return std::move(*c);
}

std::optional<std::vector<Cluster*>> Daemon::clusters(int n) {
    std::vector<Cluster*> out;
    for (int i = 0; i < n; ++i) {
        auto c = newClient();
        if (!c) return std::nullopt;
        owned_.push_back(std::make_unique<K8sCluster>(std::move(*c), [this](const core::Error& e) {
            metrics_.addApiError(core::errcName(e.code));
        }));
        out.push_back(owned_.back().get());
    }
    return out;
}

// One code path per role: the agent's node work, or the controller's cluster work.
bool Daemon::startRole() {
    if (!startShared()) return false;
    if (cfg_.role == Role::Controller) return startRepair() && watchClusterObjects();
    return startReclaimer() && bindRelay() && writeNodeKubeconfig();
}

// What both roles release through: the Event recorder, the IPPool schema's report (once,
// before any release) and where pools live.
bool Daemon::startShared() {
    auto eventClient = newClient();
    auto schemaClient = newClient();
    if (!eventClient || !schemaClient) return false;
    recorder_ = std::make_unique<EventRecorder>(std::move(*eventClient), cfg_.nodeName,
                                                cfg_.identity, metrics_, stop_);
    reportIPPoolSchema(*schemaClient, cfg_.poolNamespace, cfg_.nodeName, metrics_, *recorder_);
    poolNamespaces_ = std::make_shared<PoolNamespaces>(
        cfg_.poolNamespace, cfg_.ipamTypes, cni::flatFiles(std::getenv("ALLOT_FLAT_FILES")));
    return true;
}

// The agent's release worker and the pod watch that feeds it.
bool Daemon::startReclaimer() {
    auto watchClient = newClient();
    auto reclaimClusters = clusters(cfg_.apiParallelism);
    if (!watchClient || !reclaimClusters) return false;
    ReclaimerOptions ropts;
    ropts.node = cfg_.nodeName;
    ropts.poolNamespace = cfg_.poolNamespace;
    ropts.ipamTypes = cfg_.ipamTypes;
    ropts.flatFiles = cni::flatFiles(std::getenv("ALLOT_FLAT_FILES"));
    ropts.releaseRetries = cfg_.releaseRetries;
    ropts.journalDir = cfg_.journalDir;
    ropts.journalInterval = cfg_.journalInterval;
    ropts.scanLock = &scanLock_;
    ropts.poolNamespaces = poolNamespaces_;
    if (cfg_.sandboxProbe)
        ropts.probe = []() -> Result<std::set<core::IpAddress>> {
            auto r = probeNodeAddresses({"/run/netns", "/var/run/netns"});
            if (!r) return r.error();
            return std::move(r->addresses);
        };
    ropts.runtime = openRuntime();
    ropts.addMarks = std::make_shared<node_state::FileAddMarks>();
    ropts.addInFlightBound = cfg_.addInFlightBound;
    ropts.sweepInterval = cfg_.nodeSweepInterval;
    ropts.livePods = [this] { return watch_->live(); };
    if (cfg_.nodeSweepInterval.count() > 0) ropts.reportNamespace = cfg_.leaseNamespace;
    reclaimer_ = std::make_unique<Reclaimer>(ropts, *reclaimClusters, *recorder_, metrics_, stop_);
    PodWatchOptions wopts;
    wopts.node = cfg_.nodeName;
    wopts.watchTimeout = cfg_.watchTimeout;
    watch_ = std::make_unique<PodWatch>(
        wopts, std::move(*watchClient),
        [this](PodRecord p) { reclaimer_->podDeleted(std::move(p)); },
        [this](std::vector<PodRecord> live) { reclaimer_->catchUp(std::move(live)); }, metrics_,
        stop_);
    watch_->setIndex(&podIndex_);
    return true;
}

// The node's container runtime (--cri-socket): the first proof asked of a deleted pod's
// sandbox. Said once in the log and in allot_sandbox_proof which proof this node uses.
std::shared_ptr<SandboxRuntime> Daemon::openRuntime() {
    std::string path = cfg_.criSocket == "none" ? "" : cfg_.criSocket;
    if (cfg_.criSocket.empty())
        for (const char* p : kCriSockets)
            if (::access(p, F_OK) == 0) {
                path = p;
                break;
            }
    std::shared_ptr<SandboxRuntime> runtime;
    if (!path.empty()) {
        auto cri = CriRuntime::open(path, std::chrono::seconds(2));
        if (!cri) {
            logging::logWarn("the container runtime at " + path + " cannot be used (" +
                             cri.error().message + ")");
        } else {
            auto v = (*cri)->version();
            logging::logInfo("sandbox proof: the container runtime at " + path + " (" +
                             (v ? *v : "not answering yet: " + v.error().message) +
                             "); an address is freed only when it says the sandbox is gone");
            runtime = std::move(*cri);
        }
    }
    const char* proof = runtime ? "runtime" : cfg_.sandboxProbe ? "namespaces" : "none";
    metrics_.setSandboxProof(proof);
    if (!runtime)
        logging::logInfo(std::string("sandbox proof: ") +
                         (cfg_.sandboxProbe
                              ? "no container runtime socket; the network namespace probe alone "
                                "decides, and it cannot see an address on no kernel interface "
                                "(a VM's, a DPDK interface's): such a pod's address is freed "
                                "once no namespace holds it"
                              : "none; only the runtime's DEL, the Node's deletion or "
                                "out-of-service taint, or an operator frees addresses"));
    return runtime;
}

// The controller's repair loop, and the Lease that decides which replica runs it.
bool Daemon::startRepair() {
    auto repairClusters = clusters(std::min(cfg_.apiParallelism, 2));
    auto leaseClient = newClient();
    if (!repairClusters || !leaseClient) return false;
    RepairOptions popts;
    popts.poolNamespace = cfg_.poolNamespace;
    popts.interval = cfg_.repairInterval;
    popts.resync = cfg_.resyncInterval;
    popts.leakPasses = cfg_.leakPasses;
    popts.leakGrace = cfg_.leakGrace;
    popts.batch = cfg_.repairBatch;
    popts.anomalyPasses = cfg_.leakPasses;
    popts.scanLock = &scanLock_;
    if (!startClaims(popts)) return false;
    popts.poolNamespaces = poolNamespaces_;
    popts.reportNamespace = cfg_.leaseNamespace;
    repair_ = std::make_unique<RepairLoop>(popts, *repairClusters, *recorder_, metrics_, stop_);
    if (!startSlices()) return false;
    LeaseOptions lopts{cfg_.leaseName, cfg_.leaseNamespace, cfg_.identity, cfg_.leaseDuration,
                       cfg_.leaseRenewInterval};
    elector_ = std::make_unique<LeaderElector>(
        lopts, std::move(*leaseClient),
        [this](bool leading) {
            metrics_.setLeader(leading);
            repair_->setLeading(leading);
            if (slices_) slices_->setLeading(leading);
        },
        [this](const core::Error& e) { metrics_.addApiError(core::errcName(e.code)); }, stop_);
    // A controller is live while it reads the Lease, and ready from its first answer.
    elector_->onContact([this] {
        metrics_.watchProgress("Lease reads");
        metrics_.setReady();
    });
    return true;
}

// The controller reads Nodes, NADs, NodeSlicePools and Pods from sets its watches keep (one
// LIST, then WATCH), never by a LIST per pass: every cluster it made reads through them. Its
// claim pass reads the IPAMClaims' names the same way.
bool Daemon::watchClusterObjects() {
    auto nodeClient = newClient();
    auto nadClient = newClient();
    auto sliceClient = newClient();
    auto podClient = newClient();
    auto claimClient = newClient();
    if (!nodeClient || !nadClient || !sliceClient || !podClient || !claimClient) return false;
    for (auto& c : owned_) c->readThrough(&watched_);
    auto watch = [this](k8s::Client client, const k8s::Resource& r, const char* what,
                        std::unique_ptr<WatchedCopy> copy) {
        watchedCopies_.push_back(std::move(copy));
        copyWatches_.push_back(std::make_unique<ObjectWatch>(
            std::move(client), k8s::collectionPath(r, ""), what, *watchedCopies_.back(), stop_));
    };
    // A change a pass reads starts one (both loops' least interval apart); a pod's only the
    // repair loop's.
    auto both = [this] {
        if (repair_) repair_->nudge();
        if (slices_) slices_->nudge();
    };
    auto repairOnly = [this] {
        if (repair_) repair_->nudge();
    };
    watch(std::move(*nodeClient), k8s::kNode, "Nodes",
          std::make_unique<SetCopy<cluster::WatchedSet<cluster::NodeInfo>, cluster::NodeInfo>>(
              watched_.nodes, cluster::nodeInfoOf, both));
    watch(std::move(*nadClient), k8s::kNetworkAttachmentDefinition, "NetworkAttachmentDefinitions",
          std::make_unique<SetCopy<cluster::WatchedSet<cluster::NadInfo>, cluster::NadInfo>>(
              watched_.nads, cluster::nadInfoOf, both));
    watch(
        std::move(*sliceClient), k8s::kNodeSlicePool, "NodeSlicePools",
        std::make_unique<SetCopy<cluster::WatchedSet<store::NodeSlicePool>, store::NodeSlicePool>>(
            watched_.slicePools, cluster::nodeSlicePoolOf, both));
    watch(std::move(*podClient), k8s::kPod, "Pods",
          std::make_unique<SetCopy<cluster::PodIndex, cluster::PodInfo>>(
              watched_.pods, cluster::podInfoOf, repairOnly));
    // A deleted IPAMClaim frees its addresses in the pass that follows (claim_gc.h).
    watch(std::move(*claimClient), k8s::kIPAMClaim, "IPAMClaims",
          std::make_unique<SetCopy<ClaimNames, ClaimNames::Claim>>(claimNames_, ClaimNames::decode,
                                                                   repairOnly));
    // The claim pass lists them while the watch says they are not served: a CRD it finds
    // installed since is watched from then on (not at the watch's next recheck).
    claimNames_.onServed([w = copyWatches_.back().get()] { w->recheck(); });
    return true;
}

// Addresses owned by deleted IPAMClaims or gone StatefulSet members, freed after every repair
// pass (claim_gc.h), on a client of their own.
bool Daemon::startClaims(RepairOptions& popts) {
    auto cl = clusters(1);
    if (!cl) return false;
    claimSource_ = makeK8sClaimSource(*owned_.back(), &claimNames_);
    popts.afterPass = [this, c = (*cl)[0]] {
        const std::set<std::string> namespaces =
            poolNamespaces_ ? poolNamespaces_->all() : std::set<std::string>{cfg_.poolNamespace};
        auto r = releaseDeletedClaims(*c, *claimSource_, namespaces, *recorder_, metrics_);
        if (!r) return logging::logWarn("owned-address pass: " + r.error().message);
        if (r->claimsUnlisted && r->claimsUnlisted->code == core::Errc::NotFound)
            logging::logDebug("IPAMClaims not served (" + r->claimsUnlisted->message +
                              "): none released");
        else if (r->claimsUnlisted)
            logging::logWarn("IPAMClaims not listed: " + r->claimsUnlisted->message);
        if (r->owned)
            logging::logInfo("owned-address pass: " + std::to_string(r->owned) +
                             " addresses owned by IPAMClaims or StatefulSets, " +
                             std::to_string(r->gone) + " deleted claims, " +
                             std::to_string(r->released) + " released");
    };
    return true;
}

// The node-slice controller: run by the Lease holder, beside the repair loop.
bool Daemon::startSlices() {
    if (!cfg_.nodeSlices) return true;
    if (!clusters(1)) return false;
    sliceCluster_ = makeK8sSliceCluster(*owned_.back());
    SliceOptions so;
    so.poolNamespace = cfg_.poolNamespace;
    so.ipamTypes = cfg_.ipamTypes;
    so.flatFiles = cni::flatFiles(std::getenv("ALLOT_FLAT_FILES"));
    so.interval = cfg_.sliceInterval;
    so.resync = cfg_.resyncInterval;
    slices_ = std::make_unique<SliceController>(so, *sliceCluster_, *recorder_, metrics_, stop_);
    return true;
}

bool Daemon::bindHttp() {
    if (cfg_.listenPort == 0) return true;
    http_.route("/metrics", [this] {
        return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
    });
    http_.route("/healthz", [this] {
        auto why = metrics_.unhealthyReason(cfg_.healthThreshold,
                                            std::max(cfg_.repairInterval, cfg_.resyncInterval));
        return why.empty() ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                           : HttpReply{503, "text/plain; charset=utf-8", why + "\n"};
    });
    http_.route("/readyz", [this] {
        return metrics_.ready()
                   ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                   : HttpReply{503, "text/plain; charset=utf-8", "first sync not complete\n"};
    });
    if (auto b = http_.bind(cfg_.listenHost, cfg_.listenPort); !b) {
        logging::logError(b.error().message);
        return false;
    }
    return true;
}

bool Daemon::bindRelay() {
    if (cfg_.relaySocket.empty()) return true;
    RelayServerOptions ro;
    ro.socketPath = cfg_.relaySocket;
    ro.server = cluster_->server;
    while (!ro.server.empty() && ro.server.back() == '/') ro.server.pop_back();
    ro.health = std::make_shared<RelayHealth>();
    ro.known = [this](const k8s::RelayRequest& r) { return podIndex_.answer(r); };
    ro.onRefused = [this](const char* reason) { metrics_.addRelayRefused(reason); };
    ro.local.push_back([this](const k8s::RelayRequest& r) { return cniOutcome(metrics_, r); });
    // This node's slices for the plugin's ADD (slice_watch.h), on a client of their own.
    if (auto c = newClient()) {
        sliceCopy_ = std::make_unique<NodeSliceCopy>(cfg_.nodeName);
        copyWatches_.push_back(std::make_unique<ObjectWatch>(
            std::move(*c), k8s::collectionPath(k8s::kNodeSlicePool, ""), "NodeSlicePools",
            *sliceCopy_, stop_));
        ro.local.push_back(
            [copy = sliceCopy_.get()](const k8s::RelayRequest& r) { return copy->answer(r); });
    }
    // The IPAMClaims, for an ADD with a claim (claim_copy.h).
    if (auto c = newClient()) {
        claimCopy_ = std::make_unique<ClaimCopy>();
        copyWatches_.push_back(
            std::make_unique<ObjectWatch>(std::move(*c), k8s::collectionPath(k8s::kIPAMClaim, ""),
                                          "IPAMClaims", *claimCopy_, stop_));
        ro.local.push_back(
            [copy = claimCopy_.get()](const k8s::RelayRequest& r) { return copy->answer(r); });
    }
    relay_ = std::make_unique<RelayServer>(
        ro, clientForward([this] { return newClient(); }, 4, ro.health));
    if (auto b = relay_->bind(); !b) {
        logging::logError(b.error().message);
        return false;
    }
    return true;
}

bool Daemon::writeNodeKubeconfig() {
    if (cfg_.nodeKubeconfig.empty()) return true;
    nodeKubeconfig_ = std::make_unique<NodeKubeconfig>(cfg_.nodeKubeconfig, cfg_.serviceAccountDir,
                                                       "", cfg_.poolNamespace);
    if (!cfg_.pluginServiceAccount.empty()) {
        // The plugin's own identity (only what ADD/DEL/CHECK/GC need), not allot-gc's.
        auto tokenClient = newClient();
        if (!tokenClient) return false;
        nodeKubeconfig_->setTokenSource(
            pluginTokenSource(std::move(*tokenClient), cfg_.pluginServiceAccount));
    }
    auto w = nodeKubeconfig_->refresh();
    metrics_.setPluginTokenExpiry(static_cast<double>(nodeKubeconfig_->expiry().value_or(0)));
    if (!w)
        logging::logWarn("node kubeconfig " + cfg_.nodeKubeconfig + ": " + w.error().message +
                         " (tried again every --token-check-interval)");
    else if (*w)
        logging::logInfo("wrote node kubeconfig " + cfg_.nodeKubeconfig);
    return true;
}

void Daemon::spawnThreads() {
    logging::logInfo(std::string("allot-gc starting as ") +
                     (cfg_.role == Role::Agent ? "the node agent" : "a controller") + " on node " +
                     cfg_.nodeName + " (pool namespace " + cfg_.poolNamespace + ", identity " +
                     cfg_.identity + ")");
    joiner_.spawn([this] { recorder_->run(); });
    if (reclaimer_) {
        std::thread([this] { watch_->run(); }).detach();
        joiner_.spawn([this] { reclaimer_->run(); });
    }
    if (repair_) {
        joiner_.spawn([this] { repair_->run(); });
        if (slices_) joiner_.spawn([this] { slices_->run(); });
        // A replica campaigns once its Nodes, NADs, NodeSlicePools and Pods are listed: no
        // leader works from a partial picture, and its first pass comes at once.
        joiner_.spawn([this] {
            while (!stop_.stopped() && !watched_.synced())
                stop_.waitUntil(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
            elector_->run();
        });
    }
    if (cfg_.listenPort != 0) joiner_.spawn([this] { http_.serve(); });
    if (relay_) joiner_.spawn([this] { relay_->serve(); });
    // Like the pod watch, it may sit in a long-poll at shutdown: not joined.
    for (auto& w : copyWatches_) std::thread([w = w.get()] { w->run(); }).detach();
}

// The main thread waits for a signal, and keeps the node kubeconfig fresh meanwhile.
void Daemon::waitForSignal() {
    for (;;) {
        int sig = 0;
        if (nodeKubeconfig_) {
            timespec ts{};
            ts.tv_sec = cfg_.tokenCheckInterval.count() / 1000;
            ts.tv_nsec = (cfg_.tokenCheckInterval.count() % 1000) * 1'000'000;
            sig = sigtimedwait(&sigs_, nullptr, &ts);
            if (sig < 0) {
                auto w = nodeKubeconfig_->refresh();
                metrics_.setPluginTokenExpiry(
                    static_cast<double>(nodeKubeconfig_->expiry().value_or(0)));
                if (!w)
                    logging::logWarn("node kubeconfig " + cfg_.nodeKubeconfig + ": " +
                                     w.error().message);
                else if (*w)
                    logging::logInfo("rewrote node kubeconfig " + cfg_.nodeKubeconfig +
                                     " (token rotated)");
                continue;
            }
        } else if (sigwait(&sigs_, &sig) != 0) {
            continue;
        }
        logging::logInfo(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                         ": shutting down");
        return;
    }
}

void Daemon::shutdown() {
    stop_.request();
    if (cfg_.listenPort != 0) http_.stop();
    if (relay_) relay_->stop();
    // The Lease release and any request in flight are bounded by the request timeout.
    const bool clean = joiner_.waitAll(std::chrono::steady_clock::now() + cfg_.requestTimeout +
                                       std::chrono::seconds(2));
    leaveNodeIfUninstalled();
    logging::logInfo(clean ? "stopped" : "stopped (some work was still in flight)");
    std::fflush(stderr);
    // The watch threads may be inside a long-poll; nothing they hold needs cleaning up.
    std::_Exit(0);
}

// What install-cni.sh and allot-gc put on the node, from the flags that name it.
NodeFiles nodeFiles(const Config& c) {
    namespace fs = std::filesystem;
    NodeFiles f;
    f.pluginBinary = (fs::path(c.cniBinDir) / "allot").string();
    for (const auto& a : c.pluginAliases) f.aliases.push_back((fs::path(c.cniBinDir) / a).string());
    if (!c.nodeKubeconfig.empty()) {
        const fs::path kc(c.nodeKubeconfig);
        f.confDir = kc.parent_path().string();
        f.confFiles = {"allot.conf", "nodename", kc.filename().string()};
    }
    return f;
}

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out.empty() ? "nothing" : out;
}

// With --uninstall-with, as allot-gc stops: the node's allot files go when the DaemonSet does.
void Daemon::leaveNodeIfUninstalled() {
    if (cfg_.uninstallWith.empty()) return;
    auto client = newClient();
    if (!client) return;
    auto gone = awaitDaemonSetGone(*client, cfg_.uninstallWith, uninstallRetry());
    if (!gone) {
        logging::logWarn("uninstall: DaemonSet " + cfg_.uninstallWith + " not read (" +
                         gone.error().message + "): allot's files stay on this node");
        return;
    }
    if (!*gone) return;  // a rolling update or a restart: the next pod needs them
    // Gone may also be this pod alone deleted with --force (401): only this pod's own install
    // is removed, never one a replacement pod made meanwhile (uninstall.h).
    auto r = removeOwnNodeFiles(nodeFiles(cfg_), cfg_.podUid, kInstallLockPatience);
    if (!r) {
        logging::logInfo("DaemonSet " + cfg_.uninstallWith + " is gone, but allot's files " +
                         "stay on this node: " + r.error().message);
        return;
    }
    logging::logInfo("DaemonSet " + cfg_.uninstallWith +
                     " is gone: allot removed from this node: " + joined(r->removed));
    for (const auto& f : r->failed) logging::logWarn("uninstall: not removed: " + f);
}

}  // namespace

int runDaemon(const Config& given) {
    // First: every line, the constructor's too, in the configured format.
    logging::Level level = logging::Level::Info;
    logging::parseLevel(given.logLevel, level);
    logging::daemonLog().setLevel(level);
    logging::Format format = logging::Format::Text;
    logging::parseFormat(given.logFormat, format);
    logging::daemonLog().setFormat(format);
    Daemon d(withIdentity(given));
    tuneMalloc();
    if (!d.loadClusterConfig()) return 2;
    d.blockSignals();
    if (!d.startRole() || !d.bindHttp()) return 2;
    d.spawnThreads();
    d.waitForSignal();
    d.shutdown();
}

}  // namespace allot::gc
