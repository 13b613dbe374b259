#pragma once
// Wires allot-gc together: the pod watch and release worker, the Lease and repair loop, the
// Event recorder, the HTTP server, the node kubeconfig. Returns the exit status.

#include "gc-sidecar/daemon/config.h"

namespace allot::gc {

// 0 after SIGTERM/SIGINT (watch stopped, Lease released); 2 for a configuration the cluster
// or the host rejects at start (unreadable kubeconfig, listen address in use); 1 otherwise.
int runDaemon(const Config& cfg);

}  // namespace allot::gc
