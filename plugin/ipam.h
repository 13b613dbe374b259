#pragma once
// The allocation engine: ADD, DEL, CHECK, GC and STATUS over a PoolStore, with optimistic
// concurrency (resourceVersion-guarded writes, jittered exponential backoff inside a
// deadline), node-local serialisation with group commit, and overlapping-range reservations.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cni/net_config.h"
#include "core/config.h"
#include "node/claim_queue.h"
#include "node/file_lock.h"
#include "node/journal.h"
#include "node/pool_cache.h"
#include "plugin/cni_result.h"
#include "store/pool_store.h"

namespace allot::plugin {

using Clock = std::chrono::steady_clock;
// The network config model lives in common/cni (allot-gc reads it too). Named here so the
// engine's sources keep their unqualified spelling.
using cni::Attachment;
using cni::NetConf;
// The node-local state's interfaces live in common/node, beside their file implementations.
using node::ClaimQueue;
using node::ClaimRequest;
using node::JournalEntry;
using node::PoolCache;
using node::PoolLocker;
using node::ReleaseJournal;

struct EngineContext {
    explicit EngineContext(store::PoolStore& s) : store(s) {}
    store::PoolStore& store;
    PoolLocker* locker = nullptr;  // null: no node-local lock (tests)
    ReleaseJournal* journal = nullptr;
    PoolCache* cache = nullptr;
    ClaimQueue* queue = nullptr;  // null: each ADD writes for itself
    std::string node;
    std::string poolNamespace;
    Clock::time_point deadline = Clock::time_point::max();
    std::function<void(std::chrono::milliseconds)> sleep;  // backoff; default sleeps
    // Counters for tests and benchmarks.
    int conflicts = 0;
    int served = 0;             // other ADDs whose addresses this call's pool writes committed
    std::string journalReason;  // why DEL journaled, for the log
    // A sealed slice pool's slice turned out to be another node's now: the cached slice was
    // stale, and the ADD resolves its targets again from a fresh read.
    bool sliceMoved = false;
    // The last claim found its slice pool sealed by allot-gc's slice controller, which is
    // taking the slice (or was, and left it): an ADD goes on to the slice's next part.
    bool partSealed = false;
    std::set<std::string> warnings;  // what the pools read held that allot could not use
    // The pool (name, in poolNamespace) of each address this call allocated or released, for
    // the log's pool field.
    std::vector<std::pair<core::IpAddress, std::string>> pools;
    // Called when an ADD's last range has its pool entry and its reservation is about to be
    // asked for, with every range's address so far: what may run alongside that reservation
    // (a claim's status write). Called again if the reservation moves the address elsewhere;
    // not called when no reservation follows.
    std::function<void(const std::vector<IpResult>&)> beforeReserve;
};

// Cleanup after a failed or finished attempt must still reach the store when the call's own
// deadline is spent: while one lives, the call (its deadline and its store's) has a short grace.
class CleanupGrace {
  public:
    explicit CleanupGrace(EngineContext& ctx);
    ~CleanupGrace();
    CleanupGrace(const CleanupGrace&) = delete;
    CleanupGrace& operator=(const CleanupGrace&) = delete;

  private:
    EngineContext& ctx_;
    Clock::time_point saved_;
};

// ADD: one address per range, in order; a later failure releases the ranges taken earlier.
core::Result<CniResult> add(EngineContext& ctx, const core::ValidatedConfig& cfg,
                            const NetConf& net, const core::Owner& owner,
                            const std::vector<core::IpAddress>& requested);

// DEL: releases (containerId, ifName) in every range. Nothing to release is success. Any
// other failure to finish (the store unreachable until the deadline, a 401/403, a pool allot
// cannot decode) journals the release and DEL succeeds (the returned bool says whether it was
// journaled): DEL never blocks pod teardown.
core::Result<bool> del(EngineContext& ctx, const core::ValidatedConfig& cfg,
                       const core::Owner& owner);

// Journals the release of `owner` without a store: the pools named from the config (all of
// the namespace's, for allot-gc to search, in node-slice mode), the reservations left for
// allot-gc to find through them.
core::Result<void> journalRelease(ReleaseJournal& journal, const core::ValidatedConfig& cfg,
                                  const core::Owner& owner, const std::string& poolNamespace);

// CHECK: every range holds an allocation for (containerId, ifName) and prevResult lists it.
core::Result<std::vector<IpResult>> check(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                          const NetConf& net, const core::Owner& owner);

// GC: releases allocations recorded for this node and this network (`netName`) whose
// (containerId, ifName) is not in `valid`. Entries without a recorded node or network (for
// example written by Whereabouts) are never touched. Returns how many were released.
core::Result<size_t> gc(EngineContext& ctx, const core::ValidatedConfig& cfg,
                        const std::string& netName, const std::vector<Attachment>& valid);

// STATUS: the store answers and no range is exhausted (Exhausted / Transient otherwise).
core::Result<void> status(EngineContext& ctx, const core::ValidatedConfig& cfg);

// The pool name and effective range of each configured range on this node.
struct Target {
    core::IpRange range;
    std::string pool;
    std::string nodeSlicePool;  // node-slice mode: the NodeSlicePool that gave `range`
    size_t rangeIndex = 0;      // of cfg.ranges; several targets share one with slice parts
    // With node_slice_parts > 1: why allot-gc's slice controller refuses them on the network
    // (the NodeSlicePool's word); "" while honoured. ADD fails on it; DEL, CHECK, GC and STATUS
    // go on over every part.
    std::string partsRefused = {};
};
// One per range, in order; in node-slice mode with node_slice_parts, one per part of each
// range's slice (part 0 first). In node-slice mode the node's slice comes from the node
// relay's watched copy unless `fresh` (then from a read of the NodeSlicePool).
core::Result<std::vector<Target>> resolveTargets(EngineContext& ctx,
                                                 const core::ValidatedConfig& cfg,
                                                 const std::string& netName, bool fresh = false);

}  // namespace allot::plugin
