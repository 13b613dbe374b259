// Connecting the way kubectl does, and running a command.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cluster/k8s_cluster.h"
#include "cluster/nad.h"
#include "k8s_api/resources.h"
#include "store/node_slice_store.h"

namespace allot::cli {

using core::Errc;

namespace {

// --kubeconfig, else the first file of $KUBECONFIG that exists (kubectl merges them; allot
// reads one), else ~/.kube/config, else "" (the in-cluster ServiceAccount).
std::string kubeconfigPath(const Options& o) {
    if (!o.kubeconfig.empty()) return o.kubeconfig;
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
        std::stringstream ss(env);
        std::string first, p;
        while (std::getline(ss, p, ':')) {
            if (p.empty()) continue;
            if (first.empty()) first = p;
            if (std::filesystem::exists(p)) return p;
        }
        if (!first.empty()) return first;
    }
    if (const char* home = std::getenv("HOME"); home && *home) {
        std::string p = std::string(home) + "/.kube/config";
        if (std::filesystem::exists(p)) return p;
    }
    return "";
}

class K8sInventory : public Inventory {
  public:
    explicit K8sInventory(cluster::K8sCluster& cl) : cluster_(cl), client_(cl.client()) {}

    Result<std::vector<NadConfig>> nads() override {
        std::vector<NadConfig> out;
        auto r = cluster_.eachNad([&](cluster::NadInfo& n) {
            out.push_back({std::move(n.ns), std::move(n.name), std::move(n.config)});
            return true;
        });
        if (!r && r.code() != Errc::NotFound) return r.error();  // NotFound: no NAD CRD
        return out;
    }

    Result<std::vector<SlicePool>> slicePools(const std::string& ns) override {
        auto pools = cluster_.nodeSlices().listNodeSlicePools(ns);
        if (!pools && pools.code() != Errc::NotFound) return pools.error();
        std::vector<SlicePool> out;
        if (pools)
            for (auto& p : *pools) out.push_back(slicePoolOf(std::move(p)));
        return out;
    }

    Result<void> recordEvent(const cluster::EventSpec& e) override {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        auto body = cluster::eventObject(e, host, identity(), std::chrono::system_clock::now(),
                                         "kubectl-allot");
        auto r = client_.create(k8s::collectionPath(k8s::kEvent, e.object.ns), body);
        if (!r) return r.error();
        return {};
    }

    std::string identity() const override {
        const char* user = std::getenv("USER");
        return client_.config().identity +
               (user && *user ? " (local user " + std::string(user) + ")" : "");
    }

  private:
    static SlicePool slicePoolOf(store::NodeSlicePool p) {
        SlicePool sp{std::move(p.name), std::move(p.range), std::move(p.sliceSize), {}};
        for (auto& a : p.allocations)
            sp.slices.push_back({std::move(a.nodeName), std::move(a.sliceRange)});
        return sp;
    }

    cluster::K8sCluster& cluster_;
    k8s::Client& client_;
};

Result<std::string> readInput(const std::string& arg) {
    std::stringstream ss;
    if (arg == "-") {
        ss << std::cin.rdbuf();
        return ss.str();
    }
    std::ifstream f(arg, std::ios::binary);
    if (!f) return core::makeError(Errc::InvalidConfig, "cannot read " + arg);
    ss << f.rdbuf();
    return ss.str();
}

int dispatch(Env& env) {
    const std::string& c = env.opts.command;
    if (c == "pools") return runPools(env);
    if (c == "who") return runWho(env);
    if (c == "pod") return runPod(env);
    if (c == "check") return runCheck(env);
    if (c == "version") return runVersion(&env, env.opts, env.out, env.err);
    if (env.opts.fromReport.empty()) return runRelease(env);
    auto report = readInput(env.opts.fromReport);
    if (!report) {
        env.err << "error: " << report.error().message << "\n";
        return kExitError;
    }
    return runReleaseReport(env, *report);
}

}  // namespace

std::string poolNamespace(const Options& opts) {
    if (!opts.poolNamespace.empty()) return opts.poolNamespace;
    const char* env = std::getenv("ALLOT_POOL_NAMESPACE");
    return env && *env ? env : "kube-system";
}

int run(const Options& opts, std::ostream& out, std::ostream& err) {
    if (opts.command == "version" && opts.client) return runVersion(nullptr, opts, out, err);
    std::optional<std::string> input;
    if (opts.command == "lint") {
        auto in = readInput(opts.args[0]);
        if (!in) {
            err << "error: " << in.error().message << "\n";
            return kExitError;
        }
        input = std::move(*in);
    }
    const std::string path = kubeconfigPath(opts);
    auto cfg = path.empty() ? k8s::inClusterConfig() : k8s::loadKubeconfig(path, opts.context);
    k8s::Client::Options co;
    co.userAgent = "kubectl-allot";
    co.deadline = std::chrono::steady_clock::now() + opts.timeout;
    auto client = cfg ? k8s::Client::fromConfig(*cfg, co) : Result<k8s::Client>(cfg.error());
    if (!client) {
        if (input && opts.command == "lint") {  // lint works without a cluster
            if (!opts.offline)
                err << "warning: " << client.error().message << ": overlaps not checked\n";
            return runLint(nullptr, opts, opts.args[0], *input, out, err);
        }
        if (opts.command == "version") runVersion(nullptr, opts, out, err);  // the client's
        err << "error: " << client.error().message << "\n";
        return kExitError;
    }
    // The pods' namespace as kubectl resolves it; the pools' is not the context's (design:
    // the plugin's kubeconfig names the pools' namespace, an operator's names an app's).
    const std::string podNs = !opts.podNamespace.empty() ? opts.podNamespace
                              : !cfg->namespace_.empty() ? cfg->namespace_
                                                         : "default";
    cluster::K8sCluster cl(std::move(*client), nullptr);
    cl.setPageSize(1000);
    K8sInventory inv(cl);
    Env env{cl, inv, opts, poolNamespace(opts), out, err, podNs};
    if (input) return runLint(opts.offline ? nullptr : &env, opts, opts.args[0], *input, out, err);
    return dispatch(env);
}

}  // namespace allot::cli
