#include "gc-sidecar/claim_gc.h"

#include <doctest/doctest.h>

#include "fake_cluster.h"
#include "gc-sidecar/repair.h"

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
};

struct Fixture {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    FakeClaims claims;

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
    bool held(core::u128 off) { return fake.pool(kNs, kPool)->allocations.count(off) != 0; }
    Result<gc::ClaimPassReport> pass() {
        return gc::releaseDeletedClaims(fake, claims, kNs, events, metrics);
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
    CHECK(f.pass().code() == core::Errc::NotFound);
    f.claims.listFails = core::Errc::Transient;
    CHECK_FALSE(f.pass().ok());
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
    } racy(f.claims);
    auto r = gc::releaseDeletedClaims(f.fake, racy, kNs, f.events, f.metrics);
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
