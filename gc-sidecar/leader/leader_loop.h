#pragma once
// The schedule of a leader-only job (the repair loop, the slice controller): it runs while this
// process leads, pauses while it does not, wakes at once on a leadership change or a stop
// request, and tells the job when a new term starts. Between steps it waits for the delay the
// last step asked for (the job's resync), or for a nudge (what the job reads changed), but
// never less than the minimum gap after the last step: a burst of changes is one step.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "gc-sidecar/base/stop.h"

namespace allot::gc {

class LeaderLoop {
  public:
    using Clock = std::chrono::steady_clock;

    explicit LeaderLoop(StopSignal& stop);
    LeaderLoop(const LeaderLoop&) = delete;
    LeaderLoop& operator=(const LeaderLoop&) = delete;

    void setLeading(bool leading);  // from the leader elector
    // Something the job reads changed: a step as soon as the minimum gap allows.
    void nudge();
    void setMinGap(Clock::duration gap) { minGap_ = gap; }
    // Read between writes: a job stops writing the moment leadership is lost.
    bool leading() const { return leading_.load(); }

    // Until stop: on every leadership change `newTerm()` (state of an earlier term is stale);
    // while leading, `step()` whenever its previous answer (the delay to the next) has passed,
    // or a nudge came and the minimum gap since the last step has passed.
    void run(const std::function<void()>& newTerm, const std::function<Clock::duration()>& step);

  private:
    std::mutex m_;
    std::condition_variable cv_;
    std::atomic<bool> leading_{false};
    bool stopping_ = false;
    bool leadershipChanged_ = false;
    bool nudged_ = false;
    Clock::duration minGap_{0};
};

}  // namespace allot::gc
