#pragma once
// What allot-gc keeps of a pod: the agent's pod watch fills it, its Reclaimer releases by it and
// its relay answers the plugin from it (claim_pod_index.h). A plain type.

#include <optional>
#include <string>

#include "core/sticky.h"

namespace allot::gc {

// What PodWatch keeps of a pod: just what reclamation needs.
struct PodRecord {
    std::string ns, name, uid;
    bool hasNetworkStatus = false;
    std::string networkStatus;  // the annotation's text, when present
    bool hostNetwork = false;   // spec.hostNetwork: no address of allot's to release
    std::string mirrorOf;       // a mirror pod: deleting it does not stop its static pod
    // k8s.v1.cni.cncf.io/networks, for the relay's answers (claim_pod_index.h); nullopt: none.
    std::optional<std::string> networks = std::nullopt;
    // Its controlling StatefulSet, for the relay's answers (sticky_statefulsets).
    std::optional<core::StatefulSetRef> statefulSet = std::nullopt;
};

}  // namespace allot::gc
