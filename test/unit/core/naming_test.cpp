#include "core/naming.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace allot::core;

static Cidr cidr(const char* s) {
    return *Cidr::parse(s);
}

TEST_CASE("pool names match Whereabouts for IPv4 and IPv6 ranges") {
    CHECK(poolName(cidr("10.10.0.0/16"), "", "") == "10.10.0.0-16");
    CHECK(poolName(cidr("10.10.0.0/16"), "net1", "") == "net1-10.10.0.0-16");
    CHECK(poolName(cidr("fd00::/64"), "", "") == "fd00---64");
    CHECK(poolName(cidr("fd00:1:2::/48"), "blue", "") == "blue-fd00-1-2---48");
    CHECK(poolName(cidr("2001:db8::1:0/112"), "", "") == "2001-db8--1-0-112");
}

TEST_CASE("host bits do not change the pool name") {
    CHECK(poolName(cidr("192.168.2.225/28"), "", "") == "192.168.2.224-28");
}

TEST_CASE("node-slice pool names carry the node name") {
    CHECK(poolName(cidr("10.10.1.0/24"), "", "worker-1") == "worker-1-10.10.1.0-24");
    CHECK(poolName(cidr("10.10.1.0/24"), "net1", "worker-1") == "net1-worker-1-10.10.1.0-24");
}

TEST_CASE("reservation names match Whereabouts") {
    CHECK(reservationName(*IpAddress::parse("10.0.0.5"), "") == "10.0.0.5");
    CHECK(reservationName(*IpAddress::parse("fd00::"), "") == "fd00--0");
    CHECK(reservationName(*IpAddress::parse("fd00::1"), "") == "fd00--1");
    CHECK(reservationName(*IpAddress::parse("2001:db8::"), "") == "2001-db8--0");
    CHECK(reservationName(*IpAddress::parse("::ffff:10.0.0.1"), "") == "10.0.0.1");
    CHECK(reservationName(*IpAddress::parse("fd00::a"), "net1") == "net1-fd00--a");
}

TEST_CASE("a slice's parts: part 0 is the slice's own pool, each part one block of addresses") {
    CHECK(slicePartPoolName("blue-node-a-10.5.1.0-24", 0) == "blue-node-a-10.5.1.0-24");
    CHECK(slicePartPoolName("blue-node-a-10.5.1.0-24", 3) == "blue-node-a-10.5.1.0-24-part-3");
    auto s = *Cidr::parse("10.5.1.0/24");
    auto p0 = slicePartRange(s, 4, 0);
    REQUIRE(p0.ok());
    CHECK(p0->cidr() == s);
    CHECK(p0->start().str() == "10.5.1.1");  // the network address is never handed out
    CHECK(p0->end().str() == "10.5.1.63");
    auto p3 = slicePartRange(s, 4, 3);
    REQUIRE(p3.ok());
    CHECK(p3->start().str() == "10.5.1.192");
    CHECK(p3->end().str() == "10.5.1.254");  // nor the broadcast address
    auto v6 = slicePartRange(*Cidr::parse("fd00::/64"), 2, 1);
    REQUIRE(v6.ok());
    CHECK(v6->start().str() == "fd00::8000:0:0:0");
    CHECK(v6->end().str() == "fd00::ffff:ffff:ffff:fffe");  // as a one-pool IPv6 slice
}

TEST_CASE("a part's pool name reads back as its slice's own pool and its part number") {
    CHECK(slicePartOf("blue-node-a-10.5.1.0-24-part-3") ==
          std::pair<std::string, int>{"blue-node-a-10.5.1.0-24", 3});
    CHECK(slicePartOf("blue-node-a-10.5.1.0-24-part-15") ==
          std::pair<std::string, int>{"blue-node-a-10.5.1.0-24", 15});
    for (int k = 0; k < 16; ++k)
        CHECK(slicePartOf(slicePartPoolName("n-fd00---72", k)) ==
              std::pair<std::string, int>{"n-fd00---72", k});
    // Only the names slicePartPoolName writes.
    for (const char* name : {"blue-node-a-10.5.1.0-24", "blue-node-a-10.5.1.0-24-part-0",
                             "x-part-16", "x-part-03", "x-part-", "x-part-1a", "-part-1"})
        CHECK(slicePartOf(name) == std::pair<std::string, int>{name, 0});
}

TEST_CASE("a pool name gives back its network names: network_name and node-slice prefixes") {
    CHECK(networkNamesOf("10.0.0.0-24", "10.0.0.0/24", "worker-1") == std::vector<std::string>{""});
    CHECK(networkNamesOf("blue-10.0.0.0-24", "10.0.0.0/24", "worker-1") ==
          std::vector<std::string>{"blue"});
    CHECK(networkNamesOf("blue-worker-1-10.0.3.0-24", "10.0.3.0/24", "worker-1") ==
          std::vector<std::string>{"blue", "blue-worker-1"});
    CHECK(networkNamesOf("worker-1-10.0.3.0-24", "10.0.3.0/24", "worker-1") ==
          std::vector<std::string>{"", "worker-1"});
    CHECK(networkNamesOf("odd", "10.0.0.0/24", "worker-1") == std::vector<std::string>{""});
    CHECK(networkNamesOf("blue-10.0.0.0-24", "not a range", "") == std::vector<std::string>{""});
}

TEST_CASE("a slice part's network names are part 0's") {
    for (int k = 0; k < 16; ++k) {
        const std::string part = slicePartPoolName("blue-worker-1-10.0.3.0-24", k);
        CHECK(networkNamesOf(part, "10.0.3.0/24", "worker-1") ==
              std::vector<std::string>{"blue", "blue-worker-1"});
    }
    CHECK(networkNamesOf("worker-1-10.0.3.0-24-part-2", "10.0.3.0/24", "worker-1") ==
          std::vector<std::string>{"", "worker-1"});
}

TEST_CASE("poolName and networkNamesOf round-trip: the network name is always among the readings") {
    for (const char* range : {"10.0.0.0/24", "fd00:10::/64", "10.64.3.0/24"})
        for (const char* net : {"", "blue", "blue-net", "worker-1"})
            for (const char* node : {"", "worker-1", "node-a.example"}) {
                auto cidr = Cidr::parse(range);
                REQUIRE(cidr.ok());
                const std::string pool = poolName(*cidr, net, node);
                const auto names = networkNamesOf(pool, range, node);
                CHECK_MESSAGE(std::find(names.begin(), names.end(), net) != names.end(),
                              pool << " of node '" << node << "' lost network '" << net << "'");
                for (int k = 1; k < 4; ++k)
                    CHECK(networkNamesOf(slicePartPoolName(pool, k), range, node) == names);
            }
}
