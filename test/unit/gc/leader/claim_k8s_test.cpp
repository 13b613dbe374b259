#include <doctest/doctest.h>

#include <memory>

#include "../../k8s/fake_server.h"
#include "cluster/k8s_cluster.h"
#include "gc-sidecar/leader/claim_gc.h"
#include "json/json.h"

using namespace allot;
using test::FakeServer;
using test::response;

namespace {

// A PodList of one live pod in "vms" whose networks annotation is `networks` (JSON text).
std::string podList(const std::string& networks) {
    auto pod = json::Value::object();
    auto md = json::Value::object();
    md.set("name", json::Value::string("virt-launcher-vm-a-target"));
    md.set("namespace", json::Value::string("vms"));
    auto ann = json::Value::object();
    ann.set("k8s.v1.cni.cncf.io/networks", json::Value::string(networks));
    md.set("annotations", std::move(ann));
    pod.set("metadata", std::move(md));
    auto items = json::Value::array();
    items.push(std::move(pod));
    auto list = json::Value::object();
    list.set("kind", json::Value::string("PodList"));
    list.set("items", std::move(items));
    return list.dump();
}

// A cluster over `server`.
std::unique_ptr<cluster::K8sCluster> clusterOf(FakeServer& server) {
    k8s::ClusterConfig cfg;
    cfg.server = server.url();
    cfg.token = "t";
    auto client = k8s::Client::fromConfig(cfg);
    REQUIRE(client.ok());
    return std::make_unique<cluster::K8sCluster>(std::move(*client), [](const core::Error&) {});
}

// Whether the claim source, over an API server that lists `networks`' pod, finds vms/vm-a
// referenced by a live pod.
bool referencesVmA(const std::string& networks) {
    FakeServer server({{response(200, podList(networks))}});
    auto cluster = clusterOf(server);
    auto source = gc::makeK8sClaimSource(*cluster);
    auto r = source->referencedByLivePod("vms", "vm-a");
    REQUIRE(r.ok());
    return *r;
}

}  // namespace

TEST_CASE(
    "a live pod that references a claim through its element's cni-args keeps the claim "
    "referenced, as the plugin reads it") {
    // After a live migration the current launcher pod may name the claim only in cni-args
    // (Multus passes them to the plugin as args.cni, which the plugin reads first).
    CHECK(referencesVmA(
        R"([{"name":"blue","interface":"pod7","cni-args":{"ipam-claim-reference":"vm-a"}}])"));
    CHECK(referencesVmA(R"([{"name":"blue","ipam-claim-reference":"vm-a"}])"));
    // The plugin takes cni-args' reference over the element's own: the element's is not used.
    CHECK_FALSE(referencesVmA(
        R"([{"name":"blue","ipam-claim-reference":"vm-a","cni-args":{"ipam-claim-reference":"vm-b"}}])"));
    CHECK_FALSE(referencesVmA(R"([{"name":"blue","cni-args":{"other":1}}])"));
}

TEST_CASE(
    "the controller's IPAMClaim names: nothing before a list, none served decides nothing, and "
    "only a deletion starts a pass") {
    gc::ClaimNames names;
    auto unlisted = names.names();
    REQUIRE_FALSE(unlisted.ok());
    CHECK(unlisted.code() == core::Errc::Transient);

    names.beginList();
    CHECK_FALSE(names.set({"vms", "vm-a"}, {}));
    CHECK(names.names().code() == core::Errc::Transient);  // a list midway answers nothing
    names.listed();
    REQUIRE(names.names().ok());
    CHECK(*names.names() == std::set<std::string>{"vms/vm-a"});

    // A claim created or updated frees nothing: no pass. Its deletion may: a pass.
    CHECK_FALSE(names.set({"vms", "vm-b"}, {}));
    CHECK_FALSE(names.set({"vms", "vm-b"}, {}));
    CHECK(names.erase({"vms", "vm-a"}));
    CHECK_FALSE(names.erase({"vms", "vm-a"}));
    CHECK(*names.names() == std::set<std::string>{"vms/vm-b"});

    names.lost();
    CHECK(names.names().code() == core::Errc::Transient);

    // Not served: NotFound, never an empty list (which would make every claim look deleted).
    names.notServed();
    CHECK(names.names().code() == core::Errc::NotFound);
}

TEST_CASE("a claim source over the watched names lists no IPAMClaim") {
    FakeServer server({});  // any request would fail
    auto cluster = clusterOf(server);
    gc::ClaimNames names;
    names.beginList();
    names.set({"vms", "vm-a"}, {});
    names.listed();
    auto source = gc::makeK8sClaimSource(*cluster, &names);
    auto listed = source->listClaims();
    REQUIRE(listed.ok());
    CHECK(*listed == std::set<std::string>{"vms/vm-a"});
    CHECK(server.requests().empty());
}

TEST_CASE(
    "while the watch says IPAMClaims are not served, the claim source lists them, and a list "
    "that finds them served asks the watch to list again") {
    // The CRD was installed after the controller's watch asked (real nodes: the claims were
    // never listed again, and a deleted claim's address stayed).
    FakeServer server({{response(200, R"({"kind":"IPAMClaimList","metadata":{},"items":[
        {"metadata":{"namespace":"vms","name":"vm-a"}}]})")}});
    auto cluster = clusterOf(server);
    gc::ClaimNames names;
    int rechecks = 0;
    names.onServed([&] { ++rechecks; });
    names.notServed();
    auto source = gc::makeK8sClaimSource(*cluster, &names);
    auto listed = source->listClaims();
    REQUIRE(listed.ok());
    CHECK(*listed == std::set<std::string>{"vms/vm-a"});
    CHECK(server.requests().size() == 1);
    CHECK(rechecks == 1);
}
