#include "core/allocator.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

IpRange range(RangeSpec s) {
    auto r = IpRange::fromSpec(s, "range");
    REQUIRE(r.ok());
    return *r;
}

// One pod, one UID: a pod's new sandbox records the same UID as its earlier one.
Owner owner(const std::string& cid, const std::string& pod = "", const std::string& ifn = "eth0") {
    return Owner{cid, pod, ifn, "node-a", pod.empty() ? "" : "uid-" + pod, "net"};
}

IpAddress ip(const char* s) {
    return *IpAddress::parse(s);
}

}  // namespace

TEST_CASE("the lowest free address is picked, skipping the network address") {
    auto r = range({"10.0.0.0/24", "", "", {}});
    AllocationMap m;
    auto a = pick(r, m, {owner("a")});
    auto b = pick(r, m, {owner("b")});
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->ip.str() == "10.0.0.1");
    CHECK(a->offset == 1);
    CHECK(b->ip.str() == "10.0.0.2");
    CHECK(m.size() == 2);
    release(m, "a", "eth0");
    CHECK(pick(r, m, {owner("c")})->ip.str() == "10.0.0.1");
}

TEST_CASE("the gateway is never handed out") {
    auto r = range({"10.0.0.0/24", "", "", {}});
    AllocationMap m;
    CHECK(pick(r, m, {owner("a"), std::nullopt, ip("10.0.0.1")})->ip.str() == "10.0.0.2");
    CHECK(!pick(r, m, {owner("b"), ip("10.0.0.1"), ip("10.0.0.1")}).ok());
}

TEST_CASE("exclusions and range_start/range_end are honoured") {
    auto r = range({"10.0.0.0/24", "10.0.0.10", "10.0.0.40", {"10.0.0.8/29", "10.0.0.17"}});
    AllocationMap m;
    std::vector<std::string> got;
    for (int i = 0; i < 4; ++i)
        got.push_back(pick(r, m, {owner("c" + std::to_string(i))})->ip.str());
    CHECK(got == std::vector<std::string>{"10.0.0.16", "10.0.0.18", "10.0.0.19", "10.0.0.20"});
}

TEST_CASE("a full range reports Exhausted and never the broadcast address") {
    auto r = range({"10.0.0.0/30", "", "", {}});
    AllocationMap m;
    CHECK(pick(r, m, {owner("a")})->ip.str() == "10.0.0.1");
    CHECK(pick(r, m, {owner("b")})->ip.str() == "10.0.0.2");
    auto c = pick(r, m, {owner("c")});
    REQUIRE(!c.ok());
    CHECK(c.code() == Errc::Exhausted);
    CHECK(freeCount(r, m, std::nullopt) == 0);
}

TEST_CASE("a requested address is granted when free and inside the range") {
    auto r = range({"10.0.0.0/24", "", "", {"10.0.0.50"}});
    AllocationMap m;
    CHECK(pick(r, m, {owner("a"), ip("10.0.0.77")})->ip.str() == "10.0.0.77");
    auto taken = pick(r, m, {owner("b", "ns/b"), ip("10.0.0.77")});
    REQUIRE(!taken.ok());
    CHECK(taken.error().message.find("already allocated") != std::string::npos);
    CHECK(pick(r, m, {owner("c"), ip("10.0.1.5")}).error().message.find("outside") !=
          std::string::npos);
    CHECK(pick(r, m, {owner("d"), ip("10.0.0.50")}).error().message.find("excluded") !=
          std::string::npos);
    CHECK(pick(r, m, {owner("e"), ip("10.0.0.255")}).error().message.find("broadcast") !=
          std::string::npos);
    CHECK(m.size() == 1);
}

TEST_CASE("the same container and interface get their existing address back") {
    auto r = range({"10.0.0.0/24", "", "", {}});
    AllocationMap m;
    auto first = pick(r, m, {owner("a", "ns/p")});
    auto again = pick(r, m, {owner("a", "ns/p")});
    CHECK(again->kind == PickKind::Existing);
    CHECK(again->ip == first->ip);
    CHECK(m.size() == 1);
    auto otherIf = pick(r, m, {owner("a", "ns/p", "net2")});
    CHECK(otherIf->ip != first->ip);
}

TEST_CASE("a new sandbox of the same pod takes over the pod's address") {
    auto r = range({"10.0.0.0/24", "", "", {}});
    AllocationMap m;
    auto first = pick(r, m, {owner("old", "ns/web-0")});
    auto next = pick(r, m, {owner("new", "ns/web-0")});
    CHECK(next->kind == PickKind::HandedOver);
    CHECK(next->ip == first->ip);
    CHECK(m.at(first->offset).containerId == "new");
    CHECK(release(m, "old", "eth0") == 0);  // the old sandbox's DEL frees nothing
    CHECK(m.size() == 1);
}

TEST_CASE("offsets marked taken elsewhere are skipped") {
    auto r = range({"10.0.0.0/24", "", "", {}});
    AllocationMap m;
    std::set<u128> skip{1, 2};
    CHECK(pick(r, m, {owner("a"), std::nullopt, std::nullopt, &skip})->ip.str() == "10.0.0.3");
}

TEST_CASE("IPv6 allocation works beyond 64 bits of offset") {
    auto r = range({"fd00::/32", "fd00:0:1::", "", {}});
    AllocationMap m;
    auto a = pick(r, m, {owner("a")});
    REQUIRE(a.ok());
    CHECK(a->ip.str() == "fd00:0:1::");
    CHECK(u128ToString(a->offset) == "1208925819614629174706176");
}

TEST_CASE("release removes exactly the container's interface") {
    AllocationMap m;
    m[1] = owner("a", "ns/a", "eth0");
    m[2] = owner("a", "ns/a", "net1");
    m[3] = owner("b", "ns/b", "eth0");
    CHECK(release(m, "a", "eth0") == 1);
    CHECK(m.size() == 2);
    CHECK(release(m, "zzz", "eth0") == 0);
}

TEST_CASE("allocation over a busy pool never returns a taken or out-of-range address") {
    auto r = range({"10.1.0.0/22", "10.1.0.10", "10.1.3.200", {"10.1.1.0/24", "10.1.2.7"}});
    AllocationMap m;
    std::set<std::string> seen;
    for (int i = 0;; ++i) {
        auto p = pick(r, m, {owner("c" + std::to_string(i))});
        if (!p) {
            CHECK(p.code() == Errc::Exhausted);
            break;
        }
        CHECK(r.allocatable(p->ip));
        CHECK(seen.insert(p->ip.str()).second);
        if (i % 7 == 3) {
            std::string victim = "c" + std::to_string(i - 2);
            if (auto off = findHolder(m, victim, "eth0")) seen.erase(r.cidr().at(*off).str());
            release(m, victim, "eth0");
        }
    }
    CHECK(static_cast<u128>(m.size()) == r.capacity());
}
