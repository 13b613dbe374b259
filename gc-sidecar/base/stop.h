#pragma once
// A shutdown request shared by every thread of allot-gc. Waiting on it replaces sleeping:
// every timed wait returns at once when shutdown is requested.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace allot::gc {

class StopSignal {
  public:
    using Clock = std::chrono::steady_clock;

    void request();
    bool stopped() const;
    // Waits until `deadline` or a stop request; true when stopped.
    bool waitUntil(Clock::time_point deadline) const;
    bool waitFor(Clock::duration d) const { return waitUntil(Clock::now() + d); }
    // Runs `fn` on request() (or now, when already stopped): lets components with their own
    // condition variables wake up. Whatever `fn` refers to must outlive this StopSignal or
    // the request.
    void onStop(std::function<void()> fn);

  private:
    mutable std::mutex m_;
    mutable std::condition_variable cv_;
    bool stopped_ = false;
    std::vector<std::function<void()>> hooks_;
};

}  // namespace allot::gc
