#include "gc-sidecar/leader/claim_gc.h"

#include <doctest/doctest.h>

#include "../../cluster/fake_cluster.h"
#include "../event_log.h"
#include "cni/network_selection.h"
#include "core/sticky.h"
#include "gc-sidecar/leader/repair.h"
#include "gc-sidecar/relay/claim_pod_index.h"
#include "gc-sidecar/relay/relay_server.h"
#include "k8s/statefulset.h"

using namespace allot;
using namespace std::chrono_literals;
using core::Result;

namespace {

constexpr const char* kNs = "pools";
constexpr const char* kPool = "10.1.0.0-24";

// Claims as the API server shows them; `fail` makes every call fail as the code says.
struct FakeClaims : gc::ClaimSource {
    std::set<std::string> live;
    std::optional<core::Errc> listFails, getFails;
    int gets = 0;
    Result<std::set<std::string>> listClaims() override {
        if (listFails) return core::makeError(*listFails, "list failed");
        return live;
    }
    Result<bool> exists(const std::string& ns, const std::string& name) override {
        ++gets;
        if (getFails) return core::makeError(*getFails, "get failed");
        return live.count(ns + "/" + name) != 0;
    }
    // Claims ("namespace/name") a live pod's networks annotation still names.
    std::set<std::string> referenced;
    std::optional<core::Errc> referencedFails;
    Result<bool> referencedByLivePod(const std::string& ns, const std::string& claim) override {
        if (referencedFails) return core::makeError(*referencedFails, "list failed");
        return referenced.count(ns + "/" + claim) != 0;
    }
    // StatefulSets by "namespace/name"; absent: NotFound.
    std::map<std::string, core::StatefulSetView> sets;
    std::optional<core::Errc> setFails;
    int setGets = 0;
    Result<std::optional<core::StatefulSetView>> statefulSet(const std::string& ns,
                                                             const std::string& name) override {
        ++setGets;
        if (setFails) return core::makeError(*setFails, "get failed");
        auto it = sets.find(ns + "/" + name);
        if (it == sets.end()) return std::optional<core::StatefulSetView>();
        return std::optional<core::StatefulSetView>(it->second);
    }
};

// One pool of kPool in kNs, the claims and sets the API shows, and one pass over them.
struct PassFixture {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    FakeClaims claims;

    bool held(core::u128 off) { return fake.pool(kNs, kPool)->allocations.count(off) != 0; }
    Result<gc::ClaimPassReport> pass() {
        return gc::releaseDeletedClaims(fake, claims, {kNs}, events, metrics);
    }
};

struct Fixture : PassFixture {
    Fixture() {
        store::Pool p{kPool, "10.1.0.0/24", {}, {}, {}};
        core::Owner a{"src", "vms/launcher-a", "net1", "n1", "uid-a", "blue", "vms/vm-a"};
        core::Owner b{"c2", "vms/launcher-b", "net1", "n1", "uid-b", "blue", "vms/vm-b"};
        core::Owner plain{"c3", "vms/web", "net1", "n1", "uid-c", "blue"};
        p.allocations = {{5, a}, {6, b}, {7, plain}};
        fake.putPool(kNs, p);
        fake.putReservation(kNs, {"10.1.0.5", "src", "vms/launcher-a", "net1", ""});
        claims.live = {"vms/vm-a", "vms/vm-b"};
    }
};

}  // namespace

TEST_CASE("a deleted claim's address is freed with its reservation; live claims' are kept") {
    Fixture f;
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->owned == 2);
    CHECK(r->released == 0);
    f.claims.live.erase("vms/vm-a");
    r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->gone == 1);
    CHECK(r->released == 1);
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.held(6));
    CHECK(f.held(7));  // an ordinary pod's entry is not this pass's business
}

TEST_CASE("a deleted claim's address waits while the pod holding it still runs") {
    Fixture f;
    f.claims.live.erase("vms/vm-a");
    f.fake.putPod("vms", "launcher-a", "uid-a");  // VM deleted, its launcher still terminating
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->gone == 1);
    CHECK(r->released == 0);
    CHECK(f.held(5));
    f.fake.putPod("vms", "launcher-a", "uid-a", "Succeeded");  // terminal: never runs again
    r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->released == 1);
    CHECK_FALSE(f.held(5));
}

TEST_CASE("a deleted claim's address waits while another live pod names the claim") {
    // Migrated: the entry names the source pod (gone); the target still runs, sharing it.
    Fixture f;
    f.claims.live.erase("vms/vm-a");
    f.claims.referenced = {"vms/vm-a"};
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->gone == 0);
    CHECK(r->released == 0);
    CHECK(f.held(5));
    f.claims.referenced.clear();
    f.claims.referencedFails = core::Errc::Transient;  // cannot tell: kept
    CHECK(f.pass()->released == 0);
    CHECK(f.held(5));
    f.claims.referencedFails.reset();
    CHECK(f.pass()->released == 1);
    CHECK_FALSE(f.held(5));
}

TEST_CASE("a deleted claim's address is kept when its pod cannot be read") {
    Fixture f;
    f.claims.live.erase("vms/vm-a");
    f.fake.failNext("getPod", 1, core::Errc::Transient);
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->released == 0);
    CHECK(f.held(5));
    r = f.pass();  // the pod is gone (never created in this fake): freed now
    REQUIRE(r.ok());
    CHECK(r->released == 1);
}

TEST_CASE("an API error never counts as a deleted claim") {
    Fixture f;
    f.claims.live.clear();
    f.claims.getFails = core::Errc::Transient;  // listed as absent, but the GET fails
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->released == 0);
    CHECK(f.claims.gets == 2);
    f.claims.getFails = core::Errc::Forbidden;
    CHECK(f.pass()->released == 0);
    f.claims.getFails.reset();
    f.claims.listFails = core::Errc::NotFound;  // no IPAMClaim resource: nothing decided
    auto unlisted = f.pass();
    REQUIRE(unlisted.ok());
    REQUIRE(unlisted->claimsUnlisted.has_value());
    CHECK(unlisted->claimsUnlisted->code == core::Errc::NotFound);
    CHECK(unlisted->released == 0);
    f.claims.listFails = core::Errc::Transient;
    CHECK(f.pass()->released == 0);
    CHECK(f.held(5));
    CHECK(f.held(6));
    f.claims.listFails.reset();
    CHECK(f.pass()->released == 2);  // confirmed now
}

TEST_CASE("a claim re-created between the list and the GET keeps its address") {
    Fixture f;
    f.claims.live.erase("vms/vm-b");
    struct Racy : gc::ClaimSource {
        FakeClaims& inner;
        explicit Racy(FakeClaims& i) : inner(i) {}
        Result<std::set<std::string>> listClaims() override {
            auto l = inner.listClaims();
            inner.live.insert("vms/vm-b");  // created right after the list
            return l;
        }
        Result<bool> exists(const std::string& ns, const std::string& n) override {
            return inner.exists(ns, n);
        }
        Result<std::optional<core::StatefulSetView>> statefulSet(const std::string& ns,
                                                                 const std::string& n) override {
            return inner.statefulSet(ns, n);
        }
        Result<bool> referencedByLivePod(const std::string& ns, const std::string& n) override {
            return inner.referencedByLivePod(ns, n);
        }
    } racy(f.claims);
    auto r = gc::releaseDeletedClaims(f.fake, racy, {kNs}, f.events, f.metrics);
    REQUIRE(r.ok());
    CHECK(r->released == 0);
    CHECK(f.held(6));
}

TEST_CASE("the repair loop keeps a claim-owned address whose pods are all gone") {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    gc::StopSignal stop;
    gc::RepairOptions opts;
    opts.poolNamespace = kNs;
    opts.leakPasses = 1;
    opts.leakGrace = 0ms;
    int after = 0;
    opts.afterPass = [&] { ++after; };
    store::Pool p{kPool, "10.1.0.0/24", {}, {}, {}};
    p.allocations = {
        {5, core::Owner{"src", "vms/gone", "net1", "n1", "uid-a", "blue", "vms/vm-a"}}};
    fake.putPool(kNs, p);
    gc::RepairLoop loop(opts, {&fake}, events, metrics, stop);
    loop.setLeading(true);
    for (int i = 0; i < 3; ++i) {
        auto r = loop.pass();
        REQUIRE(r.ok);
        CHECK(r.leakCandidates == 0);
    }
    CHECK(fake.pool(kNs, kPool)->allocations.count(5) == 1);
    CHECK(after == 3);
}

TEST_CASE("the relay answers a GET of a pod the watch has, from its networks annotation") {
    gc::PodNetworksIndex idx;
    gc::PodRecord a{"vms", "launcher-a", "uid-a"};
    a.networks = R"([{"name":"blue","ipam-claim-reference":"vm-a"}])";
    idx.set(a);
    gc::PodRecord plain{"vms", "web", "uid-w"};
    idx.set(plain);
    k8s::RelayRequest req{"https://api", "GET", "/api/v1/namespaces/vms/pods/launcher-a", "", "",
                          1000,          true};
    auto r = idx.answer(req);
    REQUIRE(r.has_value());
    CHECK(r->status == 200);
    auto pod = json::parse(r->body);
    REQUIRE(pod.ok());
    CHECK(pod->find("metadata")->find("uid")->asString() == "uid-a");
    CHECK(pod->find("metadata")
              ->find("annotations")
              ->find("k8s.v1.cni.cncf.io/networks")
              ->asString() == *a.networks);
    req.path = "/api/v1/namespaces/vms/pods/web";
    REQUIRE(idx.answer(req).has_value());
    CHECK(json::parse(idx.answer(req)->body)->find("metadata")->find("annotations") == nullptr);
    // Not known, not a GET of a pod: forwarded.
    req.path = "/api/v1/namespaces/vms/pods/other";
    CHECK_FALSE(idx.answer(req).has_value());
    req.path = "/apis/k8s.cni.cncf.io/v1alpha1/namespaces/vms/ipamclaims/vm-a";
    CHECK_FALSE(idx.answer(req).has_value());
    // A deletion of an older pod under the name leaves the new one.
    gc::PodRecord old{"vms", "launcher-a", "uid-old"};
    idx.erase(old);
    req.path = "/api/v1/namespaces/vms/pods/launcher-a";
    CHECK(idx.answer(req).has_value());
    idx.erase(a);
    CHECK_FALSE(idx.answer(req).has_value());
    // An annotation over the plugin's limit is left to the API server (the plugin names it).
    a.networks = std::string(cni::kMaxNetworksAnnotationBytes + 1, 'x');
    idx.set(a);
    CHECK_FALSE(idx.answer(req).has_value());
}

TEST_CASE("the relay server answers from its local hook before forwarding") {
    gc::PodNetworksIndex idx;
    idx.set(gc::PodRecord{"vms", "p", "uid-p"});
    gc::RelayServerOptions opts;
    opts.server = "https://api";
    opts.known = [&](const k8s::RelayRequest& r) { return idx.answer(r); };
    int forwarded = 0;
    gc::RelayForward fwd = [&](const k8s::RelayRequest&) {
        ++forwarded;
        return k8s::RelayResponse{k8s::RelayResponse::Kind::Answered, 404, -1, "{}"};
    };
    k8s::RelayRequest req{"https://api", "GET", "/api/v1/namespaces/vms/pods/p", "", "",
                          1000,          true};
    CHECK(gc::relayAnswer(opts, req, fwd).status == 200);
    req.path = "/api/v1/namespaces/vms/pods/q";
    CHECK(gc::relayAnswer(opts, req, fwd).status == 404);
    CHECK(forwarded == 1);
}

namespace {

const core::StatefulSetRef kWeb{"shop", "web", "set-uid"};

// Members web-0 and web-2 of StatefulSet shop/web (replicas 3), their pods deleted.
struct StickyFixture : PassFixture {
    StickyFixture() {
        store::Pool p{kPool, "10.1.0.0/24", {}, {}, {}};
        const std::string key = core::stickyKey(kWeb);
        p.allocations = {{5, {"c0", "shop/web-0", "net1", "n1", "u0", "blue", key}},
                         {6, {"c2", "shop/web-2", "net1", "n1", "u2", "blue", key}}};
        fake.putPool(kNs, p);
        fake.putReservation(kNs, {"10.1.0.6", "c2", "shop/web-2", "net1", ""});
        claims.listFails = core::Errc::NotFound;  // no IPAMClaim resource: sets still decided
        claims.sets["shop/web"] = core::StatefulSetView{"set-uid", false, 3, 0};
    }
};

}  // namespace

TEST_CASE("a StatefulSet member's address is kept while the set lives, freed after a scale-down") {
    StickyFixture f;
    for (int i = 0; i < 3; ++i) {
        auto r = f.pass();
        REQUIRE(r.ok());
        CHECK(r->owned == 2);
        CHECK(r->released == 0);
    }
    CHECK(f.claims.setGets == 3);            // one read per set per pass, not per member
    f.claims.sets["shop/web"].replicas = 2;  // web-2 is outside [0, 2)
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->released == 1);
    CHECK(f.held(5));
    CHECK_FALSE(f.held(6));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.6"));
    auto events = f.events.all();
    REQUIRE(events.size() == 1);
    CHECK(events[0].message.find("no longer has ordinal 2") != std::string::npos);
}

TEST_CASE("a StatefulSet deleted, being deleted or re-created frees its members' addresses") {
    for (int how = 0; how < 3; ++how) {
        CAPTURE(how);
        StickyFixture f;
        if (how == 0) f.claims.sets.clear();
        if (how == 1) f.claims.sets["shop/web"].deleting = true;
        if (how == 2) f.claims.sets["shop/web"].uid = "new-uid";
        auto r = f.pass();
        REQUIRE(r.ok());
        CHECK(r->released == 2);
        CHECK_FALSE(f.held(5));
        CHECK_FALSE(f.held(6));
    }
}

TEST_CASE("a StatefulSet that cannot be read, or a member pod still running, keeps the address") {
    StickyFixture f;
    f.claims.sets.clear();
    f.claims.setFails = core::Errc::Forbidden;
    CHECK(f.pass()->released == 0);
    f.claims.setFails = core::Errc::Transient;
    CHECK(f.pass()->released == 0);
    f.claims.setFails.reset();
    f.fake.putPod("shop", "web-0", "u0");  // still running under the entry's UID
    auto r = f.pass();
    REQUIRE(r.ok());
    CHECK(r->released == 1);
    CHECK(f.held(5));
    CHECK_FALSE(f.held(6));
}

TEST_CASE("the relay's answer for a pod carries its controlling StatefulSet") {
    gc::PodNetworksIndex idx;
    gc::PodRecord a{"shop", "web-0", "uid-0"};
    a.statefulSet = kWeb;
    idx.set(a);
    k8s::RelayRequest req{"https://api", "GET", "/api/v1/namespaces/shop/pods/web-0", "", "",
                          1000,          true};
    auto r = idx.answer(req);
    REQUIRE(r.has_value());
    auto pod = json::parse(r->body);
    REQUIRE(pod.ok());
    CHECK(k8s::controllingStatefulSet(*pod) == kWeb);
}

TEST_CASE("the owned-address pass covers every pool namespace it is given") {
    StickyFixture f;
    store::Pool other{kPool, "10.1.0.0/24", {}, {}, {}};
    other.allocations = {
        {9, {"c9", "shop/web-9", "net1", "n1", "u9", "blue", core::stickyKey(kWeb)}}};
    f.fake.putPool("named-by-a-nad", other);
    auto r =
        gc::releaseDeletedClaims(f.fake, f.claims, {kNs, "named-by-a-nad"}, f.events, f.metrics);
    REQUIRE(r.ok());
    CHECK(r->owned == 3);
    CHECK(r->released == 1);  // web-9: outside replicas 3
    CHECK(f.fake.pool("named-by-a-nad", kPool)->allocations.empty());
    CHECK(f.held(5));
    CHECK(f.held(6));
}
