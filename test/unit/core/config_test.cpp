#include "core/config.h"

#include <doctest/doctest.h>

using namespace allot::core;

static IpamConfig base() {
    IpamConfig c;
    c.type = "whereabouts";
    c.ranges.push_back({"10.0.0.0/24", "", "", {}});
    c.topLevelRange = true;
    return c;
}

static std::string err(const IpamConfig& c) {
    auto r = validate(c);
    REQUIRE(!r.ok());
    CHECK(r.code() == Errc::InvalidConfig);
    return r.error().message;
}

TEST_CASE("a minimal whereabouts config validates with overlapping ranges on by default") {
    auto r = validate(base());
    REQUIRE(r.ok());
    CHECK(r->ranges.size() == 1);
    CHECK(r->raw.enableOverlappingRanges);
    CHECK(!r->gateway);
}

TEST_CASE("type must be allot or whereabouts") {
    auto c = base();
    c.type = "allot";
    CHECK(validate(c).ok());
    c.type = "host-local";
    CHECK(err(c).find("host-local") != std::string::npos);
}

TEST_CASE("no range at all is accepted with a warning, as Whereabouts starts such a pod") {
    IpamConfig c;
    c.type = "allot";
    auto r = validate(c);
    REQUIRE(r.ok());
    CHECK(r->ranges.empty());
    REQUIRE(r->warnings.size() == 1);
    CHECK(r->warnings[0].find("no address") != std::string::npos);
}

TEST_CASE("warnings from the top-level range name \"range_start\", from ipRanges the entry") {
    auto c = base();
    c.ranges[0].rangeStart = "10.9.9.9";
    auto r = validate(c);
    REQUIRE(r.ok());
    REQUIRE(r->warnings.size() == 1);
    CHECK(r->warnings[0].find("\"range_start\"") != std::string::npos);
    auto d = base();
    d.ranges.push_back({"fd00::/64", "fd00::5", "fd00::2", {}});
    auto e = validate(d);
    REQUIRE(e.ok());
    REQUIRE(e->warnings.size() == 1);
    CHECK(e->warnings[0].find("ipRanges[0].range_end") != std::string::npos);
    auto f = base();
    f.ranges.push_back({"fd00::/64", "fd00::zz", "", {}});
    CHECK(err(f).find("ipRanges[0].range_start") != std::string::npos);
}

TEST_CASE("overlapping ipRanges entries are accepted; two entries with one network are not") {
    auto c = base();
    c.ranges.push_back({"10.0.0.128/25", "", "", {}});
    CHECK(validate(c).ok());
    c.ranges.push_back({"10.0.0.7/24", "", "", {}});
    auto m = err(c);
    CHECK(m.find("10.0.0.7/24") != std::string::npos);
    CHECK(m.find("same network") != std::string::npos);
}

TEST_CASE("an unreadable exclude becomes the config's addError, not a validation error") {
    auto c = base();
    c.ranges[0].exclude = {"10.0.0.300"};
    auto r = validate(c);
    REQUIRE(r.ok());
    REQUIRE(r->addError);
    CHECK(r->addError->message.find("exclude[0]") != std::string::npos);
}

TEST_CASE("dual-stack ipRanges validate") {
    auto c = base();
    c.ranges.push_back({"fd00::/64", "", "", {}});
    auto r = validate(c);
    REQUIRE(r.ok());
    CHECK(r->ranges[1].family() == Family::V6);
}

TEST_CASE("the gateway must parse, and may sit outside every range") {
    auto c = base();
    c.gateway = "10.0.0.1";
    CHECK(validate(c)->gateway->str() == "10.0.0.1");
    // The most common real configuration: the pool is a block, the router elsewhere.
    c.ranges[0].range = "10.1.0.64/26";
    c.gateway = "10.1.0.1";
    auto r = validate(c);
    REQUIRE(r.ok());
    CHECK(r->gateway->str() == "10.1.0.1");
    CHECK(r->warnings.empty());
    c.gateway = "010.001.000.001";  // Whereabouts reads the gateway sloppily
    CHECK(validate(c)->gateway->str() == "10.1.0.1");
    c.gateway = "fd00::1";
    CHECK(validate(c)->warnings.size() == 1);
    c.gateway = "ten";
    CHECK(err(c).find("ten") != std::string::npos);
}

TEST_CASE("network_name must be usable in object names") {
    auto c = base();
    c.networkName = "Blue_Net";
    CHECK(err(c).find("network_name") != std::string::npos);
    c.networkName = "blue-net";
    CHECK(validate(c).ok());
}

TEST_CASE("node_slice_size must be a prefix longer than the range") {
    auto c = base();
    c.ranges[0].range = "10.0.0.0/16";
    c.nodeSliceSize = "/24";
    CHECK(*validate(c)->sliceSize == 24);
    c.nodeSliceSize = "/8";
    CHECK(err(c).find("node_slice_size") != std::string::npos);
    c.nodeSliceSize = "big";
    CHECK(err(c).find("big") != std::string::npos);
}

TEST_CASE("node_slice_parts: a power of two up to 16, with node slices and reservations") {
    auto c = base();
    c.ranges[0].range = "10.0.0.0/16";
    c.nodeSliceSize = "/24";
    c.sliceParts = 4;
    CHECK(validate(c)->sliceParts == 4);
    c.sliceParts = 3;
    CHECK(err(c).find("node_slice_parts") != std::string::npos);
    c.sliceParts = 32;
    CHECK(err(c).find("1, 2, 4, 8 or 16") != std::string::npos);
    c.sliceParts = 4;
    c.enableOverlappingRanges = false;
    CHECK(err(c).find("enable_overlapping_ranges") != std::string::npos);
    c.enableOverlappingRanges = true;
    c.nodeSliceSize = "/29";
    CHECK(err(c).find("fewer than 4 addresses") != std::string::npos);
    // Dual-stack: the second range's slices are cut as many times as the first's.
    c.nodeSliceSize = "/24";
    c.ranges.push_back({"fd00::/120", "", "", {}});
    CHECK(err(c).find("slice of fd00::/120") != std::string::npos);
    c.ranges.pop_back();
    // No usable range at all: an error about the range, never a crash.
    c.ranges[0].range = "10.0.0.0/33";
    CHECK_FALSE(validate(c).ok());
    c.ranges.clear();
    c.addresses.push_back({"10.9.0.5/24", ""});
    (void)validate(c);
    c.nodeSliceSize = "";
    c.sliceParts = 2;
    CHECK(err(c).find("needs node_slice_size") != std::string::npos);
    c.sliceParts = 1;
    CHECK(validate(c)->sliceParts == 1);
}

TEST_CASE("static addresses keep their host part") {
    auto c = base();
    c.addresses.push_back({"10.9.0.5/24", "10.9.0.1"});
    auto r = validate(c);
    REQUIRE(r.ok());
    CHECK(r->staticAddresses[0].first.ip.str() == "10.9.0.5");
    CHECK(r->staticAddresses[0].first.prefix == 24);
    c.addresses[0].address = "10.9.0.5";
    CHECK(err(c).find("addresses[0].address") != std::string::npos);
    c.addresses[0].address = "010.9.0.5/24";  // read sloppily, as Whereabouts does
    CHECK(validate(c)->staticAddresses[0].first.ip.str() == "10.9.0.5");
}

TEST_CASE("log_level: Whereabouts' levels in any case; another name is ignored with a warning") {
    auto c = base();
    c.logLevel = "VERBOSE";
    auto r = validate(c);
    REQUIRE(r.ok());
    CHECK(r->raw.logLevel == "verbose");
    c.logLevel = "loud";
    auto l = validate(c);
    REQUIRE(l.ok());
    CHECK(l->raw.logLevel.empty());
    REQUIRE(l->warnings.size() == 1);
    CHECK(l->warnings[0].find("log_level") != std::string::npos);
}

TEST_CASE("too many ranges are rejected") {
    auto c = base();
    for (int i = 1; i <= kMaxRanges; ++i)
        c.ranges.push_back({"10." + std::to_string(i) + ".0.0/24", "", "", {}});
    CHECK(err(c).find("limit") != std::string::npos);
}

TEST_CASE("validateAll reports every problem in order and leaves the bad entries out") {
    auto c = base();
    c.type = "host-local";
    c.ranges.push_back({"10.0.0.0/24", "", "", {}});  // the same network as entry 0
    c.ranges.push_back({"10.2.0.0/24", "", "", {}});
    c.gateway = "not-an-ip";
    c.addresses.push_back({"10.3.0.5", ""});
    c.networkName = "Bad_Name";
    std::vector<Error> errors;
    auto out = validateAll(c, errors);
    REQUIRE(errors.size() == 5);
    CHECK(errors[0].message.find("ipam.type") != std::string::npos);
    CHECK(errors[1].message.find("same network as range entry 0") != std::string::npos);
    CHECK(errors[2].message.find("\"gateway\"") != std::string::npos);
    CHECK(errors[3].message.find("addresses[0].address") != std::string::npos);
    CHECK(errors[4].message.find("network_name") != std::string::npos);
    CHECK(out.ranges.size() == 2);
    CHECK(err(c) == errors[0].message);
}

TEST_CASE("validateAll finds nothing in a config validate accepts") {
    std::vector<Error> errors;
    auto out = validateAll(base(), errors);
    CHECK(errors.empty());
    CHECK(out.ranges.size() == 1);
}
