#pragma once
// The cluster-wide repair loop (run by the Lease holder only). Each pass covers every pool
// namespace (--namespace and those NADs name: pool_namespaces.h), one after the other, with
// what it tracks across passes kept per namespace (pool names repeat across namespaces). In
// each it lists nodes, reservations and pools, then the pods of only those namespaces that
// allocations point to (keeping only the pods named), streaming a page at a time and keeping only
// compact indexes, so that a pass costs in allocations rather than in pods; and rebuilds the truth:
// - leak candidates: an allocation whose pod does not exist, exists with another UID (when
//   the UID is recorded), has terminated, or sits on a Node that is gone or NotReady past the
//   grace period. Seen on `leakPasses` passes and older than the grace, a candidate goes by
//   core/release_rule.h: the leader frees (after a fresh read of the pool and of the pod
//   agree) only what a deleted Node held, and an entry that names no node once every node
//   running allot-gc reports the address absent. Everything else stays with its node's
//   allot-gc (it sweeps and probes its own entries) and is reported: one Warning Event
//   AddressHeld per held address, and the gauges allot_held_addresses{reason} and
//   allot_held_address_oldest_seconds{reason};
// - anomalies, reported once each with a Warning Event PoolAnomaly and counted:
//   duplicate_ip (one IP held in two overlapping pools), out_of_range (an offset outside the
//   pool's range), reservation_without_allocation, allocation_without_reservation (in a pool
//   whose other allocations have reservations). The unambiguous ones are repaired under the
//   same passes-and-grace rule: an orphan reservation older than the grace is deleted
//   (guarded by its resourceVersion), a missing reservation of a live pod is re-created.
//   Duplicates and out-of-range entries are only reported: which holder is right is a
//   human's call.
// Running a pass twice changes nothing the second time; each pass repairs at most `batch`.
// What is a leak candidate or an anomaly is decided in core/anomaly.h (pure); this loop
// reads, reports, tracks passes and grace, and writes.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/scan.h"
#include "core/anomaly.h"
#include "core/release_rule.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/pool_namespaces.h"
#include "gc-sidecar/base/stop.h"
#include "gc-sidecar/leader/leader_loop.h"
#include "gc-sidecar/leader/leak_tracker.h"
#include "gc-sidecar/rules/match.h"
#include "gc-sidecar/rules/release.h"

namespace allot::gc {

struct RepairOptions {
    std::string poolNamespace = "kube-system";
    // The least time between passes. A pass follows a change of what the watches keep (a pod,
    // a Node, a NAD, a NodeSlicePool), and comes every interval while a candidate or an anomaly
    // waits for its next sighting; otherwise every `resync`.
    std::chrono::milliseconds interval{std::chrono::seconds(60)};
    std::chrono::milliseconds resync{std::chrono::minutes(5)};
    int leakPasses = 3;
    std::chrono::milliseconds leakGrace{std::chrono::minutes(5)};
    int batch = 500;
    size_t maxAnomalyEventsPerPass = 50;
    // An anomaly is logged, counted and evented once seen on this many consecutive passes: a
    // pool entry written a moment before its reservation (an ADD in flight) is not one.
    int anomalyPasses = 1;
    std::mutex* scanLock = nullptr;   // as ReclaimerOptions::scanLock
    std::function<void()> afterPass;  // run after each pass while leading (IPAMClaims)
    // The pool namespaces a pass covers, shared with the release worker. Null: the loop's own,
    // from poolNamespace and the NADs naming allot or whereabouts IPAM.
    std::shared_ptr<PoolNamespaces> poolNamespaces;
    // Where the nodes' allot-gc publish their reports (core::NodeReport): the Lease namespace.
    std::string reportNamespace = "kube-system";
};

struct PassReport {
    bool ok = false;
    std::string error;
    size_t namespaces = 0, pods = 0, pools = 0, allocations = 0, reservations = 0;
    size_t leakCandidates = 0, released = 0, reservationsDeleted = 0, reservationsCreated = 0;
    size_t held = 0;  // due candidates the leader may not free: left to their node
    std::map<std::string, uint64_t> anomalies;  // kind -> present now
    double seconds = 0;
};

class RepairLoop {
  public:
    using Clock = std::chrono::steady_clock;

    RepairLoop(RepairOptions opts, std::vector<cluster::Cluster*> clusters, EventSink& events,
               Metrics& metrics, StopSignal& stop);

    // From the leader elector.
    void setLeading(bool leading);
    // What a pass reads changed (a watch event): a pass once the interval allows.
    void nudge() { loop_.nudge(); }
    // Passes while leading (RepairOptions::interval, resync), until stopped.
    void run();
    // One pass now, on the calling thread.
    PassReport pass();

  private:
    struct Due;
    // What one pool namespace carries from pass to pass.
    struct PoolNamespace {
        std::string name;
        LeakTracker tracker;
        std::map<std::string, int> anomaliesSeen;  // key -> consecutive passes (reported once)
        std::set<std::string> unreadableLogs;      // pools whose release log was reported
        std::set<std::string> heldReported;        // held candidates evented (candidateKey)
    };
    // What one namespace's pass found, for decide (the pods are gone by then).
    struct Found {
        core::Findings findings;
        std::vector<core::Verdict> verdicts;        // per candidate
        std::map<std::string, std::string> ranges;  // pool -> spec.range
    };
    struct HeldStat {
        size_t count = 0;
        double oldestSeconds = 0;
    };

    // A pass: the Nodes once, then each pool namespace in turn.
    std::vector<std::string> namespacesToScan();
    // A candidate or an anomaly waits for its next sighting.
    bool pending() const;
    PoolNamespace& stateOf(const std::string& ns);
    core::Result<void> passNamespace(PoolNamespace& pns, const core::NodeIndex& nodes,
                                     PassReport& rep, std::vector<PoolGauge>& gauges);
    // The steps of passNamespace: scan (cluster/scan.h), then (after core::PassAnalysis)
    // report, decide, apply.
    void reportAnomalies(PoolNamespace& pns, const std::vector<core::Anomaly>& anomalies,
                         PassReport& rep);
    void reportPools(PoolNamespace& pns, const std::vector<cluster::PoolUse>& usage,
                     std::vector<PoolGauge>& gauges);
    Due decide(PoolNamespace& pns, const Found& f, const core::NodeIndex& nodes,
               const std::vector<core::ReservationEntry>& res);
    // core/release_rule.h for one candidate, with its pod as a read showed it.
    bool leaderMayFree(const core::LeakCandidate& c, const core::Verdict& v,
                       const std::string& range, const core::NodeIndex& nodes,
                       Clock::time_point firstSeen) const;
    void reportHeld(PoolNamespace& pns, const Found& f, const std::vector<size_t>& held,
                    PassReport& rep);
    core::Result<std::vector<core::u128>> stillLeaked(cluster::Cluster& cl, const store::Pool& p,
                                                      const std::vector<size_t>& idxs,
                                                      const std::vector<core::LeakCandidate>& cands,
                                                      const core::NodeIndex& nodes,
                                                      std::vector<core::FreeProof>& proofs);
    // `proofs[i]`: what freed candidate i (set for those freed).
    core::Result<std::vector<cluster::Released>> releasePool(
        cluster::Cluster& cl, const std::string& ns, const std::string& pool,
        const std::vector<size_t>& idxs, const std::vector<core::LeakCandidate>& cands,
        const core::NodeIndex& nodes, std::vector<core::FreeProof>& proofs);
    void applyReleases(PoolNamespace& pns, const std::vector<core::LeakCandidate>& cands,
                       const std::map<std::string, std::vector<size_t>>& byPool,
                       const core::NodeIndex& nodes, PassReport& rep);
    void reportRelease(const cluster::Released& r, LeakReason reason, core::FreeProof proof);
    void applyOrphanDeletes(PoolNamespace& pns, const std::vector<core::ReservationEntry>& res,
                            const std::vector<size_t>& toDelete, PassReport& rep);
    void applyReservationCreates(PoolNamespace& pns,
                                 const std::vector<core::MissingReservation>& missing,
                                 const std::vector<size_t>& toCreate, PassReport& rep);

    RepairOptions opts_;
    std::vector<cluster::Cluster*> clusters_;
    EventSink& events_;
    Metrics& metrics_;
    StopSignal& stop_;
    std::shared_ptr<PoolNamespaces> poolNamespaces_;    // never null
    std::map<std::string, PoolNamespace> byNamespace_;  // this term's, by namespace name
    std::set<std::string> nodesSeen_;        // Nodes listed by some pass: one missing now is gone
    std::vector<core::NodeReport> reports_;  // this pass's (nodes' allot-gc)
    std::map<std::string, HeldStat> heldByReason_;  // this pass's, for the gauges
    LeaderLoop loop_;
};

}  // namespace allot::gc
