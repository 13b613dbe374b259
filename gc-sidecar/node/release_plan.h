#pragma once
// The release planner: which entries of a batch of gone pods to free, pool by pool. Pure:
// every fact it decides on (which pools each pod's networks name, whether a pod of that name
// exists now, which addresses the node's namespaces hold) is read by the Reclaimer first and
// passed in, so that the rules below are tested without a cluster.
//
// The rules (match.h has the entry-to-pod match):
// - only a pod that is gone, or re-created under its name with another UID, has entries freed;
// - an entry whose sandbox may still run is kept: the pod's object did not show its sandbox
//   stopped, and the probe could not show that no namespace on this node holds the address;
// - an entry matched by podref only (no pod UID recorded) is freed only when a look at the pod
//   made after the pool was read finds no pod of that namespace/name: the planner lists those
//   entries in `lookAgain`, the Reclaimer looks, and `settle` decides.

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cluster/release.h"
#include "core/ip.h"
#include "gc-sidecar/node/match.h"
#include "gc-sidecar/node/release_queue.h"
#include "store/pool_store.h"

namespace allot::gc {

// Per-batch state of one ReleaseWork.
struct ReleaseItem {
    ReleaseWork w;
    GonePod gone;
    bool scanMatch = false;  // match as in a scan (entries must be recorded on this node)
    bool scanAll = false;    // look beyond the pools its networks name
    // Its network-status names networks that cannot be resolved (malformed, or a NAD that is
    // gone or unreadable): the pod had secondary networks, so every pool is looked in. A pod
    // without network-status is looked for only in the pools known to hold this node's entries.
    bool scanEveryPool = false;
    bool malformed = false;
    std::string malformedWhy;
    std::set<PoolKey> pools;
    std::optional<std::string> failure;
    Liveness live = Liveness::Unknown;
    std::vector<cluster::Released> released;
    std::vector<core::IpAddress> kept;  // its sandbox may still run: not freed here
    std::string keptWhy;
};

// The gone pods of one batch that look in one pool.
struct PoolGroup {
    std::string networkName;
    std::vector<std::pair<size_t, bool>> members;  // item, scan rules
};
using PoolGroups = std::map<std::pair<std::string, std::string>, PoolGroup>;  // (ns, pool)

// A pool a scan of every pool found holding an entry of item `item`.
struct ScanFind {
    std::string ns, pool;
    size_t item;
};

// Which addresses the node's network namespaces still hold, when that could be read.
struct SandboxProof {
    std::optional<std::set<core::IpAddress>> nodeHeld;
    std::string noProof = "its deletion did not show its containers stopped";
};

// An item whose entries may be freed: no failure so far, and its pod gone or re-created.
bool mayFree(const ReleaseItem& it);

// The pools to write, and who looks in each: an item's own pools (with scan rules when they
// were hinted by a scan), and for items that look beyond them (scanAll) the pools known to
// hold this node's entries and what a scan of every pool found.
PoolGroups groupByPool(std::span<const ReleaseItem> items, const std::set<PoolKey>& nodePools,
                       const std::vector<ScanFind>& scanned);

// Whether any member's pod object did not show its sandbox stopped (the probe must be read).
bool needsProbe(std::span<const ReleaseItem> items, const PoolGroups& groups);

// What to do with one pool as read.
struct PoolPlan {
    std::vector<core::u128> release;
    std::map<core::u128, size_t> owners;                   // offset -> item
    std::vector<std::pair<size_t, core::IpAddress>> kept;  // may still run: not freed
    // Entries matched by podref only: freed once a fresh look finds no pod of that name.
    std::map<size_t, std::vector<core::u128>> lookAgain;
};

PoolPlan planPool(const store::Pool& p, const PoolGroup& group, std::span<const ReleaseItem> items,
                  const SandboxProof& proof, const std::string& node);

// Frees the lookAgain entries of the items `looked` says are gone now.
void settle(PoolPlan& plan, const std::map<size_t, Liveness>& looked);

}  // namespace allot::gc
