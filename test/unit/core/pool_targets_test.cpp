#include "core/pool_targets.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

ValidatedConfig config(std::vector<std::string> ranges, std::string networkName = "",
                       std::string sliceSize = "", int parts = 1) {
    IpamConfig c;
    c.type = "allot";
    for (auto& r : ranges) c.ranges.push_back({r, "", "", {}});
    c.networkName = std::move(networkName);
    c.nodeSliceSize = std::move(sliceSize);
    c.sliceParts = parts;
    auto v = validate(c);
    REQUIRE_MESSAGE(v, (v ? "" : v.error().message));
    return *v;
}

std::vector<std::string> names(const std::vector<PoolTarget>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(t.pool + "@" + std::to_string(t.rangeIndex));
    return out;
}

}  // namespace

TEST_CASE("a plain config uses one pool per range, named as Whereabouts names it") {
    auto cfg = config({"10.0.0.0/24", "fd00::/64"}, "blue");
    CHECK(sliceSources(cfg, "net")->empty());
    auto ts = poolTargets(cfg, "net", "node-a", {});
    REQUIRE(ts);
    CHECK(names(*ts) == std::vector<std::string>{"blue-10.0.0.0-24@0", "blue-fd00---64@1"});
    CHECK((*ts)[0].range.cidr().str() == "10.0.0.0/24");
    CHECK((*ts)[0].nodeSlicePool.empty());
    CHECK(names(*poolTargets(config({"10.0.0.0/24"}), "", "", {})) ==
          std::vector<std::string>{"10.0.0.0-24@0"});
}

TEST_CASE("a sliced config uses the node's slice of each range; a range without one is left out") {
    auto cfg = config({"10.0.0.0/16", "fd00::/64"}, "", "/24");
    auto sources = sliceSources(cfg, "net");
    REQUIRE(sources);
    REQUIRE(sources->size() == 2);
    CHECK((*sources)[0].nodeSlicePool == "net");
    CHECK((*sources)[1].nodeSlicePool == "net-fd00---64");
    auto ts = poolTargets(cfg, "net", "node-a", {"10.0.3.0/24", std::nullopt});
    REQUIRE(ts);
    CHECK(names(*ts) == std::vector<std::string>{"node-a-10.0.3.0-24@0"});
    CHECK((*ts)[0].nodeSlicePool == "net");
    CHECK((*ts)[0].range.cidr().str() == "10.0.3.0/24");
    // No name for its NodeSlicePool: refused.
    CHECK(sliceSources(cfg, "").code() == Errc::InvalidConfig);
    CHECK(poolTargets(cfg, "", "node-a", {}).code() == Errc::InvalidConfig);
}

TEST_CASE("node_slice_parts: each part of the slice is a pool, part 0 the slice's own") {
    auto cfg = config({"10.0.0.0/16"}, "red", "/24", 2);
    auto ts = poolTargets(cfg, "net", "n1", {"10.0.1.0/24"});
    REQUIRE(ts);
    CHECK(names(*ts) ==
          std::vector<std::string>{"red-n1-10.0.1.0-24@0", "red-n1-10.0.1.0-24-part-1@0"});
    CHECK((*ts)[0].nodeSlicePool == "red");
    CHECK((*ts)[1].range.start().str() == "10.0.1.128");
}

TEST_CASE("a slice that is not a CIDR inside its range is Invalid, naming the NodeSlicePool") {
    auto cfg = config({"10.0.0.0/16"}, "", "/24");
    auto outside = poolTargets(cfg, "net", "n1", {"10.9.0.0/24"});
    REQUIRE_FALSE(outside);
    CHECK(outside.code() == Errc::Invalid);
    CHECK(outside.error().message.find("NodeSlicePool net") != std::string::npos);
    CHECK(outside.error().message.find("10.9.0.0/24") != std::string::npos);
    CHECK(poolTargets(cfg, "net", "n1", {"garbage"}).code() == Errc::Invalid);
}
