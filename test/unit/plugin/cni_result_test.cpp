#include "plugin/cni_result.h"

#include <doctest/doctest.h>

#include <iterator>
#include <utility>

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
    CHECK(formatError("1.0.0", {7, "bad \"range\"", "InvalidConfig"}) ==
          R"({"cniVersion":"1.0.0","code":7,"msg":"bad \"range\"","details":"InvalidConfig"})");
    CHECK(formatError("1.0.0", {11, "later", ""}) ==
          R"({"cniVersion":"1.0.0","code":11,"msg":"later"})");
}

TEST_CASE("every allot error becomes the CNI code of the spec's table, its message kept") {
    using core::Errc;
    const std::pair<Errc, int> table[] = {
        {Errc::InvalidConfig, kInvalidNetworkConfig},
        {Errc::BadEnvironment, kInvalidEnvironment},
        {Errc::Decode, kDecodeFailure},
        {Errc::NotFound, kInvalidNetworkConfig},
        {Errc::Conflict, kTryAgainLater},
        {Errc::AlreadyExists, kTryAgainLater},
        {Errc::Invalid, kInternal},
        {Errc::Expired, kTryAgainLater},
        {Errc::Exhausted, kAddressesExhausted},
        {Errc::TooLarge, kTryAgainLater},
        {Errc::SliceSealed, kTryAgainLater},
        {Errc::SliceMoved, kTryAgainLater},
        {Errc::SliceAwaited, kTryAgainLater},
        {Errc::Transient, kTryAgainLater},
        {Errc::Unauthorized, kAccessDenied},
        {Errc::Forbidden, kAccessDenied},
        {Errc::Unsupported, kIncompatibleVersion},
        {Errc::Internal, kInternal},
    };
    // Internal is the last code: a code added after it fails here until it is in the table.
    REQUIRE(std::size(table) == static_cast<size_t>(Errc::Internal) + 1);
    for (size_t i = 0; i < std::size(table); ++i) {
        const auto [errc, code] = table[i];
        CAPTURE(core::errcName(errc));
        REQUIRE(static_cast<size_t>(errc) == i);
        const CniError e = cniError(core::makeError(errc, "IPPool ns/p: what happened"));
        CHECK(e.code == code);
        CHECK(e.msg == "IPPool ns/p: what happened");
        CHECK(e.details.find(std::string(core::errcName(errc)) +
                             ": IPPool ns/p: what happened (") == 0);
    }
}

TEST_CASE("a range with no free address is code 100 and a pool object too large is code 11") {
    const CniError full = cniError(core::makeError(core::Errc::Exhausted, "no free address"));
    const CniError large = cniError(core::makeError(core::Errc::TooLarge, "IPPool p is full"));
    CHECK(full.code == 100);
    CHECK(full.details.find("no free address is left in the range") != std::string::npos);
    CHECK(large.code == 11);
    CHECK(large.details.find("node_slice_size") != std::string::npos);
}

TEST_CASE("CHECK reports a missing allocation as 102 and STATUS any failure as 50") {
    using core::Errc;
    const auto missing = core::makeError(Errc::NotFound, "no allocation for c1");
    CHECK(cniError(missing, Command::Check).code == kCheckFailed);
    CHECK(cniError(missing, Command::Add).code == kInvalidNetworkConfig);
    CHECK(cniError(core::makeError(Errc::Transient, "x"), Command::Check).code == kTryAgainLater);
    for (Errc errc : {Errc::Transient, Errc::Unauthorized, Errc::Exhausted, Errc::InvalidConfig}) {
        CAPTURE(core::errcName(errc));
        const CniError e = cniError(core::makeError(errc, "down"), Command::Status);
        CHECK(e.code == kPluginNotAvailable);
        CHECK(e.msg == "down");
        CHECK_FALSE(e.details.empty());
    }
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
