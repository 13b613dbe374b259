#include "gc-sidecar/network_status.h"

#include <doctest/doctest.h>

using namespace allot;

TEST_CASE("Multus network-status parses: bare and CIDR IPs, the default network flagged") {
    auto s = gc::parseNetworkStatus(R"([
      {"name":"cbr0","interface":"eth0","ips":["10.244.1.5"],"mac":"aa:bb","default":true,"dns":{}},
      {"name":"team-a/macnet","interface":"net1","ips":["192.168.5.7/24","fd00::7/64"],"mac":"02:00","dns":{}},
      {"name":"plainnad","interface":"net2"}
    ])");
    REQUIRE(s.ok());
    REQUIRE(s->size() == 3);
    CHECK((*s)[0].isDefault);
    CHECK((*s)[1].name == "team-a/macnet");
    CHECK((*s)[1].interface == "net1");
    REQUIRE((*s)[1].ips.size() == 2);
    CHECK((*s)[1].ips[0].str() == "192.168.5.7");
    CHECK((*s)[1].ips[1].str() == "fd00::7");
    CHECK((*s)[2].ips.empty());
    auto nad = gc::nadOf((*s)[1], "pods");
    REQUIRE(nad.ok());
    CHECK(nad->first == "team-a");
    CHECK(nad->second == "macnet");
    auto bare = gc::nadOf((*s)[2], "pods");
    REQUIRE(bare.ok());
    CHECK(bare->first == "pods");
}

TEST_CASE("malformed network-status is a Decode error, never a crash") {
    const char* bad[] = {
        "",
        "{not json",
        "{}",
        "\"a string\"",
        "[1, 2]",
        R"([{"interface":"net1"}])",
        R"([{"name":""}])",
        R"([{"name":7}])",
        R"([{"name":"a/b","ips":"10.0.0.1"}])",
        R"([{"name":"a/b","ips":[10]}])",
        R"([{"name":"a/b","ips":["not-an-ip"]}])",
        R"([{"name":"a/b","default":"yes"}])",
        R"([{"name":"a/b","interface":5}])",
        R"([{"name":"a/b"})",
    };
    for (const char* b : bad) {
        CAPTURE(b);
        auto s = gc::parseNetworkStatus(b);
        REQUIRE_FALSE(s.ok());
        CHECK(s.code() == core::Errc::Decode);
    }
}

TEST_CASE("huge and deeply nested network-status are rejected by their limits") {
    std::string deep = R"([{"name":"a/b","dns":)";
    for (int i = 0; i < 10000; ++i) deep += "[";
    auto d = gc::parseNetworkStatus(deep);
    REQUIRE_FALSE(d.ok());
    CHECK(d.code() == core::Errc::Decode);

    std::string huge =
        R"([{"name":"a/b","interface":")" + std::string(gc::kMaxNetworkStatusBytes, 'x') + R"("}])";
    auto h = gc::parseNetworkStatus(huge);
    REQUIRE_FALSE(h.ok());
    CHECK(h.error().message.find("larger") != std::string::npos);

    std::string many = "[";
    for (size_t i = 0; i <= gc::kMaxNetworkStatusEntries; ++i)
        many += std::string(i ? "," : "") + R"({"name":"a/b"})";
    many += "]";
    CHECK(gc::parseNetworkStatus(many).code() == core::Errc::Decode);
}

TEST_CASE("network names that are not namespace/name are errors") {
    for (const char* n : {"/x", "x/", "a/b/c"}) {
        gc::NetworkStatus s;
        s.name = n;
        CHECK_FALSE(gc::nadOf(s, "pods").ok());
    }
    gc::NetworkStatus s;
    s.name = "x";
    CHECK_FALSE(gc::nadOf(s, "").ok());
}
