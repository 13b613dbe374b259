#include "gc-sidecar/leader/leak_tracker.h"

namespace allot::gc {

std::vector<std::string> LeakTracker::applyPass(const std::vector<std::string>& seen,
                                                Clock::time_point now) {
    ++pass_;
    std::vector<std::string> due;
    for (const auto& key : seen) {
        auto [it, fresh] = state_.try_emplace(key);
        State& s = it->second;
        if (s.lastPass == pass_) continue;  // listed twice in one pass
        if (fresh || s.lastPass + 1 != pass_) {
            s.firstSeen = now;
            s.streak = 0;
        }
        ++s.streak;
        s.lastPass = pass_;
        if (s.streak >= passes_ && now - s.firstSeen >= grace_) due.push_back(key);
    }
    for (auto it = state_.begin(); it != state_.end();) {
        if (it->second.lastPass != pass_)
            it = state_.erase(it);
        else
            ++it;
    }
    return due;
}

int LeakTracker::streak(const std::string& key) const {
    auto it = state_.find(key);
    return it == state_.end() ? 0 : it->second.streak;
}

LeakTracker::Clock::time_point LeakTracker::firstSeen(const std::string& key,
                                                      Clock::time_point now) const {
    auto it = state_.find(key);
    return it == state_.end() ? now : it->second.firstSeen;
}

}  // namespace allot::gc
