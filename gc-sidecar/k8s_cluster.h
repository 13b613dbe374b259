#pragma once
// The Cluster over the Kubernetes API lives in common/cluster (shared with kubectl-allot).

#include "cluster/k8s_cluster.h"
#include "gc-sidecar/cluster.h"

namespace allot::gc {

using cluster::K8sCluster;
using cluster::kPodPageSize;

}  // namespace allot::gc
