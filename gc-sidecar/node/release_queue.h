#pragma once
// The node agent's release queue: the deleted pods whose addresses are still to be released,
// each due at a time. Work is taken in batches (one pool write per pool per batch); a failed
// release is put back with the engine's backoff until its attempts run out. Pure bookkeeping:
// no I/O, no lock (the Reclaimer holds its own around it).

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cluster/release.h"
#include "engine/retry_policy.h"
#include "gc-sidecar/rules/pod_record.h"

namespace allot::gc {

using Clock = std::chrono::steady_clock;

// An IPPool to look in.
struct PoolKey {
    std::string ns, pool;
    std::string networkName;  // network_name from the IPAM config, when known
    friend bool operator<(const PoolKey& a, const PoolKey& b) {
        return std::tie(a.ns, a.pool, a.networkName) < std::tie(b.ns, b.pool, b.networkName);
    }
};

// One gone pod whose addresses are to be released.
struct ReleaseWork {
    PodRecord pod;
    std::string reason;        // releases_total label: pod_deleted, catch_up, node_sweep
    std::set<PoolKey> hinted;  // catch-up: pools known to hold its entries
    int attempts = 0;
    Clock::time_point due{};
    bool warned = false;  // malformed annotation already reported
    // Released, reservation not yet deleted.
    std::vector<cluster::Released> pendingReservations;
};

class ReleaseQueue {
  public:
    // `maxBatch`: most work taken at once; `maxAttempts`: a release failing that many times is
    // given up; `backoff`: the wait before each retry.
    ReleaseQueue(size_t maxBatch, int maxAttempts, engine::Backoff backoff);

    void push(ReleaseWork w);
    // Up to maxBatch of the work due at `now`, the longest-due first.
    std::vector<ReleaseWork> takeDue(Clock::time_point now);
    // A failed attempt: put back, due after the backoff, and true; false when that was its
    // last attempt (the work is dropped: the caller reports it).
    bool retry(ReleaseWork& w, Clock::time_point now);

    // When the earliest work is due; nullopt when empty.
    std::optional<Clock::time_point> nextDue() const;
    size_t size() const { return queue_.size(); }

  private:
    size_t maxBatch_;
    int maxAttempts_;
    engine::Backoff backoff_;
    std::vector<ReleaseWork> queue_;
};

}  // namespace allot::gc
