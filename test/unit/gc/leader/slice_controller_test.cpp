// The node-slice controller against an in-memory SliceCluster (the real API server runs it in
// test/slices/slices_test.sh).
#include "gc-sidecar/leader/slice_controller.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "../../cluster/fake_cluster.h"
#include "../event_log.h"
#include "store/memory_store.h"

using allot::cluster::EventSpec;
using namespace allot;
using store::NodeSlicePool;

namespace {

// NADs, Nodes and seals faked; NodeSlicePools in the in-memory store, as the real SliceCluster
// keeps them in the Kubernetes one.
class FakeSlices : public gc::SliceCluster {
  public:
    std::vector<gc::NadObject> nadList;
    std::vector<std::string> nodeList;
    store::MemoryStore slices;              // the NodeSlicePools of every namespace
    std::map<std::string, bool> busyPools;  // "ns/pool"
    int writes = 0;

    core::Result<std::vector<gc::NadObject>> nads() override { return nadList; }
    core::Result<std::vector<std::string>> nodes() override { return nodeList; }
    core::Result<std::vector<store::NodeSlicePool>> slicePools() override {
        return slices.listNodeSlicePools("");
    }
    core::Result<void> create(const store::NodeSlicePool& p) override {
        return counted(slices.createNodeSlicePool(p));
    }
    core::Result<void> update(const store::NodeSlicePool& p) override {
        return counted(slices.updateNodeSlicePool(p));
    }
    core::Result<void> remove(const store::NodeSlicePool& p) override {
        return slices.removeNodeSlicePool(p.ns, p.name, p.resourceVersion);
    }
    std::map<std::string, std::string> seals;  // "ns/pool" -> token
    // Pools an ADD lands in after slicePoolHolds looked and before the seal: "ns/pool".
    std::set<std::string> fillOnSeal;
    int failUnseals = 0;             // the next n unsealSlicePool calls fail
    std::set<std::string> existing;  // "ns/pool": IPPools there (besides busy ones)
    std::set<std::string> created;   // "ns/pool": IPPools sealSlicePool created
    core::Result<bool> sealSlicePool(const std::string& ns, const std::string& pool,
                                     const core::Cidr&, const std::string& token,
                                     bool create) override {
        const std::string k = ns + "/" + pool;
        if (fillOnSeal.erase(k)) busyPools[k] = true;
        if (busyPools[k]) return false;
        if (!existing.count(k)) {
            if (!create) return true;
            created.insert(k);
            existing.insert(k);
        }
        seals[k] = token;
        return true;
    }
    core::Result<bool> slicePoolHolds(const std::string& ns, const std::string& pool) override {
        return busyPools[ns + "/" + pool];
    }
    core::Result<void> unsealSlicePool(const std::string& ns, const std::string& pool,
                                       const std::string& token) override {
        if (failUnseals > 0 && failUnseals--)
            return core::makeError(core::Errc::Transient, "API server away");
        if (auto it = seals.find(ns + "/" + pool); it != seals.end() && it->second == token)
            seals.erase(it);
        return {};
    }
    // NodeSlicePool "ns/name", which must exist.
    store::NodeSlicePool get(const std::string& k) {
        const auto slash = k.find('/');
        auto p = slices.getNodeSlicePool(k.substr(0, slash), k.substr(slash + 1));
        REQUIRE_MESSAGE(p.ok(), k);
        return std::move(*p);
    }
    bool has(const std::string& k) {
        const auto slash = k.find('/');
        return slices.getNodeSlicePool(k.substr(0, slash), k.substr(slash + 1)).ok();
    }
    bool none() { return slices.listNodeSlicePools("")->empty(); }

  private:
    core::Result<void> counted(const core::Result<store::NodeSlicePool>& r) {
        if (!r) return r.error();
        ++writes;
        return {};
    }
};

gc::NadObject nad(const std::string& ns, const std::string& name, const std::string& ipam,
                  const std::string& type = "allot") {
    return {ns, name, "uid-" + ns + "-" + name,
            R"({"cniVersion":"1.0.0","name":")" + name + R"(","type":"macvlan","ipam":{"type":")" +
                type + R"(",)" + ipam + "}}"};
}

struct Fixture {
    FakeSlices api;
    test::EventLog events;
    gc::Metrics metrics;
    gc::StopSignal stop;
    gc::SliceController ctl{gc::SliceOptions{}, api, events, metrics, stop};
    Fixture() {
        metrics.setLeader(true);  // as the elector's callback does, before the controller's
        ctl.setLeading(true);
    }
};

}  // namespace

TEST_CASE(
    "slice controller: a NAD with node_slice_size gets a NodeSlicePool owned as Whereabouts owns "
    "it") {
    Fixture f;
    f.api.nadList = {nad("kube-system", "blue", R"("range":"10.1.0.0/22","node_slice_size":"/24")"),
                     nad("kube-system", "plain", R"("range":"10.2.0.0/24")")};
    f.api.nodeList = {"n2", "n1"};
    auto rep = f.ctl.pass();
    REQUIRE_MESSAGE(rep.ok, rep.error);
    CHECK(rep.created == 1);
    const auto& p = f.api.get("kube-system/blue");
    CHECK(p.range == "10.1.0.0/22");
    CHECK(p.sliceSize == "/24");
    CHECK(p.allocations == std::vector<core::SliceAllocation>{{"n1", "10.1.0.0/24"},
                                                              {"n2", "10.1.1.0/24"},
                                                              {"", "10.1.2.0/24"},
                                                              {"", "10.1.3.0/24"}});
    REQUIRE(p.owners.size() == 1);
    CHECK(p.owners[0] == store::OwnerRef{"k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition",
                                         "blue", "uid-kube-system-blue", true, true});
    CHECK(f.metrics.render().find(
              "allot_node_slices_free{namespace=\"kube-system\",pool=\"blue\"} 2") !=
          std::string::npos);
    // A second pass writes nothing.
    const int writes = f.api.writes;
    CHECK(f.ctl.pass().ok);
    CHECK(f.api.writes == writes);
}

TEST_CASE("slice controller: NADs in other namespaces share a pool without owner references") {
    Fixture f;
    const std::string ipam = R"("range":"10.1.0.0/22","node_slice_size":"24","network_name":"net")";
    f.api.nadList = {nad("app-a", "x", ipam), nad("kube-system", "y", ipam)};
    f.api.nodeList = {"n1"};
    REQUIRE(f.ctl.pass().ok);
    const auto& p = f.api.get("kube-system/net");
    REQUIRE(p.owners.size() == 1);
    CHECK(p.owners[0].name == "y");
    CHECK(p.managed);
    // The last NAD goes: the pool goes.
    f.api.nadList = {nad("app-a", "x", ipam)};
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.has("kube-system/net"));
    CHECK(f.api.get("kube-system/net").owners.empty());
    f.api.nadList = {};
    auto rep = f.ctl.pass();
    CHECK(rep.deleted == 1);
    CHECK(f.api.none());
}

TEST_CASE("slice controller: a gone node's slice is freed once its node pool is empty") {
    Fixture f;
    f.api.nadList = {
        nad("kube-system", "blue", R"("range":"10.1.0.0/23","node_slice_size":"/24")")};
    f.api.nodeList = {"n1", "n2"};
    REQUIRE(f.ctl.pass().ok);
    f.api.nodeList = {"n2"};
    f.api.busyPools["kube-system/n1-10.1.0.0-24"] = true;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "n1");
    CHECK(f.api.seals.empty());  // a busy pool is never sealed
    const std::string before = f.api.get("kube-system/blue").resourceVersion;
    f.api.busyPools["kube-system/n1-10.1.0.0-24"] = false;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "");
    // Sealed before the slice went, with the NodeSlicePool's resourceVersion the freeing write
    // was guarded by.
    CHECK(f.api.seals["kube-system/n1-10.1.0.0-24"] == before);
}

namespace {

// Network blue in /24 slices kept in 4 parts; node n1 had slice 10.1.0.0/24 and is gone.
struct PartsNodeGone : Fixture {
    PartsNodeGone() {
        api.nadList = {
            nad("kube-system", "blue",
                R"("range":"10.1.0.0/23","node_slice_size":"/24","node_slice_parts":4)")};
        api.nodeList = {"n1", "n2"};
        REQUIRE(ctl.pass().ok);
        api.nodeList = {"n2"};
    }
};

std::string sealList(const FakeSlices& api) {
    std::string out;
    for (const auto& [pool, token] : api.seals) out += pool + "=" + token + " ";
    return out.empty() ? "none" : out;
}

}  // namespace

TEST_CASE("slice controller: a slice in parts is sealed whole, and only once every part is empty") {
    PartsNodeGone f;
    f.api.busyPools["kube-system/n1-10.1.0.0-24-part-2"] = true;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "n1");
    CHECK(f.api.seals.empty());  // not part 0 either: no part stays sealed under a kept slice
    f.api.busyPools["kube-system/n1-10.1.0.0-24-part-2"] = false;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "");
    CHECK(f.api.seals.size() == 4);
    CHECK(f.api.seals.count("kube-system/n1-10.1.0.0-24-part-3") == 1);
}

TEST_CASE(
    "slice controller: a part that fills while the slice's parts are being sealed leaves no part "
    "sealed") {
    PartsNodeGone f;
    // Every part empty when looked at; an ADD lands in part 2 before its seal.
    f.api.fillOnSeal.insert("kube-system/n1-10.1.0.0-24-part-2");
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "n1");
    CHECK_MESSAGE(f.api.seals.empty(), "sealed under a slice that stays: " << sealList(f.api));
    // Once part 2 is empty again, the slice goes, every part sealed first.
    f.api.busyPools["kube-system/n1-10.1.0.0-24-part-2"] = false;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "");
    CHECK(f.api.seals.size() == 4);
}

TEST_CASE("slice controller: a seal it could not take back is taken back on the next pass") {
    PartsNodeGone f;
    f.api.fillOnSeal.insert("kube-system/n1-10.1.0.0-24-part-1");
    f.api.failUnseals = 1;
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.seals.count("kube-system/n1-10.1.0.0-24") == 1);  // part 0: not taken back yet
    REQUIRE(f.ctl.pass().ok);
    CHECK_MESSAGE(f.api.seals.empty(), "still sealed: " << sealList(f.api));
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "n1");
}

namespace {

const cluster::EventSpec* eventOn(const std::vector<cluster::EventSpec>& evs,
                                  const std::string& reason, const std::string& kind,
                                  const std::string& name) {
    for (const auto& e : evs)
        if (e.reason == reason && e.object.kind == kind && e.object.name == name) return &e;
    return nullptr;
}

const std::string kNet = R"("range":"10.1.0.0/22","node_slice_size":"/24","network_name":"net")";

// One pass over `nads` (of network net, in kube-system) and node n1: net's refusal of parts.
std::string refusalFor(Fixture& f, std::vector<gc::NadObject> nads) {
    f.api.nadList = std::move(nads);
    f.api.nodeList = {"n1"};
    REQUIRE(f.ctl.pass().ok);
    return f.api.get("kube-system/net").partsRefused;
}

}  // namespace

TEST_CASE(
    "slice controller: node_slice_parts is refused on a network whose Whereabouts NAD asks for "
    "none: the NodeSlicePool says so, with a Warning Event naming the NAD") {
    Fixture f;
    const std::string refused =
        refusalFor(f, {nad("kube-system", "a", kNet + R"(,"node_slice_parts":4)"),
                       nad("kube-system", "b", kNet, "whereabouts")});
    CHECK(refused.find("NetworkAttachmentDefinition kube-system/b (whereabouts) asks for "
                       "node_slice_parts 1") != std::string::npos);
    CHECK(refused.find("kube-system/a") == std::string::npos);
    auto evs = f.events.all();
    const cluster::EventSpec* onPool =
        eventOn(evs, "NodeSlicePartsRefused", "NodeSlicePool", "net");
    REQUIRE(onPool);
    CHECK(onPool->warning);
    CHECK(onPool->message.find("kube-system/b (whereabouts)") != std::string::npos);
    CHECK(eventOn(evs, "NodeSlicePartsRefused", "NetworkAttachmentDefinition", "b"));
    CHECK_FALSE(eventOn(evs, "NodeSlicePartsRefused", "NetworkAttachmentDefinition", "a"));
    const size_t said = evs.size();
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.events.all().size() == said);  // once
    // The Whereabouts NAD asks for the same parts (allot installed under its name): honoured.
    f.api.nadList[1] = nad("kube-system", "b", kNet + R"(,"node_slice_parts":4)", "whereabouts");
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/net").partsRefused.empty());
}

TEST_CASE(
    "slice controller: node_slice_parts is refused on a network where a NAD asks for fewer or "
    "turns the reservations off") {
    Fixture f;
    const std::string refused =
        refusalFor(f, {nad("kube-system", "a", kNet + R"(,"node_slice_parts":4)"),
                       nad("kube-system", "b", kNet + R"(,"node_slice_parts":2)"),
                       nad("kube-system", "c", kNet + R"(,"enable_overlapping_ranges":false)")});
    CHECK(refused.find("kube-system/b (allot) asks for node_slice_parts 2") != std::string::npos);
    CHECK(refused.find("kube-system/c (allot) asks for node_slice_parts 1 and sets "
                       "enable_overlapping_ranges false") != std::string::npos);
    CHECK(f.events.count("NodeSlicePartsRefused") == 3);  // the NodeSlicePool, b and c
    f.api.nadList.resize(1);
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/net").partsRefused.empty());
}

TEST_CASE("slice controller: while parts are refused, freeing a slice creates no part") {
    PartsNodeGone f;
    // Another namespace's NAD of the same network ("name": blue), of type whereabouts.
    f.api.nadList.push_back(
        nad("apps", "blue", R"("range":"10.1.0.0/23","node_slice_size":"/24")", "whereabouts"));
    f.api.existing.insert("kube-system/n1-10.1.0.0-24-part-1");  // used before the refusal
    REQUIRE(f.ctl.pass().ok);
    CHECK_FALSE(f.api.get("kube-system/blue").partsRefused.empty());
    CHECK(f.api.get("kube-system/blue").allocations[0].nodeName == "");
    // Part 0 (Whereabouts' pool) is sealed, created when missing; part 1 is sealed as it is
    // there; parts 2 and 3 are not made.
    CHECK(f.api.created == std::set<std::string>{"kube-system/n1-10.1.0.0-24"});
    CHECK(f.api.seals.size() == 2);
    CHECK(f.api.seals.count("kube-system/n1-10.1.0.0-24-part-1") == 1);
}

TEST_CASE("slice controller: nodes beyond the slices get one Warning Event each on Node and pool") {
    Fixture f;
    f.api.nadList = {
        nad("kube-system", "blue", R"("range":"10.1.0.0/23","node_slice_size":"/24")")};
    f.api.nodeList = {"n1", "n2", "n3"};
    auto rep = f.ctl.pass();
    CHECK(rep.nodesWithout == 1);
    REQUIRE(f.ctl.pass().ok);
    auto evs = f.events.all();
    REQUIRE(evs.size() == 2);
    CHECK(evs[0].reason == "NodeSlicesExhausted");
    CHECK(evs[0].warning);
    CHECK(evs[0].object.kind == "Node");
    CHECK(evs[0].object.name == "n3");
    CHECK(evs[1].object.kind == "NodeSlicePool");
    CHECK(evs[0].message.find("kube-system/blue") != std::string::npos);
    CHECK(f.metrics.render().find(
              "allot_nodes_without_slice{namespace=\"kube-system\",pool=\"blue\"} 1") !=
          std::string::npos);
}

TEST_CASE("slice controller: dual-stack gives each range its own NodeSlicePool, IPv6 included") {
    Fixture f;
    f.api.nadList = {nad(
        "kube-system", "ds",
        R"("ipRanges":[{"range":"10.3.0.0/16"},{"range":"fd00:3::/64"}],"node_slice_size":"/24")")};
    f.api.nodeList = {"n1"};
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.get("kube-system/ds").allocations.size() == 256);
    const auto& v6 = f.api.get("kube-system/ds-fd00-3---64");
    CHECK(v6.range == "fd00:3::/64");
    CHECK(v6.sliceSize == "/72");
    CHECK(v6.allocations[0] == core::SliceAllocation{"n1", "fd00:3::/72"});
}

TEST_CASE("slice controller: a NAD it cannot read keeps its pool") {
    Fixture f;
    f.api.nadList = {
        nad("kube-system", "blue", R"("range":"10.1.0.0/23","node_slice_size":"/24")")};
    f.api.nodeList = {"n1"};
    REQUIRE(f.ctl.pass().ok);
    f.api.nadList[0].config = "{not json";
    auto rep = f.ctl.pass();
    CHECK(rep.ok);
    CHECK(rep.deleted == 0);
    CHECK(f.api.has("kube-system/blue"));
}

TEST_CASE(
    "slice controller: a slice size too fine for one object is refused with an Event on the NAD") {
    Fixture f;
    f.api.nadList = {nad("kube-system", "huge", R"("range":"10.0.0.0/8","node_slice_size":"/28")")};
    f.api.nodeList = {"n1"};
    REQUIRE(f.ctl.pass().ok);
    CHECK(f.api.none());
    REQUIRE(f.ctl.pass().ok);
    auto evs = f.events.all();
    REQUIRE(evs.size() == 1);
    CHECK(evs[0].reason == "NodeSlicesInvalid");
    CHECK(evs[0].object.kind == "NetworkAttachmentDefinition");
    CHECK(evs[0].message.find("8192") != std::string::npos);
}

TEST_CASE("slice controller: a controller that does not lead writes nothing") {
    Fixture f;
    f.api.nadList = {
        nad("kube-system", "blue", R"("range":"10.1.0.0/23","node_slice_size":"/24")")};
    f.api.nodeList = {"n1"};
    f.ctl.setLeading(false);
    CHECK_FALSE(f.ctl.pass().ok);
    CHECK(f.api.writes == 0);
}
