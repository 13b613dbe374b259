#include "engine/pool_transaction.h"

#include <doctest/doctest.h>

#include "engine/reservations.h"
#include "engine_fixture.h"
#include "store/memory_store.h"

using namespace allot;
using core::Errc;
using core::Intent;

namespace {

core::IpRange range(const char* cidr) {
    return *core::IpRange::fromSpec({cidr, "", "", {}}, "range");
}

// Each container its own pod unless said otherwise (one pod's new sandbox takes over its address).
core::Owner owner(const std::string& cid, const std::string& pod = "") {
    return core::Owner{cid, pod.empty() ? "ns/" + cid : pod, "eth0", "node-a", "", "net"};
}

engine::RetryPolicy quick(int maxAttempts = 10) {
    return engine::RetryPolicy(engine::Clock::time_point::max(), {}, maxAttempts, [](auto) {});
}

engine::TxTarget target(const core::IpRange& r, bool create = true) {
    return engine::TxTarget{"pool", r.cidr(), create, true};
}

engine::Plan fixed(std::vector<Intent> intents) {
    return [intents](const store::Pool&) -> core::Result<std::vector<Intent>> { return intents; };
}

// One attempt at a transaction that plans nothing (a seal or a lift), on target `t`.
core::Result<engine::TxResult> runEmpty(store::PoolStore& s, const engine::TxTarget& t) {
    auto retry = quick(1);
    engine::PoolTransaction tx(s, retry);
    return tx.run(t, fixed({}));
}

using test::MapCache;

}  // namespace

TEST_CASE("a transaction creates a missing pool and writes a batch of claims in one write") {
    store::MemoryStore s;
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    auto r = range("10.0.0.0/28");
    auto res = tx.run(target(r), fixed({Intent::take(owner("a"), r), Intent::take(owner("b"), r)}));
    REQUIRE(res.ok());
    CHECK(res->found);
    CHECK(res->outcomes[0].pick->ip.str() == "10.0.0.1");
    CHECK(res->outcomes[1].pick->ip.str() == "10.0.0.2");
    auto stored = s.getPool("pool");
    REQUIRE(stored.ok());
    CHECK(stored->allocations.size() == 2);
    CHECK(stored->resourceVersion == "2");  // created, then written once
}

TEST_CASE("releases never create a pool: a missing pool is reported as not found") {
    store::MemoryStore s;
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    auto res = tx.run(target(range("10.0.0.0/28"), false), fixed({Intent::release(owner("a"))}));
    REQUIRE(res.ok());
    CHECK_FALSE(res->found);
    CHECK(s.getPool("pool").code() == Errc::NotFound);
}

TEST_CASE("a plan is made again on fresh data after another writer got there first") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    store::Pool p{"pool", r.cidr().str(), {{1, owner("old", "ns/p")}}, {}};
    REQUIRE(s.createPool(p).ok());
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    int plans = 0;
    auto plan = [&](const store::Pool& seen) -> core::Result<std::vector<Intent>> {
        if (plans++ == 0) {
            // A concurrent ADD hands the entry over to a new sandbox of the pod.
            auto fresh = *s.getPool("pool");
            fresh.allocations[1] = owner("new", "ns/p");
            REQUIRE(s.updatePool(fresh).ok());
        }
        std::vector<Intent> out;
        for (const auto& [off, o] : seen.allocations)
            if (o.containerId == "old") out.push_back(Intent::releaseIfHeld(off, o));
        return out;
    };
    auto res = tx.run(target(r, false), plan);
    REQUIRE(res.ok());
    CHECK(plans == 2);
    CHECK(tx.conflicts() == 1);
    CHECK(res->outcomes.empty());  // nothing of "old" is left to release
    CHECK(s.getPool("pool")->allocations.at(1).containerId == "new");
}

TEST_CASE("an answer read from a stale cache is checked on fresh data before it is given") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/30");  // two addresses
    REQUIRE(s.createPool(store::Pool{"pool", r.cidr().str(), {{1, owner("a")}}, {}}).ok());
    MapCache cache;
    // The cached copy says the pool is full; the store says one address is free.
    cache.save("ns", store::Pool{"pool", r.cidr().str(), {{1, owner("a")}, {2, owner("b")}}, "1"});
    auto retry = quick();
    engine::PoolTransaction tx(s, retry, &cache, "ns");
    auto res = tx.run(target(r), fixed({Intent::take(owner("c"), r)}));
    REQUIRE(res.ok());
    CHECK(cache.hits == 1);
    REQUIRE(res->outcomes[0].pick.ok());
    CHECK(res->outcomes[0].pick->ip.str() == "10.0.0.2");
    CHECK(cache.pools.at("ns/pool").allocations.size() == 2);  // the written pool is cached
}

TEST_CASE("a pool holding another range under the name is a configuration error") {
    store::MemoryStore s;
    REQUIRE(s.createPool(store::Pool{"pool", "10.9.0.0/24", {}, {}}).ok());
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    auto r = range("10.0.0.0/28");
    auto res = tx.run(target(r), fixed({Intent::take(owner("a"), r)}));
    CHECK(res.code() == Errc::InvalidConfig);
    CHECK(res.error().message.find("pool name collision") != std::string::npos);
}

TEST_CASE("conflicts are retried until the policy gives up, and the error says so") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    REQUIRE(s.createPool(store::Pool{"pool", r.cidr().str(), {}, {}}).ok());
    s.conflictNext(100);
    auto retry = quick(4);
    engine::PoolTransaction tx(s, retry);
    auto res = tx.run(target(r), fixed({Intent::take(owner("a"), r)}));
    CHECK(res.code() == Errc::Transient);
    CHECK(res.error().message.find("gave up after 4 attempts") != std::string::npos);
    CHECK(tx.conflicts() == 4);
}

TEST_CASE("a pool object out of room fails at once as TooLarge, with what would help") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/24");
    REQUIRE(s.createPool(store::Pool{"pool", r.cidr().str(), {}, {}}).ok());
    store::SizePolicy tiny;
    tiny.maxBytes = 300;
    tiny.freeBytes = 100;
    s.setSizePolicy(tiny);
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    std::vector<Intent> many;
    for (int i = 0; i < 20; ++i) many.push_back(Intent::take(owner("c" + std::to_string(i)), r));
    auto res = tx.run(target(r), fixed(many));
    REQUIRE_FALSE(res.ok());
    CHECK(res.code() == Errc::TooLarge);
    CHECK(res.error().message.find("node_slice_size") != std::string::npos);
    CHECK(retry.attempts() == 0);
}

TEST_CASE(
    "a reservation is handed over with its pool entry to a new sandbox of the same pod, and only "
    "the holder drops it") {
    store::MemoryStore s;
    REQUIRE(engine::reserve(s, "10.0.0.5", owner("old", "ns/p")).ok());
    auto other = engine::reserve(s, "10.0.0.5", owner("x", "ns/other"), true);
    REQUIRE(other.ok());
    CHECK(*other == "ns/p");
    // Without the entry taken over (a pod re-created elsewhere, say), it stays the old one's.
    auto notMine = engine::reserve(s, "10.0.0.5", owner("new", "ns/p"));
    REQUIRE(notMine.ok());
    CHECK(*notMine == "ns/p");
    auto mine = engine::reserve(s, "10.0.0.5", owner("new", "ns/p"), true);
    REQUIRE(mine.ok());
    CHECK(mine->empty());
    // The old sandbox's release no longer takes the new one's reservation.
    REQUIRE(engine::unreserve(s, {"10.0.0.5"}, owner("old", "ns/p")).ok());
    CHECK(s.getReservation("10.0.0.5")->containerId == "new");
    REQUIRE(engine::unreserve(s, {"net-10.0.0.5", "10.0.0.5"}, owner("new", "ns/p")).ok());
    CHECK(s.getReservation("10.0.0.5").code() == Errc::NotFound);
}

TEST_CASE(
    "the repair loop's orphan delete keeps a reservation re-made since its pass read it, and an "
    "absent one is no error") {
    store::MemoryStore s;
    REQUIRE(engine::reserve(s, "10.0.0.7", owner("gone", "ns/a")).ok());
    const std::string seen = s.getReservation("10.0.0.7")->resourceVersion;
    // Between the pass's read and its delete, the address was released and reserved again.
    REQUIRE(engine::unreserve(s, {"10.0.0.7"}, owner("gone", "ns/a")).ok());
    REQUIRE(engine::reserve(s, "10.0.0.7", owner("live", "ns/b")).ok());
    auto stale = engine::dropOrphan(s, "10.0.0.7", seen);
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.code() == Errc::Conflict);
    CHECK(s.getReservation("10.0.0.7")->containerId == "live");
    const std::string now = s.getReservation("10.0.0.7")->resourceVersion;
    CHECK(engine::dropOrphan(s, "10.0.0.7", now).ok());
    CHECK(s.getReservation("10.0.0.7").code() == Errc::NotFound);
    CHECK(engine::dropOrphan(s, "10.0.0.7", now).ok());
}

TEST_CASE("a missing reservation is re-made for the entry's owner, never over another's") {
    store::MemoryStore s;
    REQUIRE(engine::restoreReservation(s, "10.0.0.8", owner("c1", "ns/a")).ok());
    auto r = s.getReservation("10.0.0.8");
    REQUIRE(r.ok());
    CHECK(r->containerId == "c1");
    CHECK(r->podRef == "ns/a");
    auto taken = engine::restoreReservation(s, "10.0.0.8", owner("c2", "ns/b"));
    REQUIRE_FALSE(taken.ok());
    CHECK(taken.code() == Errc::AlreadyExists);
    CHECK(s.getReservation("10.0.0.8")->containerId == "c1");
}

TEST_CASE("the backoff grows to its cap with jitter in the upper half") {
    engine::Backoff b{std::chrono::milliseconds(5), std::chrono::milliseconds(400)};
    for (int i = 0; i < 50; ++i) {
        auto d0 = b.delay(0).count();
        CHECK(d0 >= 2);
        CHECK(d0 <= 5);
        auto d9 = b.delay(9).count();
        CHECK(d9 >= 200);
        CHECK(d9 <= 400);
    }
    engine::RetryPolicy soon(engine::Clock::now() + std::chrono::milliseconds(1), b);
    CHECK_FALSE(soon.wait());  // the deadline would pass first
}

TEST_CASE("a seal is written only on a pool that holds no address, and creates a missing one") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    auto seal = [&](const std::string& token) {
        auto t = target(r);
        t.seal = token;
        return runEmpty(s, t);
    };
    auto made = seal("7");
    REQUIRE(made.ok());
    CHECK(made->sealed);
    CHECK(s.getPool("pool")->sealed == "7");
    // A pool with an address is not sealed: its slice stays its node's.
    auto p = *s.getPool("pool");
    p.sealed.clear();
    p.allocations[1] = owner("a");
    REQUIRE(s.updatePool(p).ok());
    auto held = seal("8");
    REQUIRE(held.ok());
    CHECK_FALSE(held->sealed);
    CHECK(s.getPool("pool")->sealed.empty());
}

TEST_CASE("a lift takes back only a seal of its own token, and creates nothing") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    auto lift = [&](const std::string& token) {
        auto t = target(r, false);
        t.lift = token;
        return runEmpty(s, t);
    };
    auto missing = lift("7");
    REQUIRE(missing.ok());
    CHECK_FALSE(missing->found);
    CHECK(s.getPool("pool").code() == Errc::NotFound);
    store::Pool p{"pool", r.cidr().str(), {}, {}};
    p.sealed = "7";
    REQUIRE(s.createPool(p).ok());
    auto other = lift("8");  // another seal: not this lift's to take back
    REQUIRE(other.ok());
    CHECK_FALSE(other->lifted);
    CHECK(s.getPool("pool")->sealed == "7");
    auto mine = lift("7");
    REQUIRE(mine.ok());
    CHECK(mine->lifted);
    CHECK(s.getPool("pool")->sealed.empty());
}

TEST_CASE("a claim in a sealed pool is written only when unseal confirms, and lifts the seal") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    store::Pool p{"pool", r.cidr().str(), {}, {}};
    p.sealed = "41";
    REQUIRE(s.createPool(p).ok());
    auto run = [&](std::function<core::Result<void>(const std::string&)> unseal,
                   std::vector<Intent> intents) {
        auto retry = quick();
        engine::PoolTransaction tx(s, retry);
        auto t = target(r);
        t.unseal = std::move(unseal);
        return tx.run(t, fixed(std::move(intents)));
    };
    // No unseal: refused (a plain pool is never sealed; nothing may claim in a sealed one).
    auto none = run(nullptr, {Intent::take(owner("a"), r)});
    REQUIRE_FALSE(none.ok());
    CHECK(none.code() == Errc::Conflict);
    // Unseal says no: its error, and nothing written.
    std::string asked;
    auto no = run(
        [&](const std::string& token) -> core::Result<void> {
            asked = token;
            return core::makeError(Errc::Transient, "slice moved");
        },
        {Intent::take(owner("a"), r)});
    REQUIRE_FALSE(no.ok());
    CHECK(no.error().message == "slice moved");
    CHECK(asked == "41");
    CHECK(s.getPool("pool")->allocations.empty());
    CHECK(s.getPool("pool")->sealed == "41");
    // Unseal confirms: the claim is written and the seal is gone.
    auto yes =
        run([](const std::string&) { return core::Result<void>(); }, {Intent::take(owner("a"), r)});
    REQUIRE(yes.ok());
    CHECK(yes->outcomes[0].pick->ip.str() == "10.0.0.1");
    CHECK(s.getPool("pool")->sealed.empty());
}

TEST_CASE("a release in a sealed pool keeps the seal and asks no unseal") {
    store::MemoryStore s;
    auto r = range("10.0.0.0/28");
    store::Pool p{"pool", r.cidr().str(), {{1, owner("a")}}, {}};
    p.sealed = "41";
    REQUIRE(s.createPool(p).ok());
    auto retry = quick();
    engine::PoolTransaction tx(s, retry);
    auto t = target(r, false);
    bool asked = false;
    t.unseal = [&](const std::string&) {
        asked = true;
        return core::Result<void>();
    };
    auto res = tx.run(t, fixed({Intent::release(owner("a"))}));
    REQUIRE(res.ok());
    CHECK_FALSE(asked);
    CHECK(s.getPool("pool")->allocations.empty());
    CHECK(s.getPool("pool")->sealed == "41");
}

TEST_CASE("a seal written after a node cached its pool makes the node's write conflict") {
    store::MemoryStore s;
    MapCache cache;
    auto r = range("10.0.0.0/28");
    {
        auto retry = quick();
        engine::PoolTransaction tx(s, retry, &cache, "ns");
        REQUIRE(tx.run(target(r), fixed({Intent::take(owner("a"), r)})).ok());
        REQUIRE(tx.run(target(r), fixed({Intent::release(owner("a"))})).ok());
    }
    REQUIRE(cache.pools.count("ns/pool"));
    {  // the slice controller seals the empty pool
        auto retry = quick(1);
        engine::PoolTransaction tx(s, retry);
        auto t = target(r);
        t.seal = "9";
        REQUIRE(tx.run(t, fixed({}))->sealed);
    }
    auto retry = quick();
    engine::PoolTransaction tx(s, retry, &cache, "ns");
    auto t = target(r);
    std::string asked;
    t.unseal = [&](const std::string& token) -> core::Result<void> {
        asked = token;
        return core::makeError(Errc::Transient, "not this node's");
    };
    auto res = tx.run(t, fixed({Intent::take(owner("b"), r)}));
    REQUIRE_FALSE(res.ok());
    CHECK(tx.conflicts() == 1);  // the cached copy's write, refused
    CHECK(asked == "9");
    CHECK(s.getPool("pool")->allocations.empty());
}
