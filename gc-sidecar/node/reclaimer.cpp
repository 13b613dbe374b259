#include "gc-sidecar/node/reclaimer.h"

#include <malloc.h>

#include <algorithm>
#include <random>

#include "cluster/nad.h"
#include "core/pool_targets.h"
#include "engine/retry_policy.h"
#include "engine/targets.h"
#include "gc-sidecar/node/network_status.h"
#include "log/log.h"
#include "version/version.h"

namespace allot::gc {

using cluster::parseNadConfig;

using cluster::podRef;

using core::Result;

using cluster::Cluster;

using core::Errc;

Reclaimer::Reclaimer(ReclaimerOptions opts, std::vector<Cluster*> clusters, EventSink& events,
                     Metrics& metrics, StopSignal& stop)
    : opts_(std::move(opts)),
      clusters_(std::move(clusters)),
      events_(events),
      metrics_(metrics),
      stop_(stop),
      queue_(opts_.maxBatch, opts_.releaseRetries, retryBackoff()),
      poolNamespaces_(opts_.poolNamespaces
                          ? opts_.poolNamespaces
                          : std::make_shared<PoolNamespaces>(opts_.poolNamespace, opts_.ipamTypes,
                                                             opts_.flatFiles)) {
    if (!opts_.journalDir.empty())
        journal_.emplace(opts_.journalDir, opts_.poolNamespace, *clusters_[0], events_, metrics_,
                         stop_);
    stop_.onStop([this] {
        {
            std::lock_guard l(m_);
            stopping_ = true;
        }
        cv_.notify_all();
    });
}

void Reclaimer::podDeleted(PodRecord pod) {
    if (pod.hostNetwork) {
        logging::logDebug(
            "pod " + pod.ns + "/" + pod.name + " ran on the host network: nothing to release",
            {.pod = pod.ns + "/" + pod.name});
        return;
    }
    if (!pod.mirrorOf.empty()) {
        // The static pod runs on until its manifest goes; the kubelet's DEL frees it then.
        logging::logDebug("mirror pod " + pod.ns + "/" + pod.name +
                              " deleted: its static pod keeps its addresses",
                          {.pod = pod.ns + "/" + pod.name});
        return;
    }
    {
        std::lock_guard l(m_);
        ReleaseWork w;
        w.pod = std::move(pod);
        w.reason = "pod_deleted";
        w.due = Clock::now();
        queue_.push(std::move(w));
    }
    cv_.notify_one();
}

void Reclaimer::catchUp(std::vector<PodRecord> live) {
    {
        std::lock_guard l(m_);
        catchUpRequest_ = std::move(live);
        catchUpAt_ = Clock::now();
    }
    cv_.notify_one();
}

size_t Reclaimer::pending() const {
    std::lock_guard l(m_);
    return queue_.size();
}

bool Reclaimer::caughtUp() const {
    std::lock_guard l(m_);
    return caughtUp_;
}

void Reclaimer::run() {
    {
        std::lock_guard l(m_);
        nextJournal_ = Clock::now();
        nextSweep_ = Clock::now() + opts_.sweepInterval;
    }
    const bool sweeps = opts_.sweepInterval.count() > 0;
    while (!stop_.stopped()) {
        {
            std::unique_lock l(m_);
            auto wake = opts_.journalDir.empty() ? Clock::time_point::max() : nextJournal_;
            if (sweeps) wake = std::min(wake, nextSweep_);
            if (auto due = queue_.nextDue()) wake = std::min(wake, *due);
            if (catchUpRequest_) wake = std::min(wake, catchUpAt_);
            cv_.wait_until(l, wake, [&] {
                if (stopping_) return true;
                const auto now = Clock::now();
                if (catchUpRequest_ && now >= catchUpAt_) return true;
                if (!opts_.journalDir.empty() && now >= nextJournal_) return true;
                if (sweeps && now >= nextSweep_) return true;
                const auto due = queue_.nextDue();
                return due && *due <= now;
            });
            if (stopping_) return;
        }
        runOnce(Clock::now());
    }
}

void Reclaimer::runOnce(Clock::time_point now) {
    std::optional<std::vector<PodRecord>> catchUpReq;
    {
        std::lock_guard l(m_);
        if (now >= catchUpAt_) catchUpReq.swap(catchUpRequest_);
    }
    if (catchUpReq) {
        auto r = doCatchUp(*catchUpReq, "catch_up");
        std::lock_guard l(m_);
        if (r) {
            if (!caughtUp_) {
                metrics_.setReady();
                logging::logInfo("ready: first sync and catch-up complete");
            }
            caughtUp_ = true;
            catchUpFailures_ = 0;
        } else {
            const auto wait = retryBackoff().delay(catchUpFailures_++);
            catchUpAt_ = Clock::now() + wait;
            logging::logWarn("catch-up scan failed (retrying in " + std::to_string(wait.count()) +
                             "ms): " + r.error().message);
            if (!catchUpRequest_) catchUpRequest_ = std::move(catchUpReq);
        }
    }
    std::vector<ReleaseItem> items;
    for (int round = 0; round < 8; ++round) {
        auto batch = takeDue(round == 0 ? now : Clock::now());
        if (batch.empty()) break;
        releaseBatch(std::move(batch), items);
    }
    if (!items.empty()) finish(items, now);
    bool journalDue = false;
    {
        std::lock_guard l(m_);
        if (!opts_.journalDir.empty() && now >= nextJournal_) {
            journalDue = true;
            nextJournal_ = now + opts_.journalInterval;
        }
    }
    if (journalDue) journal_->replayOnce();
    bool sweepDue = false;
    {
        std::lock_guard l(m_);
        if (opts_.sweepInterval.count() > 0 && now >= nextSweep_) {
            sweepDue = true;
            nextSweep_ = now + opts_.sweepInterval;
        }
    }
    if (sweepDue) sweepNode();
}

void Reclaimer::sweepNode() {
    if (!opts_.reportNamespace.empty()) publishReport();
    // Marks of ADDs that cannot be running any more (their DEL never came: a force delete).
    if (opts_.addMarks)
        opts_.addMarks->prune(2 * opts_.addInFlightBound, std::chrono::system_clock::now());
    if (!caughtUp() || !opts_.livePods) return;  // the pod watch's own catch-up comes first
    auto live = opts_.livePods();
    if (!live) return;
    if (auto r = doCatchUp(*live, "node_sweep"); !r)
        logging::logWarn("node sweep failed (next in " +
                         std::to_string(opts_.sweepInterval.count()) + "ms): " + r.error().message);
}

// Taken before the probe reads: an address the probe does not find was held by no namespace
// at any time after `at`.
void Reclaimer::publishReport() {
    core::NodeReport rep;
    rep.node = opts_.node;
    rep.at = std::chrono::system_clock::now();
    rep.version = version();
    rep.revision = revision();
    // Whether this node's name is a Node's, asked until it is known: the leader takes a name
    // as a deleted Node only from a report that found one (core::NodeIndex::reported).
    if (nodeUid_.empty())
        if (auto uid = clusters_[0]->nodeUid(opts_.node); uid && *uid) nodeUid_ = **uid;
    rep.nodeUid = nodeUid_;
    if (opts_.probe) {
        if (auto held = opts_.probe()) {
            rep.complete = true;
            rep.held = std::move(*held);
        } else {
            logging::logWarn("node report: the namespace probe failed, reporting \"incomplete\": " +
                             held.error().message);
        }
    }
    if (auto put = clusters_[0]->putNodeReport(opts_.reportNamespace, rep); !put)
        logging::logWarn("node report (Lease " + opts_.reportNamespace +
                         "): " + put.error().message);
}

std::vector<ReleaseWork> Reclaimer::takeDue(Clock::time_point now) {
    std::lock_guard l(m_);
    return queue_.takeDue(now);
}

Result<std::vector<PoolKey>> Reclaimer::targetsOfNad(Cluster& c, const std::string& ns,
                                                     const std::string& name, bool& missing) {
    missing = false;
    const std::string key = ns + "/" + name;
    const auto now = Clock::now();
    auto it = nadCache_.find(key);
    // A missing NAD is re-read sooner than a present one: it may have been just created.
    const auto ttl = [&](const NadEntry& e) {
        return e.found ? opts_.nadCacheTtl : opts_.nadCacheTtl / 6;
    };
    if (it == nadCache_.end() || now - it->second.at > ttl(it->second)) {
        auto cfg = c.getNadConfig(ns, name);
        if (!cfg && cfg.code() != Errc::NotFound) return cfg.error();
        if (nadCache_.size() >= 512) nadCache_.clear();
        NadEntry e{now, cfg.ok(), cfg ? *cfg : std::string()};
        it = nadCache_.insert_or_assign(key, std::move(e)).first;
    }
    if (!it->second.found) {
        missing = true;
        return std::vector<PoolKey>();
    }
    auto nets = parseNadConfig(it->second.config, opts_.ipamTypes, opts_.flatFiles);
    if (!nets) {
        // Cannot say which pools it uses: the caller scans instead.
        missing = true;
        logging::logWarn("NetworkAttachmentDefinition " + key + ": " + nets.error().message);
        return std::vector<PoolKey>();
    }
    std::vector<PoolKey> out;
    for (const auto& n : *nets) {
        const auto& cfg = n.config;
        const std::string ns2 =
            cfg.raw.poolNamespace.empty() ? opts_.poolNamespace : cfg.raw.poolNamespace;
        poolNamespaces_->learn(ns2);
        if (!core::sliceSources(cfg, n.networkName)) continue;  // no ADD ever allocated with it
        // A range whose slice this node never had: nothing was allocated from it (Skip).
        auto targets = engine::resolveTargets(c.pools(ns2), cfg, n.networkName, opts_.node, ns2,
                                              true, engine::MissingSlice::Skip);
        const bool unreadable =
            !targets && (targets.code() == Errc::InvalidConfig || targets.code() == Errc::Invalid);
        if (!targets && !unreadable) return targets.error();  // the API: try again later
        if (!targets) {
            // Cannot say which pools it uses: the caller scans instead.
            missing = true;
            logging::logWarn("NetworkAttachmentDefinition " + key + ": " + targets.error().message);
            return std::vector<PoolKey>();
        }
        for (const auto& t : *targets) out.push_back({ns2, t.pool, cfg.raw.networkName});
    }
    return out;
}

void Reclaimer::resolveTargets(ReleaseItem& it, Cluster& c) {
    if (!it.w.hinted.empty()) {
        it.pools = it.w.hinted;
        it.scanMatch = true;
        return;
    }
    if (!it.w.pod.hasNetworkStatus) {
        it.scanMatch = it.scanAll = true;
        return;
    }
    auto statuses = parseNetworkStatus(it.w.pod.networkStatus);
    if (!statuses) {
        it.malformed = true;
        it.malformedWhy = statuses.error().message;
        it.scanMatch = it.scanAll = it.scanEveryPool = true;
        return;
    }
    for (const auto& s : *statuses) {
        // The default network is resolved like any other when its name is a NAD's ns/name
        // (Multus' clusterNetwork or v1.multus-cni.io/default-network naming an allot NAD);
        // a plain CNI network name (a conf file's, no slash) is not a NAD and is skipped.
        if (s.isDefault && s.name.find('/') == std::string::npos) continue;
        auto nad = nadOf(s, it.w.pod.ns);
        if (!nad) {
            it.malformed = true;
            it.malformedWhy = nad.error().message;
            it.scanMatch = it.scanAll = it.scanEveryPool = true;
            continue;
        }
        bool missing = false;
        auto targets = targetsOfNad(c, nad->first, nad->second, missing);
        if (!targets) {
            it.failure = "NetworkAttachmentDefinition " + nad->first + "/" + nad->second + ": " +
                         targets.error().message;
            return;
        }
        if (missing && !s.isDefault) it.scanMatch = it.scanAll = it.scanEveryPool = true;
        for (auto& t : *targets) it.pools.insert(std::move(t));
    }
}

void Reclaimer::retryOrGiveUp(ReleaseWork w, const std::string& error, Clock::time_point now) {
    const std::string pod = w.pod.ns + "/" + w.pod.name;
    const int attempt = w.attempts + 1;
    bool again = false;
    {
        std::lock_guard l(m_);
        again = queue_.retry(w, now);
    }
    if (again) {
        logging::logWarn("releasing the addresses of pod " + pod + " failed (attempt " +
                             std::to_string(attempt) + ", retrying): " + error,
                         {.pod = pod});
        return;
    }
    metrics_.addReleaseFailure();
    logging::logError("giving up releasing the addresses of pod " + pod + " after " +
                          std::to_string(attempt) + " attempts: " + error,
                      {.pod = pod});
    events_.emit({true, "ReleaseFailed",
                  "could not release the addresses of deleted pod " + pod + " after " +
                      std::to_string(attempt) + " attempts: " + error.substr(0, 400) +
                      " (the repair loop will retry)",
                  podRef(w.pod.ns, w.pod.name, w.pod.uid)});
}

std::set<std::string> Reclaimer::namespacesToScan(Cluster& c) {
    if (auto r = poolNamespaces_->refresh(c); !r)
        logging::logWarn("list NetworkAttachmentDefinitions (pool namespaces): " +
                         r.error().message);
    return poolNamespaces_->all();
}

// The entries of this node in `p` whose pod is not among the live ones, grouped by pod into
// `found` (key: uid, or podref when there is none); `nodePools` learns the pools holding any.
void Reclaimer::collectGone(const std::string& pns, const store::Pool& p, const LiveSet& live,
                            const std::string& reason, std::map<std::string, ReleaseWork>& found,
                            std::set<PoolKey>& nodePools) const {
    for (const auto& [off, o] : p.allocations) {
        if (o.node == opts_.node) nodePools.insert(PoolKey{pns, p.name, ""});
        if (o.node != opts_.node || o.podRef.empty()) continue;
        if (o.podUid.empty() ? live.refs.count(o.podRef) != 0 : live.uids.count(o.podUid) != 0)
            continue;
        const std::string key = o.podUid.empty() ? "ref:" + o.podRef : "uid:" + o.podUid;
        ReleaseWork& w = found[key];
        if (w.reason.empty()) {
            auto [ns, name] = splitPodRef(o.podRef);
            w.pod = PodRecord{ns, name, o.podUid, false, {}};
            w.reason = reason;
        }
        w.hinted.insert(PoolKey{pns, p.name, ""});
    }
}

// Every pool of every pool namespace (catch-up; a sweep now and then).
Result<void> Reclaimer::scanAllPools(const LiveSet& live, const std::string& reason,
                                     std::map<std::string, ReleaseWork>& found) {
    std::set<PoolKey> nodePools;
    std::unique_lock<std::mutex> scan;
    if (opts_.scanLock) scan = std::unique_lock(*opts_.scanLock);
    Result<void> r;
    for (const auto& pns : namespacesToScan(*clusters_[0])) {
        r = clusters_[0]->pools(pns).eachPool(
            [&](store::Pool& p) {
                collectGone(pns, p, live, reason, found, nodePools);
                return true;
            },
            [&](const std::string& name, const std::string& why) {
                logUndecodable(pns, name, why);
            });
        if (!r) break;
    }
    if (scan.owns_lock()) scan.unlock();
    ::malloc_trim(0);
    if (!r) return r.error();
    nodePools_ = std::move(nodePools);
    lastFullScan_ = Clock::now();
    return {};
}

// Only the pools known to hold this node's entries, one GET each: a sweep between full scans
// lists no pool (a pool that gained this node's first entry since is found by the next one).
Result<void> Reclaimer::scanNodePools(const LiveSet& live, const std::string& reason,
                                      std::map<std::string, ReleaseWork>& found) {
    std::set<PoolKey> nodePools;
    for (const auto& k : nodePools_) {
        auto p = clusters_[0]->pools(k.ns).getPool(k.pool);
        if (!p && p.code() == Errc::NotFound) continue;
        if (!p) return p.error();
        collectGone(k.ns, *p, live, reason, found, nodePools);
    }
    nodePools_ = std::move(nodePools);
    return {};
}

Result<void> Reclaimer::doCatchUp(const std::vector<PodRecord>& live, const std::string& reason) {
    LiveSet set;
    for (const auto& p : live) {
        set.uids.insert(p.uid);
        set.refs.insert(p.ns + "/" + p.name);
    }
    std::map<std::string, ReleaseWork> found;
    // A full scan every ten sweeps, and at least every ten minutes apart.
    const auto fullEvery =
        std::max<Clock::duration>(10 * opts_.sweepInterval, std::chrono::minutes(10));
    const bool full = reason != "node_sweep" || Clock::now() - lastFullScan_ >= fullEvery;
    if (auto r = full ? scanAllPools(set, reason, found) : scanNodePools(set, reason, found); !r)
        return r.error();
    const std::string what = reason == "catch_up" ? "catch-up: " : "node sweep: ";
    const std::string msg = what + std::to_string(live.size()) + " pods on node " + opts_.node +
                            ", " + std::to_string(found.size()) + " with allocations and no pod" +
                            (full ? "" : " (pools known to hold this node's entries)");
    if (reason == "catch_up" || !found.empty())
        logging::logInfo(msg);
    else
        logging::logDebug(msg);
    std::vector<ReleaseWork> batch;
    for (auto& [k, w] : found) batch.push_back(std::move(w));
    std::vector<ReleaseItem> items;
    if (!batch.empty()) releaseBatch(std::move(batch), items);
    if (!items.empty()) finish(items, Clock::now());
    return {};
}

}  // namespace allot::gc
