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

}  // namespace allot::gc
