#include "gc-sidecar/node/release_queue.h"

#include <algorithm>

namespace allot::gc {

ReleaseQueue::ReleaseQueue(size_t maxBatch, int maxAttempts, engine::Backoff backoff)
    : maxBatch_(std::max<size_t>(maxBatch, 1)), maxAttempts_(maxAttempts), backoff_(backoff) {}

void ReleaseQueue::push(ReleaseWork w) {
    queue_.push_back(std::move(w));
}

std::vector<ReleaseWork> ReleaseQueue::takeDue(Clock::time_point now) {
    // Work not yet due to the front, the due work behind it ordered by when it fell due.
    auto firstDue = std::stable_partition(queue_.begin(), queue_.end(),
                                          [&](const ReleaseWork& w) { return w.due > now; });
    std::stable_sort(firstDue, queue_.end(),
                     [](const ReleaseWork& a, const ReleaseWork& b) { return a.due < b.due; });
    const size_t due = static_cast<size_t>(queue_.end() - firstDue);
    const size_t take = std::min(due, maxBatch_);
    std::vector<ReleaseWork> batch(
        std::make_move_iterator(firstDue),
        std::make_move_iterator(firstDue + static_cast<std::ptrdiff_t>(take)));
    queue_.erase(firstDue, firstDue + static_cast<std::ptrdiff_t>(take));
    return batch;
}

bool ReleaseQueue::retry(ReleaseWork& w, Clock::time_point now) {
    ++w.attempts;
    if (w.attempts >= maxAttempts_) return false;
    w.due = now + backoff_.delay(w.attempts - 1);
    queue_.push_back(std::move(w));
    return true;
}

std::optional<Clock::time_point> ReleaseQueue::nextDue() const {
    if (queue_.empty()) return std::nullopt;
    return std::min_element(
               queue_.begin(), queue_.end(),
               [](const ReleaseWork& a, const ReleaseWork& b) { return a.due < b.due; })
        ->due;
}

}  // namespace allot::gc
