#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>

#include "cluster/cluster.h"

using namespace allot;
using namespace std::chrono_literals;

TEST_CASE(
    "a pod becomes a core::PodState in one place: identity, phase and, given Nodes, its Node's") {
    cluster::PodInfo p{"uid-1", "Succeeded", "static-uid", "worker-1"};
    const core::PodState alone = cluster::podState(p);
    CHECK(alone.uid == "uid-1");
    CHECK(alone.mirrorOf == "static-uid");
    CHECK(alone.terminal);
    CHECK(alone.nodeName == "worker-1");
    CHECK_FALSE(alone.nodeGone);  // no Nodes given: not known, so not gone
    CHECK_FALSE(alone.nodeNotReady);

    const auto now = std::chrono::system_clock::now();
    std::set<std::string> ever{"worker-1"};
    core::NodeIndex nodes;
    nodes.everListed = &ever;  // listed once, not now: deleted
    nodes.listedAt = now;
    CHECK(cluster::podState(p, &nodes).nodeGone);

    nodes.nodes["worker-1"] = core::NodeState{false, now - 10min};
    nodes.grace = 5min;
    p.phase = "Running";
    const core::PodState notReady = cluster::podState(p, &nodes);
    CHECK_FALSE(notReady.nodeGone);
    CHECK(notReady.nodeNotReady);
    CHECK_FALSE(notReady.terminal);
}
