#pragma once
// Releases through the engine live in common/cluster (shared with kubectl-allot's release).

#include "cluster/cluster.h"
#include "cluster/release.h"
#include "log/log.h"

namespace allot::gc {

// The pool, network, pod, container and ip of a released address, for its log line.
inline logging::Fields logFields(const cluster::Released& r) {
    return {.pool = r.ns + "/" + r.pool,
            .network = r.owner.network,
            .pod = r.owner.podRef,
            .container = r.owner.containerId,
            .ip = r.ip.str()};
}

// "10.0.0.5 (pool ns/name, network n, interface net1)".
inline std::string describe(const cluster::Released& r) {
    std::string s = r.ip.str() + " (pool " + r.ns + "/" + r.pool;
    if (!r.owner.network.empty()) s += ", network " + r.owner.network;
    if (!r.owner.ifName.empty()) s += ", interface " + r.owner.ifName;
    return s + ")";
}

}  // namespace allot::gc
