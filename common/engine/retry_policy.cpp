#include "engine/retry_policy.h"

#include <algorithm>
#include <random>
#include <thread>

namespace allot::engine {

std::chrono::milliseconds Backoff::delay(int attempt) const {
    static thread_local std::minstd_rand rng{std::random_device{}()};
    const int64_t b = std::max<int64_t>(1, base.count());
    const int shift = std::clamp(attempt, 0, 30);
    const int64_t d =
        std::max<int64_t>(1, std::min<int64_t>(cap.count(), b << std::min(shift, 40 - 1)));
    std::uniform_int_distribution<int64_t> dist(d / 2, d);
    return std::chrono::milliseconds(dist(rng));
}

bool RetryPolicy::wait() {
    if (maxAttempts_ > 0 && attempts_ + 1 >= maxAttempts_) return false;
    const auto d = backoff_.delay(attempts_);
    if (deadline_ != Clock::time_point::max() && Clock::now() + d >= deadline_) return false;
    ++attempts_;
    if (sleep_)
        sleep_(d);
    else
        std::this_thread::sleep_for(d);
    return true;
}

core::Error RetryPolicy::gaveUp(const core::Error& last) const {
    const int made = attempts_ + 1;
    return core::makeError(
        last.code == core::Errc::Conflict ? core::Errc::Transient : last.code,
        last.message + " (gave up after " + std::to_string(made) + " attempts" +
            (maxAttempts_ > 0 && made >= maxAttempts_ ? ")" : " at the deadline)"));
}

}  // namespace allot::engine
