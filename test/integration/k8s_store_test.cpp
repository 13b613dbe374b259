// The store conformance suite and concurrent writers against the real API server started by
// scripts/test (e2e/cluster): KUBECONFIG is the admin, ALLOT_KUBECONFIG the allot identity,
// ALLOT_CONTROLLER_KUBECONFIG the controller's.
#include "store_k8s/k8s_store.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "../unit/store/store_conformance.h"
#include "k8s_api/resources.h"
#include "store_k8s/k8s_node_slice_store.h"

using namespace allot;

namespace {

std::string env(const char* k) {
    const char* v = std::getenv(k);
    return v ? v : "";
}

// The cluster runs Whereabouts' own IPPool CRD (e2e/cluster, ALLOT_CLUSTER_CRDS=whereabouts),
// which drops allot's entry fields.
bool prunes() {
    return env("ALLOT_CRDS") == "whereabouts";
}

std::unique_ptr<store::K8sStore> open(const std::string& kubeconfig = env("ALLOT_KUBECONFIG")) {
    REQUIRE_MESSAGE(!kubeconfig.empty(),
                    "no kubeconfig (ALLOT_KUBECONFIG, ALLOT_CONTROLLER_KUBECONFIG): run "
                    "under scripts/test");
    auto s = store::openK8sStore(kubeconfig, "", {});
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
    return std::move(*s);
}

// Unique per run, so reruns against one server never collide.
std::string runPrefix() {
    static std::string p = [] {
        std::random_device rd;
        return "t" + std::to_string(rd() % 1000000) + "-";
    }();
    return p;
}

// A NodeSlicePool as Whereabouts' controller (and allot-gc's) writes it, created as the admin.
void seedSlice(const std::string& sliceName, const std::string& node, const std::string& range) {
    auto admin = k8s::makeClient(env("KUBECONFIG"));
    REQUIRE(admin.ok());
    auto body = json::parse(
        R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"NodeSlicePool",
      "metadata":{"name":")" +
        sliceName + R"(","namespace":"kube-system"},
      "spec":{"range":"10.60.0.0/24","sliceSize":"/28"},
      "status":{"allocations":[{"nodeName":"","sliceRange":"10.60.0.0/28"},
        {"nodeName":")" +
        node + R"(","sliceRange":")" + range + R"("}]}})");
    REQUIRE(body.ok());
    auto made = admin->create(k8s::collectionPath(k8s::kNodeSlicePool, "kube-system"), *body);
    REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().message));
}

bool adminRemove(const std::string& pool) {
    auto admin = k8s::makeClient(env("KUBECONFIG"));
    return admin.ok() &&
           admin->remove(k8s::objectPath(k8s::kIPPool, "kube-system", pool), std::nullopt).ok();
}

}  // namespace

TEST_CASE("the Kubernetes store passes the store conformance suite on a real API server") {
    static int n = 0;
    auto s = open();
    CHECK(s->poolNamespace() == "kube-system");
    test::storeConformance(*s, runPrefix() + "c" + std::to_string(n++) + "-", seedSlice, prunes());
}

TEST_CASE(
    "the Kubernetes NodeSlicePool store passes the NodeSlicePool cases on a real API server") {
    static int n = 0;
    // NodeSlicePools are the slice controller's to write: the controller's identity.
    auto s = open(env("ALLOT_CONTROLLER_KUBECONFIG"));
    store::K8sNodeSliceStore slices(s->client());
    test::nodeSliceConformance(slices, *s, runPrefix() + "n" + std::to_string(n++) + "-",
                               s->poolNamespace(), "default");
}

TEST_CASE("concurrent writers on a real API server all land, surviving 409 Conflicts") {
    test::storeConcurrency([] { return std::unique_ptr<store::PoolStore>(open()); },
                           runPrefix() + "conc-", 8);
}

TEST_CASE("a pool in Whereabouts' exact format, without allot's fields, is read") {
    auto admin = k8s::makeClient(env("KUBECONFIG"));
    REQUIRE(admin.ok());
    std::string name = runPrefix() + "wb-10.70.0.0-24";
    auto body = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":")" +
                            name + R"(","namespace":"kube-system"},
      "spec":{"range":"10.70.0.0/24","allocations":{"1":{"id":"wb-ctr","podref":"ns/wb-pod"}}}})");
    REQUIRE(admin->create(k8s::collectionPath(k8s::kIPPool, "kube-system"), *body).ok());
    auto s = open();
    auto p = s->getPool(name);
    REQUIRE(p.ok());
    CHECK(p->allocations.at(1).containerId == "wb-ctr");
    CHECK(p->allocations.at(1).node.empty());
}

TEST_CASE("allot's optional allocation fields survive a write; a claim owner under any schema") {
    auto s = open();
    std::string name = runPrefix() + "prune-10.71.0.0-24";
    auto made = s->createPool({name, "10.71.0.0/24", {}, {}});
    REQUIRE(made.ok());
    auto p = *made;
    p.allocations[3] = core::Owner{"c", "ns/p", "eth0", "node-1", "uid-1", "net"};
    p.allocations[4] = core::Owner{"d", "ns/q", "eth0", "node-1", "uid-2", "net"};
    p.allocations[4].claim = "ns/vm-a.net1";
    REQUIRE(s->updatePool(p).ok());
    auto back = s->getPool(name);
    REQUIRE(back.ok());
    if (!prunes()) {
        CHECK(back->allocations == p.allocations);
        return;
    }
    // Whereabouts' schema keeps id, podref and ifname; the claim rides in the annotation.
    CHECK(back->allocations.at(3) == core::Owner{"c", "ns/p", "eth0", "", "", ""});
    core::Owner claimed{"d", "ns/q", "eth0", "", "", ""};
    claimed.claim = "ns/vm-a.net1";
    CHECK(back->allocations.at(4) == claimed);
}

TEST_CASE(
    "a token without rights is Forbidden, a garbage token Unauthorized, both naming the request") {
    auto s = open();
    // The allot identity may not read secrets: a 403 from the real RBAC authorizer.
    auto f = s->client().get("/api/v1/namespaces/kube-system/secrets");
    REQUIRE(!f.ok());
    CHECK(f.code() == core::Errc::Forbidden);
    CHECK(f.error().message.find("secrets") != std::string::npos);

    auto cfg = s->client().config();
    cfg.token = "garbage-token";
    cfg.tokenFile.clear();
    auto c = k8s::Client::fromConfig(cfg);
    REQUIRE(c.ok());
    auto u = c->get(k8s::collectionPath(k8s::kIPPool, "kube-system"));
    REQUIRE(!u.ok());
    CHECK(u.code() == core::Errc::Unauthorized);
    CHECK(u.error().message.find("ippools") != std::string::npos);
    CHECK(u.error().message.find("garbage-token") == std::string::npos);
}

// Plain mode, no node slices: 8,190 addresses in one IPPool object, written 64 entries a write
// as the plugin's group commit does, every entry with allot's optional fields offered.
TEST_CASE("a /19 fills completely on a real API server and stays within 1.1x Whereabouts' bytes") {
    auto s = open();
    std::string name = runPrefix() + "fill-10.72.0.0-19";
    auto made = s->createPool({name, "10.72.0.0/19", {}, {}});
    REQUIRE(made.ok());
    store::Pool p = *made;
    const core::u128 n = 8190;
    for (core::u128 off = 1; off <= n;) {
        for (int i = 0; i < 64 && off <= n; ++i, ++off) {
            char id[65];
            std::snprintf(id, sizeof id, "%064llx",
                          static_cast<unsigned long long>(off) * 2654435761ull);
            const std::string k = std::to_string(static_cast<unsigned>(off));
            p.allocations[off] =
                core::Owner{id,
                            "default/web-5f7d8c9b6d-" + k,
                            "net1",
                            "worker-" + std::to_string(static_cast<unsigned>(off % 50)),
                            "0b5d3c1e-7f6a-4b2c-9d8e-" + std::string(12 - k.size(), '0') + k,
                            "macvlan-conf"};
        }
        auto up = s->updatePool(p);
        if (!up.ok() && prunes() && up.error().message.find(" is full") != std::string::npos) {
            // Whereabouts' per-entry schema makes the server keep managedFields for every
            // entry: a pool object holds fewer entries under it, for Whereabouts' writes too.
            const size_t held = s->getPool(name)->allocations.size();
            MESSAGE("under Whereabouts' CRD the /19 holds "
                    << held << " of 8190 entries: " << up.error().message);
            CHECK(held >= 8000);
            REQUIRE(adminRemove(name));
            return;
        }
        REQUIRE_MESSAGE(up.ok(), (up.ok() ? "" : up.error().message));
        p = *up;
    }
    CHECK(p.allocations.size() == 8190);
    auto admin = k8s::makeClient(env("KUBECONFIG"));
    REQUIRE(admin.ok());
    auto raw = admin->get(k8s::objectPath(k8s::kIPPool, "kube-system", name));
    REQUIRE(raw.ok());
    const size_t stored = raw->dump().size();
    const auto size = store::poolSize(p, "kube-system");
    size_t kept = 0;
    for (const auto& [off, o] : p.allocations) kept += !o.podUid.empty();
    MESSAGE("8190 entries: " << stored << " bytes as stored; allot " << size.bytes / 8190.0
                             << " bytes/entry, Whereabouts' form " << size.whereaboutsBytes / 8190.0
                             << " (x" << double(size.bytes) / double(size.whereaboutsBytes) << "); "
                             << kept << " entries keep node/poduid/network");
    CHECK(stored < store::kEtcdRequestLimit);
    CHECK(size.bytes * 10 <= size.whereaboutsBytes * 11);
    CHECK(kept > 1000);
    // Still writable: a release and a re-allocation.
    p.allocations.erase(4000);
    auto up = s->updatePool(p);
    REQUIRE(up.ok());
    CHECK(up->allocations.size() == 8189);
    REQUIRE(admin->remove(k8s::objectPath(k8s::kIPPool, "kube-system", name), std::nullopt).ok());
}
