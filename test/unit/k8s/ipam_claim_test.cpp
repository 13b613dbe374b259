#include "k8s/ipam_claim.h"

#include <doctest/doctest.h>

#include "parsed.h"

using namespace allot;
using namespace allot::k8s;

using test::obj;

TEST_CASE("an IPAMClaim object is read: reference, network, status addresses") {
    auto v = ipamClaimView(obj(R"({"metadata":{"namespace":"vms","name":"vm-a.blue"},
        "spec":{"network":"blue","interface":"net1"},"status":{"ips":["10.0.0.5/24","fd00::5/64"]}})"));
    REQUIRE(v.ok());
    CHECK(v->ref == "vms/vm-a.blue");
    CHECK(v->network == "blue");
    CHECK(v->ips == std::vector<std::string>{"10.0.0.5/24", "fd00::5/64"});
    auto empty = ipamClaimView(obj(R"({"metadata":{"namespace":"vms","name":"b"},"spec":{}})"));
    REQUIRE(empty.ok());
    CHECK(empty->ips.empty());
}

TEST_CASE("an IPAMClaim with fields of the wrong type is Invalid, naming the field") {
    for (const char* bad :
         {R"({"metadata":{"namespace":"vms","name":"b"},"status":{"ips":"10.0.0.5"}})",
          R"({"metadata":{"namespace":"vms","name":"b"},"status":{"ips":[5]}})",
          R"({"metadata":{"namespace":"vms","name":"b"},"spec":{"network":7}})", R"([])"}) {
        auto v = ipamClaimView(obj(bad));
        REQUIRE_MESSAGE(!v.ok(), bad);
        CHECK(v.code() == core::Errc::Invalid);
    }
    std::string many = R"({"metadata":{"namespace":"vms","name":"b"},"status":{"ips":[)";
    for (int i = 0; i < 17; ++i)
        many += std::string(i ? "," : "") + "\"10.0.0." + std::to_string(i) + "\"";
    CHECK(ipamClaimView(obj(many + "]}}")).error().message.find("more than 16") !=
          std::string::npos);
}

TEST_CASE("the status allot writes: addresses, owner pod, one IPsAllocated condition") {
    auto claim = obj(R"({"metadata":{"namespace":"vms","name":"b","resourceVersion":"7"},
        "status":{"ips":[],"conditions":[{"type":"Other","status":"True"},
        {"type":"IPsAllocated","status":"False","reason":"SubnetExhausted","message":"m",
         "lastTransitionTime":"2020-01-01T00:00:00Z"}]}})");
    auto now = *parseTime("2026-11-25T10:00:00Z");
    core::ClaimStatus st{{"10.0.0.5/24"}, "launcher-a", true, "SuccessfulAllocation", "ok"};
    auto out = withClaimStatus(claim, st, now);
    CHECK(out.find("metadata")->find("resourceVersion")->asString() == "7");
    const json::Value& s = *out.find("status");
    CHECK(s.find("ips")->items()[0].asString() == "10.0.0.5/24");
    CHECK(s.find("ownerPod")->find("name")->asString() == "launcher-a");
    const auto& cs = s.find("conditions")->items();
    REQUIRE(cs.size() == 2);
    CHECK(cs[0].find("type")->asString() == "Other");
    CHECK(cs[1].find("status")->asString() == "True");
    CHECK(cs[1].find("reason")->asString() == "SuccessfulAllocation");
    CHECK(cs[1].find("lastTransitionTime")->asString() == "2026-11-25T10:00:00Z");
    // The same status again keeps its transition time.
    auto again = withClaimStatus(out, st, now + std::chrono::hours(1));
    CHECK(again.find("status")
              ->find("conditions")
              ->items()[1]
              .find("lastTransitionTime")
              ->asString() == "2026-11-25T10:00:00Z");
}
