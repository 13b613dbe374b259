#pragma once
// The node-slice controller (issue 17), run by allot-gc's Lease holder beside the repair loop.
// It does what Whereabouts v0.9.4's node-slice controller does, on the same objects:
// - every NetworkAttachmentDefinition whose IPAM (a type in ipamTypes) sets node_slice_size
//   gets a NodeSlicePool in its pool namespace, named network_name (else the network's
//   "name"), spec {range: the first range, sliceSize: node_slice_size as written},
//   status.allocations [{nodeName, sliceRange}], owned by its NADs (Whereabouts' owner
//   references: the first a controller reference);
// - every Node gets a slice; a gone Node's slice is freed once its pool
//   ([network_name-]node-slice) holds no address, and only after that pool is sealed
//   (SliceCluster::sealSlicePool), so a plugin on a stale copy of the slice cannot claim in it;
// - a NodeSlicePool this controller manages is deleted once no NAD wants it.
// allot's additions: IPv6 and dual-stack (one NodeSlicePool per range, core/node_slices.h), a
// slice size or range change that renumbers no live pod, and exhaustion made visible: a
// Warning Event NodeSlicesExhausted on the Node and on the NodeSlicePool, and the metrics
// allot_node_slices / allot_node_slices_free / allot_nodes_without_slice.
//
// Level-driven: each pass lists NADs, Nodes and NodeSlicePools (every interval while leading;
// no watch) and writes only what differs, guarded by the resourceVersion read. Running a pass
// twice changes nothing the second time.
//
// One deviation from Whereabouts: an owner reference is set only for a NAD in the
// NodeSlicePool's own namespace. Kubernetes' garbage collector takes a namespaced owner in
// another namespace for absent and would delete the object (and with it the assignments);
// this controller deletes what no NAD wants instead. Its objects carry the label
// app.kubernetes.io/managed-by=allot-gc.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/node_slices.h"
#include "core/result.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/stop.h"
#include "gc-sidecar/leader/leader_loop.h"
#include "json/json.h"
#include "store/node_slice_codec.h"

namespace allot::cluster {
class K8sCluster;
}

namespace allot::gc {

using core::Result;

// The Warning Event of a network whose NADs make node_slice_parts unsafe (refused).
inline constexpr const char* kPartsRefusedReason = "NodeSlicePartsRefused";

struct NadObject {
    std::string ns, name, uid, config;  // config: spec.config ("" when it has none)
};

// What the controller reads and writes. K8sSliceCluster is the real one; tests may fake it.
class SliceCluster {
  public:
    virtual ~SliceCluster() = default;
    virtual Result<std::vector<NadObject>> nads() = 0;  // every namespace
    virtual Result<std::vector<std::string>> nodes() = 0;
    virtual Result<std::vector<store::NodeSlicePool>> slicePools() = 0;  // every namespace
    // AlreadyExists when the name is taken.
    virtual Result<void> create(const store::NodeSlicePool& p) = 0;
    // Conflict when p.resourceVersion is stale; NotFound when it is gone.
    virtual Result<void> update(const store::NodeSlicePool& p) = 0;
    // Only while p.resourceVersion is current (Conflict otherwise). NotFound when gone.
    virtual Result<void> remove(const store::NodeSlicePool& p) = 0;
    // Before a slice is taken from its node: seals IPPool `pool` in `ns` (the node's pool of
    // `slice`) with `token` (store::Pool::sealed, engine::TxTarget::seal) if it holds no
    // address, creating it sealed when missing, so that the node's plugin can no longer claim
    // in it on a stale copy of its slice. True when sealed (the slice may go); false while it
    // holds addresses. An error (a lost race included) keeps the slice where it is. Without
    // `create` a missing pool stays missing (true: nothing there to claim in).
    virtual Result<bool> sealSlicePool(const std::string& ns, const std::string& pool,
                                       const core::Cidr& slice, const std::string& token,
                                       bool create) = 0;
    // Whether IPPool `pool` in `ns` holds an address (false when missing): a slice in parts is
    // sealed only once none of them does, so no part stays sealed under a slice that stays.
    virtual Result<bool> slicePoolHolds(const std::string& ns, const std::string& pool) = 0;
    // Takes back the seal `token` that sealSlicePool wrote on IPPool `pool` in `ns`, when the
    // slice stays after all (a later part filled meanwhile): a seal under a slice that stays
    // would refuse its node's ADDs until the NodeSlicePool is written again. A pool without
    // that seal (missing, unsealed, another token) is left alone. An error: not known lifted.
    virtual Result<void> unsealSlicePool(const std::string& ns, const std::string& pool,
                                         const std::string& token) = 0;
};

// Over the API server, on one K8sCluster's client (one request at a time).
std::unique_ptr<SliceCluster> makeK8sSliceCluster(cluster::K8sCluster& cluster);

// One NodeSlicePool as the NADs want it.
struct SliceDesired {
    std::string ns, name;
    core::Cidr range;
    int length = 0;               // slice prefix length
    std::string sliceSize;        // spec.sliceSize as written in the NAD ("/24" or "24")
    std::string networkName;      // network_name: the prefix of the node pools' names
    std::vector<NadObject> nads;  // those that want it (config left empty), by namespace/name
    // IPPools per node slice (node_slice_parts): the most any of its NADs asks for, so every
    // part a plugin may write is sealed before a slice is taken.
    int parts = 1;
    std::vector<core::SlicePartsAsk> asks;  // one per entry of `nads`
    std::string refused;  // why parts are refused on the network (core::refuseSliceParts)
};

struct SliceOptions {
    std::string poolNamespace = "kube-system";  // for an IPAM section that names none
    std::vector<std::string> ipamTypes{"allot", "whereabouts"};
    std::vector<std::string> flatFiles;  // as cni::parseNetConf reads them
    // The least time between passes: one follows a change of the Nodes, NADs or
    // NodeSlicePools the watches keep, and one comes every `resync` whatever changed.
    std::chrono::milliseconds interval{std::chrono::seconds(5)};
    std::chrono::milliseconds resync{std::chrono::minutes(5)};
};

struct SliceReport {
    bool ok = false;
    std::string error;
    size_t pools = 0, created = 0, updated = 0, deleted = 0, conflicts = 0;
    size_t nodesWithout = 0;  // Nodes without a slice, over every NodeSlicePool
};

class SliceController {
  public:
    using Clock = std::chrono::steady_clock;

    SliceController(SliceOptions opts, SliceCluster& cluster, EventSink& events, Metrics& metrics,
                    StopSignal& stop);

    void setLeading(bool leading) { loop_.setLeading(leading); }  // from the leader elector
    // What a pass reads changed (a watch event): a pass once the interval allows.
    void nudge() { loop_.nudge(); }
    void run();  // passes while leading (SliceOptions::interval, resync), until stopped
    // One pass now, on the calling thread; it writes only while leading (checked before each
    // NodeSlicePool: a leader that lost its Lease writes nothing more).
    SliceReport pass();

  private:
    using Key = std::pair<std::string, std::string>;  // namespace, name

    struct Wanted {
        std::map<Key, SliceDesired> pools;
        std::set<std::string> keepUids;  // NADs that want a pool, or whose config is unreadable
    };
    Wanted wanted(const std::vector<NadObject>& nads);
    // Adds what `nad` wants; true when it wants a NodeSlicePool or cannot be read.
    bool addWanted(Wanted& w, const NadObject& nad);
    void refuseParts(SliceDesired& d);
    bool anyPartHolds(const std::string& ns, const std::string& pool, int parts);
    // Seals every part of a node's slice pool `pool` (slice `slice`) with `token`; true when all
    // are sealed. Otherwise the parts it sealed are unsealed again, and those it cannot unseal
    // now are left to liftPending.
    bool sealParts(const SliceDesired& d, const std::string& pool, const core::Cidr& slice,
                   const std::string& token);
    void liftPending();  // the seals a pass of this term could not take back, again
    void reconcile(const SliceDesired& d, const store::NodeSlicePool* cur,
                   const std::vector<std::string>& nodes, SliceReport& rep,
                   std::vector<SliceGauge>& gauges);
    void write(const store::NodeSlicePool& next, bool exists, SliceReport& rep);
    void reportExhausted(const SliceDesired& d, const core::SlicePlan& plan,
                         const core::Cidr& range);
    void deleteUnwanted(const std::vector<store::NodeSlicePool>& existing, const Wanted& w,
                        SliceReport& rep);
    bool leading() const { return loop_.leading(); }
    bool warnOnce(const std::string& key, const std::string& message);  // true: said now

    SliceOptions opts_;
    SliceCluster& cluster_;
    EventSink& events_;
    Metrics& metrics_;
    StopSignal& stop_;
    std::set<std::string> exhaustedSeen_;  // "ns/pool node" evented while it stays without
    std::set<std::string> warned_;         // log lines said once
    // Seals this term wrote on a slice that stayed and could not take back yet: {ns, pool} ->
    // token. Forgotten on a new term (another leader may have sealed with the same token
    // since) and when the pool is sealed again.
    std::map<Key, std::string> pendingLifts_;
    std::string lastError_;  // of the last pass that failed
    LeaderLoop loop_;
};

// The owner references a NodeSlicePool in `ns` should carry for the NADs `nads`: those of
// `current` that are not NADs stay; a wanted NAD's in `ns` is kept as it is, or added in
// Whereabouts' form (the first one a controller reference blocking owner deletion, then plain
// ones); any other NAD's goes.
std::vector<store::OwnerRef> ownersFor(const std::vector<store::OwnerRef>& current,
                                       const std::vector<NadObject>& nads, const std::string& ns);

}  // namespace allot::gc
