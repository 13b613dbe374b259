#pragma once
// allot-gc's metrics and health state, rendered in the Prometheus text format. Thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allot::gc {

// Every reason allot_releases_total counts, each shown from the start at 0: the node's
// (a pod's deletion, the catch-up after a watch relist, the node sweep, a journaled DEL), the
// leader's (a leak, a reservation without allocation) and the owners' (an IPAMClaim deleted,
// a sticky StatefulSet member gone). addReleases takes no other.
inline constexpr std::string_view kReleaseReasons[] = {
    "pod_deleted", "catch_up",           "node_sweep",    "journal",
    "leak",        "orphan_reservation", "claim_deleted", "statefulset_gone",
};
// Anomalies a node's allot-gc counts itself (allot_anomalies_total), besides the leader's
// core::kAnomalyKinds: a pod's network-status annotation it cannot read.
inline constexpr std::string_view kNodeAnomalyKinds[] = {"malformed_network_status"};

// One NodeSlicePool as the slice controller left it.
struct SliceGauge {
    std::string ns, pool;
    uint64_t total = 0, free = 0, nodesWithout = 0;  // slices in the range; free; Nodes left out
};

struct PoolGauge {
    std::string ns, pool;
    uint64_t size = 0, used = 0, free = 0;  // size saturates at 2^64-1 for huge IPv6 ranges
};

// A Prometheus histogram: cumulative counts per upper bound, their sum and count.
struct Histogram {
    explicit Histogram(std::vector<double> bounds = {})
        : bounds(std::move(bounds)), counts(this->bounds.size(), 0) {}
    void observe(double v);
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // observations <= bounds[i] (not yet cumulative)
    double sum = 0;
    uint64_t count = 0;
};

// One ADD or DEL as the plugin told the node relay (k8s::RelayOutcome).
struct CniCall {
    std::string command, network, outcome;
    double seconds = 0;
};

class Metrics {
  public:
    using Clock = std::chrono::steady_clock;

    Metrics();

    void addReleases(const std::string& reason, uint64_t n = 1);  // one of kReleaseReasons
    void addReleaseFailure();
    // First sighting of one anomaly: a core::kAnomalyKinds name or a kNodeAnomalyKinds one.
    void addAnomalyFound(const std::string& kind);

    // The leader's view: the leader-only families. Each setter is ignored unless this process
    // leads (setLeader), so a pass that ends after leadership was lost publishes nothing, and
    // setLeader(false) clears them all: a former leader exports none of them.
    //
    // Anomalies present at the last pass, by core::kAnomalyKinds name; every kind is shown.
    void setAnomalies(const std::map<std::string, uint64_t>& current);
    void setLeakCandidates(uint64_t n);
    // Leak candidates the leader may not free (core/release_rule.h), by reason: how many, and
    // the age in seconds of the oldest. Every reason (core::kLeakReasons) is shown, 0 when none.
    void setHeld(const std::map<std::string, std::pair<uint64_t, double>>& byReason);
    void setPools(std::vector<PoolGauge> pools);
    void setNodeSlices(std::vector<SliceGauge> slices);  // the slice controller
    void repairPassDone(double seconds);
    // A failed API request, by what failed (core::errcName: "Transient", "Forbidden", ...).
    void addApiError(const std::string& kind);
    void addApiThrottled();                        // a 429 from the API server
    void addRelayRefused(const std::string& why);  // a plugin request the relay did not carry
    void observeCni(const CniCall& call);
    void setJournalBacklog(uint64_t entries);
    // allot's optional entry fields, 1 where the cluster's IPPool schema drops it (schema_probe.h).
    void setPrunedFields(std::map<std::string, uint64_t> fields);
    // When the token in the plugin's kubeconfig expires (Unix seconds); 0: unknown.
    void setPluginTokenExpiry(double unixSeconds);
    // Which proof this node's sandboxes are released on ("runtime", "namespaces" or "none"),
    // and each answer the container runtime gave (core::RuntimeAnswer's names).
    void setSandboxProof(const std::string& proof);
    void addRuntimeAnswer(const std::string& answer);
    void addWatchRestart();
    void addEventDropped();
    void addJournalFailure();
    void setLeader(bool leader);
    // The API made progress for SOURCE (the agent's pod watch, the controller's Lease reads).
    void watchProgress(const char* source = "pod watch");
    void setReady();

    bool ready() const { return ready_.load(); }
    bool leader() const { return leader_.load(); }
    // Empty when healthy, else why not.
    std::string unhealthyReason(std::chrono::milliseconds threshold,
                                std::chrono::milliseconds repairInterval) const;

    uint64_t releases(const std::string& reason) const;
    uint64_t anomaliesFound(const std::string& kind) const;
    std::string render() const;

  private:
    // With m_ held.
    void renderSlices(std::string& s) const;
    void renderPools(std::string& s) const;
    void renderHeld(std::string& s) const;
    void renderRepair(std::string& s) const;
    void renderNode(std::string& s) const;

    // The leader-only families, as the last pass (or slice controller step) left them; empty
    // until then and once leadership is lost.
    struct LeaderView {
        std::vector<PoolGauge> pools;
        std::vector<SliceGauge> slices;
        std::map<std::string, uint64_t> anomalies;
        std::map<std::string, std::pair<uint64_t, double>> held;
        std::optional<uint64_t> leakCandidates;
    };

    mutable std::mutex m_;
    std::map<std::string, uint64_t> releases_;
    std::map<std::string, uint64_t> anomaliesTotal_;
    LeaderView lead_;
    double lastPassSeconds_ = 0;
    Histogram repairPasses_;
    std::map<std::string, Histogram> cniCalls_;  // key: command, network, outcome (labels)
    std::map<std::string, uint64_t> apiErrors_, relayRefused_, prunedFields_;
    std::map<std::string, uint64_t> sandboxProof_, runtimeAnswers_;
    uint64_t journalBacklog_ = 0;
    double pluginTokenExpiry_ = 0;
    Clock::time_point lastPass_{};
    Clock::time_point leaderSince_{};
    Clock::time_point lastWatch_{};
    const char* progressSource_ = "pod watch";
    std::atomic<uint64_t> watchRestarts_{0}, releaseFailures_{0}, eventsDropped_{0},
        journalFailures_{0}, apiThrottled_{0};
    std::atomic<bool> leader_{false}, ready_{false};
};

}  // namespace allot::gc
