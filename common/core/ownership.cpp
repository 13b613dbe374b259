#include "core/ownership.h"

#include "core/sticky.h"

namespace allot::core {

namespace {

bool sameInterface(const Owner& a, const Owner& b) {
    return a.ifName.empty() || b.ifName.empty() || a.ifName == b.ifName;
}

}  // namespace

bool heldBy(const Owner& record, const Owner& caller) {
    if (!sameInterface(record, caller)) return false;
    if (!record.containerId.empty() && !caller.containerId.empty())
        return record.containerId == caller.containerId;
    if (!record.podUid.empty() && !caller.podUid.empty()) return record.podUid == caller.podUid;
    return !record.podRef.empty() && record.podRef == caller.podRef;
}

bool ownedByPod(const Owner& record, const PodIdentity& pod) {
    if (!record.podUid.empty() && !pod.uid.empty())
        return record.podUid == pod.uid || (!pod.mirrorOf.empty() && record.podUid == pod.mirrorOf);
    return !record.podRef.empty() && record.podRef == pod.ref();
}

bool otherPodUnderName(const Owner& record, const PodIdentity& pod) {
    if (record.podUid.empty() || pod.uid.empty()) return false;
    return !ownedByPod(record, pod);
}

bool mayTakeOver(const Owner& record, const Owner& caller) {
    if (record.podRef.empty() || record.podRef != caller.podRef) return false;
    if (record.ifName != caller.ifName) return false;
    if (record.containerId == caller.containerId) return false;
    // A claim's (or a sticky StatefulSet's) address follows its own rules.
    if (claimOwned(record)) return record.claim == caller.claim;
    // The same pod: its kubelet stopped the old sandbox before it made this one. Anything
    // else (another UID, or a UID not recorded) may be a sandbox still running elsewhere.
    return !record.podUid.empty() && record.podUid == caller.podUid;
}

bool mayTakeOverReservation(const Owner& reservation, const Owner& caller, bool entryTakenOver) {
    return entryTakenOver && !reservation.podRef.empty() && reservation.podRef == caller.podRef &&
           reservation.ifName == caller.ifName && reservation.containerId != caller.containerId;
}

bool claimOwned(const Owner& record) {
    return !record.claim.empty();
}

bool mayRelease(const Owner& record, bool claimGone) {
    return !claimOwned(record) || claimGone;
}

bool sharesClaim(const Owner& record, const Owner& caller) {
    // A StatefulSet owns one address per member: its pods never share one.
    return claimOwned(record) && record.claim == caller.claim && !isStickyKey(record.claim);
}

}  // namespace allot::core
