#include "gc-sidecar/leader/leader_loop.h"

namespace allot::gc {

LeaderLoop::LeaderLoop(StopSignal& stop) {
    stop.onStop([this] {
        {
            std::lock_guard l(m_);
            stopping_ = true;
        }
        cv_.notify_all();
    });
}

void LeaderLoop::setLeading(bool leading) {
    {
        std::lock_guard l(m_);
        leading_ = leading;
        leadershipChanged_ = true;
    }
    cv_.notify_all();
}

void LeaderLoop::run(const std::function<void()>& newTerm,
                     const std::function<Clock::duration()>& step) {
    Clock::time_point next = Clock::now();
    for (;;) {
        {
            std::unique_lock l(m_);
            cv_.wait_until(l, leading_ ? next : Clock::time_point::max(), [&] {
                return stopping_ || leadershipChanged_ || (leading_ && Clock::now() >= next);
            });
            if (stopping_) return;
            if (leadershipChanged_) {
                leadershipChanged_ = false;
                newTerm();
                next = Clock::now();
                if (!leading_) continue;
            }
            if (!leading_ || Clock::now() < next) continue;
        }
        const Clock::duration delay = step();  // measured from the end of the step
        next = Clock::now() + delay;
    }
}

}  // namespace allot::gc
