#include "core/anomaly.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "core/naming.h"

using namespace allot::core;

namespace {

Owner holder(std::string cid, std::string ref, std::string uid = "") {
    return Owner{std::move(cid), std::move(ref), "net1", "node-a", std::move(uid), "net"};
}

ReservationEntry reservationOf(const std::string& ip, const Owner& o) {
    return {reservationName(*IpAddress::parse(ip), ""), o.containerId, o.podRef, o.ifName, "7", {}};
}

PoolEntries pool(const std::string& name, const std::string& range, const AllocationMap& allocs) {
    return {name, range, &allocs, {}, [](const Owner&) { return std::vector<std::string>{""}; }};
}

std::vector<AnomalyKind> kindsOf(const Findings& f) {
    std::vector<AnomalyKind> out;
    for (const auto& a : f.anomalies) out.push_back(a.kind);
    return out;
}

}  // namespace

TEST_CASE("each anomaly kind has the name its metric label and Event carry") {
    CHECK(name(AnomalyKind::DuplicateIp) == "duplicate_ip");
    CHECK(name(AnomalyKind::OutOfRange) == "out_of_range");
    CHECK(name(AnomalyKind::ReservationWithoutAllocation) == "reservation_without_allocation");
    CHECK(name(AnomalyKind::AllocationWithoutReservation) == "allocation_without_reservation");
    CHECK(name(AnomalyKind::UndecodablePool) == "undecodable_pool");
    CHECK(name(AnomalyKind::UndecodableEntry) == "undecodable_entry");
    CHECK(name(AnomalyKind::SliceNodeGone) == "slice_node_gone");
    CHECK(name(AnomalyKind::OutsideNodeSlice) == "outside_node_slice");
    CHECK(name(AnomalyKind::PoolObjectFull) == "pool_object_full");
}

TEST_CASE("a pool object that cannot grow is reported on that pool, with the store's reason") {
    AllocationMap a{{5, holder("c1", "ns/a")}};
    PassAnalysis an("kube-system", {});
    PoolEntries full = pool("net-a-10.0.0.0-24", "10.0.0.0/24", a);
    full.objectFull = "IPPool kube-system/net-a-10.0.0.0-24 cannot take another entry: ...";
    an.addPool(full);
    an.addPool(pool("net-b-10.1.0.0-24", "10.1.0.0/24", a));  // room left: nothing
    auto f = an.finish({});
    REQUIRE(kindsOf(f) == std::vector{AnomalyKind::PoolObjectFull});
    CHECK(f.anomalies[0].pool == "net-a-10.0.0.0-24");
    CHECK(f.anomalies[0].message == full.objectFull);
}

TEST_CASE(
    "an entry whose pod is gone, re-created, terminated, or on a gone or NotReady node is a "
    "candidate") {
    const Owner e = holder("c1", "ns/p", "u1");
    CHECK(classifyLeak(e, nullptr) == LeakReason::NoPod);
    PodState live{"u1", "", false, false};
    CHECK(classifyLeak(e, &live) == LeakReason::None);
    PodState other{"u2", "", false, false};
    CHECK(classifyLeak(e, &other) == LeakReason::OtherUid);
    PodState done{"u1", "", true, false};
    CHECK(classifyLeak(e, &done) == LeakReason::Terminal);
    PodState gone{"u1", "", false, true};
    CHECK(classifyLeak(e, &gone) == LeakReason::NodeGone);
    PodState notReady{"u1", "", false, false, true};
    CHECK(classifyLeak(e, &notReady) == LeakReason::NodeNotReady);
    CHECK(classifyLeak(holder("c1", ""), nullptr) == LeakReason::None);  // nothing to check
}

TEST_CASE("only the pods that allocations name are asked for, and a gone one is a candidate") {
    AllocationMap a{{5, holder("c1", "ns1/gone", "u1")}, {6, holder("c2", "ns2/live", "u2")}};
    PassAnalysis an("kube-system",
                    {reservationOf("10.0.0.5", a[5]), reservationOf("10.0.0.6", a[6])});
    auto use = an.addPool(pool("10.0.0.0-24", "10.0.0.0/24", a));
    REQUIRE(use);
    CHECK(use->size == 254);
    CHECK(use->used == 2);
    CHECK(an.wantedPods().size() == 2);
    CHECK(an.wantsPod("ns2/live"));
    CHECK_FALSE(an.wantsPod("ns2/other"));

    auto f = an.finish({{"ns2/live", PodState{"u2", "", false, false}}});
    REQUIRE(f.candidates.size() == 1);
    CHECK(f.candidates[0].offset == 5);
    CHECK(f.candidates[0].reason == LeakReason::NoPod);
    CHECK(f.anomalies.empty());
    CHECK(f.orphans.empty());
}

TEST_CASE("one IP in two overlapping pools and an offset outside the range are anomalies") {
    AllocationMap a{{5, holder("c1", "ns/a")}};
    AllocationMap b{{5, holder("c2", "ns/b")}, {300, holder("c3", "ns/c")}};
    PassAnalysis an("kube-system", {});
    an.addPool(pool("net-a-10.0.0.0-24", "10.0.0.0/24", a));
    an.addPool(pool("net-b-10.0.0.0-24", "10.0.0.0/24", b));
    auto f = an.finish({});
    // In the order read: pool by pool, entry by entry.
    REQUIRE(kindsOf(f) == std::vector{AnomalyKind::DuplicateIp, AnomalyKind::OutOfRange});
    CHECK(f.anomalies[0].message ==
          "10.0.0.5 is held twice: in IPPool net-a-10.0.0.0-24 by pod ns/a net1 and in IPPool "
          "net-b-10.0.0.0-24 by pod ns/b net1");
    CHECK(f.anomalies[0].pool == "net-b-10.0.0.0-24");
    CHECK(f.anomalies[1].message ==
          "IPPool kube-system/net-b-10.0.0.0-24 (10.0.0.0/24) has an allocation at offset 300, "
          "outside its range, held by pod ns/c net1");
    // Each holder of the duplicate is held against its own pod, with its own pool and owner.
    REQUIRE(f.candidates.size() == 2);
    CHECK(f.candidates[0].pool == "net-a-10.0.0.0-24");
    CHECK(f.candidates[0].owner == a[5]);
    CHECK(f.candidates[1].pool == "net-b-10.0.0.0-24");
    CHECK(f.candidates[1].owner == b[5]);
    CHECK(f.candidates[1].offset == 5);
}

TEST_CASE("a reservation nobody holds is an orphan; one held by name or owner is not") {
    AllocationMap a{{5, holder("c1", "ns/a")}};
    PassAnalysis an("kube-system", {reservationOf("10.0.0.5", a[5]),
                                    reservationOf("10.0.0.9", holder("c1", "ns/a")),
                                    reservationOf("10.0.0.7", holder("c9", "ns/z"))});
    an.addPool(pool("p", "10.0.0.0/24", a));
    auto f = an.finish({{"ns/a", PodState{}}});
    REQUIRE(f.orphans == std::vector<size_t>{2});
    REQUIRE(f.anomalies.size() == 1);
    CHECK(f.anomalies[0].kind == AnomalyKind::ReservationWithoutAllocation);
    CHECK(f.anomalies[0].key == orphanKey(an.reservations()[2]));
    CHECK(f.anomalies[0].reservation == an.reservations()[2].name);
    CHECK(f.anomalies[0].pool.empty());
}

TEST_CASE("a live entry lacks its reservation only where the pool's other entries have them") {
    AllocationMap uses{
        {5, holder("c1", "ns/a")}, {6, holder("c2", "ns/b")}, {7, holder("c3", "ns/gone")}};
    AllocationMap without{{8, holder("c4", "ns/c")}};
    PassAnalysis an("kube-system", {reservationOf("10.0.0.5", uses[5])});
    an.addPool(pool("p", "10.0.0.0/24", uses));
    an.addPool(pool("q", "10.0.1.0/24", without));
    auto f = an.finish({{"ns/a", PodState{}}, {"ns/b", PodState{}}, {"ns/c", PodState{}}});
    // ns/gone's entry is a leak candidate: released, not given a reservation.
    REQUIRE(f.missing.size() == 1);
    CHECK(f.missing[0].owner.podRef == "ns/b");
    CHECK(f.missing[0].reservation == reservationName(*IpAddress::parse("10.0.0.6"), ""));
    CHECK(kindsOf(f) == std::vector{AnomalyKind::AllocationWithoutReservation});
    CHECK(f.anomalies[0].key == missingKey(f.missing[0]));
    REQUIRE(f.candidates.size() == 1);
    CHECK(f.candidates[0].owner.podRef == "ns/gone");
}

TEST_CASE("undecodable pools and entries are reported; an entry's holder keeps its reservation") {
    AllocationMap a{{5, Owner{}}};
    PoolEntries p = pool("p", "10.0.0.0/24", a);
    p.undecoded.push_back({"10.0.0.5", "no id", std::nullopt, std::string("ns/x")});
    PassAnalysis an("kube-system", {reservationOf("10.0.0.9", Owner{"", "ns/x", "", "", "", ""})});
    auto use = an.addPool(p);
    REQUIRE(use);
    CHECK(use->used == 1);  // the placeholder counts as used
    CHECK_FALSE(an.addPool(pool("bad", "not-a-cidr", a)));
    an.addUndecodablePool("worse", "not JSON");
    auto f = an.finish({});
    CHECK(kindsOf(f) == std::vector{AnomalyKind::UndecodableEntry, AnomalyKind::UndecodablePool,
                                    AnomalyKind::UndecodablePool});
    CHECK(f.anomalies[2].message == "IPPool kube-system/worse cannot be decoded: not JSON");
    CHECK(f.orphans.empty());
    CHECK(f.candidates.empty());
}

TEST_CASE("the keys a decide step tracks stay the same for the same finding") {
    LeakCandidate c{"p", 5, holder("c1", "ns/a", "u1"), LeakReason::NoPod};
    // The reason is not part of it: a candidate whose pod went from Running to gone keeps
    // its streak.
    CHECK(candidateKey(c) ==
          candidateKey(LeakCandidate{"p", 5, holder("c1", "ns/a", "u1"), LeakReason::Terminal}));
    CHECK(candidateKey(c) != candidateKey(LeakCandidate{"p", 6, c.owner, c.reason}));
    CHECK(whoHolds(holder("0123456789abcdef0123", "")) == "container 0123456789abcdef net1");
}

TEST_CASE("a Node is gone only after an earlier pass listed it; NotReady past the grace is apart") {
    using namespace std::chrono;
    const auto t = system_clock::now();
    const std::set<std::string> everListed{"a", "b", "gone"};
    NodeIndex n{{{"a", NodeState{true, {}}},
                 {"b", NodeState{false, t - minutes(10)}},
                 {"c", NodeState{false, t - minutes(1)}}},
                &everListed,
                t,
                minutes(5)};
    CHECK_FALSE(n.gone("a"));
    CHECK_FALSE(n.gone("b"));  // NotReady for long: its sandboxes may run on
    CHECK(n.notReady("b"));
    CHECK_FALSE(n.notReady("c"));  // NotReady, within the grace
    CHECK_FALSE(n.notReady("a"));
    CHECK(n.gone("gone"));         // listed before, not now
    CHECK_FALSE(n.gone("never"));  // no Node ever had the name: proves nothing
    CHECK_FALSE(n.gone(""));       // unscheduled
    CHECK_FALSE(n.notReady("gone"));
}

namespace {

// NodeSlicePool "net" over 10.0.0.0/16 in /24 slices: node-a has 10.0.1.0/24, node-b 10.0.2.0/24.
std::vector<NodeSliceView> slicesOfNet() {
    return {{"net",
             "10.0.0.0/16",
             {{"node-a", "10.0.1.0/24"}, {"node-b", "10.0.2.0/24"}, {"", "10.0.3.0/24"}}}};
}

NodeIndex nodesNamed(std::initializer_list<const char*> names) {
    NodeIndex n;
    for (const char* name : names) n.nodes.emplace(name, NodeState{true, {}});
    n.listedAt = std::chrono::system_clock::now();
    return n;
}

}  // namespace

TEST_CASE("a slice pool that holds addresses after its Node is gone is reported, not freed") {
    AllocationMap a{{5, holder("c1", "ns/p", "u1")}};
    NodeIndex nodes = nodesNamed({"node-b"});
    nodes.sliced = {"node-a", "node-b"};
    PassAnalysis an("kube-system", {reservationOf("10.0.1.5", a[5])});
    an.setNodeSlices(slicesOfNet(), &nodes);
    an.addPool(pool("net-node-a-10.0.1.0-24", "10.0.1.0/24", a));
    // Its pod is still there (on the gone node): no leak candidate until its node counts as
    // gone (the repair pass asks NodeIndex::gone, which the NodeSlicePool's word makes true).
    CHECK(nodes.gone("node-a"));
    auto f = an.finish({{"ns/p", PodState{"u1", "", false, false, false, "node-a"}}});
    REQUIRE(kindsOf(f) == std::vector{AnomalyKind::SliceNodeGone});
    CHECK(f.anomalies[0].pool == "net-node-a-10.0.1.0-24");
    CHECK(f.anomalies[0].message.find("Node node-a is gone") != std::string::npos);
    CHECK(f.candidates.empty());

    SUBCASE("an empty one is not") {
        AllocationMap none;
        PassAnalysis an2("kube-system", {});
        an2.setNodeSlices(slicesOfNet(), &nodes);
        an2.addPool(pool("net-node-a-10.0.1.0-24", "10.0.1.0/24", none));
        CHECK(an2.finish({}).anomalies.empty());
    }
}

TEST_CASE("an address outside its node's slice, or held by a pod on another node, is reported") {
    NodeIndex nodes = nodesNamed({"node-a", "node-b", "node-c"});
    // node-c's pool still holds 10.0.2.0/24, which the NodeSlicePool now gives node-b.
    AllocationMap c{{7, holder("c7", "ns/c7", "u7")}};
    // node-a's pool holds a live pod that runs on node-b.
    AllocationMap a{{9, holder("c9", "ns/p9", "u9")}, {10, holder("c10", "ns/p10", "u10")}};
    PassAnalysis an("kube-system",
                    {reservationOf("10.0.2.7", c[7]), reservationOf("10.0.1.9", a[9]),
                     reservationOf("10.0.1.10", a[10])});
    an.setNodeSlices(slicesOfNet(), &nodes);
    an.addPool(pool("net-node-c-10.0.2.0-24", "10.0.2.0/24", c));
    an.addPool(pool("net-node-a-10.0.1.0-24", "10.0.1.0/24", a));
    auto f = an.finish({{"ns/c7", PodState{"u7", "", false, false, false, "node-c"}},
                        {"ns/p9", PodState{"u9", "", false, false, false, "node-b"}},
                        {"ns/p10", PodState{"u10", "", false, false, false, "node-a"}}});
    REQUIRE(kindsOf(f) ==
            std::vector{AnomalyKind::OutsideNodeSlice, AnomalyKind::OutsideNodeSlice});
    CHECK(f.anomalies[0].message.find("10.0.2.7") == 0);
    CHECK(f.anomalies[0].message.find("now node node-b's slice") != std::string::npos);
    CHECK(f.anomalies[1].message.find("10.0.1.9") == 0);
    CHECK(f.anomalies[1].message.find("runs on node node-b") != std::string::npos);
    CHECK(f.candidates.empty());  // live pods keep their addresses
}

TEST_CASE("a plain pool whose range lies in a NodeSlicePool's is not taken for a slice pool") {
    NodeIndex nodes = nodesNamed({"node-a"});
    AllocationMap a{{5, holder("c1", "ns/p", "u1")}};
    PassAnalysis an("kube-system", {reservationOf("10.0.1.5", a[5])});
    an.setNodeSlices(slicesOfNet(), &nodes);
    an.addPool(pool("other-10.0.1.0-24", "10.0.1.0/24", a));  // "other" is no node
    CHECK(
        an.finish({{"ns/p", PodState{"u1", "", false, false, false, "node-a"}}}).anomalies.empty());
}

TEST_CASE("a slice's part pools count as its node's slice pool in the slice checks") {
    NodeIndex nodes = nodesNamed({"node-b", "node-c"});
    nodes.sliced = {"node-a", "node-b"};
    AllocationMap a{{5, holder("c5", "ns/p5", "u5")}};  // part 2 of gone node-a's slice
    AllocationMap c{
        {7, holder("c7", "ns/c7", "u7")}};  // part 1 of node-c's old slice, node-b's now
    PassAnalysis an("kube-system",
                    {reservationOf("10.0.1.5", a[5]), reservationOf("10.0.2.7", c[7])});
    an.setNodeSlices(slicesOfNet(), &nodes);
    an.addPool(pool("net-node-a-10.0.1.0-24-part-2", "10.0.1.0/24", a));
    an.addPool(pool("net-node-c-10.0.2.0-24-part-1", "10.0.2.0/24", c));
    auto f = an.finish({{"ns/p5", PodState{"u5", "", false, false, false, "node-a"}},
                        {"ns/c7", PodState{"u7", "", false, false, false, "node-c"}}});
    REQUIRE(kindsOf(f) == std::vector{AnomalyKind::SliceNodeGone, AnomalyKind::OutsideNodeSlice});
    CHECK(f.anomalies[0].pool == "net-node-a-10.0.1.0-24-part-2");
    CHECK(f.anomalies[1].pool == "net-node-c-10.0.2.0-24-part-1");
    CHECK(f.anomalies[1].message.find("now node node-b's slice") != std::string::npos);
}
