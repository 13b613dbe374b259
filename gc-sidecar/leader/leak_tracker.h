#pragma once
// Mark now, sweep later: a leak candidate is released only after it was seen on `passes`
// consecutive repair passes and first seen at least `grace` ago, so an ADD in flight (whose
// pod the pass has not listed yet) is never robbed. State lives in memory only: a new
// leader starts counting from zero, which only delays releases. Pure (time passed in).

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

namespace allot::gc {

class LeakTracker {
  public:
    using Clock = std::chrono::steady_clock;

    LeakTracker(int passes, std::chrono::milliseconds grace) : passes_(passes), grace_(grace) {}

    // Applies one completed pass: `seen` are the candidates it found. Candidates not among
    // them are forgotten (their streak is broken). Returns the keys now due for release.
    std::vector<std::string> applyPass(const std::vector<std::string>& seen, Clock::time_point now);

    // After a release (or when a candidate turned out alive).
    void forget(const std::string& key) { state_.erase(key); }
    size_t size() const { return state_.size(); }
    // Consecutive passes `key` has been seen in (0 when not a candidate).
    int streak(const std::string& key) const;
    // When its current streak began (now when not a candidate).
    Clock::time_point firstSeen(const std::string& key, Clock::time_point now) const;

  private:
    struct State {
        Clock::time_point firstSeen;
        int streak = 0;
        uint64_t lastPass = 0;
    };
    int passes_;
    std::chrono::milliseconds grace_;
    uint64_t pass_ = 0;
    std::unordered_map<std::string, State> state_;
};

}  // namespace allot::gc
