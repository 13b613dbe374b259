#pragma once
// Which allocations belong to a pod that is gone, and which look leaked. Pure.
//
// The rules exist so that no address is ever taken from a live pod:
// - an entry with a recorded pod UID belongs to that UID and to nothing else;
// - an entry without one (written by Whereabouts, or by a runtime that passed no
//   K8S_POD_UID) is matched by podref, and only when it is not provably another node's;
// - whatever the match, an entry is released only when no pod of that namespace/name
//   exists at all: a pod re-created under the same name (StatefulSet) keeps the address,
//   which its ADD hands over to the new sandbox.
// The IPs a network-status annotation lists are never used to pick entries, so a forged
// annotation cannot free another pod's address.

#include <string>

#include "core/allocator.h"
#include "gc-sidecar/cluster.h"

namespace allot::gc {

struct GonePod {
    std::string ns, name, uid;
    std::string ref() const { return ns + "/" + name; }
};

enum class MatchKind { None, Uid, PodRef };

// `scan`: the pool was not named by the pod's own networks (missing or malformed annotation,
// missing NetworkAttachmentDefinition, catch-up): then a podref match also needs the entry
// to be recorded on `node`.
MatchKind matchGone(const core::Owner& entry, const GonePod& pod, const std::string& node,
                    bool scan);

// What a GET of the pod's namespace/name said, after the pool was read.
enum class Liveness { Gone, SameUid, OtherUid, Unknown };
Liveness livenessOf(const std::optional<PodInfo>& now, const GonePod& pod);

enum class LeakReason { None, NoPod, OtherUid, Terminal };
const char* leakReasonName(LeakReason r);

// Repair loop: is `entry` leaked, given the pod of its podref now (nullptr: no such pod)?
// An entry without a podref is never a leak candidate (nothing to check it against).
LeakReason classifyLeak(const core::Owner& entry, const PodInfo* pod);

}  // namespace allot::gc
