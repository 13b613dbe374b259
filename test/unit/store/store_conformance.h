#pragma once
// The store conformance suite: every PoolStore implementation must pass it. Pool and
// reservation names are prefixed with `prefix` so runs against a shared server do not collide.

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "core/naming.h"
#include "store/pool_store.h"

namespace allot::test {

inline void storeConformance(store::PoolStore& s, const std::string& prefix) {
    using core::Errc;
    const std::string name = prefix + "10.50.0.0-24";

    SUBCASE("a missing pool is NotFound") {
        auto p = s.getPool(prefix + "absent");
        REQUIRE(!p.ok());
        CHECK(p.code() == Errc::NotFound);
    }
    SUBCASE("created pools read back with a version; a second create is AlreadyExists") {
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        CHECK(!made->resourceVersion.empty());
        auto again = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(!again.ok());
        CHECK(again.code() == Errc::AlreadyExists);
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        CHECK(got->range == "10.50.0.0/24");
        CHECK(got->allocations.empty());
    }
    SUBCASE("an update with the current version succeeds and a stale one is Conflict") {
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        p.allocations[5] = core::Owner{"ctr-a", "ns/a", "eth0", "node-1", "uid-1", "net"};
        auto up = s.updatePool(p);
        REQUIRE(up.ok());
        CHECK(up->resourceVersion != made->resourceVersion);
        auto stale = *made;
        stale.allocations[6] = core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""};
        auto c = s.updatePool(stale);
        REQUIRE(!c.ok());
        CHECK(c.code() == Errc::Conflict);
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        REQUIRE(got->allocations.size() == 1);
        const auto& o = got->allocations.at(5);
        CHECK(o.containerId == "ctr-a");
        CHECK(o.podRef == "ns/a");
        CHECK(o.ifName == "eth0");
        CHECK(o.node == "node-1");
        CHECK(o.podUid == "uid-1");
    }
    SUBCASE("an update of a missing pool is NotFound") {
        auto r = s.updatePool({prefix + "gone", "10.50.0.0/24", {}, "1"});
        REQUIRE(!r.ok());
        CHECK((r.code() == Errc::NotFound || r.code() == Errc::Conflict));
    }
    SUBCASE("IPv6 offsets beyond 64 bits survive a round trip") {
        std::string n6 = prefix + "fd00---32";
        auto made = s.createPool({n6, "fd00::/32", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        core::u128 big = (core::u128(1) << 80) + 7;
        p.allocations[big] = core::Owner{"c6", "ns/six", "net1", "", "", ""};
        REQUIRE(s.updatePool(p).ok());
        auto got = s.getPool(n6);
        REQUIRE(got.ok());
        CHECK(got->allocations.count(big) == 1);
    }
    SUBCASE("reservations are exclusive and deletable with a version precondition") {
        std::string rn = prefix + "10.50.0.9";
        auto a = s.createReservation({rn, "ctr-a", "ns/a", "eth0", {}});
        REQUIRE(a.ok());
        auto b = s.createReservation({rn, "ctr-b", "ns/b", "eth0", {}});
        REQUIRE(!b.ok());
        CHECK(b.code() == Errc::AlreadyExists);
        auto got = s.getReservation(rn);
        REQUIRE(got.ok());
        CHECK(got->containerId == "ctr-a");
        CHECK(got->podRef == "ns/a");
        CHECK(store::reservedFor(*got, core::Owner{"ctr-a", "ns/a", "eth0", "", "", ""}));
        CHECK(!store::reservedFor(*got, core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""}));
        auto list = s.listReservations();
        REQUIRE(list.ok());
        bool listed = false;
        for (const auto& r : *list) listed = listed || r.name == rn;
        CHECK(listed);
        auto wrong = s.deleteReservation(rn, "999999999");
        REQUIRE(!wrong.ok());
        CHECK(wrong.code() == Errc::Conflict);
        REQUIRE(s.deleteReservation(rn, got->resourceVersion).ok());
        CHECK(s.getReservation(rn).code() == Errc::NotFound);
        CHECK(s.deleteReservation(rn, "").code() == Errc::NotFound);
    }
    SUBCASE("pools are listed") {
        REQUIRE(s.createPool({name, "10.50.0.0/24", {}, {}}).ok());
        auto list = s.listPools();
        REQUIRE(list.ok());
        bool found = false;
        for (const auto& p : *list) found = found || p.name == name;
        CHECK(found);
    }
    SUBCASE("the store answers ping") { CHECK(s.ping().ok()); }
}

// Concurrent writers with read-modify-write retry: every success is distinct and stored.
inline void storeConcurrency(const std::function<std::unique_ptr<store::PoolStore>()>& open,
                             const std::string& prefix, int writers) {
    const std::string name = prefix + "10.60.0.0-24";
    auto s0 = open();
    REQUIRE(s0->createPool({name, "10.60.0.0/24", {}, {}}).ok());
    std::atomic<int> conflicts{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            auto s = open();
            for (;;) {
                auto p = s->getPool(name);
                if (!p) continue;
                core::u128 off = 1;
                while (p->allocations.count(off)) ++off;
                p->allocations[off] = core::Owner{"w" + std::to_string(w), "", "eth0", "", "", ""};
                auto up = s->updatePool(*p);
                if (up) return;
                if (up.code() == core::Errc::Conflict) ++conflicts;
            }
        });
    }
    for (auto& t : threads) t.join();
    auto final = s0->getPool(name);
    REQUIRE(final.ok());
    CHECK(final->allocations.size() == static_cast<size_t>(writers));
    std::set<std::string> owners;
    for (const auto& [off, o] : final->allocations) owners.insert(o.containerId);
    CHECK(owners.size() == static_cast<size_t>(writers));
    MESSAGE("conflicts survived: " << conflicts.load());
}

}  // namespace allot::test
