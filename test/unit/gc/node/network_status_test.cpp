#include "gc-sidecar/node/network_status.h"

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
    // Anything but a namespace and an object name: they go into the NAD's request path.
    for (const char* n : {"/x", "x/", "a/b/c", "../x", "ns/..", "ns/.", "a/b?watch=1", "a/b%2Fc",
                          "Team/net", "a/net_1", "a/-net", "a/net.", "a/b\nc", ".."}) {
        gc::NetworkStatus s;
        s.name = n;
        CHECK_FALSE(gc::nadOf(s, "pods").ok());
    }
    gc::NetworkStatus s;
    s.name = "x";
    CHECK_FALSE(gc::nadOf(s, "").ok());
}

TEST_CASE("valid namespace/name pairs: DNS labels and subdomains up to their lengths") {
    gc::NetworkStatus s;
    s.name = std::string(63, 'n') + "/" + std::string(63, 'a') + "." + std::string(63, 'b') + "." +
             std::string(63, 'c') + "." + std::string(61, 'd');
    auto ok = gc::nadOf(s, "pods");
    REQUIRE(ok.ok());
    CHECK(ok->second.size() == 253);
    s.name = std::string(64, 'n') + "/net";
    CHECK_FALSE(gc::nadOf(s, "pods").ok());
    s.name = "ns/" + std::string(64, 'a');  // a label is at most 63
    CHECK_FALSE(gc::nadOf(s, "pods").ok());
    s.name = "kube-system/macvlan-conf.v2";
    CHECK(gc::nadOf(s, "pods").ok());
}

TEST_CASE("error messages quote annotation text as one short printable line") {
    const std::string ip = "10.0.0.1\\nFORGED log line " + std::string(5000, 'x');
    auto bad = gc::parseNetworkStatus(R"([{"name":"a/b","ips":[")" + ip + R"("]}])");
    REQUIRE_FALSE(bad.ok());
    const std::string& m = bad.error().message;
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.find("10.0.0.1\\x0aFORGED") != std::string::npos);
    CHECK(m.size() < 200);
    gc::NetworkStatus s;
    s.name = "a/b\r\n" + std::string(5000, 'y');
    auto n = gc::nadOf(s, "pods");
    REQUIRE_FALSE(n.ok());
    CHECK(n.error().message.find_first_of("\r\n") == std::string::npos);
    CHECK(n.error().message.size() < 400);
    CHECK(gc::printable("ok\x01\x7f", 10) == "ok\\x01\\x7f");
    CHECK(gc::printable("abcdef", 3) == "abc...");
}
