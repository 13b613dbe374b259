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

void LeaderLoop::nudge() {
    {
        std::lock_guard l(m_);
        nudged_ = true;
    }
    cv_.notify_all();
}

void LeaderLoop::run(const std::function<void()>& newTerm,
                     const std::function<Clock::duration()>& step) {
    Clock::time_point next = Clock::now();
    Clock::time_point earliest = next;  // the last step's end plus the minimum gap
    for (;;) {
        {
            std::unique_lock l(m_);
            auto due = [&] { return nudged_ ? std::min(next, earliest) : next; };
            auto wake = [&] { return leading_ ? due() : Clock::time_point::max(); };
            // A nudge moves the wake-up: wait again whenever one comes in.
            while (!stopping_ && !leadershipChanged_ && !(leading_ && Clock::now() >= due()))
                cv_.wait_until(l, wake());
            if (stopping_) return;
            if (leadershipChanged_) {
                leadershipChanged_ = false;
                newTerm();
                next = Clock::now();
                if (!leading_) continue;
            }
            if (!leading_ || Clock::now() < due()) continue;
            nudged_ = false;
        }
        const Clock::duration delay = step();  // measured from the end of the step
        const auto end = Clock::now();
        next = end + delay;
        earliest = end + minGap_;
    }
}

}  // namespace allot::gc
