#include "plugin/cni_result.h"

#include <doctest/doctest.h>

using namespace allot;
using namespace allot::plugin;

static CniResult dual() {
    CniResult r;
    r.ips.push_back({*core::IpAddress::parse("10.0.0.2"), 24, *core::IpAddress::parse("10.0.0.1")});
    r.ips.push_back({*core::IpAddress::parse("fd00::2"), 64, std::nullopt});
    r.routes = *json::parse(R"([{"dst":"0.0.0.0/0"},{"dst":"fd01::/64","gw":"fd00::1"}])");
    r.dns = *json::parse(R"({"nameservers":["10.0.0.53"]})");
    return r;
}

TEST_CASE("1.x results have no ips[].version and no interfaces") {
    CHECK(
        formatResult(dual(), "1.1.0") ==
        R"({"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/24","gateway":"10.0.0.1"},{"address":"fd00::2/64"}],)"
        R"("routes":[{"dst":"0.0.0.0/0"},{"dst":"fd01::/64","gw":"fd00::1"}],"dns":{"nameservers":["10.0.0.53"]}})");
    CHECK(formatResult(dual(), "1.0.0").find("\"version\"") == std::string::npos);
}

TEST_CASE("0.3.x and 0.4.0 results carry ips[].version") {
    for (const char* v : {"0.3.0", "0.3.1", "0.4.0"}) {
        CHECK(formatResult(dual(), v) ==
              std::string(R"({"cniVersion":")") + v +
                  R"(","ips":[{"version":"4","address":"10.0.0.2/24","gateway":"10.0.0.1"},)"
                  R"({"version":"6","address":"fd00::2/64"}],"routes":[{"dst":"0.0.0.0/0"},)"
                  R"({"dst":"fd01::/64","gw":"fd00::1"}],"dns":{"nameservers":["10.0.0.53"]}})");
    }
}

TEST_CASE("0.1.0 and 0.2.0 results use ip4/ip6 with routes split by family") {
    CHECK(
        formatResult(dual(), "0.2.0") ==
        R"({"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1","routes":[{"dst":"0.0.0.0/0"}]},)"
        R"("ip6":{"ip":"fd00::2/64","routes":[{"dst":"fd01::/64","gw":"fd00::1"}]},"dns":{"nameservers":["10.0.0.53"]}})");
}

TEST_CASE("errors carry version, code, msg and details") {
    CHECK(formatError("1.0.0", 7, "bad \"range\"", "InvalidConfig") ==
          R"({"cniVersion":"1.0.0","code":7,"msg":"bad \"range\"","details":"InvalidConfig"})");
}

TEST_CASE("VERSION lists every supported version") {
    CHECK(
        formatVersionInfo("0.4.0") ==
        R"({"cniVersion":"0.4.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]})");
}

TEST_CASE("prevResult addresses are read from any result version") {
    auto a = prevResultIps(*json::parse(R"({"ips":[{"address":"10.0.0.2/24","interface":0}]})"));
    REQUIRE(a.size() == 1);
    CHECK(a[0].ip.str() == "10.0.0.2");
    auto b =
        prevResultIps(*json::parse(R"({"ip4":{"ip":"10.0.0.3/24"},"ip6":{"ip":"fd00::3/64"}})"));
    CHECK(b.size() == 2);
}

TEST_CASE("versions compare numerically") {
    CHECK(compareVersions("0.10.0", "0.4.0") > 0);
    CHECK(compareVersions("1.1.0", "1.1.0") == 0);
    CHECK(compareVersions("0.3.1", "0.4.0") < 0);
}
