#include "gc-sidecar/node/release_queue.h"

#include <doctest/doctest.h>

using namespace allot;
using gc::Clock;
using gc::ReleaseQueue;
using gc::ReleaseWork;

namespace {
ReleaseWork work(std::string name, Clock::time_point due) {
    ReleaseWork w;
    w.pod = gc::PodRecord{"ns", name, "uid-" + name};
    w.reason = "pod_deleted";
    w.due = due;
    return w;
}
std::vector<std::string> names(const std::vector<ReleaseWork>& batch) {
    std::vector<std::string> out;
    for (const auto& w : batch) out.push_back(w.pod.name);
    return out;
}
const engine::Backoff kBackoff{std::chrono::milliseconds(100), std::chrono::milliseconds(1000)};
}  // namespace

TEST_CASE("the queue hands out only work that is due, the longest-due first, in batches") {
    const auto t0 = Clock::now();
    ReleaseQueue q(2, 5, kBackoff);
    q.push(work("later", t0 + std::chrono::seconds(10)));
    q.push(work("second", t0 - std::chrono::seconds(1)));
    q.push(work("first", t0 - std::chrono::seconds(2)));
    q.push(work("third", t0));
    CHECK(q.nextDue() == t0 - std::chrono::seconds(2));

    CHECK(names(q.takeDue(t0)) == std::vector<std::string>{"first", "second"});
    CHECK(names(q.takeDue(t0)) == std::vector<std::string>{"third"});
    CHECK(q.takeDue(t0).empty());
    CHECK(q.size() == 1);
    CHECK(names(q.takeDue(t0 + std::chrono::seconds(10))) == std::vector<std::string>{"later"});
    CHECK(q.size() == 0);
    CHECK(!q.nextDue());
}

TEST_CASE("a failed release comes back after the backoff, and is dropped after its last attempt") {
    const auto t0 = Clock::now();
    ReleaseQueue q(10, 3, kBackoff);
    ReleaseWork w = work("web-0", t0);

    REQUIRE(q.retry(w, t0));  // attempt 1 failed: due within [50, 100] ms
    CHECK(q.takeDue(t0 + std::chrono::milliseconds(49)).empty());
    auto back = q.takeDue(t0 + std::chrono::milliseconds(100));
    REQUIRE(back.size() == 1);
    CHECK(back[0].attempts == 1);
    CHECK(back[0].pod.name == "web-0");

    REQUIRE(q.retry(back[0], t0));  // attempt 2: within [100, 200] ms
    CHECK(q.takeDue(t0 + std::chrono::milliseconds(99)).empty());
    back = q.takeDue(t0 + std::chrono::milliseconds(200));
    REQUIRE(back.size() == 1);

    CHECK(!q.retry(back[0], t0));  // the third failure was its last
    CHECK(back[0].attempts == 3);
    CHECK(back[0].pod.name == "web-0");  // still the caller's, to report
    CHECK(q.size() == 0);
}

TEST_CASE("work keeps what an earlier attempt left to do") {
    const auto t0 = Clock::now();
    ReleaseQueue q(10, 5, kBackoff);
    ReleaseWork w = work("db-0", t0);
    w.pendingReservations.push_back(cluster::Released{});
    w.hinted.insert(gc::PoolKey{"kube-system", "10.0.0.0-24", ""});
    REQUIRE(q.retry(w, t0));
    auto back = q.takeDue(t0 + std::chrono::seconds(1));
    REQUIRE(back.size() == 1);
    CHECK(back[0].pendingReservations.size() == 1);
    CHECK(back[0].hinted.size() == 1);
}
