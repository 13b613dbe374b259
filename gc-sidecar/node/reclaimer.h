#pragma once
// The per-node release worker: releases the addresses of this node's deleted pods (fed by
// PodWatch), catches up at start on pods deleted while allot-gc was down, and replays the
// plugin's DEL journal. Work is taken in batches (one pool write per pool per batch, so 200
// pods deleted at once cost a handful of writes); failures are retried with backoff, and a
// release that keeps failing ends in a Warning Event ReleaseFailed.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/sticky.h"
#include "engine/retry_policy.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/parallel_for.h"
#include "gc-sidecar/base/pool_namespaces.h"
#include "gc-sidecar/base/stop.h"
#include "gc-sidecar/node/cri_runtime.h"
#include "gc-sidecar/node/journal_replay.h"
#include "gc-sidecar/node/release_plan.h"
#include "gc-sidecar/node/release_queue.h"
#include "gc-sidecar/rules/match.h"
#include "gc-sidecar/rules/release.h"
#include "node_state/add_marks.h"
#include "node_state/journal.h"

namespace allot::gc {

// The addresses the node's network namespaces hold now (sandbox_probe.h); an error when they
// cannot be read.
using NodeAddressProbe = std::function<core::Result<std::set<core::IpAddress>>()>;

struct ReclaimerOptions {
    std::string node;
    std::string poolNamespace = "kube-system";
    std::vector<std::string> ipamTypes{"allot", "whereabouts"};
    std::vector<std::string> flatFiles;
    int releaseRetries = 8;
    std::chrono::milliseconds retryBase{500};
    std::chrono::milliseconds retryMax{std::chrono::seconds(60)};
    std::string journalDir;  // empty: no replay
    std::chrono::milliseconds journalInterval{std::chrono::seconds(30)};
    size_t maxBatch = 1000;
    std::chrono::milliseconds nadCacheTtl{std::chrono::seconds(30)};
    // A pod whose object did not show its sandbox stopped has an address freed only when no
    // network namespace on this node holds it. Null: such addresses are never freed here
    // (only the kubelet's DEL, the Node's deletion or an operator frees them:
    // core/release_rule.h).
    NodeAddressProbe probe;
    // The container runtime, asked first of each entry's sandbox (cri_runtime.h); null: the
    // namespace probe alone decides (core::sandboxGone).
    std::shared_ptr<SandboxRuntime> runtime;
    // The plugin's marks of ADDs in flight (node/add_marks.h): no entry whose ADD may still run
    // is freed. Null: none are read (tests).
    std::shared_ptr<node_state::FileAddMarks> addMarks;
    // The longest a runtime's ADD may run after allot's answer (kubelet's 2-minute runtime
    // request timeout, plus a margin): a younger mark keeps its entry, and an entry allot's
    // plugin did not write is kept this long after its pod is known gone.
    std::chrono::milliseconds addInFlightBound{std::chrono::seconds(150)};
    // The node sweep: every sweepInterval (0: never), this node's entries whose pod is not
    // among livePods() (the pod watch's; nullopt until it has listed) are released as at
    // catch-up, each only once the probe proves no namespace here holds it. The repair
    // loop's leader hands this node's leaks to it (it never frees them itself).
    std::chrono::milliseconds sweepInterval{0};
    std::function<std::optional<std::vector<PodRecord>>()> livePods;
    // Where the sweep publishes the probe's findings for the leader (core::NodeReport: what
    // frees an entry that names no node); empty: no report.
    std::string reportNamespace;
    // Held while scanning every pool (catch-up), so that the memory peaks of such scans and
    // of repair passes never add up. Null: none.
    std::mutex* scanLock = nullptr;
    // The pool namespaces catch-up scans, shared with the repair loop. Null: the Reclaimer's
    // own (poolNamespace, ipamTypes, flatFiles).
    std::shared_ptr<PoolNamespaces> poolNamespaces;
};

class Reclaimer {
  public:
    Reclaimer(ReclaimerOptions opts, std::vector<cluster::Cluster*> clusters, EventSink& events,
              Metrics& metrics, StopSignal& stop);

    // Thread-safe. A pod of this node was deleted (or found gone at a relist).
    void podDeleted(PodRecord pod);
    // Thread-safe. `live` are this node's pods now: allocations recorded for this node whose
    // pod is not among them (and does not exist) are released. Its first success makes
    // allot-gc ready (Metrics::setReady).
    void catchUp(std::vector<PodRecord> live);

    // Works until stopped.
    void run();
    // Does everything due at `now` once, on the calling thread (tests, and run()).
    void runOnce(Clock::time_point now);

    size_t pending() const;
    bool caughtUp() const;

  private:
    // The engine's one backoff schedule, between retryBase and retryMax.
    engine::Backoff retryBackoff() const { return {opts_.retryBase, opts_.retryMax}; }
    // What one pool's write did.
    struct PoolOutcome {
        std::vector<std::pair<size_t, cluster::Released>> released;
        std::vector<KeptEntry> kept;
        std::optional<std::string> error;
    };

    // Steps up to the pool writes (what a deleted pod waits for), then the rest: under a burst,
    // every queued batch gets its pool writes before any batch's reservations are deleted.
    void releaseBatch(std::vector<ReleaseWork> batch, std::vector<ReleaseItem>& out);
    void finish(std::vector<ReleaseItem>& items, Clock::time_point now);
    std::vector<ReleaseWork> takeDue(Clock::time_point now);  // under m_
    // The steps of releaseBatch (reclaimer_release.cpp; resolving targets in reclaimer.cpp).
    void resolveTargets(ReleaseItem& it, cluster::Cluster& c);
    core::Result<std::vector<PoolKey>> targetsOfNad(cluster::Cluster& c, const std::string& ns,
                                                    const std::string& name, bool& missing);
    void reportMalformed(ReleaseItem& it);
    void checkLiveness(std::vector<ReleaseItem>& items, size_t from);
    // The steps of releaseBatch that read the cluster (the planner, release_plan.h, decides).
    std::vector<ScanFind> scanEveryPool(cluster::Cluster& main, std::span<ReleaseItem> items);
    SandboxProof::Runtime runtimeAnswer();
    SandboxProof::AddCheck addCheck();
    std::chrono::milliseconds knownFor(const std::string& containerId);
    size_t writePools(std::span<ReleaseItem> items, const PoolGroups& groups,
                      const SandboxProof& proof);
    PoolOutcome releaseGroup(cluster::Cluster& c, const std::string& ns,
                             const std::string& poolName, const PoolGroup& group,
                             std::span<const ReleaseItem> items, const SandboxProof& proof);
    // The planner's look again: whether each podref-only match's pod exists now.
    core::Result<std::map<size_t, Liveness>> lookAgain(cluster::Cluster& c, const PoolPlan& plan,
                                                       std::span<const ReleaseItem> items);
    // The steps of finish.
    std::vector<std::vector<cluster::Released>> dropReservations(std::vector<ReleaseItem>& items);
    void reportItem(const ReleaseItem& it);
    // `reason`: catch_up (after a list of the pod watch: every pool) or node_sweep (the pools
    // known to hold this node's entries, every pool now and then).
    core::Result<void> doCatchUp(const std::vector<PodRecord>& live, const std::string& reason);
    struct LiveSet {
        std::set<std::string> uids, refs;
    };
    void collectGone(const std::string& pns, const store::Pool& p, const LiveSet& live,
                     const std::string& reason, std::map<std::string, ReleaseWork>& found,
                     std::set<PoolKey>& nodePools) const;
    core::Result<void> scanAllPools(const LiveSet& live, const std::string& reason,
                                    std::map<std::string, ReleaseWork>& found);
    core::Result<void> scanNodePools(const LiveSet& live, const std::string& reason,
                                     std::map<std::string, ReleaseWork>& found);
    // The node sweep: the probe's report for the leader, then a catch-up on the pods now.
    void sweepNode();
    void publishReport();
    // --namespace and every pool namespace a NAD names, after listing the NADs.
    std::set<std::string> namespacesToScan(cluster::Cluster& c);
    void retryOrGiveUp(ReleaseWork w, const std::string& error, Clock::time_point now);

    ReclaimerOptions opts_;
    std::vector<cluster::Cluster*> clusters_;
    EventSink& events_;
    Metrics& metrics_;
    StopSignal& stop_;

    mutable std::mutex m_;
    std::condition_variable cv_;
    ReleaseQueue queue_;  // under m_
    std::optional<std::vector<PodRecord>> catchUpRequest_;
    Clock::time_point catchUpAt_{};  // a failed catch-up is retried from then on
    int catchUpFailures_ = 0;        // consecutive failed catch-up scans: the backoff's attempt
    bool caughtUp_ = false;
    bool stopping_ = false;
    Clock::time_point nextJournal_{};
    Clock::time_point nextSweep_{};
    Clock::time_point lastFullScan_{};  // of every pool: catch-up, or a sweep
    // Addresses whose AddressKept Event was emitted ("uid ip"): a sweep that keeps them again
    // says nothing new. Worker thread only.
    std::set<std::string> keptReported_;
    std::string nodeUid_;  // this node's Node, once found (publishReport)
    // When this allot-gc first looked at each container's entry for release (core::AddEvidence
    // knownFor). Under knownM_: pools are planned in parallel.
    std::mutex knownM_;
    std::map<std::string, Clock::time_point> known_;

    struct NadEntry {
        Clock::time_point at;
        bool found = false;
        std::string config;
    };
    std::map<std::string, NadEntry> nadCache_;  // worker thread only
    // Pools known to hold entries of this node (catch-up scans, releases): where a pod whose
    // networks are unknown is looked for. Worker thread only.
    std::set<PoolKey> nodePools_;
    std::shared_ptr<PoolNamespaces> poolNamespaces_;  // never null
    std::optional<JournalReplayer> journal_;          // with opts_.journalDir
};

// An IPPool of namespace `ns` that cannot be decoded: skipped, with a warning.
void logUndecodable(const std::string& ns, const std::string& name, const std::string& why);

}  // namespace allot::gc
