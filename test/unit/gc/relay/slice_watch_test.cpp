// The node relay's copy of this node's slices, and the relay answering from it.
#include "gc-sidecar/relay/slice_watch.h"

#include <doctest/doctest.h>

#include "gc-sidecar/relay/relay_server.h"

using namespace allot;
using Kind = k8s::RelayResponse::Kind;

namespace {

const std::string kServer = "https://10.96.0.1:443";

json::Value nsp(const std::string& ns, const std::string& name,
                std::vector<std::pair<std::string, std::string>> allocs,
                const std::string& manager = "allot-gc") {
    std::string a;
    for (const auto& [node, slice] : allocs)
        a += std::string(a.empty() ? "" : ",") + R"({"nodeName":")" + node + R"(","sliceRange":")" +
             slice + R"("})";
    return *json::parse(R"({"metadata":{"namespace":")" + ns + R"(","name":")" + name +
                        R"(","resourceVersion":"5","labels":{"app.kubernetes.io/managed-by":")" +
                        manager + R"("}},"status":{"allocations":[)" + a + "]}}");
}

k8s::RelayResponse ask(const gc::RelayServerOptions& o, const std::string& ns,
                       const std::string& name, const std::string& node) {
    k8s::RelayRequest r{kServer, "GET", k8s::relayNodeSlicePath(ns, name, node), "", "", 1000};
    return gc::relayAnswer(o, r, [](const k8s::RelayRequest&) {
        FAIL("a local question was sent to the API server");
        return k8s::RelayResponse{};
    });
}

}  // namespace

TEST_CASE("a node slice path names a namespace, a NodeSlicePool and a node, nothing else") {
    auto p = k8s::relayNodeSlicePath("kube-system", "blue", "node-a");
    CHECK(k8s::relayLocal(p));
    auto q = k8s::parseRelayNodeSlicePath(p);
    REQUIRE(q.has_value());
    CHECK(q->ns == "kube-system");
    CHECK(q->name == "blue");
    CHECK(q->node == "node-a");
    CHECK_FALSE(k8s::parseRelayNodeSlicePath("/allot-relay/v1/nodeslices/ns/blue"));
    CHECK_FALSE(k8s::parseRelayNodeSlicePath("/allot-relay/v1/nodeslices/ns/blue/a/b"));
    CHECK_FALSE(k8s::parseRelayNodeSlicePath("/allot-relay/v1/nodeslices/ns/../node-a"));
    CHECK_FALSE(k8s::relayAllowed("GET", p));  // never forwarded
}

TEST_CASE("the relay answers this node's slice from its watched copy, never from the server") {
    gc::NodeSliceCopy copy("node-a");
    gc::RelayServerOptions o;
    o.server = kServer;
    o.local.push_back([&](const k8s::RelayRequest& r) { return copy.answer(r); });
    // Not listed yet: refused, so the plugin reads the NodeSlicePool itself.
    CHECK(ask(o, "ns", "blue", "node-a").kind == Kind::Refused);
    copy.replace({nsp("ns", "blue", {{"node-b", "10.0.0.0/24"}, {"node-a", "10.0.1.0/24"}})});
    auto a = ask(o, "ns", "blue", "node-a");
    CHECK(a.kind == Kind::Answered);
    CHECK(a.status == 200);
    CHECK(a.body == "10.0.1.0/24");
    CHECK(ask(o, "ns", "red", "node-a").status == 404);
    // Another controller's NodeSlicePool (Whereabouts' seals nothing): not kept, read each time.
    copy.apply({k8s::WatchEvent::Type::Added,
                nsp("ns", "wa", {{"node-a", "10.1.0.0/24"}}, "whereabouts")});
    CHECK(ask(o, "ns", "wa", "node-a").status == 404);
    CHECK(ask(o, "ns", "blue", "node-b").kind == Kind::Refused);  // another node's: not kept
    // A resize moves node-a: the event replaces the copy's slice; a deletion removes it.
    copy.apply({k8s::WatchEvent::Type::Modified,
                nsp("ns", "blue", {{"node-a", "10.0.2.0/25"}, {"", "10.0.1.0/24"}})});
    CHECK(ask(o, "ns", "blue", "node-a").body == "10.0.2.0/25");
    copy.apply({k8s::WatchEvent::Type::Modified, nsp("ns", "blue", {{"", "10.0.2.0/25"}})});
    CHECK(ask(o, "ns", "blue", "node-a").status == 404);
    copy.apply({k8s::WatchEvent::Type::Added, nsp("ns", "blue", {{"node-a", "10.0.3.0/24"}})});
    copy.apply({k8s::WatchEvent::Type::Deleted, nsp("ns", "blue", {})});
    CHECK(ask(o, "ns", "blue", "node-a").status == 404);
    // A failed watch: nothing is answered until the next list.
    copy.apply({k8s::WatchEvent::Type::Added, nsp("ns", "blue", {{"node-a", "10.0.3.0/24"}})});
    copy.lost();
    CHECK(ask(o, "ns", "blue", "node-a").kind == Kind::Refused);
}

TEST_CASE("a local question no handler takes is refused, not forwarded") {
    gc::RelayServerOptions o;
    o.server = kServer;
    CHECK(ask(o, "ns", "blue", "node-a").kind == Kind::Refused);
}

TEST_CASE("the relay keeps no slice of a NodeSlicePool refusing node_slice_parts: read each time") {
    gc::NodeSliceCopy copy("node-a");
    gc::RelayServerOptions o;
    o.server = kServer;
    o.local.push_back([&](const k8s::RelayRequest& r) { return copy.answer(r); });
    auto refused = nsp("ns", "blue", {{"node-a", "10.0.1.0/24"}});
    refused.find("metadata")->set("annotations", json::Value::object());
    refused.find("metadata")
        ->find("annotations")
        ->set("allot.cni.cncf.io/node-slice-parts-refused", json::Value::string("NAD ns/wa"));
    copy.replace({refused});
    // Not found here: the plugin reads the object, and with it why parts are refused.
    CHECK(ask(o, "ns", "blue", "node-a").status == 404);
    copy.apply({k8s::WatchEvent::Type::Modified, nsp("ns", "blue", {{"node-a", "10.0.1.0/24"}})});
    CHECK(ask(o, "ns", "blue", "node-a").body == "10.0.1.0/24");
}

TEST_CASE("a CNI outcome path carries command, outcome, duration and a network name made safe") {
    auto p = k8s::relayOutcomePath({"ADD", "cni_11", "team a/blue", 1234});
    CHECK(k8s::relayLocal(p));
    auto o = k8s::parseRelayOutcomePath(p);
    REQUIRE(o);
    CHECK(o->command == "ADD");
    CHECK(o->outcome == "cni_11");
    CHECK(o->micros == 1234);
    CHECK(o->network == "team_a_blue");
    CHECK(k8s::parseRelayOutcomePath(k8s::relayOutcomePath({"DEL", "ok", "", 0}))->network == "_");
    CHECK(k8s::parseRelayOutcomePath(k8s::relayOutcomePath({"DEL", "ok", std::string(200, 'n'), 1}))
              ->network.size() == 63);
    CHECK_FALSE(k8s::parseRelayOutcomePath("/allot-relay/v1/outcome/ADD/ok/12"));
    CHECK_FALSE(k8s::parseRelayOutcomePath("/allot-relay/v1/outcome/ADD/ok/1x/net"));
    CHECK_FALSE(k8s::parseRelayOutcomePath("/allot-relay/v1/outcome/ADD/ok/1/../x"));
    CHECK_FALSE(k8s::parseRelayOutcomePath("/allot-relay/v1/outcome/A\"D/ok/1/net"));
    CHECK_FALSE(
        k8s::parseRelayOutcomePath("/allot-relay/v1/outcome/ADD/ok/99999999999999999999/n"));
}

TEST_CASE("the relay counts the pool requests it does not carry, by why") {
    std::vector<std::string> refused;
    gc::RelayServerOptions o;
    o.server = kServer;
    o.onRefused = [&](const char* why) { refused.emplace_back(why); };
    auto fwd = [](const k8s::RelayRequest&) { return k8s::RelayResponse{}; };
    const std::string pool = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/ns/ippools/p";
    gc::relayAnswer(o, {"https://elsewhere:6443", "GET", pool, "", "", 1000}, fwd);
    gc::relayAnswer(o, {kServer, "GET", "/api/v1/secrets", "", "", 1000}, fwd);
    o.health = std::make_shared<gc::RelayHealth>();
    o.health->failed("connection refused");
    gc::relayAnswer(o, {kServer, "GET", pool, "", "", 1000}, fwd);
    o.health->answered();
    gc::relayAnswer(o, {kServer, "GET", pool, "", "", 1000}, fwd);
    CHECK(refused ==
          std::vector<std::string>{"other_server", "not_a_pool_request", "api_unreachable"});
}
