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

TEST_CASE("an address that names no node is free only when every reporting node saw it unused") {
    Nodes n;
    const auto since = system_clock::now() - minutes(10);
    const auto after = since + minutes(1), before = since - minutes(1);
    const IpAddress a = ip("10.0.0.5");
    CHECK_FALSE(everyNodeReportsAbsent(a, since, {}, n.index));  // nobody reports: no proof
    CHECK(everyNodeReportsAbsent(a, since, {report("up", after, true)}, n.index));
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
    CHECK(everyNodeReportsAbsent(
        a, since, {report("up", after, true), report("gone", before, false, {a})}, n.index));
}
