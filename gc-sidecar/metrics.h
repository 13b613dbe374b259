#pragma once
// allot-gc's metrics and health state, rendered in the Prometheus text format. Thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace allot::gc {

// One NodeSlicePool as the slice controller left it.
struct SliceGauge {
    std::string ns, pool;
    uint64_t total = 0, free = 0, nodesWithout = 0;  // slices in the range; free; Nodes left out
};

struct PoolGauge {
    std::string ns, pool;
    uint64_t size = 0, used = 0, free = 0;  // size saturates at 2^64-1 for huge IPv6 ranges
};

class Metrics {
  public:
    using Clock = std::chrono::steady_clock;

    Metrics();

    void addReleases(const std::string& reason, uint64_t n = 1);
    void addReleaseFailure();
    void addAnomalyFound(const std::string& kind);  // first sighting of one anomaly
    void setAnomalies(const std::map<std::string, uint64_t>& current);  // as of the last pass
    void setLeakCandidates(uint64_t n);
    // Leak candidates the leader may not free (core/release_rule.h), by reason: how many, and
    // the age in seconds of the oldest. Every reason is shown, 0 when none.
    void setHeld(const std::map<std::string, std::pair<uint64_t, double>>& byReason);
    void repairPassDone(double seconds);
    void addApiError();
    void addWatchRestart();
    void addEventDropped();
    void addJournalFailure();
    void setLeader(bool leader);
    void setPools(std::vector<PoolGauge> pools);
    void setNodeSlices(std::vector<SliceGauge> slices);  // the slice controller (leader only)
    void watchProgress();
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
    void renderSlices(std::string& s) const;  // with m_ held

    mutable std::mutex m_;
    std::map<std::string, uint64_t> releases_;
    std::map<std::string, uint64_t> anomaliesTotal_;
    std::map<std::string, uint64_t> anomaliesNow_;
    std::map<std::string, std::pair<uint64_t, double>> held_;
    std::vector<PoolGauge> pools_;
    std::vector<SliceGauge> slices_;
    double lastPassSeconds_ = 0;
    uint64_t passes_ = 0;
    double passSecondsSum_ = 0;
    Clock::time_point lastPass_{};
    Clock::time_point leaderSince_{};
    Clock::time_point lastWatch_{};
    std::atomic<uint64_t> leakCandidates_{0}, apiErrors_{0}, watchRestarts_{0}, releaseFailures_{0},
        eventsDropped_{0}, journalFailures_{0};
    std::atomic<bool> leader_{false}, ready_{false};
};

}  // namespace allot::gc
