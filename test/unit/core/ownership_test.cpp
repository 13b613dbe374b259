#include "core/ownership.h"

#include <doctest/doctest.h>

using namespace allot::core;

namespace {

Owner entry(std::string cid, std::string ref, std::string uid, std::string ifn = "net1") {
    return Owner{std::move(cid), std::move(ref), std::move(ifn), "node-a", std::move(uid), "net"};
}

}  // namespace

TEST_CASE("a container ID decides alone when both sides record one") {
    CHECK(heldBy(entry("c1", "ns/p", "u1"), entry("c1", "ns/p", "u1")));
    // Same pod, same UID, another sandbox: not the caller's record.
    CHECK_FALSE(heldBy(entry("c1", "ns/p", "u1"), entry("c2", "ns/p", "u1")));
    // Same container, another interface.
    CHECK_FALSE(heldBy(entry("c1", "ns/p", "u1", "net1"), entry("c1", "ns/p", "u1", "net2")));
    // An interface left blank on one side does not decide.
    CHECK(heldBy(entry("c1", "ns/p", "", ""), entry("c1", "ns/p", "", "net1")));
}

TEST_CASE("a pod UID decides when no container ID is on both sides") {
    CHECK(heldBy(entry("", "ns/p", "u1"), entry("c9", "ns/p", "u1")));
    CHECK_FALSE(heldBy(entry("", "ns/p", "u1"), entry("c9", "ns/p", "u2")));
}

TEST_CASE("podRef and interface decide only for a record that holds nothing else") {
    // An old Whereabouts reservation: podref only.
    CHECK(heldBy(entry("", "ns/p", ""), entry("c9", "ns/p", "u1")));
    CHECK_FALSE(heldBy(entry("", "ns/p", ""), entry("c9", "ns/q", "u1")));
    CHECK_FALSE(heldBy(entry("", "", ""), entry("c9", "", "")));
}

TEST_CASE("a static pod's entry is owned by its mirror pod through config.mirror") {
    // The kubelet recorded the static pod's own UID (its config hash) on the entry.
    const Owner e = entry("c1", "kube-system/etcd-node-a", "hash-h");
    PodIdentity mirror{"kube-system", "etcd-node-a", "mirror-uid", "hash-h"};
    CHECK(ownedByPod(e, mirror));
    CHECK_FALSE(otherPodUnderName(e, mirror));
    // Without the annotation the UIDs simply differ.
    PodIdentity plain{"kube-system", "etcd-node-a", "mirror-uid", ""};
    CHECK_FALSE(ownedByPod(e, plain));
    CHECK(otherPodUnderName(e, plain));
    // A mirror of another static pod (another hash) does not own it.
    PodIdentity other{"kube-system", "etcd-node-a", "mirror-uid", "hash-x"};
    CHECK_FALSE(ownedByPod(e, other));
}

TEST_CASE("a pod owns an entry by UID, and by podRef only when a UID is missing") {
    PodIdentity pod{"ns", "p", "u1", ""};
    CHECK(ownedByPod(entry("c", "ns/p", "u1"), pod));
    CHECK_FALSE(ownedByPod(entry("c", "ns/p", "u0"), pod));  // re-created under the name
    CHECK(otherPodUnderName(entry("c", "ns/p", "u0"), pod));
    CHECK(ownedByPod(entry("c", "ns/p", ""), pod));  // Whereabouts' entry
    CHECK_FALSE(otherPodUnderName(entry("c", "ns/p", ""), pod));
    CHECK_FALSE(ownedByPod(entry("c", "ns/q", ""), pod));
    // A UID matching but the name differing still owns it (UID is stronger than podRef).
    CHECK(ownedByPod(entry("c", "ns/q", "u1"), pod));
}

TEST_CASE("an ADD takes over an earlier sandbox's record of the same pod and interface only") {
    const Owner old = entry("c1", "ns/p", "u1");
    CHECK(mayTakeOver(old, entry("c2", "ns/p", "u1")));
    CHECK_FALSE(mayTakeOver(old, entry("c1", "ns/p", "u1")));  // itself: idempotent, not a handover
    CHECK_FALSE(mayTakeOver(old, entry("c2", "ns/p", "u1", "net2")));
    CHECK_FALSE(mayTakeOver(old, entry("c2", "ns/q", "u1")));
    CHECK_FALSE(mayTakeOver(entry("c1", "", ""), entry("c2", "", "")));
}

TEST_CASE(
    "a pod re-created under its name (another UID, or none recorded) never takes the old "
    "sandbox's address: it may still run on its node") {
    const Owner old = entry("c1", "ns/p", "u1");
    CHECK_FALSE(mayTakeOver(old, entry("c2", "ns/p", "u2")));  // force-deleted, re-created
    CHECK_FALSE(mayTakeOver(entry("c1", "ns/p", ""), entry("c2", "ns/p", "u2")));
    CHECK_FALSE(mayTakeOver(old, entry("c2", "ns/p", "")));
    AllocationMap m{{5, old}};
    auto r = IpRange::fromSpec({"10.0.0.0/24", "", "", {}}, "range");
    REQUIRE(r.ok());
    auto p = pick(*r, m, {entry("c2", "ns/p", "u2")});
    REQUIRE(p.ok());
    CHECK(p->kind == PickKind::New);
    CHECK(p->offset != 5);
    CHECK(m.at(5) == old);
    // Its reservation follows only an entry taken over.
    const Owner res{"c1", "ns/p", "net1", "", "", ""};
    CHECK_FALSE(mayTakeOverReservation(res, entry("c2", "ns/p", "u2"), false));
    CHECK(mayTakeOverReservation(res, entry("c2", "ns/p", "u1"), true));
    CHECK_FALSE(mayTakeOverReservation(res, entry("c1", "ns/p", "u1"), true));
}

TEST_CASE("after a takeover the old container's release no longer matches the record") {
    const Owner oldC = entry("c1", "ns/p", "u1");
    const Owner newC = entry("c2", "ns/p", "u1");
    AllocationMap m{{5, oldC}};
    auto r = IpRange::fromSpec({"10.0.0.0/24", "", "", {}}, "range");
    REQUIRE(r.ok());
    auto p = pick(*r, m, {newC});
    REQUIRE(p.ok());
    CHECK(p->kind == PickKind::HandedOver);
    CHECK(m.at(5) == newC);
    CHECK_FALSE(heldBy(m.at(5), oldC));
    CHECK(release(m, oldC.containerId, oldC.ifName) == 0);
    CHECK(m.size() == 1);
}

TEST_CASE("an IPAMClaim-owned entry is released only when the claim is confirmed gone") {
    Owner plain{"c1", "ns/p", "net1", "node-a", "uid-1", "net"};
    Owner claimed = plain;
    claimed.claim = "ns/vm-a.net1";
    CHECK_FALSE(claimOwned(plain));
    CHECK(claimOwned(claimed));
    CHECK(mayRelease(plain, false));
    CHECK_FALSE(mayRelease(claimed, false));
    CHECK(mayRelease(claimed, true));
    Owner target{"c2", "ns/q", "net1", "node-b", "uid-2", "net"};
    CHECK_FALSE(sharesClaim(claimed, target));
    target.claim = "ns/vm-a.net1";
    CHECK(sharesClaim(claimed, target));
    CHECK_FALSE(sharesClaim(plain, plain));  // no claim: nothing shared
}
