#include "core/ip_range.h"

#include <doctest/doctest.h>

using namespace allot::core;

static IpRange mk(RangeSpec s) {
    auto r = IpRange::fromSpec(s, "range");
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return *r;
}

static std::string err(RangeSpec s) {
    auto r = IpRange::fromSpec(s, "range");
    REQUIRE(!r.ok());
    CHECK(r.code() == Errc::InvalidConfig);
    return r.error().message;
}

TEST_CASE("a CIDR range excludes its network and broadcast addresses") {
    auto r = mk({"10.0.0.0/29", "", "", {}});
    CHECK(r.start().str() == "10.0.0.1");
    CHECK(r.end().str() == "10.0.0.6");
    CHECK(r.capacity() == 6);
    CHECK(r.isNetworkOrBroadcast(*IpAddress::parse("10.0.0.7")));
}

TEST_CASE("A-B/prefix narrows the range to A..B") {
    auto r = mk({"192.168.2.225-192.168.2.230/24", "", "", {}});
    CHECK(r.cidr().str() == "192.168.2.0/24");
    CHECK(r.start().str() == "192.168.2.225");
    CHECK(r.end().str() == "192.168.2.230");
    CHECK(r.capacity() == 6);
}

TEST_CASE("range_start and range_end narrow the range") {
    auto r = mk({"10.0.0.0/24", "10.0.0.10", "10.0.0.20", {}});
    CHECK(r.capacity() == 11);
    CHECK(r.allocatable(*IpAddress::parse("10.0.0.10")));
    CHECK(!r.allocatable(*IpAddress::parse("10.0.0.21")));
}

static IpRange mkTop(RangeSpec s, std::vector<std::string>& warnings) {
    auto r = IpRange::fromSpec(s, "range", BoundsSyntax::TopLevel, &warnings);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return *r;
}

static bool mentions(const std::vector<std::string>& ws, const std::string& what) {
    for (const auto& w : ws)
        if (w.find(what) != std::string::npos) return true;
    return false;
}

TEST_CASE("range_start outside the range is ignored with a warning naming it, as in Whereabouts") {
    std::vector<std::string> w;
    auto r = mkTop({"10.0.0.0/24", "10.0.1.5", "", {}}, w);
    CHECK(r.start().str() == "10.0.0.1");
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("\"range_start\"") != std::string::npos);
    CHECK(w[0].find("10.0.1.5") != std::string::npos);
    CHECK(w[0].find("ignored") != std::string::npos);
}

TEST_CASE("range_end before range_start is ignored: the range runs to the last usable address") {
    std::vector<std::string> w;
    auto r = mkTop({"10.0.0.0/24", "10.0.0.50", "10.0.0.40", {}}, w);
    CHECK(r.start().str() == "10.0.0.50");
    CHECK(r.end().str() == "10.0.0.254");
    CHECK(mentions(w, "\"range_end\""));
}

TEST_CASE("range_start and range_end naming the network and broadcast addresses are ignored") {
    std::vector<std::string> w;
    auto r = mkTop({"192.168.0.0/29", "192.168.0.0", "192.168.0.8", {}}, w);
    CHECK(r.start().str() == "192.168.0.1");
    CHECK(r.end().str() == "192.168.0.6");
    CHECK(w.size() == 2);
}

TEST_CASE("an unreadable top-level bound is dropped; in ipRanges it is an error") {
    std::vector<std::string> w;
    auto r = mkTop({"10.0.0.0/24", "10.0.0.300", "", {}}, w);
    CHECK(r.start().str() == "10.0.0.1");
    CHECK(mentions(w, "10.0.0.300"));
    auto e = IpRange::fromSpec({"10.0.0.0/24", "10.0.0.300", "", {}}, "ipRanges[0].range");
    REQUIRE(!e.ok());
    CHECK(e.error().message.find("ipRanges[0].range_start") != std::string::npos);
}

TEST_CASE("leading zeros: sloppy in the range and top-level bounds, strict in ipRanges bounds") {
    std::vector<std::string> w;
    auto r = mkTop({"00192.00168.1.0/24", "00192.00168.1.44", "00192.00168.01.209", {}}, w);
    CHECK(r.cidr().str() == "192.168.1.0/24");
    CHECK(r.start().str() == "192.168.1.44");
    CHECK(r.end().str() == "192.168.1.209");
    CHECK(w.empty());
    CHECK(err({"10.0.0.0/24", "010.0.0.5", "", {}}).find("010.0.0.5") != std::string::npos);
}

TEST_CASE("A-B/prefix replaces range_start and range_end, with a warning") {
    std::vector<std::string> w;
    auto r = mkTop({"00192.00168.1.5-000000192.168.1.25/24", "192.168.1.9", "", {}}, w);
    CHECK(r.start().str() == "192.168.1.5");
    CHECK(r.end().str() == "192.168.1.25");
    CHECK(mentions(w, "A-B"));
}

TEST_CASE("an IPv4-mapped literal is the IPv4 address, as Go reads it") {
    std::vector<std::string> w;
    auto r = mkTop({"::ffff:10.0.0.0/120", "::ffff:10.0.0.5", "", {}}, w);
    CHECK(r.cidr().str() == "10.0.0.0/24");
    CHECK(r.start().str() == "10.0.0.5");
}

TEST_CASE("exclude takes CIDRs and bare IPs and reduces capacity") {
    auto r = mk({"10.0.0.0/24", "", "", {"10.0.0.0/28", "10.0.0.100", "10.0.0.8/29"}});
    CHECK(r.capacity() == 254 - 15 - 1);
    CHECK(r.excluded(*IpAddress::parse("10.0.0.100")));
    CHECK(!r.allocatable(*IpAddress::parse("10.0.0.15")));
    CHECK(r.allocatable(*IpAddress::parse("10.0.0.16")));
}

TEST_CASE("an exclude of the other family excludes nothing, with a warning") {
    std::vector<std::string> w;
    auto r = mkTop({"10.0.0.0/24", "", "", {"fd00::1"}}, w);
    CHECK(r.excludes().empty());
    CHECK(mentions(w, "exclude[0]"));
}

TEST_CASE("an unreadable exclude fails ADD only: the range is kept, addError names the entry") {
    auto r = mk({"10.0.0.0/24", "", "", {"10.0.0.1", "nope"}});
    REQUIRE(r.addError());
    CHECK(r.addError()->message.find("exclude[1]") != std::string::npos);
    // Whereabouts reads excludes strictly: a leading zero is unreadable there.
    CHECK(mk({"10.0.0.0/24", "", "", {"010.0.0.1"}}).addError());
    CHECK(!mk({"10.0.0.0/24", "", "", {"10.0.0.4/30", "10.0.0.9"}}).addError());
}

TEST_CASE("IPv6 ranges work for prefixes shorter than /64") {
    auto r = mk({"fd00::/48", "", "", {}});
    CHECK(r.start().str() == "fd00::1");
    CHECK(r.end().str() == "fd00::ffff:ffff:ffff:ffff:fffe");
    CHECK(r.capacity() == (u128(1) << 64));  // saturated
}

TEST_CASE("point-to-point prefixes use every address") {
    CHECK(mk({"10.0.0.4/31", "", "", {}}).capacity() == 2);
    CHECK(mk({"10.0.0.4/32", "", "", {}}).capacity() == 1);
}
