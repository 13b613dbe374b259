// The store conformance suite and concurrent writers against the real API server started by
// scripts/test (e2e/cluster): KUBECONFIG is the admin, ALLOT_KUBECONFIG the allot identity.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>

#include "../unit/store/store_conformance.h"
#include "k8s/resources.h"
#include "store/k8s_store.h"

using namespace allot;

namespace {

std::string env(const char* k) {
    const char* v = std::getenv(k);
    return v ? v : "";
}

std::unique_ptr<store::K8sStore> open(const std::string& kubeconfig = env("ALLOT_KUBECONFIG")) {
    REQUIRE_MESSAGE(!kubeconfig.empty(), "ALLOT_KUBECONFIG is not set: run under scripts/test");
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

}  // namespace

TEST_CASE("the Kubernetes store passes the store conformance suite on a real API server") {
    static int n = 0;
    auto s = open();
    CHECK(s->poolNamespace() == "kube-system");
    test::storeConformance(*s, runPrefix() + "c" + std::to_string(n++) + "-");
}

TEST_CASE("concurrent writers on a real API server all land, surviving 409 Conflicts") {
    test::storeConcurrency([] { return std::unique_ptr<store::PoolStore>(open()); }, runPrefix() + "conc-", 8);
}

TEST_CASE("a pool in Whereabouts' exact format, without allot's fields, is read") {
    auto admin = k8s::makeClient(env("KUBECONFIG"));
    REQUIRE(admin.ok());
    std::string name = runPrefix() + "wb-10.70.0.0-24";
    auto body = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":")" + name + R"(","namespace":"kube-system"},
      "spec":{"range":"10.70.0.0/24","allocations":{"1":{"id":"wb-ctr","podref":"ns/wb-pod"}}}})");
    REQUIRE(admin->create(k8s::collectionPath(k8s::kIPPool, "kube-system"), *body).ok());
    auto s = open();
    auto p = s->getPool(name);
    REQUIRE(p.ok());
    CHECK(p->allocations.at(1).containerId == "wb-ctr");
    CHECK(p->allocations.at(1).node.empty());
}

TEST_CASE("allot's optional allocation fields survive a write to the real server") {
    auto s = open();
    std::string name = runPrefix() + "prune-10.71.0.0-24";
    auto made = s->createPool({name, "10.71.0.0/24", {}, {}});
    REQUIRE(made.ok());
    auto p = *made;
    p.allocations[3] = core::Owner{"c", "ns/p", "eth0", "node-1", "uid-1", "net"};
    REQUIRE(s->updatePool(p).ok());
    auto back = s->getPool(name);
    REQUIRE(back.ok());
    CHECK(back->allocations.at(3) == p.allocations.at(3));
}

TEST_CASE("a token without rights is Forbidden, a garbage token Unauthorized, both naming the request") {
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
