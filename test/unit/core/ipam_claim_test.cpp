#include "core/ipam_claim.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

std::vector<IpRange> dualStack() {
    auto v4 = IpRange::fromSpec({"10.0.0.0/24", "", "", {"10.0.0.100/30"}}, "range");
    auto v6 = IpRange::fromSpec({"fd00::/120", "", "", {}}, "ipRanges[0]");
    REQUIRE(v4.ok());
    REQUIRE(v6.ok());
    return {*v4, *v6};
}

}  // namespace

TEST_CASE("an empty claim means allocate as usual") {
    auto p = planClaim({"vms/vm-a.pod7", "vm-net", {}}, "vm-net", dualStack());
    REQUIRE(p.ok());
    CHECK(p->allocate);
    CHECK(p->warnings.empty());
}

TEST_CASE("a claim's status addresses are what each range must hold, in config order") {
    auto p = planClaim({"vms/a", "vm-net", {"fd00::7/120", "10.0.0.5/24"}}, "vm-net", dualStack());
    REQUIRE(p.ok());
    CHECK_FALSE(p->allocate);
    REQUIRE(p->perRange.size() == 2);
    CHECK(p->perRange[0]->str() == "10.0.0.5");
    CHECK(p->perRange[1]->str() == "fd00::7");
    // Only the IPv4 one recorded: the IPv6 range allocates as usual.
    auto q = planClaim({"vms/a", "vm-net", {"10.0.0.5"}}, "vm-net", dualStack());
    REQUIRE(q.ok());
    CHECK_FALSE(q->perRange[1].has_value());
}

TEST_CASE("a claim for another network is used with a warning naming both") {
    auto p = planClaim({"vms/a", "red", {}}, "vm-net", dualStack());
    REQUIRE(p.ok());
    REQUIRE(p->warnings.size() == 1);
    CHECK(p->warnings[0].find("\"red\"") != std::string::npos);
    CHECK(p->warnings[0].find("\"vm-net\"") != std::string::npos);
}

TEST_CASE("status addresses outside the ranges, unreadable, excluded or doubled are refused") {
    for (const char* bad : {"10.9.9.9/24", "banana", "10.0.0.101/24", "10.0.0.0/24"}) {
        auto p = planClaim({"vms/a", "vm-net", {bad}}, "vm-net", dualStack());
        REQUIRE_MESSAGE(!p.ok(), bad);
        CHECK(p.code() == Errc::InvalidConfig);
        CHECK(p.error().message.find("IPAMClaim vms/a") != std::string::npos);
        CHECK(p.error().message.find(bad) != std::string::npos);
    }
    auto twice =
        planClaim({"vms/a", "vm-net", {"10.0.0.5/24", "10.0.0.6/24"}}, "vm-net", dualStack());
    REQUIRE(!twice.ok());
    CHECK(twice.error().message.find("same range as 10.0.0.5") != std::string::npos);
}

TEST_CASE("a claim reference must be an object name") {
    CHECK(claimName("vm-a.net1", "args.cni ipam-claim-reference").value() == "vm-a.net1");
    for (const char* bad : {"", "../x", "a/b", "Vm", "-a", "a.", "a b"}) {
        auto n = claimName(bad, "args.cni ipam-claim-reference");
        REQUIRE_MESSAGE(!n.ok(), bad);
        CHECK(n.code() == Errc::InvalidConfig);
        CHECK(n.error().message.find("args.cni ipam-claim-reference") != std::string::npos);
    }
    CHECK_FALSE(claimName(std::string(254, 'a'), "x").ok());
}
