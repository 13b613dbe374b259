// The leader-only jobs' schedule: a step at the start of a term, then only on a nudge (at
// least the minimum gap after the last step) or when the step's own delay has passed. The
// waits below are upper bounds for what must happen and generous lower bounds for what must
// not: nothing here measures speed.
#include "gc-sidecar/leader/leader_loop.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace allot;
using namespace std::chrono_literals;

namespace {

struct Running {
    gc::StopSignal stop;
    gc::LeaderLoop loop{stop};
    std::atomic<int> steps{0};
    std::thread thread;

    explicit Running(gc::LeaderLoop::Clock::duration minGap) {
        loop.setMinGap(minGap);
        thread = std::thread([this] {
            loop.run([] {},
                     [this] {
                         ++steps;
                         return gc::LeaderLoop::Clock::duration(1h);  // the resync: never here
                     });
        });
    }
    ~Running() {
        stop.request();
        thread.join();
    }
    bool reaches(int n) {
        for (int i = 0; i < 500 && steps.load() < n; ++i) std::this_thread::sleep_for(10ms);
        return steps.load() >= n;
    }
};

}  // namespace

TEST_CASE("a leader-only job steps when leadership starts, then only when nudged") {
    Running r(0ms);
    std::this_thread::sleep_for(100ms);
    CHECK(r.steps == 0);  // not leading
    r.loop.setLeading(true);
    REQUIRE(r.reaches(1));
    std::this_thread::sleep_for(300ms);
    CHECK(r.steps == 1);  // nothing changed, the resync is an hour away
    r.loop.nudge();
    CHECK(r.reaches(2));
    r.loop.setLeading(false);
    std::this_thread::sleep_for(50ms);
    const int before = r.steps;
    r.loop.nudge();
    std::this_thread::sleep_for(300ms);
    CHECK(r.steps == before);  // a nudge while not leading does nothing
}

TEST_CASE("nudges within the minimum gap make one step, after the gap") {
    Running r(400ms);
    r.loop.setLeading(true);
    REQUIRE(r.reaches(1));
    for (int i = 0; i < 5; ++i) r.loop.nudge();
    std::this_thread::sleep_for(100ms);
    CHECK(r.steps == 1);  // inside the gap
    REQUIRE(r.reaches(2));
    std::this_thread::sleep_for(600ms);
    CHECK(r.steps == 2);  // the five nudges were one step
}
