#include "core/batch.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

IpRange range(const char* cidr) {
    auto r = IpRange::fromSpec({cidr, "", "", {}}, "range");
    REQUIRE(r.ok());
    return *r;
}

// One pod, one UID: a pod's new sandbox records the same UID as its earlier one.
Owner owner(const std::string& cid, const std::string& pod = "", const std::string& ifn = "eth0") {
    return Owner{cid, pod, ifn, "node-a", pod.empty() ? "" : "uid-" + pod, "net"};
}

}  // namespace

TEST_CASE("a batch of claims gives each owner its own address in request order") {
    auto r = range("10.0.0.0/29");
    AllocationMap m;
    auto res = applyBatch(r.cidr(), m, {Intent::take(owner("a"), r), Intent::take(owner("b"), r)});
    REQUIRE(res.outcomes.size() == 2);
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.1");
    CHECK(res.outcomes[1].pick->ip.str() == "10.0.0.2");
    CHECK(res.changed);
    CHECK_FALSE(res.wantsFresh);
    CHECK(m.size() == 2);
}

TEST_CASE("one exhausted claim does not hold back the release after it") {
    auto r = range("10.0.0.0/30");  // two addresses
    AllocationMap m{{1, owner("a")}, {2, owner("b")}};
    auto res = applyBatch(r.cidr(), m, {Intent::take(owner("c"), r), Intent::release(owner("a"))});
    CHECK(res.outcomes[0].pick.code() == Errc::Exhausted);
    REQUIRE(res.outcomes[1].pick.ok());
    CHECK(res.outcomes[1].pick->ip.str() == "10.0.0.1");
    CHECK(res.outcomes[1].released.containerId == "a");
    CHECK(res.changed);
    CHECK(res.wantsFresh);  // exhaustion is only trusted on fresh data
    CHECK(m.count(1) == 0);
}

TEST_CASE("a claim already held answers without a change, and asks for fresh data") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{3, owner("a")}};
    auto res = applyBatch(r.cidr(), m, {Intent::take(owner("a"), r)});
    CHECK(res.outcomes[0].pick->kind == PickKind::Existing);
    CHECK(res.outcomes[0].pick->offset == 3);
    CHECK_FALSE(res.changed);
    CHECK(res.wantsFresh);
}

TEST_CASE("an address reserved elsewhere is given back and another one picked") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{1, owner("a")}};
    Intent in = Intent::take(owner("a"), r);
    in.avoid = {1};
    auto res = applyBatch(r.cidr(), m, {in});
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->offset == 2);
    CHECK(m.count(1) == 0);
    CHECK(m.at(2).containerId == "a");
}

TEST_CASE("each claim picks in its own window and never its own gateway") {
    auto r = range("10.0.0.0/24");
    Intent narrow = Intent::take(
        owner("a"), *IpRange::fromSpec({"10.0.0.0/24", "10.0.0.100", "10.0.0.110", {}}, "range"),
        *IpAddress::parse("10.0.0.100"));
    AllocationMap m;
    auto res = applyBatch(r.cidr(), m, {narrow, Intent::take(owner("b"), r)});
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.101");
    CHECK(res.outcomes[1].pick->ip.str() == "10.0.0.1");
}

TEST_CASE("release takes only the exact container and interface") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{1, owner("a", "ns/p", "eth0")}, {2, owner("a", "ns/p", "net1")}};
    auto res = applyBatch(r.cidr(), m, {Intent::release(owner("a", "ns/p", "net1"))});
    CHECK(res.outcomes[0].pick->offset == 2);
    CHECK(m.size() == 1);
    auto none = applyBatch(r.cidr(), m, {Intent::release(owner("x"))});
    CHECK(none.outcomes[0].pick.code() == Errc::NotFound);
    CHECK_FALSE(none.changed);
    CHECK(none.wantsFresh);
}

TEST_CASE("release-if-held frees an entry only while the owner seen still holds it") {
    auto r = range("10.0.0.0/29");
    Owner seen = owner("old", "ns/p");
    AllocationMap m{{4, owner("new", "ns/p")}};  // handed over to a new sandbox since the read
    auto res = applyBatch(r.cidr(), m, {Intent::releaseIfHeld(4, seen)});
    CHECK(res.outcomes[0].pick.code() == Errc::NotFound);
    CHECK_FALSE(res.changed);
    CHECK(m.size() == 1);

    m[4] = seen;
    res = applyBatch(r.cidr(), m, {Intent::releaseIfHeld(4, seen)});
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.4");
    CHECK(res.outcomes[0].released == seen);
    CHECK(m.empty());
}

TEST_CASE("an entry nobody can decode is never released by ownership") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{5, Owner{}}};  // the placeholder of an undecodable entry
    auto res = applyBatch(r.cidr(), m, {Intent::releaseIfHeld(5, Owner{})});
    CHECK(res.outcomes[0].pick.code() == Errc::NotFound);
    CHECK(m.count(5) == 1);
}

TEST_CASE("a claim without a window is refused as a bug, not served from the whole pool") {
    auto r = range("10.0.0.0/29");
    AllocationMap m;
    Intent in;
    in.owner = owner("a");
    auto res = applyBatch(r.cidr(), m, {in});
    CHECK(res.outcomes[0].pick.code() == Errc::Internal);
    CHECK(m.empty());
}

namespace {

Intent cooledClaim(const Owner& o, const IpRange& r, int64_t cooldownS) {
    Intent in = Intent::take(o, r);
    in.cooldownS = cooldownS;
    return in;
}

}  // namespace

TEST_CASE("with a cooldown, a released address is recorded and not handed out again at once") {
    auto r = range("10.0.0.0/29");
    AllocationMap m;
    ReleaseLog log;
    applyBatch(r.cidr(), m, {cooledClaim(owner("a"), r, 30)}, &log, 1000);
    CHECK(log.keepS == 30);
    applyBatch(r.cidr(), m, {Intent::release(owner("a"))}, &log, 1001);
    REQUIRE(log.at.count(1) == 1);
    CHECK(log.at.at(1) == 1001);
    auto res = applyBatch(r.cidr(), m, {cooledClaim(owner("b"), r, 30)}, &log, 1010);
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.2");  // .1 still cools down
    // Past the cooldown the lowest free address is back in turn, and the log forgets it.
    res = applyBatch(r.cidr(), m, {cooledClaim(owner("c"), r, 30)}, &log, 1031);
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.1");
    CHECK(log.at.empty());
}

TEST_CASE("a cooldown yields to exhaustion: the address released longest ago is handed out") {
    auto r = range("10.0.0.0/30");  // .1 and .2
    AllocationMap m;
    ReleaseLog log{60, {{1, 1005}, {2, 1002}}};
    auto res = applyBatch(r.cidr(), m, {cooledClaim(owner("a"), r, 60)}, &log, 1010);
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.2");
    CHECK(log.at.count(2) == 0);
    res = applyBatch(r.cidr(), m, {cooledClaim(owner("b"), r, 60)}, &log, 1010);
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.1");
    res = applyBatch(r.cidr(), m, {cooledClaim(owner("c"), r, 60)}, &log, 1010);
    CHECK(res.outcomes[0].pick.code() == Errc::Exhausted);
}

TEST_CASE("without a cooldown nothing is recorded and the lowest free address is picked") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{1, owner("a")}};
    ReleaseLog log;
    applyBatch(r.cidr(), m, {Intent::release(owner("a"))}, &log, 1000);
    CHECK(log.at.empty());
    // A config without a cooldown sharing a pool that has one ignores the log when picking,
    // while releases keep being recorded for the configs that have one.
    ReleaseLog shared{30, {{1, 995}}};
    auto res = applyBatch(r.cidr(), m, {Intent::take(owner("b"), r)}, &shared, 1000);
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.1");
    applyBatch(r.cidr(), m, {Intent::releaseIfHeld(1, owner("b"))}, &shared, 1001);
    CHECK(shared.at.at(1) == 1001);
}

TEST_CASE("a requested address is handed out even while it cools down") {
    auto r = range("10.0.0.0/29");
    AllocationMap m;
    ReleaseLog log{30, {{3, 1000}}};
    Intent in = cooledClaim(owner("a"), r, 30);
    in.requested = IpAddress::parse("10.0.0.3").value();
    auto res = applyBatch(r.cidr(), m, {in}, &log, 1001);
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->ip.str() == "10.0.0.3");
}

namespace {

Owner claimed(const std::string& cid, const std::string& pod, const std::string& claim) {
    Owner o = owner(cid, pod, "pod7");
    o.claim = claim;
    return o;
}

}  // namespace

TEST_CASE("a claim-owned address survives its pod's DEL and every pod-scoped release") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{3, claimed("src", "vms/launcher-a", "vms/vm-a.pod7")}};
    auto del = applyBatch(r.cidr(), m, {Intent::release(m.at(3))});
    CHECK(del.outcomes[0].pick.code() == Errc::NotFound);
    CHECK(del.outcomes[0].pick.error().message.find("IPAMClaim vms/vm-a.pod7") !=
          std::string::npos);
    CHECK_FALSE(del.changed);
    // allot-gc's pod deletion, repair, GC verb: the entry as seen, without claimGone.
    auto gc = applyBatch(r.cidr(), m, {Intent::releaseIfHeld(3, m.at(3))});
    CHECK(gc.outcomes[0].pick.code() == Errc::NotFound);
    REQUIRE(m.count(3) == 1);
    // The claim confirmed gone: released.
    Intent gone = Intent::releaseIfHeld(3, m.at(3));
    gone.claimGone = true;
    auto freed = applyBatch(r.cidr(), m, {gone});
    CHECK(freed.outcomes[0].pick.ok());
    CHECK(m.empty());
}

TEST_CASE("a second pod with the same claim gets the same address without taking the entry") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{3, claimed("src", "vms/launcher-a", "vms/vm-a.pod7")}};
    // Without a requested address (the claim's status not written yet) and with it.
    auto any = applyBatch(r.cidr(), m,
                          {Intent::take(claimed("dst", "vms/launcher-b", "vms/vm-a.pod7"), r)});
    REQUIRE(any.outcomes[0].pick.ok());
    CHECK(any.outcomes[0].pick->offset == 3);
    CHECK(any.outcomes[0].pick->kind == PickKind::Shared);
    Intent exact = Intent::take(claimed("dst", "vms/launcher-b", "vms/vm-a.pod7"), r);
    exact.requested = IpAddress::parse("10.0.0.3").value();
    auto res = applyBatch(r.cidr(), m, {exact});
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->kind == PickKind::Shared);
    CHECK(m.at(3).containerId == "src");  // the source pod still holds the entry
    // Another claim asking for that address is refused.
    Intent other = Intent::take(claimed("x", "vms/launcher-c", "vms/vm-b.pod7"), r);
    other.requested = IpAddress::parse("10.0.0.3").value();
    CHECK(applyBatch(r.cidr(), m, {other}).outcomes[0].pick.code() == Errc::InvalidConfig);
}

TEST_CASE("the release log stays bounded: the oldest release gives way, future dates are dropped") {
    auto r = range("10.0.0.0/16");
    AllocationMap m;
    ReleaseLog log{600, {}};
    for (u128 off = 1; off <= kMaxReleaseLog; ++off)
        log.at[off] = 1000 + static_cast<int64_t>(off % 400);
    log.at[5] = 999;  // the oldest
    m[9000] = owner("a");
    applyBatch(r.cidr(), m, {Intent::release(owner("a"))}, &log, 1500);
    CHECK(log.at.size() == kMaxReleaseLog);
    CHECK(log.at.count(5) == 0);
    CHECK(log.at.at(9000) == 1500);
    ReleaseLog skewed{60, {{3, 5000}, {4, 1010}}};
    applyBatch(r.cidr(), m, {}, &skewed, 1020);
    CHECK(skewed.at == std::map<u128, int64_t>{{4, 1010}});
}
