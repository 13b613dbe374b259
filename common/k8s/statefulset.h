#pragma once
// StatefulSets for sticky addresses (sticky_statefulsets, core/sticky.h): the controller a pod
// names in its ownerReferences, and the parts of a StatefulSet allot-gc decides on. Decisions
// are core's; this is the objects' JSON.

#include <optional>

#include "core/result.h"
#include "core/sticky.h"
#include "json/json.h"
#include "k8s_api/resources.h"

namespace allot::k8s {

inline constexpr Resource kStatefulSet{"apps", "v1", "statefulsets", "StatefulSet"};

// The StatefulSet (apps/v1) that controls `pod` (its ownerReferences entry with controller:
// true); nullopt when the pod has none, or another kind of controller. Malformed references
// count as none: a pod that cannot be tied to a set keeps Whereabouts' behaviour.
std::optional<core::StatefulSetRef> controllingStatefulSet(const json::Value& pod);

// The ownerReferences entry that says so, for an answer that carries only what allot reads.
json::Value statefulSetOwnerReference(const core::StatefulSetRef& set);

// metadata.uid and deletionTimestamp, spec.replicas (default 1) and spec.ordinals.start
// (default 0). Invalid naming the field when one has the wrong type.
core::Result<core::StatefulSetView> statefulSetView(const json::Value& set);

}  // namespace allot::k8s
