#pragma once
// Owned addresses (issue 18) in allot-gc: IPAMClaim-owned entries, and sticky StatefulSet
// members' (core/sticky.h). Such an entry outlives its pods: no pod-scoped release frees it
// (core/ownership.h). It is freed here, by the repair loop's leader at start-up and after
// every pass, once a confirmed read decides: for a claim, the claims were listed (the resource
// is served) and a GET of that claim answered 404 Not Found; for a StatefulSet, a GET shows it
// gone, being deleted, re-created or without the member's ordinal (core::decideSticky). An API
// error, or a cluster without the IPAMClaim resource, decides nothing; nor is an address freed
// while the pod its entry names still runs under that UID, or another live pod references the
// deleted claim (a migration target sharing the address): their sandboxes may hold it; nor
// when the entry changed since the scan (a re-created member took it over).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "cluster/cluster.h"
#include "cluster/k8s_cluster.h"
#include "core/sticky.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "json/json.h"

namespace allot::gc {

class ClaimSource {
  public:
    virtual ~ClaimSource() = default;
    // Every IPAMClaim, as "namespace/name". NotFound when the resource is not installed.
    virtual core::Result<std::set<std::string>> listClaims() = 0;
    // False only when the API server answered that the claim does not exist.
    virtual core::Result<bool> exists(const std::string& ns, const std::string& name) = 0;
    // True when a pod of `ns` that is not in a terminal phase names the claim `claim` in its
    // networks annotation (a migration target whose entry names the source pod).
    virtual core::Result<bool> referencedByLivePod(const std::string& ns,
                                                   const std::string& claim) = 0;
    // The StatefulSet; nullopt only when the API server answered that it does not exist.
    virtual core::Result<std::optional<core::StatefulSetView>> statefulSet(
        const std::string& ns, const std::string& name) = 0;
};

// The IPAMClaims' names as the controller's watch keeps them (the daemon's ObjectWatch fills
// it: one LIST, then WATCH), so a claim pass lists none. What a pass decides from changes only
// when a claim goes: set() of a new or updated claim says nothing changed, erase() says it did.
class ClaimNames {
  public:
    struct Claim {
        bool operator==(const Claim&) const = default;
    };
    using Key = std::pair<std::string, std::string>;
    static Claim decode(const json::Value&) { return {}; }

    void beginList();
    bool set(const Key& key, Claim);
    bool erase(const Key& key);
    void listed();
    void lost();
    void notServed();
    // Every claim, as "namespace/name": NotFound when the cluster does not serve the resource,
    // Transient before the first list and after a lost watch.
    core::Result<std::set<std::string>> names() const;
    // A list found the resource served while these say it is not (its CRD was installed since
    // the watch asked): runs `fn` (the watch asks again), once per such finding.
    void onServed(std::function<void()> fn) { onServed_ = std::move(fn); }
    void servedAfterAll() const;

  private:
    enum class State { Unlisted, Listing, Listed, NotServed };
    mutable std::mutex mu_;
    State state_ = State::Unlisted;
    std::set<std::string> names_;
    std::function<void()> onServed_;
};

// Over `cluster`'s client, which must outlive it (one request at a time: one thread). With
// `names`, the claims are read from it instead of listed, but while it says the resource is
// not served (a CRD installed after the watch asked is listed, as without `names`).
std::unique_ptr<ClaimSource> makeK8sClaimSource(cluster::K8sCluster& cluster,
                                                const ClaimNames* names = nullptr);

struct ClaimPassReport {
    size_t owned = 0;     // pool entries an IPAMClaim or a StatefulSet owns
    size_t gone = 0;      // IPAMClaims confirmed deleted
    size_t released = 0;  // freed by this pass
    // The IPAMClaims could not be listed (NotFound: the resource is not served): their entries
    // wait; StatefulSet-owned ones are still decided.
    std::optional<core::Error> claimsUnlisted;
};

// One pass over the pools of `poolNamespaces` (--namespace and those NADs name,
// pool_namespaces.h): frees the entries whose owner a confirmed read
// shows gone, through the engine (a fresh read, ReleaseIfHeld with claimGone), and their
// reservations, an Event and a log line each, and counts them in allot_releases_total
// (reason claim_deleted or statefulset_gone). A namespace whose pools cannot be listed, an
// owner whose read fails, are left for the next pass.
core::Result<ClaimPassReport> releaseDeletedClaims(cluster::Cluster& cl, ClaimSource& claims,
                                                   const std::set<std::string>& poolNamespaces,
                                                   EventSink& events, Metrics& metrics);

}  // namespace allot::gc
