#pragma once
// allot-gc's view of the cluster is common/cluster's (cluster/cluster.h), shared with
// kubectl-allot.

#include "cluster/cluster.h"

namespace allot::gc {

using cluster::Cluster;
using cluster::NadInfo;
using cluster::NodeInfo;
using cluster::PodInfo;
using core::Result;

}  // namespace allot::gc
