#include "gc-sidecar/daemon.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "gc-sidecar/events.h"
#include "gc-sidecar/http_server.h"
#include "gc-sidecar/k8s_cluster.h"
#include "gc-sidecar/lease.h"
#include "log/log.h"
#include "gc-sidecar/metrics.h"
#include "gc-sidecar/node_kubeconfig.h"
#include "gc-sidecar/relay_server.h"
#include "gc-sidecar/sandbox_probe.h"
#include "gc-sidecar/pod_watch.h"
#include "gc-sidecar/reclaimer.h"
#include "gc-sidecar/repair.h"
#include "gc-sidecar/stop.h"
#include "json/json.h"
#include "k8s/kubeconfig.h"
#include "cni/net_config.h"

namespace allot::gc {

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

// Tokens for the plugin's ServiceAccount ("ns/name") by TokenRequest, valid an hour and
// renewed once half of that has passed.
NodeKubeconfig::TokenSource pluginTokenSource(k8s::Client client, const std::string& sa) {
    struct State {
        k8s::Client client;
        std::string path, token;
        std::chrono::steady_clock::time_point at{};
    };
    const auto slash = sa.find('/');
    auto st = std::make_shared<State>(State{std::move(client),
                                            "/api/v1/namespaces/" + sa.substr(0, slash) +
                                                "/serviceaccounts/" + sa.substr(slash + 1) + "/token",
                                            "", {}});
    return [st, sa]() -> core::Result<std::string> {
        constexpr auto kLifetime = std::chrono::hours(1);
        const auto now = std::chrono::steady_clock::now();
        if (!st->token.empty() && now - st->at < kLifetime / 2) return st->token;
        auto body = json::parse(R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                                R"("spec":{"expirationSeconds":3600}})");
        if (!body) return body.error();
        st->client.setDeadline(now + std::chrono::seconds(10));
        auto r = st->client.create(st->path, *body);
        if (!r) {
            if (!st->token.empty() && now - st->at < kLifetime - std::chrono::minutes(5))
                return st->token;  // the one we hold is still good
            return core::makeError(r.code(), "token for ServiceAccount " + sa + ": " + r.error().message);
        }
        const json::Value* s = r->find("status");
        const json::Value* t = s && s->isObject() ? s->find("token") : nullptr;
        if (!t || !t->isString() || t->asString().empty())
            return core::makeError(core::Errc::Decode, "TokenRequest for " + sa + " returned no token");
        st->token = t->asString();
        st->at = now;
        return st->token;
    };
}

}  // namespace

int runDaemon(const Config& given) {
    Config cfg = given;
    if (cfg.identityDefaulted) {
        // Two allot-gc on one node (a rolling update) must not share a Lease identity: each
        // would take the other's renewals for its own and both would lead.
        std::random_device rd;
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%08x", rd());
        cfg.identity = cfg.nodeName + "_" + std::to_string(::getpid()) + "_" + suffix;
    }
    // Few malloc arenas: with one per thread, memory freed by one thread's work (a repair
    // pass, a relist) stays reserved in its arena and the resident size only grows.
    ::mallopt(M_ARENA_MAX, 2);
    // Fixed thresholds (no dynamic raising): big response bodies are mapped and unmapped
    // rather than left in the heap after use.
    ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
    logging::Level level = logging::Level::Info;
    logging::parseLevel(cfg.logLevel, level);
    logging::daemonLog().setLevel(level);

    auto cluster = cfg.kubeconfig.empty() ? k8s::inClusterConfig(cfg.serviceAccountDir)
                                          : k8s::loadKubeconfig(cfg.kubeconfig);
    if (!cluster) {
        logging::logError(cluster.error().message);
        return 2;
    }
    if (cluster->insecureSkipTlsVerify)
        logging::logWarn("warning: TLS verification of the API server is off (insecure-skip-tls-verify in " +
                cfg.kubeconfig + ")");
    k8s::Client::Options copts;
    copts.requestTimeout = cfg.requestTimeout;
    copts.userAgent = "allot-gc/" + cfg.nodeName;
    auto newClient = [&]() -> std::optional<k8s::Client> {
        auto c = k8s::Client::fromConfig(*cluster, copts);
        if (!c) {
            logging::logError("API client: " + c.error().message);
            return std::nullopt;
        }
        return std::move(*c);
    };

    // Signals are taken synchronously by the main thread only.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Metrics metrics;
    StopSignal stop;
    std::mutex scanLock;
    auto onApiError = [&metrics](const core::Error&) { metrics.addApiError(); };

    std::vector<std::unique_ptr<K8sCluster>> owned;
    auto clusters = [&](int n) -> std::optional<std::vector<Cluster*>> {
        std::vector<Cluster*> out;
        for (int i = 0; i < n; ++i) {
            auto c = newClient();
            if (!c) return std::nullopt;
            owned.push_back(std::make_unique<K8sCluster>(std::move(*c), onApiError));
            out.push_back(owned.back().get());
        }
        return out;
    };

    auto eventClient = newClient();
    auto watchClient = newClient();
    auto reclaimClusters = clusters(cfg.apiParallelism);
    if (!eventClient || !watchClient || !reclaimClusters) return 2;
    EventRecorder recorder(std::move(*eventClient), cfg.nodeName, cfg.identity, metrics, stop);

    ReclaimerOptions ropts;
    ropts.node = cfg.nodeName;
    ropts.poolNamespace = cfg.poolNamespace;
    ropts.ipamTypes = cfg.ipamTypes;
    ropts.flatFiles = cni::flatFiles(std::getenv("ALLOT_FLAT_FILES"));
    ropts.releaseRetries = cfg.releaseRetries;
    ropts.journalDir = cfg.journalDir;
    ropts.journalInterval = cfg.journalInterval;
    ropts.scanLock = &scanLock;
    if (cfg.sandboxProbe)
        ropts.probe = []() -> Result<std::set<core::IpAddress>> {
            auto r = probeNodeAddresses({"/run/netns", "/var/run/netns"});
            if (!r) return r.error();
            return std::move(r->addresses);
        };
    Reclaimer reclaimer(ropts, *reclaimClusters, recorder, metrics, stop);

    PodWatchOptions wopts;
    wopts.node = cfg.nodeName;
    wopts.watchTimeout = cfg.watchTimeout;
    PodWatch watch(
        wopts, std::move(*watchClient), [&](PodRecord p) { reclaimer.podDeleted(std::move(p)); },
        [&](std::vector<PodRecord> live) { reclaimer.catchUp(std::move(live)); }, metrics, stop);

    std::unique_ptr<RepairLoop> repair;
    std::unique_ptr<LeaderElector> elector;
    if (cfg.repair) {
        auto repairClusters = clusters(std::min(cfg.apiParallelism, 2));
        auto leaseClient = newClient();
        if (!repairClusters || !leaseClient) return 2;
        RepairOptions popts;
        popts.poolNamespace = cfg.poolNamespace;
        popts.interval = cfg.repairInterval;
        popts.leakPasses = cfg.leakPasses;
        popts.leakGrace = cfg.leakGrace;
        popts.batch = cfg.repairBatch;
        popts.anomalyPasses = cfg.leakPasses;
        popts.scanLock = &scanLock;
        repair = std::make_unique<RepairLoop>(popts, *repairClusters, recorder, metrics, stop);
        LeaseOptions lopts{cfg.leaseName, cfg.leaseNamespace, cfg.identity, cfg.leaseDuration,
                           cfg.leaseRenewInterval};
        elector = std::make_unique<LeaderElector>(
            lopts, std::move(*leaseClient),
            [&](bool leading) {
                metrics.setLeader(leading);
                repair->setLeading(leading);
            },
            [&] { metrics.addApiError(); }, stop);
    }

    HttpServer http;
    if (cfg.listenPort != 0) {
        http.route("/metrics", [&] {
            return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
        });
        http.route("/healthz", [&] {
            auto why = metrics.unhealthyReason(cfg.healthThreshold, cfg.repairInterval);
            return why.empty() ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                               : HttpReply{503, "text/plain; charset=utf-8", why + "\n"};
        });
        http.route("/readyz", [&] {
            return metrics.ready()
                       ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                       : HttpReply{503, "text/plain; charset=utf-8", "first sync not complete\n"};
        });
        if (auto b = http.bind(cfg.listenHost, cfg.listenPort); !b) {
            logging::logError(b.error().message);
            return 2;
        }
    }

    std::unique_ptr<RelayServer> relay;
    if (!cfg.relaySocket.empty()) {
        RelayServerOptions ro;
        ro.socketPath = cfg.relaySocket;
        ro.server = cluster->server;
        while (!ro.server.empty() && ro.server.back() == '/') ro.server.pop_back();
        ro.health = std::make_shared<RelayHealth>();
        relay = std::make_unique<RelayServer>(ro, clientForward(newClient, 4, ro.health));
        if (auto b = relay->bind(); !b) {
            logging::logError(b.error().message);
            return 2;
        }
    }

    std::unique_ptr<NodeKubeconfig> nodeKubeconfig;
    if (!cfg.nodeKubeconfig.empty()) {
        nodeKubeconfig = std::make_unique<NodeKubeconfig>(cfg.nodeKubeconfig, cfg.serviceAccountDir,
                                                          "", cfg.poolNamespace);
        if (!cfg.pluginServiceAccount.empty()) {
            // The plugin's own identity (only what ADD/DEL/CHECK/GC need), not allot-gc's.
            auto tokenClient = newClient();
            if (!tokenClient) return 2;
            nodeKubeconfig->setTokenSource(pluginTokenSource(std::move(*tokenClient),
                                                             cfg.pluginServiceAccount));
        }
        auto w = nodeKubeconfig->refresh();
        if (!w)
            logging::logError("node kubeconfig " + cfg.nodeKubeconfig + ": " + w.error().message);
        else if (*w)
            logging::logInfo("wrote node kubeconfig " + cfg.nodeKubeconfig);
    }

    logging::logInfo("allot-gc starting on node " + cfg.nodeName + " (pool namespace " + cfg.poolNamespace +
            ", identity " + cfg.identity + (cfg.repair ? ", repair candidate" : "") + ")");

    Joiner joiner;
    std::thread([&] { watch.run(); }).detach();
    joiner.spawn([&] { recorder.run(); });
    joiner.spawn([&] { reclaimer.run(); });
    if (repair) {
        joiner.spawn([&] { repair->run(); });
        joiner.spawn([&] { elector->run(); });
    }
    if (cfg.listenPort != 0) joiner.spawn([&] { http.serve(); });
    if (relay) joiner.spawn([&] { relay->serve(); });

    // The main thread waits for a signal, and keeps the node kubeconfig fresh meanwhile.
    for (;;) {
        int sig = 0;
        if (nodeKubeconfig) {
            timespec ts{};
            ts.tv_sec = cfg.tokenCheckInterval.count() / 1000;
            ts.tv_nsec = (cfg.tokenCheckInterval.count() % 1000) * 1'000'000;
            sig = sigtimedwait(&sigs, nullptr, &ts);
            if (sig < 0) {
                auto w = nodeKubeconfig->refresh();
                if (!w)
                    logging::logWarn("node kubeconfig " + cfg.nodeKubeconfig + ": " + w.error().message);
                else if (*w)
                    logging::logInfo("rewrote node kubeconfig " + cfg.nodeKubeconfig + " (token rotated)");
                continue;
            }
        } else if (sigwait(&sigs, &sig) != 0) {
            continue;
        }
        logging::logInfo(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                ": shutting down");
        break;
    }
    stop.request();
    if (cfg.listenPort != 0) http.stop();
    if (relay) relay->stop();
    // The Lease release and any request in flight are bounded by the request timeout.
    const bool clean = joiner.waitAll(std::chrono::steady_clock::now() + cfg.requestTimeout +
                                      std::chrono::seconds(2));
    logging::logInfo(clean ? "stopped" : "stopped (some work was still in flight)");
    std::fflush(stderr);
    // The watch threads may be inside a long-poll; nothing they hold needs cleaning up.
    std::_Exit(0);
}

}  // namespace allot::gc
