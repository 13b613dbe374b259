#pragma once
// The one retry schedule of allot: jittered exponential backoff within a deadline (and, for
// callers without one, a number of attempts). Writers of pools and reservations, the pod
// watch, the Lease and the release queue all take their delays from here; a caller that must
// stay responsive to shutdown waits the delay on its own stop signal instead of sleeping.

#include <chrono>
#include <functional>

#include "core/result.h"

namespace allot::engine {

using Clock = std::chrono::steady_clock;

struct Backoff {
    std::chrono::milliseconds base{5};   // the first delay's upper bound
    std::chrono::milliseconds cap{400};  // no delay is longer

    // The delay before retry `attempt` (0-based): uniform in [d/2, d], d = min(cap,
    // base·2^attempt). Full jitter, so that writers racing in lockstep drift apart.
    std::chrono::milliseconds delay(int attempt) const;
};

class RetryPolicy {
  public:
    using Sleep = std::function<void(std::chrono::milliseconds)>;

    explicit RetryPolicy(Clock::time_point deadline = Clock::time_point::max(), Backoff b = {},
                         int maxAttempts = 0, Sleep sleep = {})
        : deadline_(deadline), backoff_(b), maxAttempts_(maxAttempts), sleep_(std::move(sleep)) {}

    // Waits before the next attempt. False, without waiting, when the deadline would pass
    // first or `maxAttempts` (when set) have been made.
    bool wait();
    bool expired() const { return Clock::now() >= deadline_; }
    int attempts() const { return attempts_; }
    Clock::time_point deadline() const { return deadline_; }
    void setDeadline(Clock::time_point d) { deadline_ = d; }
    void setSleep(Sleep s) { sleep_ = std::move(s); }
    // Whether an error is worth another attempt: a lost race always; a transient failure
    // unless the caller retries those itself, on its own schedule (allot-gc's release queue).
    bool retries(core::Errc c) const {
        return c == core::Errc::Conflict || (retryTransient_ && c == core::Errc::Transient);
    }
    void onlyConflicts() { retryTransient_ = false; }

    // What to return after giving up on `last`: a lost race (Conflict) becomes Transient, and
    // the message says how many attempts were made.
    core::Error gaveUp(const core::Error& last) const;

  private:
    Clock::time_point deadline_;
    Backoff backoff_;
    int maxAttempts_;
    Sleep sleep_;
    int attempts_ = 0;
    bool retryTransient_ = true;
};

// Conflict and Transient are worth another attempt; every other error is an answer.
inline bool retryable(core::Errc c) {
    return c == core::Errc::Conflict || c == core::Errc::Transient;
}

}  // namespace allot::engine
