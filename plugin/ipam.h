#pragma once
// The allocation engine: ADD, DEL, CHECK, GC and STATUS over a PoolStore, with optimistic
// concurrency (resourceVersion-guarded writes, jittered exponential backoff inside a
// deadline), node-local serialisation with group commit, and overlapping-range reservations.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/config.h"
#include "plugin/cni_result.h"
#include "store/pool_store.h"

namespace allot::plugin {

using Clock = std::chrono::steady_clock;
// The network config model lives in common/cni (allot-gc reads it too). Named here so the
// engine's sources keep their unqualified spelling.
using cni::Attachment;
using cni::NetConf;

// Node-local mutual exclusion per pool (a file lock in production). acquire() blocks until
// the lock is held or the deadline passes (Transient).
class PoolLocker {
public:
    virtual ~PoolLocker() = default;
    class Guard {
    public:
        virtual ~Guard() = default;
    };
    virtual core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                         Clock::time_point deadline) = 0;
};

// A release that could not reach the store, kept for allot-gc to replay.
struct JournalEntry {
    std::string poolNamespace;
    std::vector<std::string> pools;
    std::string networkName;
    std::string containerId;
    std::string ifName;
    std::string podRef;
    std::string node;
    std::vector<std::string> reservations;  // to delete if still this container's
};

class ReleaseJournal {
public:
    virtual ~ReleaseJournal() = default;
    virtual core::Result<void> record(const JournalEntry& e) = 0;
};

// Remembers the last pool object this node read or wrote, so an uncontended ADD can skip the
// read: the write carries the cached resourceVersion and fails with Conflict if stale.
class PoolCache {
public:
    virtual ~PoolCache() = default;
    // Keyed by namespace and name: the same pool name in two namespaces is two pools.
    virtual std::optional<store::Pool> load(const std::string& ns, const std::string& pool) = 0;
    virtual void save(const std::string& ns, const store::Pool& pool) = 0;
    virtual void drop(const std::string& ns, const std::string& pool) = 0;
};

// What one ADD asks of one pool.
struct ClaimRequest {
    core::Owner owner;
    std::optional<core::IpAddress> requested;
    // Offsets found reserved through another pool: never picked, and dropped if this owner
    // already holds one of them.
    std::vector<core::u128> avoid;
    // Instead of an address: take out what (containerId, ifName) holds (answer: the address
    // it held; NotFound when nothing).
    bool release = false;
    // The requesting config's own window of the pool (range_start/range_end/exclude) and
    // gateway. Configs that share one pool narrow it differently, so a batch picks for each
    // request with its own; unset: the window of the config serving the batch.
    std::optional<core::IpRange> window;
    std::optional<core::IpAddress> gateway;
};

// Node-local group commit. ADDs for one pool on one node queue for the same lock; each first
// leaves its request here, and whoever holds the lock serves every request waiting then with
// one pool write, leaving each its answer. A request whose process has died is discarded, so
// a killed plugin never gets an address written for it after its death is visible.
class ClaimQueue {
public:
    virtual ~ClaimQueue() = default;
    // A queued request; destroying it withdraws the request and any answer.
    class Ticket {
    public:
        virtual ~Ticket() = default;
    };
    struct Waiting {
        std::string id;
        ClaimRequest request;
    };
    virtual core::Result<std::unique_ptr<Ticket>> submit(const std::string& pool,
                                                         const ClaimRequest& request) = 0;
    // The answer a holder of the lock left for this ticket, if any.
    virtual std::optional<core::Result<core::Pick>> answered(Ticket& ticket) = 0;
    // Unanswered requests of live processes for the ticket's pool, other than its own, at
    // most `max`. Call with the pool lock held.
    virtual std::vector<Waiting> waiting(Ticket& self, size_t max) = 0;
    virtual void answer(Ticket& self, const std::string& id, const core::Result<core::Pick>& a) = 0;
};

struct EngineContext {
    explicit EngineContext(store::PoolStore& s) : store(s) {}
    store::PoolStore& store;
    PoolLocker* locker = nullptr;     // null: no node-local lock (tests)
    ReleaseJournal* journal = nullptr;
    PoolCache* cache = nullptr;
    ClaimQueue* queue = nullptr;      // null: each ADD writes for itself
    std::string node;
    std::string poolNamespace;
    Clock::time_point deadline = Clock::time_point::max();
    std::function<void(std::chrono::milliseconds)> sleep;  // backoff; default sleeps
    // Counters for tests and benchmarks.
    int conflicts = 0;
    int served = 0;  // other ADDs whose addresses this call's pool writes committed
    std::string journalReason;  // why DEL journaled, for the log
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
};
core::Result<std::vector<Target>> resolveTargets(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                                 const std::string& netName);

}  // namespace allot::plugin
