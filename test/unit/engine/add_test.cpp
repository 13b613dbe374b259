// The engine's ADD (engine/add.h) over a MemoryStore: which address an owner gets, what the
// call writes, and what a failed call takes back.
#include "engine/add.h"

#include <doctest/doctest.h>

#include "core/allocator.h"
#include "engine/release.h"
#include "engine_fixture.h"

using namespace allot;
using core::Errc;
using test::config;
using test::ip;
using test::kPool;
using test::kV4;
using test::owner;

TEST_CASE("an ADD takes the lowest free address, records its owner in the pool and reserves it") {
    test::Engine e;
    auto a = e.add(config(kV4), owner("ctr1"));
    REQUIRE(a);
    REQUIRE(a->size() == 1);
    CHECK(test::cidr((*a)[0]) == "10.0.0.2/29");  // .1 is the gateway
    REQUIRE((*a)[0].gateway);
    CHECK((*a)[0].gateway->str() == "10.0.0.1");
    auto held = e.allocations(kPool);
    REQUIRE(held.size() == 1);
    CHECK(held.at(2) == owner("ctr1"));
    CHECK(held.at(2).node == "node-a");
    CHECK(held.at(2).podRef == "ns/pod1");
    auto r = e.mem->getReservation("10.0.0.2");
    REQUIRE(r);
    CHECK(r->containerId == "ctr1");
    CHECK(r->podRef == "ns/pod1");
}

TEST_CASE("an ADD again for the same container returns its address and writes no second entry") {
    test::Engine e;
    const auto cfg = config(kV4);
    auto a = e.add(cfg, owner("ctr1"));
    auto b = e.add(cfg, owner("ctr1"));
    CHECK(test::firstCidr(a) == test::firstCidr(b));
    CHECK(e.allocations(kPool).size() == 1);
}

TEST_CASE("a new sandbox of the same pod takes over its address; the old sandbox's DEL keeps it") {
    test::Engine e;
    const auto cfg = config(kV4);
    auto a = e.add(cfg, owner("old", "pod1", "u1"));
    auto b = e.add(cfg, owner("new", "pod1", "u1"));
    CHECK(test::firstCidr(a) == test::firstCidr(b));
    auto d = e.del(cfg, owner("old", "pod1", "u1"));
    REQUIRE(d);
    CHECK_FALSE(*d);  // nothing journaled: there was nothing of "old" to release
    auto held = e.allocations(kPool);
    REQUIRE(held.size() == 1);
    CHECK(held.begin()->second.containerId == "new");
    CHECK(e.mem->getReservation("10.0.0.2").ok());
}

TEST_CASE("a handover records the new container on the pool entry and on the reservation") {
    test::Engine e;
    const auto cfg = config(kV4);
    auto a = e.add(cfg, owner("old", "pod1", "u1"));
    auto b = e.add(cfg, owner("new", "pod1", "u1"));
    REQUIRE(test::firstCidr(a) == test::firstCidr(b));
    auto r = e.mem->getReservation("10.0.0.2");
    REQUIRE(r);
    CHECK(r->containerId == "new");
    CHECK(e.allocations(kPool).at(2).containerId == "new");
}

TEST_CASE(
    "a pod re-created under its name with another UID gets another address: the old sandbox may "
    "still hold its own") {
    test::Engine e;
    const auto cfg = config(kV4);
    auto a = e.add(cfg, owner("old", "pod1", "u1"));
    auto b = e.add(cfg, owner("new", "pod1", "u2"));
    REQUIRE(b);
    CHECK(test::firstCidr(a) != test::firstCidr(b));
    CHECK(e.reservation("10.0.0.2").containerId == "old");
    CHECK(e.allocations(kPool).at(2).containerId == "old");
    CHECK(e.allocations(kPool).size() == 2);
}

TEST_CASE("a gateway outside the range is answered with the address and never fails (issue 14)") {
    test::Engine e;
    auto a = e.add(config(R"("range":"10.1.0.64/26","gateway":"10.1.0.1")"), owner("ctr1"));
    CHECK(test::firstCidr(a) == "10.1.0.65/26");
    REQUIRE((*a)[0].gateway);
    CHECK((*a)[0].gateway->str() == "10.1.0.1");
}

TEST_CASE("an exhausted range fails with Exhausted naming the range, and writes no entry") {
    test::Engine e;
    const auto cfg = config(kV4);
    for (int i = 0; i < 5; ++i)
        REQUIRE(e.add(cfg, owner("c" + std::to_string(i), "p" + std::to_string(i))));
    auto full = e.add(cfg, owner("c9", "p9"));
    REQUIRE_FALSE(full);
    CHECK(full.code() == Errc::Exhausted);
    CHECK(full.error().message.find("10.0.0.0/29") != std::string::npos);
    auto held = e.allocations(kPool);
    CHECK(held.size() == 5);
    CHECK_FALSE(core::findHolder(held, "c9", "net1"));
}

TEST_CASE("a multi-range ADD gives back the earlier ranges' addresses when a later one is full") {
    test::Engine e;
    const auto cfg = config(R"("ipRanges":[{"range":"10.1.0.0/24"},{"range":"fd00::/126"}])");
    REQUIRE(e.add(cfg, owner("a", "a")));
    REQUIRE(e.add(cfg, owner("b", "b")));
    auto c = e.add(cfg, owner("c", "c"));
    REQUIRE_FALSE(c);
    CHECK(c.code() == Errc::Exhausted);
    CHECK(c.error().message.find("fd00::/126") != std::string::npos);
    auto v4 = e.allocations("10.1.0.0-24");
    CHECK(v4.size() == 2);
    CHECK_FALSE(core::findHolder(v4, "c", "net1"));
    CHECK(test::notFound(e.mem->getReservation("10.1.0.3")));
}

TEST_CASE("a dual-stack ADD answers one address per range, in the config's order") {
    test::Engine e;
    auto a = e.add(config(R"("range":"10.2.0.0/24","ipRanges":[{"range":"fd00:1::/64"}])"),
                   owner("ctr1"));
    REQUIRE(a);
    REQUIRE(a->size() == 2);
    CHECK(test::cidr((*a)[0]) == "10.2.0.1/24");
    CHECK(test::cidr((*a)[1]) == "fd00:1::1/64");
}

TEST_CASE("a requested address is given when free; one held or in no range is InvalidConfig") {
    test::Engine e;
    const auto cfg = config(kV4);
    CHECK(test::firstCidr(e.add(cfg, owner("c1", "p1"), {ip("10.0.0.5")})) == "10.0.0.5/29");
    CHECK(test::firstCidr(e.add(cfg, owner("c3", "p3"), {ip("10.0.0.4")})) == "10.0.0.4/29");
    auto taken = e.add(cfg, owner("c4", "p4"), {ip("10.0.0.4")});
    REQUIRE_FALSE(taken);
    CHECK(taken.code() == Errc::InvalidConfig);
    auto outside = e.add(cfg, owner("c5", "p5"), {ip("10.9.0.4")});
    REQUIRE_FALSE(outside);
    CHECK(outside.code() == Errc::InvalidConfig);
    CHECK(outside.error().message.find("10.9.0.4") != std::string::npos);
    auto held = e.allocations(kPool);
    CHECK(held.size() == 2);
    CHECK(held.at(4).containerId == "c3");
}

TEST_CASE("an ADD against an unreachable store fails with Transient and writes nothing") {
    test::Engine e;
    e.mem->setUnreachable(true);
    auto a = e.add(config(R"("range":"10.0.0.0/29","deadline_ms":50)"), owner("ctr1"));
    REQUIRE_FALSE(a);
    CHECK(a.code() == Errc::Transient);
    e.mem->setUnreachable(false);
    CHECK(e.mem->listPools()->empty());
}

TEST_CASE("pool writes lost to another writer are retried until one lands, each one counted") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("first")));
    e.mem->conflictNext(3);
    auto ctx = e.context(cfg);
    auto a = engine::add(ctx, cfg, "net", owner("second", "p2"), {});
    CHECK(test::firstCidr(a) == "10.0.0.3/29");
    CHECK(ctx.report.conflicts == 3);
    CHECK(e.allocations(kPool).size() == 2);
}

TEST_CASE("an address reserved through an overlapping pool is skipped and its entry given back") {
    test::Engine e;
    REQUIRE(e.mem->createReservation({"10.0.0.2", "other", "ns/other", "eth0", {}}).ok());
    CHECK(test::firstCidr(e.add(config(kV4), owner("ctr1"))) == "10.0.0.3/29");
    // The first pick, written before its reservation was found taken, was given back.
    auto held = e.allocations(kPool);
    CHECK(held.size() == 1);
    CHECK(held.count(3) == 1);
    // Without overlap checks, reservations are not consulted.
    auto off = e.add(config(R"("range":"10.0.0.0/29","enable_overlapping_ranges":false)"),
                     owner("c2", "p2"));
    CHECK(test::firstCidr(off) == "10.0.0.1/29");
}

TEST_CASE("a pool of the same name over another range is an InvalidConfig collision") {
    test::Engine e;
    REQUIRE(e.mem->createPool({kPool, "10.0.0.0/28", {}, {}}).ok());
    auto a = e.add(config(kV4), owner("ctr1"));
    REQUIRE_FALSE(a);
    CHECK(a.code() == Errc::InvalidConfig);
    CHECK(a.error().message.find("collision") != std::string::npos);
    CHECK(e.allocations(kPool).empty());
}

TEST_CASE(
    "released_ip_cooldown_s: a freed address goes to the next ADD only when nothing else is "
    "free") {
    test::Engine e;
    const auto cfg = config(R"("range":"10.0.0.0/30","released_ip_cooldown_s":600)");
    CHECK(test::firstCidr(e.add(cfg, owner("c1", "p1"))) == "10.0.0.1/30");
    REQUIRE(e.del(cfg, owner("c1", "p1")));
    CHECK(e.pool("10.0.0.0-30").released.at.count(1) == 1);
    CHECK(test::firstCidr(e.add(cfg, owner("c2", "p2"))) == "10.0.0.2/30");
    // The only one left: the cooldown yields.
    CHECK(test::firstCidr(e.add(cfg, owner("c3", "p3"))) == "10.0.0.1/30");
    CHECK(e.pool("10.0.0.0-30").released.at.empty());
}
