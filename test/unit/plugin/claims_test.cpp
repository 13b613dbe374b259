// The IPAMClaim ADD as the CNI caller sees it (codes, messages, what DEL keeps); the
// flow itself is the engine's (test/unit/engine/owned_add_test.cpp).
#include <doctest/doctest.h>

#include "../engine/fake_claim_api.h"
#include "../store/store_ref.h"
#include "core/naming.h"
#include "plugin/plugin.h"
#include "store/memory_store.h"

using namespace allot;
using namespace allot::plugin;
using engine::Clock;
using test::FakeClaimApi;
using test::FakeClaims;

namespace {

// A store whose reservation creates are refused (RBAC): an ADD that fails after its entry.
class RefusingReservations : public test::StoreRef<store::MemoryStore> {
  public:
    using StoreRef::StoreRef;
    core::Result<store::Reservation> createReservation(const store::Reservation&) override {
        return core::makeError(core::Errc::Forbidden, "reservations forbidden");
    }
};

struct Harness {
    std::shared_ptr<store::MemoryStore> mem = std::make_shared<store::MemoryStore>();
    FakeClaims api;
    Deps deps;

    // The production wiring's shape: one store per call, with the claim API on it.
    bool refuseReservations = false;

    core::Result<StoreHandle> handle() {
        std::unique_ptr<store::PoolStore> s;
        if (refuseReservations)
            s = std::make_unique<RefusingReservations>(mem);
        else
            s = std::make_unique<test::StoreRef<store::MemoryStore>>(mem);
        return StoreHandle{std::move(s), "kube-system", std::make_unique<FakeClaimApi>(api)};
    }

    Harness() {
        api.mem = mem.get();
        deps.flatFiles = {};
        deps.sleep = [](std::chrono::milliseconds) {};
        deps.makeStore = [this](const core::ValidatedConfig&, Clock::time_point) {
            return handle();
        };
        deps.nodeName = [](const core::ValidatedConfig&, const cni::NetConf&) {
            return std::string("node-a");
        };
    }

    Outcome call(const std::string& cmd, const std::string& conf, const std::string& cid,
                 const std::string& pod) {
        EnvMap env{{"CNI_COMMAND", cmd},
                   {"CNI_CONTAINERID", cid},
                   {"CNI_NETNS", "/var/run/netns/t"},
                   {"CNI_IFNAME", "net1"},
                   {"CNI_PATH", "/opt/cni/bin"},
                   {"CNI_ARGS", "K8S_POD_NAMESPACE=vms;K8S_POD_NAME=" + pod}};
        return run(env, conf, deps);
    }
    size_t held() { return mem->getPool("10.0.0.0-29")->allocations.size(); }
};

std::string conf(const std::string& top = "") {
    return R"({"cniVersion":"1.1.0","name":"blue","type":"macvlan","allowPersistentIPs":true,)" +
           top + R"("ipam":{"type":"allot","range":"10.0.0.0/29"}})";
}

json::Value parsed(const Outcome& o) {
    auto v = json::parse(o.stdoutText);
    REQUIRE_MESSAGE(v.ok(), o.stdoutText);
    return *v;
}

std::string address(const Outcome& o) {
    REQUIRE_MESSAGE(o.exitCode == 0, o.stdoutText);
    return parsed(o).find("ips")->items()[0].find("address")->asString();
}

int code(const Outcome& o) {
    return static_cast<int>(*parsed(o).find("code")->asInt());
}

std::string message(const Outcome& o) {
    return parsed(o).find("msg")->asString();
}

const std::string kNetworks = R"([{"name":"blue","ipam-claim-reference":"vm-a.blue"}])";

}  // namespace

TEST_CASE("an empty claim gets an address owned by the claim, written to its status") {
    Harness h;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    auto a = h.call("ADD", conf(), "src", "launcher-a");
    CHECK(address(a) == "10.0.0.1/29");
    auto pool = h.mem->getPool("10.0.0.0-29");
    CHECK(pool->allocations.at(1).claim == "vms/vm-a.blue");
    REQUIRE(h.api.written.count("vms/vm-a.blue") == 1);
    const auto& st = h.api.written.at("vms/vm-a.blue");
    CHECK(st.ips == std::vector<std::string>{"10.0.0.1/29"});
    CHECK(st.ownerPod == "launcher-a");
    CHECK(st.allocated);
    CHECK(st.reason == "SuccessfulAllocation");
}

TEST_CASE("an empty claim's status is written alongside the reservation, once") {
    Harness h;
    h.api.early = true;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    CHECK(address(h.call("ADD", conf(), "src", "launcher-a")) == "10.0.0.1/29");
    CHECK(h.api.writes == std::vector<std::string>{"start 10.0.0.1/29"});
    CHECK(h.api.entriesAtStart == 1);       // after the pool entry, the claim's from then on
    CHECK(h.api.reservationsAtStart == 0);  // before the reservation
    size_t n = 0;
    (void)h.mem->eachReservation([&](store::Reservation&) { return ++n, true; });
    CHECK(n == 1);
}

TEST_CASE("a reservation that moves the address writes the claim's status again") {
    Harness h;
    h.api.early = true;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    // 10.0.0.1 is held through an overlapping range by another pod.
    auto ip = core::IpAddress::parse("10.0.0.1");
    REQUIRE(ip.ok());
    REQUIRE(h.mem->createReservation(
        {core::reservationName(*ip, ""), "other", "ns/other", "net1", "", {}}));
    CHECK(address(h.call("ADD", conf(), "src", "launcher-a")) == "10.0.0.2/29");
    CHECK(h.api.writes == std::vector<std::string>{"start 10.0.0.1/29", "set 10.0.0.2/29"});
    CHECK(h.api.claims.at("vms/vm-a.blue").ips == std::vector<std::string>{"10.0.0.2/29"});
}

TEST_CASE("an ADD that fails after the early status write puts the status back") {
    Harness h;
    h.api.early = true;
    h.refuseReservations = true;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    auto a = h.call("ADD", conf(), "src", "launcher-a");
    CHECK(a.exitCode != 0);
    CHECK(h.api.writes == std::vector<std::string>{"start 10.0.0.1/29", "restore "});
    CHECK(h.api.claims.at("vms/vm-a.blue").ips.empty());
    CHECK(message(a).find("reservations forbidden") != std::string::npos);
}

TEST_CASE("a second pod with the claim shares its address; DEL of both keeps it") {
    Harness h;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.networks["vms/launcher-b"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    auto a = h.call("ADD", conf(), "src", "launcher-a");
    h.api.written.clear();
    auto b = h.call("ADD", conf(), "dst", "launcher-b");
    CHECK(address(b) == address(a));
    CHECK(h.api.written.empty());  // the status already says it
    CHECK(h.held() == 1);
    CHECK(h.call("DEL", conf(), "src", "launcher-a").exitCode == 0);
    CHECK(h.call("DEL", conf(), "dst", "launcher-b").exitCode == 0);
    REQUIRE(h.held() == 1);
    // A restarted VM (a third pod) gets it again.
    h.api.networks["vms/launcher-c"] = kNetworks;
    CHECK(address(h.call("ADD", conf(), "c3", "launcher-c")) == address(a));
}

TEST_CASE("a claim that does not exist yet is code 11, naming it; nothing is allocated") {
    Harness h;
    h.api.networks["vms/launcher-a"] = kNetworks;
    auto a = h.call("ADD", conf(), "src", "launcher-a");
    CHECK(code(a) == 11);
    CHECK(message(a).find("IPAMClaim vms/vm-a.blue not found") != std::string::npos);
    CHECK(h.mem->getPool("10.0.0.0-29").code() == core::Errc::NotFound);
}

TEST_CASE("args.cni's reference is used without reading the pod") {
    Harness h;
    h.api.claims["vms/vm-b"] = {"vms/vm-b", "blue", {"10.0.0.5/29"}};
    auto a = h.call("ADD", conf(R"("args":{"cni":{"ipam-claim-reference":"vm-b"}},)"), "c1", "p1");
    CHECK(address(a) == "10.0.0.5/29");
    CHECK(h.api.podReads == 0);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(5).claim == "vms/vm-b");
}

TEST_CASE("no reference in the element for this interface: an ordinary address") {
    Harness h;
    h.api.networks["vms/p1"] = R"([{"name":"blue","interface":"net2","ipam-claim-reference":"x"}])";
    auto a = h.call("ADD", conf(), "c1", "p1");
    CHECK(address(a) == "10.0.0.1/29");
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(1).claim.empty());
}

TEST_CASE("bad input is code 7 with a clear message and releases nothing") {
    Harness h;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    REQUIRE(h.call("ADD", conf(), "src", "launcher-a").exitCode == 0);
    // A malformed annotation.
    h.api.networks["vms/bad"] = R"([{"name":"blue","ipam-claim-reference":5}])";
    auto a = h.call("ADD", conf(), "c2", "bad");
    CHECK(code(a) == 7);
    CHECK(message(a).find("k8s.v1.cni.cncf.io/networks") != std::string::npos);
    // A reference that is no object name.
    h.api.networks["vms/bad2"] = R"([{"name":"blue","ipam-claim-reference":"../x"}])";
    CHECK(code(h.call("ADD", conf(), "c3", "bad2")) == 7);
    // A claim whose status holds an address outside the range.
    h.api.networks["vms/out"] = R"([{"name":"blue","ipam-claim-reference":"vm-out"}])";
    h.api.claims["vms/vm-out"] = {"vms/vm-out", "blue", {"10.9.0.5/24"}};
    auto o = h.call("ADD", conf(), "c4", "out");
    CHECK(code(o) == 7);
    CHECK(message(o).find("outside every range") != std::string::npos);
    CHECK(h.held() == 1);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(1).claim == "vms/vm-a.blue");
}

TEST_CASE("an exhausted network writes IPsAllocated=False with SubnetExhausted and fails") {
    Harness h;
    for (int i = 0; i < 6; ++i) {
        std::string pod = "p" + std::to_string(i);
        h.api.networks["vms/" + pod] = "";  // pods without a claim
        REQUIRE(h.call("ADD", conf(), "c" + std::to_string(i), pod).exitCode == 0);
    }
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    auto a = h.call("ADD", conf(), "src", "launcher-a");
    CHECK(code(a) == 100);
    REQUIRE(h.api.written.count("vms/vm-a.blue") == 1);
    const auto& st = h.api.written.at("vms/vm-a.blue");
    CHECK_FALSE(st.allocated);
    CHECK(st.reason == "SubnetExhausted");
    CHECK(st.ips.empty());
}

namespace {

std::string stickyConf(bool on) {
    return std::string(R"({"cniVersion":"1.1.0","name":"blue","type":"macvlan",)") +
           R"("ipam":{"type":"allot","range":"10.0.0.0/29","sticky_statefulsets":)" +
           (on ? "true" : "false") + "}}";
}

}  // namespace

TEST_CASE("sticky_statefulsets: a member re-created under its name gets its address back") {
    Harness h;
    const core::StatefulSetRef web{"vms", "web", "set-uid"};
    h.api.networks["vms/web-0"] = "";
    h.api.networks["vms/web-1"] = "";
    h.api.sets["vms/web-0"] = web;
    h.api.sets["vms/web-1"] = web;
    CHECK(address(h.call("ADD", stickyConf(true), "c0", "web-0")) == "10.0.0.1/29");
    CHECK(address(h.call("ADD", stickyConf(true), "c1", "web-1")) == "10.0.0.2/29");
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(1).claim == "statefulset:vms/web/set-uid");
    // The pod deleted: its DEL frees nothing; another pod does not get the address.
    CHECK(h.call("DEL", stickyConf(true), "c0", "web-0").exitCode == 0);
    CHECK(h.held() == 2);
    h.api.networks["vms/other"] = "";
    CHECK(address(h.call("ADD", stickyConf(true), "c9", "other")) == "10.0.0.3/29");
    // Re-created: another sandbox under the same name takes it over.
    CHECK(address(h.call("ADD", stickyConf(true), "c0-new", "web-0")) == "10.0.0.1/29");
    auto e = h.mem->getPool("10.0.0.0-29")->allocations.at(1);
    CHECK(e.containerId == "c0-new");
    CHECK(e.claim == "statefulset:vms/web/set-uid");
    // A pod that names the set as its controller but is no member by name ("<set>-<n>"):
    // ordinary, so a pod's author cannot pin an address on a set's lifetime.
    h.api.networks["vms/impostor"] = "";
    h.api.sets["vms/impostor"] = web;
    CHECK(address(h.call("ADD", stickyConf(true), "ci", "impostor")) == "10.0.0.4/29");
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(4).claim.empty());
    // A pod no StatefulSet controls is an ordinary pod: its DEL frees it.
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(3).claim.empty());
    CHECK(h.call("DEL", stickyConf(true), "c9", "other").exitCode == 0);
    CHECK(h.call("DEL", stickyConf(true), "ci", "impostor").exitCode == 0);
    CHECK(h.held() == 2);
}

TEST_CASE("sticky_statefulsets off (the default): a member's DEL frees its address") {
    Harness h;
    h.api.networks["vms/web-0"] = "";
    h.api.sets["vms/web-0"] = {"vms", "web", "set-uid"};
    REQUIRE(address(h.call("ADD", stickyConf(false), "c0", "web-0")) == "10.0.0.1/29");
    CHECK(h.api.podReads == 0);  // no pod read on a network that asks for nothing
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(1).claim.empty());
    CHECK(h.call("DEL", stickyConf(false), "c0", "web-0").exitCode == 0);
    CHECK(h.held() == 0);
}

TEST_CASE("sticky_statefulsets: a pod that cannot be found is code 11 and allocates nothing") {
    Harness h;
    auto o = h.call("ADD", stickyConf(true), "c0", "ghost");
    CHECK(code(o) == 11);
    CHECK(message(o).find("vms/ghost not found (its StatefulSet is read from it)") !=
          std::string::npos);
    CHECK_FALSE(h.mem->getPool("10.0.0.0-29").ok());
}

TEST_CASE("CHECK from a migration target passes on the claim's shared address") {
    Harness h;
    h.api.networks["vms/launcher-a"] = kNetworks;
    h.api.networks["vms/launcher-b"] = kNetworks;
    h.api.networks["vms/other"] = "";
    h.api.claims["vms/vm-a.blue"] = {"vms/vm-a.blue", "blue", {}};
    REQUIRE(address(h.call("ADD", conf(), "src", "launcher-a")) == "10.0.0.1/29");
    REQUIRE(address(h.call("ADD", conf(), "dst", "launcher-b")) == "10.0.0.1/29");
    const std::string prev =
        R"("prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.0.0.1/29"}]},)";
    auto target = h.call("CHECK", conf(prev), "dst", "launcher-b");
    CHECK_MESSAGE(target.exitCode == 0, target.stdoutText);
    CHECK(h.call("CHECK", conf(prev), "src", "launcher-a").exitCode == 0);
    // A pod that references no claim and holds nothing fails CHECK.
    auto other = h.call("CHECK", conf(prev), "x", "other");
    CHECK(other.exitCode != 0);
    CHECK(message(other).find("no allocation for container x") != std::string::npos);
}
