// The engine's owned ADD (engine/owned_add.h) over a MemoryStore and an in-memory claim API:
// an IPAMClaim's address and a sticky StatefulSet member's.
#include "engine/owned_add.h"

#include <doctest/doctest.h>

#include "core/sticky.h"
#include "engine_fixture.h"
#include "fake_claim_api.h"

using namespace allot;
using core::Errc;
using test::FakeClaimApi;
using test::FakeClaims;

namespace {

const std::string kNetworks = R"([{"name":"blue","ipam-claim-reference":"vm-a.blue"}])";

// Network "blue" with allowPersistentIPs (or sticky_statefulsets), decoded and validated as the
// plugin does; `ipam` extra IPAM keys.
struct Network {
    cni::NetConf net;
    core::ValidatedConfig cfg;
    explicit Network(const std::string& top = R"("allowPersistentIPs":true,)",
                     const std::string& ipam = "") {
        const std::string text = R"({"cniVersion":"1.1.0","name":"blue","type":"macvlan",)" + top +
                                 R"("ipam":{"type":"allot","range":"10.0.0.0/29")" + ipam + "}}";
        auto n = cni::parseNetConf(text, {});
        REQUIRE_MESSAGE(n, (n ? "" : n.error().message));
        net = *n;
        auto c = core::validate(net.ipam);
        REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
        cfg = *c;
    }
};

struct Fixture {
    test::Engine e;
    FakeClaims claims;
    FakeClaimApi api{claims};
    Fixture() { claims.mem = e.mem.get(); }

    core::Result<std::vector<engine::IpResult>> add(const Network& n, const std::string& pod,
                                                    engine::Context* ctxOut = nullptr) {
        auto ctx = e.context(n.cfg);
        auto r = engine::addOwned(ctx, n.cfg, n.net, test::owner("c-" + pod, pod), {}, api,
                                  {"vms", pod, "net1"});
        if (ctxOut) ctxOut->report = ctx.report;
        return r;
    }
    // The claim owning each entry of the pool.
    std::vector<std::string> owners() {
        std::vector<std::string> out;
        for (const auto& [off, o] : e.allocations("10.0.0.0-29")) out.push_back(o.claim);
        return out;
    }
};

}  // namespace

TEST_CASE("an empty claim's ADD allocates an address the claim owns and writes it to its status") {
    Fixture f;
    f.claims.networks["vms/vm-a"] = kNetworks;
    f.claims.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    CHECK(test::firstCidr(f.add(Network(), "vm-a")) == "10.0.0.1/29");
    CHECK(f.owners() == std::vector<std::string>{"vms/vm-a.blue"});
    REQUIRE(f.claims.written.count("vms/vm-a.blue"));
    CHECK(f.claims.written["vms/vm-a.blue"].ips == std::vector<std::string>{"10.0.0.1/29"});
    CHECK(f.claims.written["vms/vm-a.blue"].allocated);
}

TEST_CASE("a claim whose status names an address gets exactly it, and its status is not written") {
    Fixture f;
    f.claims.networks["vms/vm-a"] = kNetworks;
    f.claims.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {"10.0.0.5/29"}};
    CHECK(test::firstCidr(f.add(Network(), "vm-a")) == "10.0.0.5/29");
    CHECK(f.claims.writes.empty());
}

TEST_CASE("a claim that does not exist yet is Transient, naming it, and nothing is allocated") {
    Fixture f;
    f.claims.networks["vms/vm-a"] = kNetworks;
    auto r = f.add(Network(), "vm-a");
    REQUIRE_FALSE(r);
    CHECK(r.code() == Errc::Transient);
    CHECK(r.error().message.find("IPAMClaim vms/vm-a.blue not found") != std::string::npos);
    CHECK(test::notFound(f.e.mem->getPool("10.0.0.0-29")));
}

TEST_CASE("args.cni's claim reference is used without reading the pod") {
    Fixture f;
    f.claims.claims["vms/vm-b.blue"] = {"vms/vm-b.blue", "blue", {}};
    Network n(R"("allowPersistentIPs":true,"args":{"cni":{"ipam-claim-reference":"vm-b.blue"}},)");
    CHECK(test::firstCidr(f.add(n, "vm-a")) == "10.0.0.1/29");
    CHECK(f.claims.podReads == 0);
    CHECK(f.owners() == std::vector<std::string>{"vms/vm-b.blue"});
    auto ref = engine::claimOf(n.net, f.api, {"vms", "vm-a", "net1"});
    CHECK((ref && *ref == "vms/vm-b.blue"));
}

TEST_CASE(
    "an exhausted claim ADD writes IPsAllocated=False; a status it cannot write is reported") {
    Fixture f;
    Network one(R"("allowPersistentIPs":true,)",
                R"(,"range_start":"10.0.0.2","range_end":"10.0.0.2")");
    REQUIRE(f.e.add(one.cfg, test::owner("other", "other")));
    f.claims.networks["vms/vm-a"] = kNetworks;
    f.claims.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    auto r = f.add(one, "vm-a");
    REQUIRE_FALSE(r);
    CHECK(r.code() == Errc::Exhausted);
    REQUIRE(f.claims.written.count("vms/vm-a.blue"));
    CHECK_FALSE(f.claims.written["vms/vm-a.blue"].allocated);
    CHECK(f.claims.written["vms/vm-a.blue"].reason == core::kReasonExhausted);

    f.claims.refuseStatus = true;
    engine::Context ctx(*f.e.mem);
    CHECK_FALSE(f.add(one, "vm-a", &ctx));
    REQUIRE(ctx.report.warnings.size() == 1);
    CHECK(ctx.report.warnings.begin()->find("status not written") != std::string::npos);
}

TEST_CASE("sticky_statefulsets: a member's address is owned by its set, a non-member's by itself") {
    Fixture f;
    const core::StatefulSetRef set{"vms", "db", "uid-db"};
    f.claims.networks["vms/db-0"] = "";
    f.claims.sets["vms/db-0"] = set;
    f.claims.networks["vms/other"] = "";
    f.claims.sets["vms/other"] = set;  // controlled by the set, but not named as its member
    Network sticky(R"()", R"(,"sticky_statefulsets":true)");
    REQUIRE(f.add(sticky, "db-0"));
    REQUIRE(f.add(sticky, "other"));
    auto owners = f.owners();
    std::sort(owners.begin(), owners.end());
    CHECK(owners == std::vector<std::string>{"", core::stickyKey(set)});
}
