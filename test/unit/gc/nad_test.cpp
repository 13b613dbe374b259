#include "cluster/nad.h"

#include <doctest/doctest.h>

#include "json/json.h"

using namespace allot;

namespace {
const std::vector<std::string> kOwned{"allot", "whereabouts"};
const std::vector<std::string> kNoFlat{"/nonexistent/allot-gc-test-flat.conf"};
}  // namespace

TEST_CASE("a single NAD config with an owned IPAM type yields its validated IPAM config") {
    auto n = cluster::parseNadConfig(
        R"({"cniVersion":"0.3.1","name":"macnet","type":"macvlan","master":"eth0",
        "ipam":{"type":"whereabouts","range":"192.168.2.225/28","network_name":"blue","exclude":["192.168.2.229/30"]}})",
        kOwned, kNoFlat);
    REQUIRE(n.ok());
    REQUIRE(n->size() == 1);
    CHECK((*n)[0].networkName == "macnet");
    CHECK((*n)[0].config.raw.networkName == "blue");
    REQUIRE((*n)[0].config.ranges.size() == 1);
    CHECK((*n)[0].config.ranges[0].cidr().str() == "192.168.2.224/28");
}

TEST_CASE("a conflist yields the owned IPAM configs among its plugins, with the list's name") {
    auto n = cluster::parseNadConfig(R"({"cniVersion":"1.0.0","name":"chain","plugins":[
        {"type":"bridge","ipam":{"type":"host-local","subnet":"10.1.0.0/24"}},
        {"type":"macvlan","ipam":{"type":"allot","ipRanges":[{"range":"10.2.0.0/24"},{"range":"fd00:2::/64"}],
                                  "namespace":"pools"}},
        {"type":"tuning"}]})",
                                     kOwned, kNoFlat);
    REQUIRE(n.ok());
    REQUIRE(n->size() == 1);
    CHECK((*n)[0].networkName == "chain");
    CHECK((*n)[0].config.raw.poolNamespace == "pools");
    CHECK((*n)[0].config.ranges.size() == 2);
}

TEST_CASE("NADs of other IPAM types, or none, yield nothing") {
    for (const char* c :
         {R"({"name":"x","type":"macvlan","ipam":{"type":"host-local"}})",
          R"({"name":"x","type":"macvlan"})", R"({"name":"x","plugins":[{"type":"bridge"}]})",
          R"({"name":"x","type":"macvlan","ipam":"allot"})"}) {
        CAPTURE(c);
        auto n = cluster::parseNadConfig(c, kOwned, kNoFlat);
        REQUIRE(n.ok());
        CHECK(n->empty());
    }
    auto other = cluster::parseNadConfig(
        R"({"name":"x","type":"m","ipam":{"type":"allot","range":"10.0.0.0/24"}})", {"whereabouts"},
        kNoFlat);
    REQUIRE(other.ok());
    CHECK(other->empty());
}

TEST_CASE(
    "malformed NAD configs are errors: bad JSON is Decode, a bad owned IPAM section names its "
    "key") {
    CHECK(cluster::parseNadConfig("{", kOwned, kNoFlat).code() == core::Errc::Decode);
    CHECK(cluster::parseNadConfig("[]", kOwned, kNoFlat).code() == core::Errc::Decode);
    CHECK(cluster::parseNadConfig(R"({"name":"x","plugins":{}})", kOwned, kNoFlat).code() ==
          core::Errc::Decode);
    auto bad = cluster::parseNadConfig(R"({"name":"x","type":"m","ipam":{"type":"allot",
        "ipRanges":[{"range":"10.0.0.0/24","range_start":"10.9.0.300"}]}})",
                                       kOwned, kNoFlat);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.code() == core::Errc::InvalidConfig);
    CHECK(bad.error().message.find("range_start") != std::string::npos);
}

TEST_CASE(
    "a plugins list with an entry that is not an object is Decode, whatever IPAM comes first") {
    // An owned entry with a bad range before the malformed one: still the document's error, as
    // for a reader that owns no type (found by fuzz_nad).
    const char* doc = R"({"name":"x","plugins":[
        {"type":"macvlan","ipam":{"type":"allot","ipRanges":[{"range":"20.2.0.0/24","range_start":"10.2.0.10"}]}},
        "ipam"]})";
    auto owned = cluster::parseNadConfig(doc, kOwned, kNoFlat);
    auto none = cluster::parseNadConfig(doc, {}, kNoFlat);
    REQUIRE_FALSE(owned.ok());
    REQUIRE_FALSE(none.ok());
    CHECK(owned.code() == core::Errc::Decode);
    CHECK(none.code() == core::Errc::Decode);
    CHECK(owned.error().message.find("plugins[1] must be an object") != std::string::npos);
}

TEST_CASE("spec.config is read from the NAD object; a NAD without one is NotFound") {
    auto nad = json::parse(R"({"spec":{"config":"{\"name\":\"n\"}"}})");
    REQUIRE(nad.ok());
    CHECK(*cluster::nadSpecConfig(*nad) == R"({"name":"n"})");
    CHECK(cluster::nadSpecConfig(*json::parse(R"({"spec":{}})")).code() == core::Errc::NotFound);
    CHECK(cluster::nadSpecConfig(*json::parse(R"({})")).code() == core::Errc::NotFound);
}

TEST_CASE("an invalid owned IPAM section's error is one bounded printable line") {
    const std::string range = "10.0.0.0/24\\nFORGED " + std::string(5000, 'z');
    auto bad = cluster::parseNadConfig(
        R"({"name":"x","type":"m","ipam":{"type":"allot","range":")" + range + R"("}})", kOwned,
        kNoFlat);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.code() == core::Errc::InvalidConfig);
    CHECK(bad.error().message.find('\n') == std::string::npos);
    CHECK(bad.error().message.size() < 600);
    auto ns = cluster::parseNadConfig(
        R"({"name":"x","type":"m","ipam":{"type":"allot","range":"10.0.0.0/24","namespace":".."}})",
        kOwned, kNoFlat);
    REQUIRE_FALSE(ns.ok());
    CHECK(ns.error().message.find("ipam.namespace") != std::string::npos);
}
