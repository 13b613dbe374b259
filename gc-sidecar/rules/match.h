#pragma once
// Which allocations belong to a pod that is gone, and which look leaked. Pure.
//
// The rules exist so that no address is ever taken from a live pod. Ownership itself is
// core/ownership.h's one rule; on top of it:
// - an entry with a recorded pod UID belongs to that UID (or to the mirror pod whose
//   kubernetes.io/config.mirror names it: a static pod) and to nothing else;
// - an entry without one (written by Whereabouts, or by a runtime that passed no
//   K8S_POD_UID) is matched by podref, and only when it is not provably another node's;
// - an entry matched by podref only is released only when no pod of that namespace/name
//   exists at all; under a pod re-created with another UID, only the old UID's entries go
//   (its ADD never takes them over: core::mayTakeOver).
// The IPs a network-status annotation lists are never used to pick entries, so a forged
// annotation cannot free another pod's address.

#include <string>

#include "cluster/cluster.h"
#include "core/allocator.h"
#include "core/anomaly.h"
#include "core/ownership.h"

namespace allot::gc {

using GonePod = core::PodIdentity;

// "namespace/name" split at its first slash (no slash: namespace "").
std::pair<std::string, std::string> splitPodRef(const std::string& ref);

enum class MatchKind { None, Uid, PodRef };

// `scan`: the pool was not named by the pod's own networks (missing or malformed annotation,
// missing NetworkAttachmentDefinition, catch-up): then a podref match also needs the entry
// to be recorded on `node`.
MatchKind matchGone(const core::Owner& entry, const GonePod& pod, const std::string& node,
                    bool scan);

// What a GET of the pod's namespace/name said, after the pool was read.
enum class Liveness { Gone, SameUid, OtherUid, Unknown };
Liveness livenessOf(const std::optional<cluster::PodInfo>& now, const GonePod& pod);

using LeakReason = core::LeakReason;
const char* leakReasonName(LeakReason r);

// core::classifyLeak over a pod as the API shows it.
LeakReason classifyLeak(const core::Owner& entry, const cluster::PodInfo* pod);

}  // namespace allot::gc
