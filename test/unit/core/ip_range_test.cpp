#include <doctest/doctest.h>

#include "core/ip_range.h"

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

TEST_CASE("range_start outside the range is an error naming range_start") {
    auto m = err({"10.0.0.0/24", "10.0.1.5", "", {}});
    CHECK(m.find("range_start") != std::string::npos);
    CHECK(m.find("10.0.1.5") != std::string::npos);
}

TEST_CASE("range_end before range_start is an error naming range_end") {
    auto m = err({"10.0.0.0/24", "10.0.0.50", "10.0.0.40", {}});
    CHECK(m.find("range_end") != std::string::npos);
}

TEST_CASE("an unparsable range is an error naming the value") {
    CHECK(err({"10.0.0.0/40", "", "", {}}).find("10.0.0.0/40") != std::string::npos);
    CHECK(err({"banana", "", "", {}}).find("banana") != std::string::npos);
    CHECK(err({"10.0.0.9-10.0.0.2/24", "", "", {}}).find("ends before") != std::string::npos);
}

TEST_CASE("a range with no usable address is an error") {
    CHECK(err({"10.0.0.0/30", "", "", {"10.0.0.0/30"}}).find("no usable") != std::string::npos);
}

TEST_CASE("exclude takes CIDRs and bare IPs and reduces capacity") {
    auto r = mk({"10.0.0.0/24", "", "", {"10.0.0.0/28", "10.0.0.100", "10.0.0.8/29"}});
    CHECK(r.capacity() == 254 - 15 - 1);
    CHECK(r.excluded(*IpAddress::parse("10.0.0.100")));
    CHECK(!r.allocatable(*IpAddress::parse("10.0.0.15")));
    CHECK(r.allocatable(*IpAddress::parse("10.0.0.16")));
}

TEST_CASE("exclude of the wrong family or bad text names the exclude entry") {
    CHECK(err({"10.0.0.0/24", "", "", {"fd00::1"}}).find("exclude[0]") != std::string::npos);
    CHECK(err({"10.0.0.0/24", "", "", {"10.0.0.1", "nope"}}).find("exclude[1]") != std::string::npos);
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
