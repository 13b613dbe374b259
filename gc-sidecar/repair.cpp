#include "gc-sidecar/repair.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "core/anomaly.h"
#include "log/log.h"
#include "gc-sidecar/match.h"
#include "gc-sidecar/reclaimer.h"
#include "gc-sidecar/release.h"
#include "store/pool_codec.h"

namespace allot::gc {

using core::Errc;

namespace {

ObjectRef objectFor(const core::Owner& o, const std::string& poolNs, const std::string& pool) {
    auto slash = o.podRef.find('/');
    if (slash != std::string::npos && slash > 0 && slash + 1 < o.podRef.size())
        return podRef(o.podRef.substr(0, slash), o.podRef.substr(slash + 1), o.podUid);
    return poolRef(poolNs, pool);
}

core::Error context(const std::string& what, const core::Error& e) {
    return core::makeError(e.code, what + ": " + e.message);
}

core::ReservationEntry reservationEntry(store::Reservation& r) {
    return {std::move(r.name),   std::move(r.containerId),     std::move(r.podRef),
            std::move(r.ifName), std::move(r.resourceVersion), r.created};
}

std::optional<std::string> stringMember(const json::Value& v, const char* key) {
    const json::Value* m = v.isObject() ? v.find(key) : nullptr;
    if (m && m->isString()) return m->asString();
    return std::nullopt;
}

core::PoolEntries poolEntries(const store::Pool& p) {
    core::PoolEntries out{p.name, p.range, &p.allocations, {},
                          [&p](const core::Owner& o) { return networkNamesFor(p, o); }};
    for (const auto& [key, u] : p.undecoded)
        out.undecoded.push_back(
            {key, u.reason, stringMember(u.value, "id"), stringMember(u.value, "podref")});
    return out;
}

std::string releaseWhy(LeakReason reason) {
    switch (reason) {
        case LeakReason::OtherUid:
            return "its pod was re-created with another UID";
        case LeakReason::Terminal:
            return "its pod has terminated";
        case LeakReason::NodeLost:
            return "its pod's node is gone or NotReady past the grace period";
        default:
            return "its pod no longer exists";
    }
}

}  // namespace

// What a pass read, as compact indexes.
struct RepairLoop::PassScan {
    core::NodeIndex nodes;
    std::optional<core::PassAnalysis> analysis;
    std::vector<PoolGauge> gauges;
    std::unordered_map<std::string, core::PodState> pods;  // those the pools name
};

// What the decide step found due, as indexes into the findings.
struct RepairLoop::Due {
    std::map<std::string, std::vector<size_t>> releaseByPool;  // into candidates
    std::vector<size_t> toDelete;                              // into reservations
    std::vector<size_t> toCreate;                              // into missing
};

RepairLoop::RepairLoop(RepairOptions opts, std::vector<Cluster*> clusters, EventSink& events,
                       Metrics& metrics, StopSignal& stop)
    : opts_(std::move(opts)),
      clusters_(std::move(clusters)),
      events_(events),
      metrics_(metrics),
      stop_(stop),
      tracker_(opts_.leakPasses, opts_.leakGrace) {
    stop_.onStop([this] {
        {
            std::lock_guard l(m_);
            stopping_ = true;
        }
        cv_.notify_all();
    });
}

void RepairLoop::setLeading(bool leading) {
    {
        std::lock_guard l(m_);
        leading_ = leading;
        leadershipChanged_ = true;
    }
    cv_.notify_all();
}

void RepairLoop::run() {
    Clock::time_point next = Clock::now();
    for (;;) {
        {
            std::unique_lock l(m_);
            cv_.wait_until(l, leading_ ? next : Clock::time_point::max(), [&] {
                return stopping_ || leadershipChanged_ || (leading_ && Clock::now() >= next);
            });
            if (stopping_) return;
            if (leadershipChanged_) {
                leadershipChanged_ = false;
                // A new term starts from scratch: candidates seen under an earlier term may
                // have been repaired by another leader meanwhile.
                tracker_ = LeakTracker(opts_.leakPasses, opts_.leakGrace);
                anomaliesSeen_.clear();
                next = Clock::now();
                if (!leading_) continue;
            }
            if (!leading_ || Clock::now() < next) continue;
        }
        auto report = pass();
        next = Clock::now() + opts_.interval;
        if (!report.ok) logging::logWarn("repair pass failed: " + report.error);
    }
}

// scan → analyze (core::PassAnalysis) → report → decide (grace) → apply.
PassReport RepairLoop::pass() {
    std::unique_lock<std::mutex> scanLock;
    if (opts_.scanLock) scanLock = std::unique_lock(*opts_.scanLock);
    const auto t0 = Clock::now();
    PassReport rep;
    PassScan scan;
    if (auto r = scanCluster(*clusters_[0], scan, rep); !r) {
        rep.ok = false;
        rep.error = r.error().message;
        return rep;
    }
    core::Findings found = scan.analysis->finish(scan.pods);
    scan.pods.clear();
    const size_t anomalies = found.anomalies.size();
    reportAnomalies(found.anomalies, rep);
    metrics_.setPools(std::move(scan.gauges));
    const auto& reservations = scan.analysis->reservations();
    const Due due = decide(found, reservations, rep);
    applyReleases(found.candidates, due.releaseByPool, scan.nodes, rep);
    applyOrphanDeletes(reservations, due.toDelete, rep);
    applyReservationCreates(found.missing, due.toCreate, rep);

    // The pass's indexes are freed now; hand the pages back rather than keep the peak.
    scan.analysis.reset();
    std::vector<core::LeakCandidate>().swap(found.candidates);
    ::malloc_trim(0);

    rep.ok = true;
    rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    metrics_.repairPassDone(rep.seconds);
    logging::logInfo("repair pass: " + std::to_string(rep.pods) + " pods, " + std::to_string(rep.pools) +
            " pools, " + std::to_string(rep.allocations) + " allocations, " +
            std::to_string(rep.reservations) + " reservations; " +
            std::to_string(rep.leakCandidates) + " leak candidates, " +
            std::to_string(rep.released) + " released, " + std::to_string(anomalies) +
            " anomalies (" + std::to_string(static_cast<int>(rep.seconds * 1000)) + "ms)");
    return rep;
}

// Scan: Nodes (a pod on a lost one is a leak candidate), reservations, pools a page at a
// time, then the pods those pools name.
Result<void> RepairLoop::scanCluster(Cluster& c, PassScan& scan, PassReport& rep) {
    if (auto r = scanNodes(c, scan.nodes); !r) return r;
    std::vector<core::ReservationEntry> res;
    auto rr = c.pools(opts_.poolNamespace).eachReservation([&](store::Reservation& r) {
        res.push_back(reservationEntry(r));
        return !stop_.stopped();
    });
    if (!rr) return context("list reservations", rr.error());
    rep.reservations = res.size();
    scan.analysis.emplace(opts_.poolNamespace, std::move(res));
    if (auto r = scanPools(c, scan, rep); !r) return r;
    if (stop_.stopped()) return core::makeError(Errc::Transient, "pass: stopped");
    return scanPods(c, scan, rep);
}

Result<void> RepairLoop::scanNodes(Cluster& c, core::NodeIndex& nodes) {
    auto nr = c.eachNode([&](const std::string& name, NodeInfo& n) {
        nodes.nodes.emplace(name, core::NodeState{n.ready, n.notReadySince});
        return !stop_.stopped();
    });
    if (!nr) return context("list nodes", nr.error());
    nodes.listedAt = std::chrono::system_clock::now();
    nodes.grace = opts_.leakGrace;
    nodes.everListed = &nodesSeen_;
    for (const auto& [name, n] : nodes.nodes)
        if (nodesSeen_.size() < 100000) nodesSeen_.insert(name);
    return {};
}

Result<void> RepairLoop::scanPools(Cluster& c, PassScan& scan, PassReport& rep) {
    const std::string& ns = opts_.poolNamespace;
    auto pl = c.pools(ns).eachPool(
        [&](store::Pool& p) {
            ++rep.pools;
            if (auto use = scan.analysis->addPool(poolEntries(p)))
                scan.gauges.push_back({ns, p.name, use->size, use->used,
                                       use->size > use->used ? use->size - use->used : 0});
            return !stop_.stopped();
        },
        [&](const std::string& name, const std::string& why) {
            scan.analysis->addUndecodablePool(name, why);
        });
    rep.allocations = scan.analysis->allocations();
    if (!pl) return context("list pools", pl.error());
    return {};
}

// Only the namespaces that allocations point to are listed, keeping only the pods named,
// so that a pass costs in allocations, not in pods.
Result<void> RepairLoop::scanPods(Cluster& c, PassScan& scan, PassReport& rep) {
    for (const auto& pns : scan.analysis->podNamespaces()) {
        auto pr = c.eachPod(pns, [&](const std::string& ns2, const std::string& name, PodInfo& p) {
            ++rep.pods;
            std::string ref = ns2 + "/" + name;
            if (scan.analysis->wantsPod(ref))
                scan.pods.insert_or_assign(
                    std::move(ref), core::PodState{std::move(p.uid), std::move(p.mirrorOf),
                                                   p.terminal(), scan.nodes.lost(p.nodeName)});
            return !stop_.stopped();
        });
        if (!pr) return context("list pods of " + pns, pr.error());
    }
    return {};
}

// Report anomalies once each while they last, once confirmed on consecutive passes.
void RepairLoop::reportAnomalies(const std::vector<core::Anomaly>& anomalies, PassReport& rep) {
    const std::string& ns = opts_.poolNamespace;
    std::map<std::string, int> nowSeen;
    size_t emitted = 0;
    for (const auto& a : anomalies) {
        const std::string kind(core::name(a.kind));
        ++rep.anomalies[kind];
        auto before = anomaliesSeen_.find(a.key);
        const int streak = (before == anomaliesSeen_.end() ? 0 : before->second) + 1;
        nowSeen[a.key] = streak;
        if (streak != std::max(1, opts_.anomalyPasses)) continue;
        metrics_.addAnomalyFound(kind);
        logging::logWarn("pool anomaly " + kind + ": " + a.message);
        if (emitted++ < opts_.maxAnomalyEventsPerPass)
            events_.emit({true, "PoolAnomaly", kind + ": " + a.message,
                          a.pool.empty()
                              ? ObjectRef{"OverlappingRangeIPReservation",
                                          "whereabouts.cni.cncf.io/v1alpha1", ns, a.reservation, ""}
                              : poolRef(ns, a.pool)});
    }
    anomaliesSeen_ = std::move(nowSeen);
    std::map<std::string, uint64_t> gaugeAnomalies = rep.anomalies;
    for (auto k : core::kAnomalyKinds) gaugeAnomalies.try_emplace(std::string(core::name(k)), 0);
    metrics_.setAnomalies(gaugeAnomalies);
}

// Decide: one sighting per candidate; what the tracker says is due, up to `batch`.
RepairLoop::Due RepairLoop::decide(const core::Findings& f,
                                   const std::vector<core::ReservationEntry>& res,
                                   PassReport& rep) {
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
    auto due = tracker_.applyPass(seen, now);
    rep.leakCandidates = f.candidates.size();
    metrics_.setLeakCandidates(f.candidates.size());

    Due out;
    size_t budget = static_cast<size_t>(opts_.batch);
    for (const auto& k : due) {
        if (budget == 0) break;
        if (auto it = candByKey.find(k); it != candByKey.end()) {
            out.releaseByPool[f.candidates[it->second].pool].push_back(it->second);
            --budget;
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

// Checked on every read of the pool before the write it decides (a conflict re-reads): which
// of the due candidates are still there and still leaked. A leader that lost its Lease
// mid-pass writes nothing more.
Result<std::vector<core::u128>> RepairLoop::stillLeaked(
    Cluster& cl, const store::Pool& p, const std::vector<size_t>& idxs,
    const std::vector<core::LeakCandidate>& cands, const core::NodeIndex& nodes) {
    std::vector<core::u128> out;
    if (!leading_) return core::makeError(Errc::Transient, "leadership lost");
    for (size_t i : idxs) {
        const core::LeakCandidate& cand = cands[i];
        auto e = p.allocations.find(cand.offset);
        if (e == p.allocations.end() || !(e->second == cand.owner)) continue;
        const std::string& ref = cand.owner.podRef;
        auto podNow = cl.getPod(ref.substr(0, ref.find('/')), ref.substr(ref.find('/') + 1));
        if (!podNow) return podNow.error();
        if (*podNow) (*podNow)->nodeLost = nodes.lost((*podNow)->nodeName);
        const PodInfo* pi = *podNow ? &**podNow : nullptr;
        if (classifyLeak(cand.owner, pi) == LeakReason::None) continue;
        out.push_back(cand.offset);
    }
    return out;
}

// Apply (leaks, one pool): the write, and the reservations of what it released.
Result<std::vector<Released>> RepairLoop::releasePool(
    Cluster& cl, const std::string& pool, const std::vector<size_t>& idxs,
    const std::vector<core::LeakCandidate>& cands, const core::NodeIndex& nodes) {
    auto rel = releaseFromPool(cl, opts_.poolNamespace, pool, [&](const store::Pool& p) {
        return stillLeaked(cl, p, idxs, cands, nodes);
    });
    if (!rel) return rel;
    for (auto& r : *rel) {
        if (!leading_) break;
        auto d = dropReservation(cl, r);
        if (!d) logging::logWarn("reservation of released " + r.ip.str() + ": " + d.error().message);
    }
    return rel;
}

// Apply (leaks): re-checking everything on fresh data, pools in parallel; stops at once when
// leadership is lost.
void RepairLoop::applyReleases(const std::vector<core::LeakCandidate>& cands,
                               const std::map<std::string, std::vector<size_t>>& byPool,
                               const core::NodeIndex& nodes, PassReport& rep) {
    const std::vector<std::pair<std::string, std::vector<size_t>>> work(byPool.begin(),
                                                                        byPool.end());
    std::vector<Result<std::vector<Released>>> results(work.size(), std::vector<Released>{});
    parallelFor(clusters_, work.size(), [&](size_t k, Cluster& cl) {
        if (stop_.stopped()) return;
        results[k] = releasePool(cl, work[k].first, work[k].second, cands, nodes);
    });
    for (size_t k = 0; k < work.size(); ++k) {
        const auto& [pool, idxs] = work[k];
        if (!results[k])
            logging::logWarn("repair: IPPool " + opts_.poolNamespace + "/" + pool + ": " +
                    results[k].error().message);
        for (size_t i : idxs) tracker_.forget(core::candidateKey(cands[i]));
        if (!results[k]) continue;
        for (const auto& r : *results[k]) {
            auto reason = LeakReason::NoPod;
            for (size_t i : idxs)
                if (cands[i].offset == r.offset) reason = cands[i].reason;
            reportRelease(r, reason);
            ++rep.released;
        }
    }
    if (rep.released) metrics_.addReleases("leak", rep.released);
}

void RepairLoop::reportRelease(const Released& r, LeakReason reason) {
    const std::string& ns = opts_.poolNamespace;
    std::string msg = "released leaked " + r.ip.str() + " (pool " + ns + "/" + r.pool +
                      (r.owner.network.empty() ? "" : ", network " + r.owner.network) + ", " +
                      core::whoHolds(r.owner) + "): " + releaseWhy(reason);
    logging::logInfo(msg);
    events_.emit({false, "AddressReleased", msg, objectFor(r.owner, ns, r.pool)});
}

// Apply (orphan reservations): each guarded by the resourceVersion the pass read.
void RepairLoop::applyOrphanDeletes(const std::vector<core::ReservationEntry>& res,
                                    const std::vector<size_t>& toDelete, PassReport& rep) {
    const std::string& ns = opts_.poolNamespace;
    for (size_t i : toDelete) {
        if (!leading_) break;
        const auto& r = res[i];
        tracker_.forget(core::orphanKey(r));
        auto d = clusters_[0]->pools(ns).deleteReservation(r.name, r.resourceVersion);
        if (d || d.code() == Errc::NotFound) {
            ++rep.reservationsDeleted;
            logging::logInfo("deleted OverlappingRangeIPReservation " + ns + "/" + r.name +
                    " held by no allocation");
        } else if (d.code() != Errc::Conflict) {
            logging::logWarn("deleting orphan reservation " + r.name + ": " + d.error().message);
        }
    }
    if (rep.reservationsDeleted)
        metrics_.addReleases("orphan_reservation", rep.reservationsDeleted);
}

// Apply (missing reservations of live pods): re-created unless someone took the name.
void RepairLoop::applyReservationCreates(const std::vector<core::MissingReservation>& missing,
                                         const std::vector<size_t>& toCreate, PassReport& rep) {
    const std::string& ns = opts_.poolNamespace;
    for (size_t i : toCreate) {
        if (!leading_) break;
        const auto& m = missing[i];
        tracker_.forget(core::missingKey(m));
        auto made = clusters_[0]->pools(ns).createReservation(
            store::Reservation{m.reservation, m.owner.containerId, m.owner.podRef,
                                   m.owner.ifName, ""});
        if (made) {
            ++rep.reservationsCreated;
            logging::logInfo("re-created OverlappingRangeIPReservation " + ns + "/" + m.reservation +
                    " for " + core::whoHolds(m.owner));
        } else if (made.code() != Errc::AlreadyExists) {
            logging::logWarn("re-creating reservation " + m.reservation + ": " + made.error().message);
        }
    }
}

}  // namespace allot::gc
