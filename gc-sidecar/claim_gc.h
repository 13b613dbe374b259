#pragma once
// IPAMClaim-owned addresses (issue 18) in allot-gc. Such an entry outlives its pods: no
// pod-scoped release frees it (core/ownership.h). It is freed here, by the repair loop's
// leader at start-up and after every pass, once the claim is confirmed deleted: the claims
// were listed (the resource is served) and a GET of that claim answered 404 Not Found. An API
// error, or a cluster without the IPAMClaim resource, decides nothing; nor is an address freed
// while the pod its entry names still runs under that UID (its sandbox may hold it).

#include <memory>
#include <set>
#include <string>

#include "cluster/k8s_cluster.h"
#include "gc-sidecar/cluster.h"
#include "gc-sidecar/events.h"
#include "gc-sidecar/metrics.h"

namespace allot::gc {

class ClaimSource {
  public:
    virtual ~ClaimSource() = default;
    // Every IPAMClaim, as "namespace/name". NotFound when the resource is not installed.
    virtual Result<std::set<std::string>> listClaims() = 0;
    // False only when the API server answered that the claim does not exist.
    virtual Result<bool> exists(const std::string& ns, const std::string& name) = 0;
};

// Over `cluster`'s client, which must outlive it (one request at a time: one thread).
std::unique_ptr<ClaimSource> makeK8sClaimSource(cluster::K8sCluster& cluster);

struct ClaimPassReport {
    size_t owned = 0;     // pool entries an IPAMClaim owns
    size_t gone = 0;      // their claims confirmed deleted
    size_t released = 0;  // freed by this pass
};

// One pass over the pools of `poolNamespace`: frees the entries of confirmed-deleted claims
// through the engine (a fresh read, ReleaseIfHeld with claimGone) and their reservations, an
// Event and a log line each. Errors: the claim list (NotFound: no IPAMClaim resource) or the
// pool list failed; a claim whose GET fails is left for the next pass.
Result<ClaimPassReport> releaseDeletedClaims(Cluster& cl, ClaimSource& claims,
                                             const std::string& poolNamespace, EventSink& events,
                                             Metrics& metrics);

}  // namespace allot::gc
