#pragma once
// Work spread over the threads of several Clusters: the release worker's pool writes and the
// repair loop's releases.

#include <cstddef>
#include <functional>
#include <vector>

#include "cluster/cluster.h"

namespace allot::gc {

// Runs fn(i, cluster) for every i in [0, n) on up to clusters.size() threads, each thread
// with its own Cluster (a Cluster serves one thread). clusters[0] runs on the caller's thread.
void parallelFor(const std::vector<cluster::Cluster*>& clusters, size_t n,
                 const std::function<void(size_t, cluster::Cluster&)>& fn);

}  // namespace allot::gc
