#include "gc-sidecar/leader/leak_tracker.h"

#include <doctest/doctest.h>

using namespace allot;
using namespace std::chrono_literals;
using Clock = gc::LeakTracker::Clock;

TEST_CASE("a candidate is due only after N consecutive passes and the grace period") {
    gc::LeakTracker t(3, 5min);
    const auto t0 = Clock::time_point{} + 1h;
    CHECK(t.applyPass({"a"}, t0).empty());
    CHECK(t.applyPass({"a"}, t0 + 1min).empty());
    CHECK(t.streak("a") == 2);
    CHECK(t.applyPass({"a"}, t0 + 2min).empty());  // third pass, but only 2 minutes old
    CHECK(t.applyPass({"a"}, t0 + 4min).empty());
    CHECK(t.applyPass({"a"}, t0 + 5min) == std::vector<std::string>{"a"});
}

TEST_CASE("a pass without the candidate breaks its streak and resets its age") {
    gc::LeakTracker t(3, 0ms);
    const auto t0 = Clock::time_point{} + 1h;
    t.applyPass({"a", "b"}, t0);
    t.applyPass({"a", "b"}, t0 + 1s);
    t.applyPass({"b"}, t0 + 2s);  // the pod of "a" showed up: an ADD in flight
    CHECK(t.streak("a") == 0);
    CHECK(t.size() == 1);
    CHECK(t.applyPass({"a", "b"}, t0 + 3s).size() == 1);  // only b, a starts again
    CHECK(t.applyPass({"a"}, t0 + 4s).empty());
    CHECK(t.applyPass({"a"}, t0 + 5s) == std::vector<std::string>{"a"});
}

TEST_CASE("forgetting a released candidate; duplicates within a pass count once") {
    gc::LeakTracker t(2, 0ms);
    const auto t0 = Clock::time_point{} + 1h;
    t.applyPass({"a", "a", "a"}, t0);
    CHECK(t.streak("a") == 1);
    CHECK(t.applyPass({"a"}, t0 + 1s).size() == 1);
    t.forget("a");
    CHECK(t.size() == 0);
    CHECK(t.applyPass({"a"}, t0 + 2s).empty());
}

TEST_CASE("with one pass and no grace, a candidate is due at once") {
    gc::LeakTracker t(1, 0ms);
    CHECK(t.applyPass({"x"}, Clock::now()).size() == 1);
}
