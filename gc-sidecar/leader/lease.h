#pragma once
// Leader election of the repair loop on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection does: a candidate takes the Lease when it is free, released, or has not
// been renewed for leaseDurationSeconds as observed on the candidate's own clock (so clock
// skew between nodes does not matter); every write is guarded by the resourceVersion read.
// The leader renews every renewInterval and steps down when it could not renew for
// (duration - renewInterval), before any other candidate may take over. On shutdown the
// leader releases the Lease (empty holder) so that another takes over at once.
//
// One refinement over client-go: a follower polling every renewInterval dates a renewal it
// sees to its previous poll (at most renewInterval earlier), not to the poll that saw it.
// The renewal cannot be older than that, and the old leader stops acting renewInterval
// before the Lease runs out, so this stays safe; and a killed leader is replaced within the
// Lease duration of its last renewal instead of up to a poll interval later.
//
// A second: a candidate's first sight of a Lease (it has no earlier poll, as when it has just
// started) is dated to the Lease's own renewTime, as a candidate polling since then would have
// dated it, but never more than (duration - renewInterval - 1 s) back: it still waits a
// renewal interval and a second from its first sight, long enough to see a live holder's next
// renewal whatever the two clocks say. So a controller started after the old leader stopped
// renewing (an upgrade that fences the old layout's leader) takes over when the Lease runs
// out, not a whole duration after it first looked.

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"
#include "gc-sidecar/base/stop.h"
#include "json/json.h"
#include "k8s/client.h"

namespace allot::gc {

struct LeaseRecord {
    std::string holder;
    int64_t durationSeconds = 0;
    std::string acquireTime, renewTime;  // MicroTime text
    int64_t transitions = 0;
    friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

// Pure: decode/encode spec of a Lease object.
LeaseRecord leaseRecordOf(const json::Value& lease);
void setLeaseRecord(json::Value& lease, const LeaseRecord& r);

// Pure decision: may `me` write itself in as holder, given the record and how long ago this
// candidate first saw it unchanged?
bool mayAcquire(const LeaseRecord& r, const std::string& me,
                std::chrono::milliseconds sinceObserved);

// Pure: how long before this first sight (`wallNow` on this candidate's wall clock) to date
// it, from the record's renewTime: 0 when that is missing, unreadable or not in the past.
std::chrono::milliseconds firstSightAge(const LeaseRecord& r,
                                        std::chrono::system_clock::time_point wallNow,
                                        std::chrono::milliseconds renewInterval);

struct LeaseOptions {
    std::string name, ns, identity;
    std::chrono::milliseconds duration{std::chrono::seconds(15)};
    std::chrono::milliseconds renewInterval{std::chrono::seconds(5)};
};

class LeaderElector {
  public:
    using Clock = std::chrono::steady_clock;

    // onChange: leadership gained or lost. onApiError: a failed request (for the metric).
    LeaderElector(LeaseOptions opts, k8s::Client client, std::function<void(bool leading)> onChange,
                  std::function<void(const core::Error&)> onApiError, StopSignal& stop)
        : opts_(std::move(opts)),
          client_(std::move(client)),
          onChange_(std::move(onChange)),
          onApiError_(std::move(onApiError)),
          stop_(stop) {}

    // Campaigns and renews until stopped; then releases the Lease if held.
    void run();
    bool leading() const { return leading_.load(); }
    // Called after each read of the Lease that the API server answered (found or not): the
    // controller's health and readiness.
    void onContact(std::function<void()> f) { onContact_ = std::move(f); }

  private:
    bool tryAcquireOrRenew();
    void release();
    void setLeading(bool v);

    LeaseOptions opts_;
    k8s::Client client_;
    std::function<void(bool)> onChange_;
    std::function<void(const core::Error&)> onApiError_;
    std::function<void()> onContact_;
    StopSignal& stop_;
    std::atomic<bool> leading_{false};
    std::optional<LeaseRecord> observed_;
    Clock::time_point observedAt_{};
    std::optional<Clock::time_point> lastGet_;
    Clock::time_point lastRenew_{};
    json::Value lastLease_;  // the Lease as last written or read
};

}  // namespace allot::gc
