#include "gc-sidecar/leader/repair.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "cluster/scan.h"
#include "core/anomaly.h"
#include "engine/reservations.h"
#include "gc-sidecar/base/parallel_for.h"
#include "gc-sidecar/rules/match.h"
#include "gc-sidecar/rules/release.h"
#include "log/log.h"
#include "store/pool_codec.h"

namespace allot::gc {

using cluster::poolRef;

using cluster::podRef;

using cluster::Released;

using core::Result;

using cluster::Cluster;

using cluster::ObjectRef;

using core::Errc;

namespace {

ObjectRef objectFor(const core::Owner& o, const std::string& poolNs, const std::string& pool) {
    auto slash = o.podRef.find('/');
    if (slash != std::string::npos && slash > 0 && slash + 1 < o.podRef.size())
        return podRef(o.podRef.substr(0, slash), o.podRef.substr(slash + 1), o.podUid);
    return poolRef(poolNs, pool);
}

}  // namespace

// What the decide step found due, as indexes into the findings.
struct RepairLoop::Due {
    std::map<std::string, std::vector<size_t>> releaseByPool;  // into candidates
    std::vector<size_t> toDelete;                              // into reservations
    std::vector<size_t> toCreate;                              // into missing
    std::vector<size_t> held;  // into candidates: due, but not the leader's to free
};

RepairLoop::RepairLoop(RepairOptions opts, std::vector<Cluster*> clusters, EventSink& events,
                       Metrics& metrics, StopSignal& stop)
    : opts_(std::move(opts)),
      clusters_(std::move(clusters)),
      events_(events),
      metrics_(metrics),
      stop_(stop),
      poolNamespaces_(opts_.poolNamespaces ? opts_.poolNamespaces
                                           : std::make_shared<PoolNamespaces>(
                                                 opts_.poolNamespace,
                                                 std::vector<std::string>{"allot", "whereabouts"},
                                                 std::vector<std::string>{})),
      loop_(stop) {}

void RepairLoop::setLeading(bool leading) {
    loop_.setLeading(leading);
}

bool RepairLoop::pending() const {
    return std::any_of(byNamespace_.begin(), byNamespace_.end(), [](const auto& kv) {
        return kv.second.tracker.size() > 0 || !kv.second.anomaliesSeen.empty();
    });
}

void RepairLoop::run() {
    loop_.setMinGap(opts_.interval);
    loop_.run(
        [this] {
            // A new term starts from scratch: candidates seen under an earlier term may have
            // been repaired by another leader meanwhile.
            byNamespace_.clear();
        },
        [this]() -> LeaderLoop::Clock::duration {
            auto report = pass();
            if (!report.ok) logging::logWarn("repair pass failed: " + report.error);
            return !report.ok || pending() ? opts_.interval
                                           : std::max(opts_.interval, opts_.resync);
        });
}

// The pool namespaces NADs name now (listed once a pass), and those named before.
std::vector<std::string> RepairLoop::namespacesToScan() {
    if (auto r = poolNamespaces_->refresh(*clusters_[0]); !r)
        logging::logWarn("repair: list NetworkAttachmentDefinitions (pool namespaces): " +
                         r.error().message);
    auto all = poolNamespaces_->all();
    return {all.begin(), all.end()};
}

RepairLoop::PoolNamespace& RepairLoop::stateOf(const std::string& ns) {
    auto it = byNamespace_.find(ns);
    if (it == byNamespace_.end())
        it = byNamespace_
                 .emplace(ns, PoolNamespace{ns, LeakTracker(opts_.leakPasses, opts_.leakGrace), {}})
                 .first;
    return it->second;
}

// Nodes once, then per pool namespace: scan → analyze → report → decide (grace) → apply. A
// namespace that cannot be read fails the pass but not the others'.
PassReport RepairLoop::pass() {
    std::unique_lock<std::mutex> scanLock;
    if (opts_.scanLock) scanLock = std::unique_lock(*opts_.scanLock);
    const auto t0 = Clock::now();
    PassReport rep;
    core::NodeIndex nodes;
    const cluster::ScanOptions nodeOpts{opts_.poolNamespace, opts_.leakGrace, &nodesSeen_, {}};
    if (auto n = cluster::scanNodes(*clusters_[0], nodeOpts, nodes); !n) {
        rep.error = n.error().message;
        return rep;
    }
    reports_.clear();
    heldByReason_.clear();
    if (auto r = clusters_[0]->nodeReports(opts_.reportNamespace))
        reports_ = std::move(*r);
    else
        logging::logWarn("repair: the nodes' reports (Leases " + opts_.reportNamespace +
                         "/allot-node-*): " + r.error().message);
    // A report outlives its Node: a name whose allot-gc found its Node (and said so) was a
    // Node, whichever leader listed it.
    for (const auto& r : reports_)
        if (!r.nodeUid.empty()) nodes.reported.insert(r.node);
    std::vector<PoolGauge> gauges;
    std::vector<std::string> failed;
    for (const auto& ns : namespacesToScan()) {
        if (stop_.stopped() || !loop_.leading()) break;
        ++rep.namespaces;
        if (auto r = passNamespace(stateOf(ns), nodes, rep, gauges); !r)
            failed.push_back("namespace " + ns + ": " + r.error().message);
    }
    metrics_.setPools(std::move(gauges));
    metrics_.setLeakCandidates(rep.leakCandidates);
    std::map<std::string, std::pair<uint64_t, double>> held;
    for (const auto& [reason, h] : heldByReason_) held[reason] = {h.count, h.oldestSeconds};
    metrics_.setHeld(held);
    std::map<std::string, uint64_t> gaugeAnomalies = rep.anomalies;
    for (auto k : core::kAnomalyKinds) gaugeAnomalies.try_emplace(std::string(core::name(k)), 0);
    metrics_.setAnomalies(gaugeAnomalies);
    if (rep.released) metrics_.addReleases("leak", rep.released);
    if (rep.reservationsDeleted)
        metrics_.addReleases("orphan_reservation", rep.reservationsDeleted);
    if (opts_.afterPass && loop_.leading()) opts_.afterPass();
    ::malloc_trim(0);  // the pass's indexes are freed: hand the pages back, not keep the peak
    rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    size_t anomalies = 0;
    for (const auto& [kind, n] : rep.anomalies) anomalies += n;
    logging::logInfo("repair pass: " + std::to_string(rep.namespaces) + " pool namespaces, " +
                     std::to_string(rep.pods) + " pods, " + std::to_string(rep.pools) + " pools, " +
                     std::to_string(rep.allocations) + " allocations, " +
                     std::to_string(rep.reservations) + " reservations; " +
                     std::to_string(rep.leakCandidates) + " leak candidates, " +
                     std::to_string(rep.released) + " released, " + std::to_string(rep.held) +
                     " held for their node, " + std::to_string(anomalies) + " anomalies (" +
                     std::to_string(static_cast<int>(rep.seconds * 1000)) + "ms)");
    for (const auto& f : failed) rep.error += (rep.error.empty() ? "" : "; ") + f;
    rep.ok = failed.empty() && !stop_.stopped();
    if (rep.ok) metrics_.repairPassDone(rep.seconds);
    return rep;
}

// One pool namespace of a pass, with its own tracker and anomaly streaks.
Result<void> RepairLoop::passNamespace(PoolNamespace& pns, const core::NodeIndex& nodes,
                                       PassReport& rep, std::vector<PoolGauge>& gauges) {
    cluster::Scan scan;
    cluster::ScanOptions scanOpts{pns.name, opts_.leakGrace, &nodesSeen_,
                                  [this] { return stop_.stopped(); }};
    scanOpts.listedNodes = &nodes;
    auto scanned = cluster::scan(*clusters_[0], scanOpts, scan);
    rep.pods += scan.podsListed;
    rep.pools += scan.pools;
    rep.allocations += scan.allocations;
    rep.reservations += scan.reservations;
    if (!scanned) return scanned.error();
    Found fd;
    fd.findings = scan.analysis->finish(scan.pods);
    for (const auto& c : fd.findings.candidates) {
        auto pod = scan.pods.find(c.owner.podRef);
        fd.verdicts.push_back(
            core::proverFor(c, pod == scan.pods.end() ? nullptr : &pod->second, scan.nodes));
    }
    for (const auto& u : scan.usage) fd.ranges[u.pool] = u.range;
    scan.pods.clear();
    const core::Findings& found = fd.findings;
    reportAnomalies(pns, found.anomalies, rep);
    reportPools(pns, scan.usage, gauges);
    const auto& reservations = scan.analysis->reservations();
    rep.leakCandidates += found.candidates.size();
    const Due due = decide(pns, fd, scan.nodes, reservations);
    applyReleases(pns, found.candidates, due.releaseByPool, scan.nodes, rep);
    reportHeld(pns, fd, due.held, rep);
    applyOrphanDeletes(pns, reservations, due.toDelete, rep);
    applyReservationCreates(pns, found.missing, due.toCreate, rep);
    return {};
}

// Gauges per pool; a release log that cannot be read is logged once while it lasts.
void RepairLoop::reportPools(PoolNamespace& pns, const std::vector<cluster::PoolUse>& usage,
                             std::vector<PoolGauge>& gauges) {
    std::set<std::string> unreadable;
    for (const auto& u : usage) {
        gauges.push_back({pns.name, u.pool, u.size, u.used, u.size > u.used ? u.size - u.used : 0});
        if (u.releaseLogUnreadable.empty()) continue;
        unreadable.insert(u.pool);
        if (!pns.unreadableLogs.count(u.pool))
            logging::logWarn("IPPool " + pns.name + "/" + u.pool + ": " + u.releaseLogUnreadable,
                             {.pool = pns.name + "/" + u.pool});
    }
    pns.unreadableLogs = std::move(unreadable);
}

// Report anomalies once each while they last, once confirmed on consecutive passes.
void RepairLoop::reportAnomalies(PoolNamespace& pns, const std::vector<core::Anomaly>& anomalies,
                                 PassReport& rep) {
    const std::string& ns = pns.name;
    std::map<std::string, int> nowSeen;
    size_t emitted = 0;
    for (const auto& a : anomalies) {
        const std::string kind(core::name(a.kind));
        ++rep.anomalies[kind];
        auto before = pns.anomaliesSeen.find(a.key);
        const int streak = (before == pns.anomaliesSeen.end() ? 0 : before->second) + 1;
        nowSeen[a.key] = streak;
        if (streak != std::max(1, opts_.anomalyPasses)) continue;
        metrics_.addAnomalyFound(kind);
        logging::logWarn("pool anomaly " + kind + ": " + a.message,
                         {.pool = a.pool.empty() ? "" : ns + "/" + a.pool});
        if (emitted++ < opts_.maxAnomalyEventsPerPass)
            events_.emit({true, "PoolAnomaly", kind + ": " + a.message,
                          a.pool.empty()
                              ? ObjectRef{"OverlappingRangeIPReservation",
                                          "whereabouts.cni.cncf.io/v1alpha1", ns, a.reservation, ""}
                              : poolRef(ns, a.pool)});
    }
    pns.anomaliesSeen = std::move(nowSeen);
}

// Decide: one sighting per candidate; what the tracker says is due, up to `batch`. A due
// candidate the leader may not free is held: reported, and left to its node.
RepairLoop::Due RepairLoop::decide(PoolNamespace& pns, const Found& fd,
                                   const core::NodeIndex& nodes,
                                   const std::vector<core::ReservationEntry>& res) {
    const core::Findings& f = fd.findings;
    const auto now = Clock::now();
    const auto wallNow = std::chrono::system_clock::now();
    std::vector<std::string> seen;
    std::unordered_map<std::string, size_t> candByKey, missByKey, orphanByKey;
    for (size_t i = 0; i < f.candidates.size(); ++i)
        seen.push_back(candByKey.emplace(core::candidateKey(f.candidates[i]), i).first->first);
    for (size_t i = 0; i < f.missing.size(); ++i)
        seen.push_back(missByKey.emplace(core::missingKey(f.missing[i]), i).first->first);
    for (size_t i : f.orphans)
        seen.push_back(orphanByKey.emplace(core::orphanKey(res[i]), i).first->first);
    auto due = pns.tracker.applyPass(seen, now);

    Due out;
    size_t budget = static_cast<size_t>(opts_.batch);
    for (const auto& k : due) {
        if (auto it = candByKey.find(k); it != candByKey.end()) {
            const size_t i = it->second;
            const auto& c = f.candidates[i];
            auto range = fd.ranges.find(c.pool);
            const bool mine =
                range != fd.ranges.end() && leaderMayFree(c, fd.verdicts[i], range->second, nodes,
                                                          pns.tracker.firstSeen(k, now));
            if (!mine) {
                out.held.push_back(i);
            } else if (budget > 0) {
                out.releaseByPool[c.pool].push_back(i);
                --budget;
            }
        } else if (budget == 0) {
            continue;
        } else if (auto m = missByKey.find(k); m != missByKey.end()) {
            out.toCreate.push_back(m->second);
            --budget;
        } else if (auto o = orphanByKey.find(k); o != orphanByKey.end()) {
            // The reservation itself must also be older than the grace period.
            if (wallNow - res[o->second].created >= opts_.leakGrace) {
                out.toDelete.push_back(o->second);
                --budget;
            }
        }
    }
    return out;
}

bool RepairLoop::leaderMayFree(const core::LeakCandidate& c, const core::Verdict& v,
                               const std::string& range, const core::NodeIndex& nodes,
                               Clock::time_point firstSeen) const {
    if (v.prover == core::Prover::Leader) return true;
    if (v.prover != core::Prover::EveryNode) return false;
    auto cidr = core::Cidr::parse(range);
    if (!cidr) return false;
    const auto since =
        std::chrono::system_clock::now() -
        std::chrono::duration_cast<std::chrono::system_clock::duration>(Clock::now() - firstSeen);
    return core::everyNodeReportsAbsent(cidr->at(c.offset), since, reports_, nodes);
}

// Held candidates: one Warning Event each while it lasts, and the gauges by reason.
void RepairLoop::reportHeld(PoolNamespace& pns, const Found& fd, const std::vector<size_t>& held,
                            PassReport& rep) {
    const auto now = Clock::now();
    std::set<std::string> still;
    for (size_t i : held) {
        const auto& c = fd.findings.candidates[i];
        const std::string key = core::candidateKey(c);
        const double age =
            std::chrono::duration<double>(now - pns.tracker.firstSeen(key, now)).count();
        HeldStat& st = heldByReason_[std::string(core::name(c.reason))];
        ++st.count;
        st.oldestSeconds = std::max(st.oldestSeconds, age);
        ++rep.held;
        still.insert(key);
        if (pns.heldReported.count(key)) continue;
        auto range = fd.ranges.find(c.pool);
        std::string ip = "offset " + core::u128ToString(c.offset);
        if (range != fd.ranges.end())
            if (auto cidr = core::Cidr::parse(range->second)) ip = cidr->at(c.offset).str();
        const std::string& node = fd.verdicts[i].node;
        const std::string msg =
            "kept " + ip + " (pool " + pns.name + "/" + c.pool + ", " + core::whoHolds(c.owner) +
            "): " + std::string(core::describe(c.reason)) + ", seen for " +
            std::to_string(static_cast<int64_t>(age)) + "s; " +
            (node.empty() ? "freed once every Linux Node reports it unused (a Node whose allot-gc "
                            "has no fresh report keeps it)"
                          : "freed when node " + node +
                                "'s allot-gc proves no sandbox holds it, or the Node is deleted "
                                "or tainted " +
                                core::kOutOfServiceTaint + " with its pod gone");
        logging::logWarn(msg, {.pool = pns.name + "/" + c.pool,
                               .network = c.owner.network,
                               .pod = c.owner.podRef,
                               .container = c.owner.containerId,
                               .ip = range != fd.ranges.end() ? ip : ""});
        events_.emit({true, "AddressHeld", msg, objectFor(c.owner, pns.name, c.pool)});
    }
    pns.heldReported = std::move(still);
}

// Checked on every read of the pool before the write it decides (a conflict re-reads): which
// of the due candidates are still there and still leaked. A leader that lost its Lease
// mid-pass writes nothing more.
Result<std::vector<core::u128>> RepairLoop::stillLeaked(
    Cluster& cl, const store::Pool& p, const std::vector<size_t>& idxs,
    const std::vector<core::LeakCandidate>& cands, const core::NodeIndex& nodes,
    std::vector<core::FreeProof>& proofs) {
    std::vector<core::u128> out;
    if (!loop_.leading()) return core::makeError(Errc::Transient, "leadership lost");
    for (size_t i : idxs) {
        const core::LeakCandidate& cand = cands[i];
        auto e = p.allocations.find(cand.offset);
        if (e == p.allocations.end() || !(e->second == cand.owner)) continue;
        const std::string& ref = cand.owner.podRef;
        auto podNow = cl.getPod(ref.substr(0, ref.find('/')), ref.substr(ref.find('/') + 1));
        if (!podNow) return podNow.error();
        std::optional<core::PodState> state;
        if (*podNow) state = cluster::podState(**podNow, &nodes);
        core::LeakCandidate fresh = cand;
        fresh.reason = core::classifyLeak(cand.owner, state ? &*state : nullptr);
        if (fresh.reason == LeakReason::None) continue;
        const core::Verdict v = core::proverFor(fresh, state ? &*state : nullptr, nodes);
        if (v.prover == core::Prover::EntryNode)
            continue;         // only a deleted or out-of-service Node's, or every node's
        proofs[i] = v.proof;  // this candidate's own slot: pools run in parallel
        out.push_back(cand.offset);
    }
    return out;
}

// Apply (leaks, one pool): the write, and the reservations of what it released.
Result<std::vector<Released>> RepairLoop::releasePool(Cluster& cl, const std::string& ns,
                                                      const std::string& pool,
                                                      const std::vector<size_t>& idxs,
                                                      const std::vector<core::LeakCandidate>& cands,
                                                      const core::NodeIndex& nodes,
                                                      std::vector<core::FreeProof>& proofs) {
    auto rel = releaseFromPool(cl, ns, pool, [&](const store::Pool& p) {
        return stillLeaked(cl, p, idxs, cands, nodes, proofs);
    });
    if (!rel) return rel;
    for (auto& r : *rel) {
        if (!loop_.leading()) break;
        auto d = dropReservation(cl, r);
        if (!d)
            logging::logWarn("reservation of released " + r.ip.str() + ": " + d.error().message,
                             logFields(r));
    }
    return rel;
}

// Apply (leaks): re-checking everything on fresh data, pools in parallel; stops at once when
// leadership is lost.
void RepairLoop::applyReleases(PoolNamespace& pns, const std::vector<core::LeakCandidate>& cands,
                               const std::map<std::string, std::vector<size_t>>& byPool,
                               const core::NodeIndex& nodes, PassReport& rep) {
    const std::vector<std::pair<std::string, std::vector<size_t>>> work(byPool.begin(),
                                                                        byPool.end());
    std::vector<Result<std::vector<Released>>> results(work.size(), std::vector<Released>{});
    std::vector<core::FreeProof> proofs(cands.size(), core::FreeProof::NodeDeleted);
    parallelFor(clusters_, work.size(), [&](size_t k, Cluster& cl) {
        if (stop_.stopped()) return;
        results[k] = releasePool(cl, pns.name, work[k].first, work[k].second, cands, nodes, proofs);
    });
    for (size_t k = 0; k < work.size(); ++k) {
        const auto& [pool, idxs] = work[k];
        if (!results[k])
            logging::logWarn(
                "repair: IPPool " + pns.name + "/" + pool + ": " + results[k].error().message,
                {.pool = pns.name + "/" + pool});
        for (size_t i : idxs) pns.tracker.forget(core::candidateKey(cands[i]));
        if (!results[k]) continue;
        for (const auto& r : *results[k]) {
            auto reason = LeakReason::NoPod;
            auto proof = core::FreeProof::NodeDeleted;
            for (size_t i : idxs) {
                if (cands[i].offset != r.offset) continue;
                reason = cands[i].reason;
                proof = proofs[i];
            }
            reportRelease(r, reason, proof);
            ++rep.released;
        }
    }
}

void RepairLoop::reportRelease(const Released& r, LeakReason reason, core::FreeProof proof) {
    const std::string& ns = r.ns;
    std::string msg = "released leaked " + r.ip.str() + " (pool " + ns + "/" + r.pool +
                      (r.owner.network.empty() ? "" : ", network " + r.owner.network) + ", " +
                      core::whoHolds(r.owner) + "): " + std::string(core::describe(reason)) + " (" +
                      std::string(core::name(proof)) + ")";
    logging::logInfo(msg, logFields(r));
    events_.emit({false, "AddressReleased", msg, objectFor(r.owner, ns, r.pool)});
}

// Apply (orphan reservations): each guarded by the resourceVersion the pass read.
void RepairLoop::applyOrphanDeletes(PoolNamespace& pns,
                                    const std::vector<core::ReservationEntry>& res,
                                    const std::vector<size_t>& toDelete, PassReport& rep) {
    const std::string& ns = pns.name;
    for (size_t i : toDelete) {
        if (!loop_.leading()) break;
        const auto& r = res[i];
        pns.tracker.forget(core::orphanKey(r));
        auto d = engine::dropOrphan(clusters_[0]->pools(ns), r.name, r.resourceVersion);
        if (d) {
            ++rep.reservationsDeleted;
            logging::logInfo("deleted OverlappingRangeIPReservation " + ns + "/" + r.name +
                                 " held by no allocation",
                             {.pod = r.podRef, .container = r.containerId});
        } else if (d.code() != Errc::Conflict) {
            logging::logWarn("deleting orphan reservation " + r.name + ": " + d.error().message);
        }
    }
}

// Apply (missing reservations of live pods): re-created unless someone took the name.
void RepairLoop::applyReservationCreates(PoolNamespace& pns,
                                         const std::vector<core::MissingReservation>& missing,
                                         const std::vector<size_t>& toCreate, PassReport& rep) {
    const std::string& ns = pns.name;
    for (size_t i : toCreate) {
        if (!loop_.leading()) break;
        const auto& m = missing[i];
        pns.tracker.forget(core::missingKey(m));
        auto made = engine::restoreReservation(clusters_[0]->pools(ns), m.reservation, m.owner);
        if (made) {
            ++rep.reservationsCreated;
            logging::logInfo("re-created OverlappingRangeIPReservation " + ns + "/" +
                                 m.reservation + " for " + core::whoHolds(m.owner),
                             {.pool = ns + "/" + m.pool,
                              .network = m.owner.network,
                              .pod = m.owner.podRef,
                              .container = m.owner.containerId,
                              .ip = m.ip.str()});
        } else if (made.code() != Errc::AlreadyExists) {
            logging::logWarn("re-creating reservation " + m.reservation + ": " +
                             made.error().message);
        }
    }
}

}  // namespace allot::gc
