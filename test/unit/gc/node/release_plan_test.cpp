#include "gc-sidecar/node/release_plan.h"

#include <doctest/doctest.h>

using namespace allot;
using gc::Liveness;
using gc::PoolGroup;
using gc::ReleaseItem;
using gc::SandboxProof;

namespace {
const std::string kNode = "n1";

// A gone pod ns/<name> (uid "u-<name>") whose deletion showed its sandbox stopped or not.
ReleaseItem gone(const std::string& name, bool sandboxGone = true, Liveness live = Liveness::Gone) {
    ReleaseItem it;
    it.w.pod = gc::PodRecord{"ns", name, "u-" + name};
    it.w.pod.sandboxGone = sandboxGone;
    it.gone = gc::GonePod{"ns", name, "u-" + name, ""};
    it.live = live;
    return it;
}
core::Owner entry(const std::string& name, const std::string& uid,
                  const std::string& node = kNode) {
    return core::Owner{"c-" + name, "ns/" + name, "net1", node, uid, "net"};
}
store::Pool pool(std::map<core::u128, core::Owner> allocations) {
    store::Pool p;
    p.name = "10.0.0.0-24";
    p.range = "10.0.0.0/24";
    p.allocations = std::move(allocations);
    return p;
}
PoolGroup members(std::vector<size_t> items, bool scan = false) {
    PoolGroup g;
    for (size_t i : items) g.members.emplace_back(i, scan);
    return g;
}
}  // namespace

TEST_CASE("a gone pod's entries are freed by UID; a podref-only entry waits for a fresh look") {
    std::vector<ReleaseItem> items{gone("web-0")};
    auto p =
        pool({{5, entry("web-0", "u-web-0")}, {6, entry("web-0", "")}, {7, entry("other", "u-o")}});
    auto plan = gc::planPool(p, members({0}), items, SandboxProof{}, kNode);
    CHECK(plan.release == std::vector<core::u128>{5});
    CHECK(plan.owners.at(5) == 0);
    REQUIRE(plan.lookAgain.count(0) == 1);
    CHECK(plan.lookAgain.at(0) == std::vector<core::u128>{6});

    SUBCASE("the look finds no pod of that name: the podref entry goes too") {
        gc::settle(plan, {{0, Liveness::Gone}});
        CHECK(plan.release == std::vector<core::u128>{5, 6});
        CHECK(plan.owners.at(6) == 0);
    }
    SUBCASE("the look finds the pod re-created: its podref entry stays") {
        gc::settle(plan, {{0, Liveness::OtherUid}});
        CHECK(plan.release == std::vector<core::u128>{5});
    }
    SUBCASE("no look made: nothing more is freed") {
        gc::settle(plan, {});
        CHECK(plan.release == std::vector<core::u128>{5});
    }
    CHECK(plan.lookAgain.empty());
}

TEST_CASE("an address a namespace on this node still holds is kept unless the sandbox stopped") {
    std::vector<ReleaseItem> items{gone("a", false), gone("b", true)};
    auto p = pool({{5, entry("a", "u-a")}, {6, entry("a", "u-a")}, {7, entry("b", "u-b")}});
    SandboxProof proof;
    proof.nodeHeld = std::set<core::IpAddress>{*core::IpAddress::parse("10.0.0.5"),
                                               *core::IpAddress::parse("10.0.0.7")};
    auto plan = gc::planPool(p, members({0, 1}), items, proof, kNode);
    // .5 is held and a's deletion did not show its sandbox stopped; .6 is held by no one; b's
    // sandbox stopped, so .7 goes although a namespace holds it.
    CHECK(plan.release == std::vector<core::u128>{6, 7});
    REQUIRE(plan.kept.size() == 1);
    CHECK(plan.kept[0].first == 0);
    CHECK(plan.kept[0].second.str() == "10.0.0.5");

    SUBCASE("without a probe's answer nothing unproven is freed") {
        auto blind = gc::planPool(p, members({0, 1}), items, SandboxProof{}, kNode);
        CHECK(blind.release == std::vector<core::u128>{7});
        CHECK(blind.kept.size() == 2);
    }
}

TEST_CASE("under a pod re-created with another UID only the old UID's entries go") {
    std::vector<ReleaseItem> items{gone("db-0", true, Liveness::OtherUid)};
    auto p =
        pool({{5, entry("db-0", "u-db-0")}, {6, entry("db-0", "")}, {7, entry("db-0", "u-new")}});
    auto plan = gc::planPool(p, members({0}), items, SandboxProof{}, kNode);
    CHECK(plan.release == std::vector<core::u128>{5});
    CHECK(plan.lookAgain.empty());
}

TEST_CASE("grouping: live pods and failed items look nowhere; scanners look in this node's pools") {
    std::vector<ReleaseItem> items{gone("a"), gone("b", true, Liveness::SameUid), gone("c"),
                                   gone("d")};
    items[0].pools = {gc::PoolKey{"ns1", "p1", "netA"}};
    items[1].pools = {gc::PoolKey{"ns1", "p1", "netA"}};
    items[2].pools = {gc::PoolKey{"ns1", "p2", ""}};
    items[2].failure = "get pod: timeout";
    items[3].scanAll = items[3].scanEveryPool = true;
    const std::set<gc::PoolKey> nodePools{{"ns1", "p1", ""}, {"ns2", "p3", ""}};
    const std::vector<gc::ScanFind> scanned{{"ns3", "p4", 3}, {"ns3", "p5", 1}};

    auto groups = gc::groupByPool(items, nodePools, scanned);
    REQUIRE(groups.size() == 3);
    const auto& p1 = groups.at({"ns1", "p1"});
    CHECK(p1.networkName == "netA");
    CHECK(p1.members == std::vector<std::pair<size_t, bool>>{{0, false}, {3, true}});
    CHECK(groups.at({"ns2", "p3"}).members == std::vector<std::pair<size_t, bool>>{{3, true}});
    CHECK(groups.at({"ns3", "p4"}).members == std::vector<std::pair<size_t, bool>>{{3, true}});
    CHECK(groups.count({"ns3", "p5"}) == 0);  // b is alive: a scan's find does not add it
    CHECK(groups.count({"ns1", "p2"}) == 0);  // c failed earlier in the batch

    CHECK(!gc::needsProbe(items, groups));
    items[3].w.pod.sandboxGone = false;
    CHECK(gc::needsProbe(items, groups));
}

TEST_CASE("a scan's podref match needs the entry recorded on this node") {
    std::vector<ReleaseItem> items{gone("x")};
    auto p = pool({{5, entry("x", "", "n2")}, {6, entry("x", "", kNode)}});
    auto plan = gc::planPool(p, members({0}, true), items, SandboxProof{}, kNode);
    CHECK(plan.release.empty());
    REQUIRE(plan.lookAgain.count(0) == 1);
    CHECK(plan.lookAgain.at(0) == std::vector<core::u128>{6});
}
