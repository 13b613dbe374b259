#pragma once
// The one ownership rule: who holds a pool entry or an OverlappingRangeIPReservation. Every
// writer that gives an address back or takes one over asks here: the plugin's handover and
// reserve(), allot-gc's releases on a pod's deletion, its repair loop and its journal replay.
//
// A record (an entry, or a reservation seen as an Owner) is decided by the strongest
// identity both sides recorded:
// 1. container ID: when both name one, it decides alone (with the interface when both name
//    one). A sandbox is a container ID; a new sandbox of the same pod is another holder.
// 2. pod UID, when both sides have one. A static pod's entry carries the kubelet's UID for it
//    (its config hash); the API shows a mirror pod with another UID and that hash in its
//    `kubernetes.io/config.mirror` annotation: the mirror's hash counts as its UID.
// 3. podRef ("namespace/name") + interface: only for writers that record nothing else
//    (Whereabouts' older reservations, entries without a pod UID).

#include <string>
#include <string_view>

#include "core/allocator.h"

namespace allot::core {

inline constexpr std::string_view kConfigMirrorAnnotation = "kubernetes.io/config.mirror";

// A pod as the API shows it (or as a deletion event last showed it).
struct PodIdentity {
    std::string ns, name, uid;
    std::string mirrorOf;  // the config.mirror annotation: the static pod's own UID, or ""
    std::string ref() const { return ns + "/" + name; }
};

// True when `record` is held by the sandbox `caller` (a CNI call's container: DEL, journal
// replay, ADD's idempotency, CHECK).
bool heldBy(const Owner& record, const Owner& caller);

// True when `record` belongs to pod `pod`: by UID (or the mirror's static UID) when both have
// one, else by podRef. Says nothing about whether the pod still runs.
bool ownedByPod(const Owner& record, const PodIdentity& pod);

// True when the pod's recorded UID disagrees with `pod`: the name now belongs to another pod
// (re-created under the same name). False when either side has no UID.
bool otherPodUnderName(const Owner& record, const PodIdentity& pod);

// True when `caller` (an ADD) may take over `record`, held by an earlier sandbox under the
// same podRef and interface (another container): only a new sandbox of the same pod (both
// record the same pod UID; its kubelet stopped the old sandbox first), or the same claim's
// owner (an IPAMClaim's or a sticky StatefulSet's member: their rules). A pod re-created under
// the name with another UID gets another address: the old sandbox may still run (a force
// delete, an unreachable node), and its entry goes only as core/release_rule.h says. The new
// container is then recorded on the entry and the reservation, so the old container's release
// no longer matches them (heldBy).
bool mayTakeOver(const Owner& record, const Owner& caller);
// A reservation records no pod UID: it follows the pool entry. True when `caller`'s ADD took
// the entry over from an earlier sandbox (mayTakeOver said so, now or on an earlier try of
// this ADD) and `reservation` is held under the same podRef and interface by another
// container.
bool mayTakeOverReservation(const Owner& reservation, const Owner& caller, bool entryTakenOver);

// IPAMClaim (issue 18): an entry whose `claim` is set (an IPAMClaim, or a sticky StatefulSet:
// core/sticky.h) belongs to the claim, not to the pod
// that allocated it. It outlives its pods: no pod-scoped release (CNI DEL, the GC verb,
// allot-gc's pod-deletion path, its repair loop, journal replay) frees it: only a release
// made on a confirmed read that the record's claim is gone (`claimGone`; an API error never
// counts as gone).
bool claimOwned(const Owner& record);
bool mayRelease(const Owner& record, bool claimGone);

// True when `caller` may share `record`'s address without owning the entry: both name the
// same claim (live migration: the target pod holds the address while the source still does).
// Never for a sticky StatefulSet owner (core/sticky.h): its members each hold their own.
bool sharesClaim(const Owner& record, const Owner& caller);

}  // namespace allot::core
