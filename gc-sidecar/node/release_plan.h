#pragma once
// The release planner: which entries of a batch of gone pods to free, pool by pool. Pure:
// every fact it decides on (which pools each pod's networks name, whether a pod of that name
// exists now, which addresses the node's namespaces hold) is read by the Reclaimer first and
// passed in, so that the rules below are tested without a cluster.
//
// The rules (match.h has the entry-to-pod match):
// - only a pod that is gone, or re-created under its name with another UID, has entries freed;
// - an entry whose sandbox may still run is kept: core::sandboxGone decides each entry on the
//   runtime's answer for its sandbox, the namespace probe and whether its ADD may be in flight
//   (a pod object showing its containers terminated says nothing of its sandbox);
// - an entry matched by podref only (no pod UID recorded) is freed only when a look at the pod
//   made after the pool was read finds no pod of that namespace/name: the planner lists those
//   entries in `lookAgain`, the Reclaimer looks, and `settle` decides.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/release.h"
#include "core/ip.h"
#include "core/release_rule.h"
#include "gc-sidecar/node/release_queue.h"
#include "gc-sidecar/rules/match.h"
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
    // Its sandbox may still run: not freed here, each with core::sandboxGone's reason.
    std::vector<std::pair<core::IpAddress, std::string>> kept;
    bool waitsForAdd = false;  // some were kept only while an ADD may run: decide again later
};

// An entry a plan keeps: its sandbox may still run.
struct KeptEntry {
    size_t item = 0;
    core::IpAddress ip;
    std::string why;           // core::sandboxGone's reason
    bool addInFlight = false;  // kept only while its ADD may run
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

// What the node can say of the sandboxes of a batch's entries (core::SandboxEvidence). Each
// source is asked only when an entry needs it: the namespace probe once per batch, on first
// use. Thread-safe: pools are planned in parallel.
class SandboxProof {
  public:
    using Probe = std::function<core::Result<std::set<core::IpAddress>>()>;
    using Runtime = std::function<core::RuntimeAnswer(const std::string& sandboxId)>;
    using AddCheck = std::function<core::AddInFlight(const core::Owner&)>;
    // Null probe: no namespace probe (Unknown); null runtime: NotAsked; null addCheck: no ADD
    // is in flight (tests).
    SandboxProof(Probe probe = {}, Runtime runtime = {}, AddCheck addCheck = {});

    core::SandboxEvidence evidence(const core::Owner& entry, const core::IpAddress& ip) const;

  private:
    core::NamespaceAnswer netns(const core::IpAddress& ip) const;
    Probe probe_;
    Runtime runtime_;
    AddCheck addCheck_;
    mutable std::once_flag probed_;
    mutable std::optional<std::set<core::IpAddress>> held_;
};

// An item whose entries may be freed: no failure so far, and its pod gone or re-created.
bool mayFree(const ReleaseItem& it);

// The pools to write, and who looks in each: an item's own pools (with scan rules when they
// were hinted by a scan), and for items that look beyond them (scanAll) the pools known to
// hold this node's entries and what a scan of every pool found.
PoolGroups groupByPool(std::span<const ReleaseItem> items, const std::set<PoolKey>& nodePools,
                       const std::vector<ScanFind>& scanned);

// What to do with one pool as read.
struct PoolPlan {
    std::vector<core::u128> release;
    std::map<core::u128, size_t> owners;  // offset -> item
    std::vector<KeptEntry> kept;          // may still run: not freed
    // Entries matched by podref only: freed once a fresh look finds no pod of that name.
    std::map<size_t, std::vector<core::u128>> lookAgain;
};

PoolPlan planPool(const store::Pool& p, const PoolGroup& group, std::span<const ReleaseItem> items,
                  const SandboxProof& proof, const std::string& node);

// Frees the lookAgain entries of the items `looked` says are gone now.
void settle(PoolPlan& plan, const std::map<size_t, Liveness>& looked);

}  // namespace allot::gc
