#include "gc-sidecar/base/stop.h"

namespace allot::gc {

void StopSignal::request() {
    std::vector<std::function<void()>> hooks;
    {
        std::lock_guard lock(m_);
        if (stopped_) return;
        stopped_ = true;
        hooks.swap(hooks_);
    }
    cv_.notify_all();
    for (auto& h : hooks) h();
}

bool StopSignal::stopped() const {
    std::lock_guard lock(m_);
    return stopped_;
}

bool StopSignal::waitUntil(Clock::time_point deadline) const {
    std::unique_lock lock(m_);
    cv_.wait_until(lock, deadline, [&] { return stopped_; });
    return stopped_;
}

void StopSignal::onStop(std::function<void()> fn) {
    {
        std::lock_guard lock(m_);
        if (!stopped_) {
            hooks_.push_back(std::move(fn));
            return;
        }
    }
    fn();
}

}  // namespace allot::gc
