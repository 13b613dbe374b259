#pragma once
// Releases through the engine live in common/cluster (shared with kubectl-allot's release).

#include "cluster/release.h"
#include "gc-sidecar/cluster.h"

namespace allot::gc {

using cluster::dropReservation;
using cluster::networkNamesFor;
using cluster::Released;
using cluster::releaseFromPool;
using cluster::Selector;

}  // namespace allot::gc
