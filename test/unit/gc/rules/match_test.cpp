#include "gc-sidecar/rules/match.h"

#include <doctest/doctest.h>

using namespace allot;
using gc::GonePod;
using gc::LeakReason;
using gc::MatchKind;

namespace {
core::Owner owner(std::string ref, std::string uid, std::string node, std::string ctr = "c1") {
    return core::Owner{std::move(ctr),  std::move(ref), "net1",
                       std::move(node), std::move(uid), "net"};
}
}  // namespace

TEST_CASE("an entry with a pod UID matches that UID only") {
    GonePod p{"ns", "web-0", "uid-1"};
    CHECK(gc::matchGone(owner("ns/web-0", "uid-1", "n1"), p, "n1", false) == MatchKind::Uid);
    CHECK(gc::matchGone(owner("ns/web-0", "uid-1", "n2"), p, "n1", true) == MatchKind::Uid);
    // StatefulSet re-creation: the same name, a new UID -> not the deleted pod's entry.
    CHECK(gc::matchGone(owner("ns/web-0", "uid-2", "n1"), p, "n1", false) == MatchKind::None);
    // Another pod's entry naming our UID is still ours; our name on another UID is not.
    CHECK(gc::matchGone(owner("ns/other", "uid-1", "n1"), p, "n1", false) == MatchKind::Uid);
}

TEST_CASE("an entry without a UID falls back to podref, and never across nodes") {
    GonePod p{"ns", "db-0", "uid-1"};
    CHECK(gc::matchGone(owner("ns/db-0", "", ""), p, "n1", false) == MatchKind::PodRef);
    CHECK(gc::matchGone(owner("ns/db-0", "", "n1"), p, "n1", false) == MatchKind::PodRef);
    CHECK(gc::matchGone(owner("ns/db-0", "", "n2"), p, "n1", false) == MatchKind::None);
    CHECK(gc::matchGone(owner("ns/db-1", "", ""), p, "n1", false) == MatchKind::None);
    CHECK(gc::matchGone(owner("", "", ""), p, "n1", false) == MatchKind::None);
    // A scan (pools not named by the pod's networks) needs the entry recorded on this node.
    CHECK(gc::matchGone(owner("ns/db-0", "", ""), p, "n1", true) == MatchKind::None);
    CHECK(gc::matchGone(owner("ns/db-0", "", "n1"), p, "n1", true) == MatchKind::PodRef);
}

TEST_CASE("a deleted pod whose UID is unknown matches no UID-carrying entry") {
    GonePod p{"ns", "a", ""};
    CHECK(gc::matchGone(owner("ns/a", "uid-1", "n1"), p, "n1", false) == MatchKind::None);
}

TEST_CASE("liveness: absent is gone; the same UID is not; another UID is a re-creation") {
    GonePod p{"ns", "a", "u1"};
    CHECK(gc::livenessOf(std::nullopt, p) == gc::Liveness::Gone);
    CHECK(gc::livenessOf(cluster::PodInfo{"u1", "Running"}, p) == gc::Liveness::SameUid);
    CHECK(gc::livenessOf(cluster::PodInfo{"u2", "Pending"}, p) == gc::Liveness::OtherUid);
}

TEST_CASE("leak classification: no pod, another UID (when recorded), terminal phase") {
    cluster::PodInfo running{"u1", "Running"}, other{"u2", "Running"}, done{"u1", "Succeeded"},
        failed{"u1", "Failed"};
    CHECK(gc::classifyLeak(owner("ns/a", "u1", "n"), nullptr) == LeakReason::NoPod);
    CHECK(gc::classifyLeak(owner("ns/a", "u1", "n"), &running) == LeakReason::None);
    CHECK(gc::classifyLeak(owner("ns/a", "u1", "n"), &other) == LeakReason::OtherUid);
    CHECK(gc::classifyLeak(owner("ns/a", "", "n"), &other) ==
          LeakReason::None);  // no UID to compare
    CHECK(gc::classifyLeak(owner("ns/a", "u1", "n"), &done) == LeakReason::Terminal);
    CHECK(gc::classifyLeak(owner("ns/a", "", ""), &failed) == LeakReason::Terminal);
    CHECK(gc::classifyLeak(owner("", "u1", "n"), nullptr) == LeakReason::None);
}
