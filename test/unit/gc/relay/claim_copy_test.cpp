// The node relay's copy of the IPAMClaims, and the relay answering an ADD's claim from it.
#include "gc-sidecar/relay/claim_copy.h"

#include <doctest/doctest.h>

#include "gc-sidecar/relay/relay_server.h"

using namespace allot;
using Kind = k8s::RelayResponse::Kind;

namespace {

json::Value claim(const std::string& ns, const std::string& name, const std::string& rv,
                  const std::string& ips = "") {
    return *json::parse(
        R"({"apiVersion":"k8s.cni.cncf.io/v1alpha1","kind":"IPAMClaim","metadata":{"namespace":")" +
        ns + R"(","name":")" + name + R"(","uid":"u-)" + name + R"(","resourceVersion":")" + rv +
        R"(","labels":{"a":"b"},"managedFields":[{"manager":"kubevirt"}]},)" +
        R"("spec":{"network":"net","interface":"net1"},"status":{"ips":[)" + ips + "]}}");
}

k8s::RelayResponse ask(const gc::ClaimCopy& copy, const std::string& ns, const std::string& name) {
    gc::RelayServerOptions o;
    o.server = "https://10.96.0.1:443";
    o.local.push_back([&](const k8s::RelayRequest& r) { return copy.answer(r); });
    k8s::RelayRequest r{o.server, "GET", k8s::relayClaimPath(ns, name), "", "", 1000};
    return gc::relayAnswer(o, r, [](const k8s::RelayRequest&) {
        FAIL("a local question was sent to the API server");
        return k8s::RelayResponse{};
    });
}

}  // namespace

TEST_CASE("a claim path names a namespace and an IPAMClaim, nothing else") {
    auto p = k8s::relayClaimPath("vms", "vm1.net1");
    CHECK(k8s::relayLocal(p));
    auto q = k8s::parseRelayClaimPath(p);
    REQUIRE(q.has_value());
    CHECK(q->ns == "vms");
    CHECK(q->name == "vm1.net1");
    CHECK_FALSE(k8s::parseRelayClaimPath("/allot-relay/v1/ipamclaims/vms"));
    CHECK_FALSE(k8s::parseRelayClaimPath("/allot-relay/v1/ipamclaims/vms/a/b"));
    CHECK_FALSE(k8s::parseRelayClaimPath("/allot-relay/v1/ipamclaims/vms/.."));
    CHECK_FALSE(k8s::parseRelayClaimPath("/allot-relay/v1/ipamclaims/VMS/a"));
    CHECK_FALSE(k8s::parseRelayNodeSlicePath(p));
    CHECK_FALSE(k8s::relayAllowed("GET", p));  // never forwarded
}

TEST_CASE("the relay answers a claim from its watched copy, and refuses what it does not have") {
    gc::ClaimCopy copy;
    CHECK(ask(copy, "vms", "vm1").kind == Kind::Refused);  // not listed yet
    copy.replace({claim("vms", "vm1", "5"), claim("other", "vm1", "6", R"("10.0.0.9/24")")});
    auto a = ask(copy, "vms", "vm1");
    REQUIRE(a.kind == Kind::Answered);
    CHECK(a.status == 200);
    auto obj = json::parse(a.body);
    REQUIRE(obj.ok());
    // What the plugin reads and writes back, without managedFields or labels.
    CHECK(
        obj->dump() ==
        R"({"apiVersion":"k8s.cni.cncf.io/v1alpha1","kind":"IPAMClaim","spec":{"network":"net","interface":"net1"},"status":{"ips":[]},"metadata":{"name":"vm1","namespace":"vms","uid":"u-vm1","resourceVersion":"5"}})");
    CHECK(ask(copy, "other", "vm1").body.find("10.0.0.9/24") != std::string::npos);
    // A claim not seen yet (created a moment before its pod): refused, so the plugin GETs it.
    CHECK(ask(copy, "vms", "vm2").kind == Kind::Refused);
    // The status written by an ADD arrives as an event; a deletion removes the claim.
    copy.apply({k8s::WatchEvent::Type::Modified, claim("vms", "vm1", "7", R"("10.0.0.1/24")")});
    auto b = ask(copy, "vms", "vm1");
    CHECK(b.body.find(R"("resourceVersion":"7")") != std::string::npos);
    CHECK(b.body.find("10.0.0.1/24") != std::string::npos);
    copy.apply({k8s::WatchEvent::Type::Deleted, claim("vms", "vm1", "8")});
    CHECK(ask(copy, "vms", "vm1").kind == Kind::Refused);
    CHECK(copy.size() == 1);
    // A failed watch: nothing is answered until the next list.
    copy.lost();
    CHECK(ask(copy, "other", "vm1").kind == Kind::Refused);
    CHECK(copy.size() == 0);
}

TEST_CASE("a relist is streamed into the copy, which answers nothing until the list is whole") {
    gc::ClaimCopy copy;
    copy.replace({claim("vms", "vm1", "5")});
    REQUIRE(ask(copy, "vms", "vm1").kind == Kind::Answered);
    copy.listBegin();
    copy.listAdd(claim("vms", "vm2", "9"));
    // Mid-list: no partial picture is answered from; the plugin asks the API server.
    CHECK(ask(copy, "vms", "vm2").kind == Kind::Refused);
    CHECK(ask(copy, "vms", "vm1").kind == Kind::Refused);
    copy.listCommit();
    CHECK(ask(copy, "vms", "vm1").kind == Kind::Refused);  // not in the new list
    CHECK(ask(copy, "vms", "vm2").kind == Kind::Answered);
    // A list that failed midway is begun again from nothing: what it had read is not kept.
    copy.listBegin();
    copy.listAdd(claim("vms", "vm3", "10"));
    copy.listBegin();
    copy.listAdd(claim("vms", "vm4", "11"));
    copy.listCommit();
    CHECK(ask(copy, "vms", "vm3").kind == Kind::Refused);
    CHECK(ask(copy, "vms", "vm4").kind == Kind::Answered);
    CHECK(copy.size() == 1);
}
