#include "core/naming.h"

#include <doctest/doctest.h>

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
