// The node's group commit (node/claim_queue.h) under the engine's claims: the holder of the
// pool lock serves what other processes queued with one pool write, each with its own answer.
#include "node_state/commit_queue.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "engine/add.h"
#include "node_state_fixture.h"

using namespace allot;
using core::Errc;
using engine::CommitQueue;
using test::config;
using test::kBig;
using test::kBigPool;
using test::kPoolKey;
using test::owner;
using test::request;

TEST_CASE("the holder of the node lock commits every queued ADD with one pool write") {
    test::Node n;
    const auto cfg = config(kBig);
    auto q = node_state::makeFileCommitQueue(n.path());
    std::vector<std::unique_ptr<CommitQueue::Ticket>> waiting;
    for (int i = 0; i < 5; ++i) {
        auto t = q->submit(kPoolKey, request("queued" + std::to_string(i)));
        REQUIRE(t.ok());
        CHECK_FALSE(q->answered(**t).has_value());
        waiting.push_back(std::move(*t));
    }
    const int before = n.mem->calls();
    test::Call leader(n, cfg);
    auto a = leader.add(cfg, owner("leader"));
    REQUIRE(a);
    CHECK(leader.ctx.report.served == 5);
    // Read (create: the pool is new), one write, and the leader's own reservation.
    CHECK(n.mem->calls() - before <= 5);
    auto pool = n.allocations(kBigPool);
    CHECK(pool.size() == 6);
    std::set<std::string> ips{test::firstCidr(a)};
    for (int i = 0; i < 5; ++i) {
        auto ans = q->answered(*waiting[i]);
        REQUIRE(ans.has_value());
        REQUIRE(ans->ok());
        ips.insert((*ans)->ip.str() + "/24");
        auto held = core::findHolder(pool, "queued" + std::to_string(i), "net1");
        REQUIRE(held.has_value());
        CHECK(*held == (*ans)->offset);
    }
    CHECK(ips.size() == 6);
}

TEST_CASE("a queued request whose process is gone is discarded, not served") {
    test::Node n;
    const auto cfg = config(kBig);
    auto q = node_state::makeFileCommitQueue(n.path());
    auto live = q->submit(kPoolKey, request("alive"));
    REQUIRE(live.ok());
    // A request file nobody holds a lock on: its plugin was killed while waiting.
    const std::string qdir = n.path() + "/" + kPoolKey + ".q";
    std::ofstream(qdir + "/1-dead.req")
        << R"({"containerId":"dead","podRef":"ns/dead","ifName":"net1","node":"node-a","podUid":"","network":"net","avoid":[]})";
    test::Call leader(n, cfg);
    REQUIRE(leader.add(cfg, owner("leader")));
    CHECK(leader.ctx.report.served == 1);
    CHECK_FALSE(std::filesystem::exists(qdir + "/1-dead.req"));
    auto pool = n.allocations(kBigPool);
    CHECK_FALSE(core::findHolder(pool, "dead", "net1").has_value());
    CHECK(core::findHolder(pool, "alive", "net1").has_value());
    // A served requester that withdraws leaves nothing behind in the queue.
    live->reset();
    CHECK(std::filesystem::is_empty(qdir));
}

TEST_CASE("a queued request that cannot be served gets its own error, the others their addresses") {
    test::Node n;
    const auto cfg = config(kBig);
    auto q = node_state::makeFileCommitQueue(n.path());
    auto bad = request("wants-network-address");
    bad.requested = core::IpAddress::parse("10.1.0.0").value();
    auto t1 = q->submit(kPoolKey, bad);
    auto t2 = q->submit(kPoolKey, request("fine"));
    REQUIRE((t1.ok() && t2.ok()));
    test::Call leader(n, cfg);
    REQUIRE(leader.add(cfg, owner("leader")));
    CHECK(leader.ctx.report.served == 2);
    auto e = q->answered(**t1);
    REQUIRE(e.has_value());
    REQUIRE_FALSE(e->ok());
    CHECK(e->code() == Errc::InvalidConfig);
    CHECK(e->error().message.find("10.1.0.0") != std::string::npos);
    auto ok = q->answered(**t2);
    REQUIRE(ok.has_value());
    CHECK(ok->ok());
    CHECK(n.allocations(kBigPool).size() == 2);  // the leader's and "fine"'s
}

TEST_CASE("a queued release is committed by the holder's write, and a DEL goes through the queue") {
    test::Node n;
    const auto cfg = config(kBig);
    const std::string gone = test::firstCidr(test::Call(n, cfg).add(cfg, owner("gone")));
    auto q = node_state::makeFileCommitQueue(n.path());
    auto rel = request("gone");
    rel.release = true;
    auto t = q->submit(kPoolKey, rel);
    REQUIRE(t.ok());
    test::Call leader(n, cfg);
    REQUIRE(leader.add(cfg, owner("leader", "leader")));
    CHECK(leader.ctx.report.served == 1);
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    REQUIRE(ans->ok());
    CHECK((*ans)->ip.str() + "/24" == gone);
    CHECK_FALSE(core::findHolder(n.allocations(kBigPool), "gone", "net1").has_value());
    // A DEL of the leader through the queue releases it and its reservation.
    auto d = test::Call(n, cfg).del(cfg, owner("leader", "leader"));
    REQUIRE(d);
    CHECK_FALSE(*d);
    CHECK(n.allocations(kBigPool).empty());
    // The queued release left "gone"'s reservation to its caller.
    auto left = n.mem->listReservations();
    REQUIRE(left.ok());
    REQUIRE(left->size() == 1);
    CHECK(left->front().containerId == "gone");
}

TEST_CASE("a holder whose batch fails answers nobody else: they keep their own chance") {
    test::Node n;
    auto q = node_state::makeFileCommitQueue(n.path());
    auto t = q->submit(kPoolKey, request("waiting"));
    REQUIRE(t.ok());
    n.mem->setUnreachable(true);
    const auto slow = config(R"("range":"10.1.0.0/24","deadline_ms":3000)");
    test::Call leader(n, slow);
    auto a = leader.add(slow, owner("leader"));
    REQUIRE_FALSE(a);
    CHECK(a.code() == Errc::Transient);
    CHECK_FALSE(q->answered(**t).has_value());
    n.mem->setUnreachable(false);
    // The waiter, trying for itself later, gets an address.
    t->reset();
    const auto cfg = config(kBig);
    CHECK(test::Call(n, cfg).add(cfg, owner("waiting", "waiting")));
}

TEST_CASE("a queued request taken by the holder cannot be withdrawn until it is given back") {
    test::TempDir dir;
    auto q = node_state::makeFileCommitQueue(dir.path.string());
    auto holder = q->submit(kPoolKey, request("holder"));
    auto a = q->submit(kPoolKey, request("a"));
    auto b = q->submit(kPoolKey, request("b"));
    REQUIRE((holder.ok() && a.ok() && b.ok()));
    CHECK(q->withdraw(**b));  // before any holder looked: out of the queue
    auto taken = q->waiting(**holder, 10);
    REQUIRE(taken.size() == 1);
    CHECK(taken[0].request.owner.containerId == "a");
    CHECK_FALSE(q->withdraw(**a));  // its answer is coming
    CHECK(q->waiting(**holder, 10).empty());
    q->giveBack(**holder, {taken[0].id});
    CHECK(q->withdraw(**a));
    CHECK(q->waiting(**holder, 10).empty());
}

TEST_CASE(
    "the holder of the node lock picks a queued request with that request's window and gateway") {
    test::Node n;
    const auto teamA = config(test::kTeamA);
    auto q = node_state::makeFileCommitQueue(n.path());
    auto other = request("team-b");
    other.window = core::IpRange::fromSpec(
                       {"10.1.0.0/24", "10.1.0.100", "10.1.0.149", {"10.1.0.100/31"}}, "range")
                       .value();
    other.gateway = core::IpAddress::parse("10.1.0.102").value();
    auto t = q->submit(kPoolKey, other);
    REQUIRE(t.ok());
    test::Call leader(n, teamA);
    auto a = leader.add(teamA, owner("leader"));
    CHECK(leader.ctx.report.served == 1);
    // .8-.11 excluded, the window from .10: the leader's first is .12.
    CHECK(test::firstCidr(a) == "10.1.0.12/24");
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    REQUIRE(ans->ok());
    // .100 and .101 excluded, .102 its gateway: the first it may have is .103.
    CHECK((*ans)->ip.str() == "10.1.0.103");
}

TEST_CASE("a queued request without its window is not served by another config's holder") {
    test::Node n;
    const auto teamA = config(test::kTeamA);
    auto q = node_state::makeFileCommitQueue(n.path());
    auto old = request("old-binary");
    old.window.reset();  // what a plugin that predates windows leaves in the queue
    auto t = q->submit(kPoolKey, old);
    REQUIRE(t.ok());
    REQUIRE(test::Call(n, teamA).add(teamA, owner("leader")));
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    CHECK_FALSE(ans->ok());  // answered with an error: it tries for itself
    CHECK_FALSE(core::findHolder(n.allocations(kBigPool), "old-binary", "net1").has_value());
}
