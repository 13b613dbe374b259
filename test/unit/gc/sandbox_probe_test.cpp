#include "gc-sidecar/sandbox_probe.h"

#include <doctest/doctest.h>

using namespace allot;

TEST_CASE(
    "the namespace probe reads local IPv4 addresses from fib_trie, not routes or broadcasts") {
    const std::string trie = R"(Main:
  +-- 0.0.0.0/0 3 0 4
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.61.0.0/24 2 0 2
        |-- 10.61.0.0
           /24 link UNICAST
        |-- 10.61.0.7
           /32 host LOCAL
        |-- 10.61.0.255
           /32 link BROADCAST
Local:
  +-- 10.61.0.0/24 2 0 2
     |-- 10.61.0.7
        /32 host LOCAL
)";
    auto got = gc::localAddressesFromFibTrie(trie);
    REQUIRE(got.size() == 1);
    CHECK(got.begin()->str() == "10.61.0.7");
}

TEST_CASE("the namespace probe reads IPv6 addresses from if_inet6") {
    const std::string text =
        "fd000000000000000000000000000005 02 40 00 80     net1\n"
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "garbage\n";
    auto got = gc::addressesFromIfInet6(text);
    CHECK(got.size() == 2);
    CHECK(got.count(*core::IpAddress::parse("fd00::5")) == 1);
}

TEST_CASE("the namespace probe sees an address in this process's own namespace only when asked") {
    // /proc/self is allot-gc's own namespace: always left out, so an empty directory list
    // and a /proc holding only ourselves gives no namespace at all.
    auto r = gc::probeNodeAddresses({}, "/nonexistent-proc");
    CHECK_FALSE(r.ok());  // no /proc: an error, never an empty "nothing held"
}
