#include "core/batch.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

IpRange range(const char* cidr) {
    auto r = IpRange::fromSpec({cidr, "", "", {}}, "range");
    REQUIRE(r.ok());
    return *r;
}

Owner owner(const std::string& cid, const std::string& pod = "", const std::string& ifn = "eth0") {
    return Owner{cid, pod, ifn, "node-a", "", "net"};
}

}  // namespace

TEST_CASE("a batch of claims gives each owner its own address in request order") {
    auto r = range("10.0.0.0/29");
    AllocationMap m;
    auto res =
        applyBatch(r.cidr(), m, {Intent::claim(owner("a"), r), Intent::claim(owner("b"), r)});
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
    auto res = applyBatch(r.cidr(), m, {Intent::claim(owner("c"), r), Intent::release(owner("a"))});
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
    auto res = applyBatch(r.cidr(), m, {Intent::claim(owner("a"), r)});
    CHECK(res.outcomes[0].pick->kind == PickKind::Existing);
    CHECK(res.outcomes[0].pick->offset == 3);
    CHECK_FALSE(res.changed);
    CHECK(res.wantsFresh);
}

TEST_CASE("an address reserved elsewhere is given back and another one picked") {
    auto r = range("10.0.0.0/29");
    AllocationMap m{{1, owner("a")}};
    Intent in = Intent::claim(owner("a"), r);
    in.avoid = {1};
    auto res = applyBatch(r.cidr(), m, {in});
    REQUIRE(res.outcomes[0].pick.ok());
    CHECK(res.outcomes[0].pick->offset == 2);
    CHECK(m.count(1) == 0);
    CHECK(m.at(2).containerId == "a");
}

TEST_CASE("each claim picks in its own window and never its own gateway") {
    auto r = range("10.0.0.0/24");
    Intent narrow = Intent::claim(
        owner("a"), *IpRange::fromSpec({"10.0.0.0/24", "10.0.0.100", "10.0.0.110", {}}, "range"),
        *IpAddress::parse("10.0.0.100"));
    AllocationMap m;
    auto res = applyBatch(r.cidr(), m, {narrow, Intent::claim(owner("b"), r)});
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
