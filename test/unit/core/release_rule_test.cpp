#include "core/release_rule.h"

#include <doctest/doctest.h>

using namespace allot::core;
using namespace std::chrono;

namespace {

Owner onNode(const std::string& node, const std::string& uid = "u1") {
    return Owner{"c1", "ns/p", "net1", node, uid, "net"};
}

// Nodes "up" (Ready), "flaky" (NotReady for an hour); "gone" was listed by an earlier pass.
struct Nodes {
    std::set<std::string> everListed{"up", "flaky", "gone"};
    NodeIndex index;
    Nodes() {
        const auto t = system_clock::now();
        index.nodes = {{"up", NodeState{true, {}}}, {"flaky", NodeState{false, t - hours(1)}}};
        index.everListed = &everListed;
        index.listedAt = t;
        index.grace = minutes(5);
    }
};

NodeReport report(const std::string& node, system_clock::time_point at, bool complete,
                  std::set<IpAddress> held = {}) {
    return NodeReport{node, at, complete, std::move(held)};
}

IpAddress ip(const char* s) {
    return *IpAddress::parse(s);
}

}  // namespace

TEST_CASE("the leader frees on its own only what a deleted Node held") {
    Nodes n;
    PodState running{"u1", "", false, false, true, "flaky"};
    // The pod runs on a Node NotReady for an hour: its node decides, not the leader.
    const LeakCandidate onFlaky{"p", 5, onNode("flaky"), LeakReason::NodeNotReady};
    CHECK(proverFor(onFlaky, &running, n.index).prover == Prover::EntryNode);
    CHECK(proverFor(onFlaky, &running, n.index).node == "flaky");
    // The pod object is gone (a force delete): still its node's call.
    const LeakCandidate noPod{"p", 5, onNode("up"), LeakReason::NoPod};
    CHECK(proverFor(noPod, nullptr, n.index).prover == Prover::EntryNode);
    // The Node object is gone: Kubernetes says its pods are gone.
    const LeakCandidate onGone{"p", 5, onNode("gone"), LeakReason::NoPod};
    CHECK(proverFor(onGone, nullptr, n.index).prover == Prover::Leader);
    // A name no Node ever had proves nothing.
    const LeakCandidate onNever{"p", 5, onNode("never"), LeakReason::NoPod};
    CHECK(proverFor(onNever, nullptr, n.index).prover == Prover::EntryNode);
}

TEST_CASE("an entry that names no node takes its pod's node only while the pod is the same") {
    Nodes n;
    const Owner noNode = onNode("", "");
    PodState sameOnGone{"", "", true, true, false, "gone"};
    CHECK(proverFor({"p", 5, noNode, LeakReason::Terminal}, &sameOnGone, n.index).prover ==
          Prover::Leader);
    PodState sameOnUp{"", "", true, false, false, "up"};
    CHECK(proverFor({"p", 5, noNode, LeakReason::Terminal}, &sameOnUp, n.index).node == "up");
    // Re-created under the name: the old sandbox ran who knows where.
    PodState other{"u9", "", false, false, false, "gone"};
    CHECK(proverFor({"p", 5, onNode("", "u1"), LeakReason::OtherUid}, &other, n.index).prover ==
          Prover::EveryNode);
    CHECK(proverFor({"p", 5, noNode, LeakReason::NoPod}, nullptr, n.index).prover ==
          Prover::EveryNode);
}

TEST_CASE("an address that names no node is free only when every Node reported it unused") {
    Nodes n;
    const auto since = system_clock::now() - minutes(10);
    const auto after = since + minutes(1), before = since - minutes(1);
    const IpAddress a = ip("10.0.0.5");
    CHECK_FALSE(everyNodeReportsAbsent(a, since, {}, n.index));  // nobody reports: no proof
    // Node "flaky" never reported (its allot-gc never started, or its report is gone): it is
    // asked all the same, and blocks.
    std::string missing;
    CHECK_FALSE(everyNodeReportsAbsent(a, since, {report("up", after, true)}, n.index, &missing));
    CHECK(missing == "flaky");
    CHECK(everyNodeReportsAbsent(
        a, since, {report("up", after, true), report("flaky", after, true)}, n.index));
    // One node's namespace holds it.
    CHECK_FALSE(everyNodeReportsAbsent(
        a, since, {report("up", after, true), report("flaky", after, true, {a})}, n.index));
    // A report from before the pod went, or from a probe that could not see everything.
    CHECK_FALSE(everyNodeReportsAbsent(
        a, since, {report("up", after, true), report("flaky", before, true)}, n.index));
    CHECK_FALSE(everyNodeReportsAbsent(
        a, since, {report("up", after, true), report("flaky", after, false)}, n.index));
    // A deleted Node's stale report does not block.
    CHECK(everyNodeReportsAbsent(a, since,
                                 {report("up", after, true), report("flaky", after, true),
                                  report("gone", before, false, {a})},
                                 n.index));
}

TEST_CASE("an out-of-service or non-Linux Node is not asked for a report") {
    Nodes n;
    const auto since = system_clock::now() - minutes(10);
    const IpAddress a = ip("10.0.0.5");
    n.index.nodes["flaky"].outOfService = true;
    n.index.nodes.emplace("win", NodeState{true, {}, false, false});
    CHECK(everyNodeReportsAbsent(a, since, {report("up", since + minutes(1), true)}, n.index));
}

TEST_CASE("a deleted Node is proof whatever this leader listed before") {
    Nodes n;
    n.everListed.clear();  // a new leader, which never listed node-1
    const LeakCandidate c{"p", 5, onNode("node-1"), LeakReason::NoPod};
    // A name no Node ever had proves nothing...
    CHECK(proverFor(c, nullptr, n.index).prover == Prover::EntryNode);
    // ...but node-1's allot-gc published a report, which stays in the API after its Node goes.
    n.index.reported.insert("node-1");
    const Verdict v = proverFor(c, nullptr, n.index);
    CHECK(v.prover == Prover::Leader);
    CHECK(v.proof == FreeProof::NodeDeleted);
    // While its Node exists, a report proves nothing.
    n.index.nodes.emplace("node-1", NodeState{false, {}});
    CHECK(proverFor(c, nullptr, n.index).prover == Prover::EntryNode);
}

TEST_CASE("an out-of-service Node's entries are the leader's once their pods are gone") {
    Nodes n;
    n.index.nodes["flaky"].outOfService = true;
    const LeakCandidate gonePod{"p", 5, onNode("flaky"), LeakReason::NoPod};
    const Verdict v = proverFor(gonePod, nullptr, n.index);
    CHECK(v.prover == Prover::Leader);
    CHECK(v.proof == FreeProof::NodeOutOfService);
    CHECK(name(v.proof) == "its Node's node.kubernetes.io/out-of-service taint");
    // The pod object is still there: Kubernetes has not acted on the taint yet.
    PodState running{"u1", "", false, false, true, "flaky"};
    const LeakCandidate stillThere{"p", 5, onNode("flaky"), LeakReason::NodeNotReady};
    CHECK(proverFor(stillThere, &running, n.index).prover == Prover::EntryNode);
    // NotReady without the taint proves nothing.
    n.index.nodes["flaky"].outOfService = false;
    CHECK(proverFor(gonePod, nullptr, n.index).prover == Prover::EntryNode);
}

TEST_CASE("the runtime's word decides a sandbox, and unknown is never gone") {
    using R = RuntimeAnswer;
    using N = NamespaceAnswer;
    auto gone = [](R r, N ns) { return sandboxGone({r, ns, AddInFlight::No}).gone; };
    // NotFound: gone, whatever the namespaces show.
    CHECK(gone(R::NotFound, N::Holds));
    CHECK(gone(R::NotFound, N::Unknown));
    // Ready: held, even when no namespace holds it (a VM binding, a DPDK interface).
    CHECK_FALSE(gone(R::Ready, N::Absent));
    // Unreachable, timed out, refused: held.
    CHECK_FALSE(gone(R::Unknown, N::Absent));
    // NotReady: gone once no namespace holds it.
    CHECK(gone(R::NotReady, N::Absent));
    CHECK_FALSE(gone(R::NotReady, N::Holds));
    CHECK_FALSE(gone(R::NotReady, N::Unknown));
    // No runtime asked: the namespace probe alone.
    CHECK(gone(R::NotAsked, N::Absent));
    CHECK_FALSE(gone(R::NotAsked, N::Holds));
    CHECK_FALSE(gone(R::NotAsked, N::Unknown));
    CHECK(sandboxGone({R::Ready, N::Absent, AddInFlight::No}).why ==
          "the container runtime says its sandbox is ready");
}

TEST_CASE("no proof frees an entry whose ADD may still be running") {
    for (auto r : {RuntimeAnswer::NotFound, RuntimeAnswer::NotReady, RuntimeAnswer::NotAsked}) {
        CHECK_FALSE(sandboxGone({r, NamespaceAnswer::Absent, AddInFlight::Yes}).gone);
        CHECK_FALSE(sandboxGone({r, NamespaceAnswer::Absent, AddInFlight::Unknown}).gone);
        CHECK(sandboxGone({r, NamespaceAnswer::Absent, AddInFlight::No}).gone);
    }
}

TEST_CASE("an ADD is in flight while its mark is young, or while allot cannot tell") {
    const auto bound = seconds(150);
    // allot's own entry: its plugin marked the ADD.
    CHECK(addInFlight({true, true, seconds(5), seconds(1)}, bound) == AddInFlight::Yes);
    CHECK(addInFlight({true, true, seconds(200), seconds(1)}, bound) == AddInFlight::No);
    CHECK(addInFlight({true, false, {}, seconds(1)}, bound) == AddInFlight::No);
    // An entry another writer made (Whereabouts): held until the bound has passed since its
    // pod was known gone.
    CHECK(addInFlight({false, false, {}, seconds(1)}, bound) == AddInFlight::Unknown);
    CHECK(addInFlight({false, false, {}, seconds(151)}, bound) == AddInFlight::No);
    // A mark found for another writer's entry still counts.
    CHECK(addInFlight({false, true, seconds(1), seconds(500)}, bound) == AddInFlight::Yes);
}

TEST_CASE("an operator's release rests on the controller's own proof, else only on --force") {
    Nodes n;
    const PodState running{"u1", "", false, false, false, "up"};
    const PodState onFlaky{"u1", "", false, false, true, "flaky"};
    const PodState onGone{"u1", "", false, true, false, "gone"};
    const PodState terminal{"u1", "", true, false, false, "up"};
    // A running pod, or one on a NotReady Node, may be using it: only --force.
    CHECK(podMayUse(onNode("up"), &running));
    CHECK(podMayUse(onNode("flaky"), &onFlaky));
    CHECK_FALSE(operatorProof(onNode("up"), &running, n.index, false));
    CHECK(operatorProof(onNode("flaky"), &onFlaky, n.index, true) == FreeProof::Operator);
    // The pod is gone, terminal, or its Node is deleted: still its node's word unless that Node
    // is deleted.
    CHECK_FALSE(podMayUse(onNode("up"), nullptr));
    CHECK_FALSE(podMayUse(onNode("up"), &terminal));
    CHECK_FALSE(operatorProof(onNode("up"), nullptr, n.index, false));
    CHECK(operatorProof(onNode("up"), &terminal, n.index, true) == FreeProof::Operator);
    CHECK_FALSE(podMayUse(onNode("gone"), &onGone));
    CHECK(operatorProof(onNode("gone"), &onGone, n.index, false) == FreeProof::NodeDeleted);
    CHECK(operatorProof(onNode("gone"), nullptr, n.index, false) == FreeProof::NodeDeleted);
    // An IPAMClaim's address goes with its claim, whatever its pod and Node: only --force.
    Owner claimed = onNode("gone");
    claimed.claim = "ns/vm-a";
    CHECK(podMayUse(claimed, nullptr));
    CHECK_FALSE(operatorProof(claimed, nullptr, n.index, false));
    CHECK(operatorProof(claimed, nullptr, n.index, true) == FreeProof::Operator);
    // An entry that names no pod, or a name no Node ever had, proves nothing.
    CHECK(podMayUse(Owner{"c1", "", "net1", "gone", "", "net"}, nullptr));
    CHECK_FALSE(operatorProof(Owner{"c1", "", "net1", "gone", "", "net"}, nullptr, n.index, false));
    CHECK_FALSE(operatorProof(onNode("never"), nullptr, n.index, false));
}
