// The release of one batch of deleted pods: resolve each pod's pools, check that the pod is
// gone, group by pool, prove sandboxes stopped, write each pool once; then drop the
// reservations of what was released, report, and retry what failed.
#include <span>

#include "gc-sidecar/node/network_status.h"
#include "gc-sidecar/node/reclaimer.h"
#include "log/log.h"

namespace allot::gc {

using core::Result;

using cluster::podRef;

using cluster::PodInfo;

using cluster::Cluster;

using cluster::Released;

void logUndecodable(const std::string& ns, const std::string& name, const std::string& why) {
    logging::logWarn("IPPool " + ns + "/" + name + " cannot be decoded: " + why,
                     {.pool = ns + "/" + name});
}

// Pods whose network-status names networks that cannot be resolved: one scan of every pool
// namespace known to allot-gc finds the pools holding their entries on this node.
std::vector<ScanFind> Reclaimer::scanEveryPool(Cluster& main, std::span<ReleaseItem> items) {
    std::vector<size_t> everywhere;
    for (size_t i = 0; i < items.size(); ++i)
        if (items[i].scanAll && items[i].scanEveryPool && mayFree(items[i]))
            everywhere.push_back(i);
    std::vector<ScanFind> found;
    if (everywhere.empty()) return found;
    for (const auto& pns : poolNamespaces_->all()) {
        auto r = main.pools(pns).eachPool(
            [&](store::Pool& p) {
                for (const auto& [off, owner] : p.allocations)
                    for (size_t i : everywhere)
                        if (matchGone(owner, items[i].gone, opts_.node, true) != MatchKind::None)
                            found.push_back({pns, p.name, i});
                return true;
            },
            [&](const std::string& name, const std::string& why) {
                logUndecodable(pns, name, why);
            });
        if (!r)
            for (size_t i : everywhere) items[i].failure = "list pools: " + r.error().message;
    }
    return found;
}

void Reclaimer::checkLiveness(std::vector<ReleaseItem>& all, size_t from) {
    // Many deleted pods of one namespace: one paginated list is far cheaper for the API
    // server than a GET each.
    constexpr size_t kListThreshold = 16;
    std::map<std::string, std::vector<size_t>> byNs;
    for (size_t i = from; i < all.size(); ++i) {
        const ReleaseItem& it = all[i];
        if (!it.failure && (!it.pools.empty() || it.scanAll || !it.w.pendingReservations.empty()))
            byNs[it.gone.ns].push_back(i);
    }
    struct Task {
        std::string ns;
        std::vector<size_t> idx;  // one GET when a single item
    };
    std::vector<Task> tasks;
    for (auto& [ns, idx] : byNs) {
        if (idx.size() >= kListThreshold) {
            tasks.push_back({ns, std::move(idx)});
        } else {
            for (size_t i : idx) tasks.push_back({ns, {i}});
        }
    }
    parallelFor(clusters_, tasks.size(), [&](size_t k, Cluster& c) {
        Task& t = tasks[k];
        if (t.idx.size() == 1) {
            ReleaseItem& it = all[t.idx[0]];
            auto pod = c.getPod(it.gone.ns, it.gone.name);
            if (!pod)
                it.failure = "get pod " + it.gone.ref() + ": " + pod.error().message;
            else
                it.live = livenessOf(*pod, it.gone);
            return;
        }
        std::map<std::string, std::vector<size_t>> wanted;
        for (size_t i : t.idx) wanted[all[i].gone.name].push_back(i);
        std::map<std::string, PodInfo> found;
        auto r = c.eachPod(t.ns, [&](const std::string&, const std::string& name, PodInfo& p) {
            if (wanted.count(name)) found.insert_or_assign(name, std::move(p));
            return true;
        });
        for (auto& [name, idx] : wanted) {
            for (size_t i : idx) {
                ReleaseItem& it = all[i];
                if (!r) {
                    it.failure = "list pods of " + t.ns + ": " + r.error().message;
                    continue;
                }
                auto f = found.find(name);
                it.live = livenessOf(
                    f == found.end() ? std::optional<PodInfo>() : std::optional<PodInfo>(f->second),
                    it.gone);
            }
        }
    });
}

void Reclaimer::releaseBatch(std::vector<ReleaseWork> batch, std::vector<ReleaseItem>& all) {
    const size_t from = all.size();
    for (auto& w : batch) {
        ReleaseItem it;
        it.w = std::move(w);
        it.gone = GonePod{it.w.pod.ns, it.w.pod.name, it.w.pod.uid, ""};
        all.push_back(std::move(it));
    }
    // This batch's items: a view over the tail of `all`.
    std::span<ReleaseItem> items(all.data() + from, all.size() - from);
    Cluster& main = *clusters_[0];
    const auto t0 = Clock::now();
    auto ms = [&] {
        return std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0)
                       .count()) +
               "ms";
    };

    // 1. Which pools each pod's networks use.
    for (auto& it : items) {
        resolveTargets(it, main);
        reportMalformed(it);
    }
    logging::logDebug("batch of " + std::to_string(items.size()) + ": targets resolved at " + ms());
    // 2. Does a pod of that namespace/name exist now? Asked after the pod's deletion was seen,
    //    so a pod found now is a re-creation (or a wrong relist): its addresses stay.
    checkLiveness(all, from);
    logging::logDebug("batch: liveness checked at " + ms());
    // 3. Group the gone pods by pool, and read which addresses sandboxes may still hold.
    auto scanned = scanEveryPool(main, items);
    const PoolGroups groups = groupByPool(items, nodePools_, scanned);
    const SandboxProof proof(opts_.probe, runtimeAnswer(), addCheck());
    // 4. One guarded write per pool.
    const size_t written = writePools(items, groups, proof);
    logging::logDebug("batch: " + std::to_string(written) + " pools written at " + ms());
}

void Reclaimer::reportMalformed(ReleaseItem& it) {
    if (!it.malformed || it.w.warned) return;
    it.w.warned = true;
    metrics_.addAnomalyFound("malformed_network_status");
    events_.emit({true, "MalformedNetworkStatus",
                  "the k8s.v1.cni.cncf.io/network-status annotation of deleted pod " +
                      it.gone.ref() + " is malformed (" + it.malformedWhy.substr(0, 300) +
                      "): searching this node's allocations by pod instead",
                  podRef(it.gone.ns, it.gone.name, it.gone.uid)});
    logging::logWarn("pod " + it.gone.ref() + ": malformed network-status: " + it.malformedWhy,
                     {.pod = it.gone.ref()});
}

// The runtime's word on a sandbox (null: no runtime configured, the namespace probe alone).
SandboxProof::Runtime Reclaimer::runtimeAnswer() {
    if (!opts_.runtime) return {};
    return [this](const std::string& id) {
        std::string detail;
        const core::RuntimeAnswer a = opts_.runtime->sandboxState(id, &detail);
        metrics_.addRuntimeAnswer(std::string(core::name(a)));
        if (a == core::RuntimeAnswer::Unknown)
            logging::logWarn("the container runtime could not say whether sandbox " + id +
                                 " exists (" + detail + "): its address is kept",
                             {.container = id});
        return a;
    };
}

// Whether an ADD for an entry may still run on this node (core::addInFlight). Null without
// marks (tests).
SandboxProof::AddCheck Reclaimer::addCheck() {
    if (!opts_.addMarks) return {};
    return [this](const core::Owner& o) {
        const auto now = std::chrono::system_clock::now();
        core::AddEvidence ev;
        ev.marksKnown = !o.node.empty();  // allot's plugin records its node, and marks ADDs
        auto age = opts_.addMarks->age(o.containerId, now);
        if (!age) {
            logging::logWarn("ADD marks: " + age.error().message, {.container = o.containerId});
            return core::AddInFlight::Unknown;
        }
        if (*age) {
            ev.marked = true;
            ev.markAge = **age;
        }
        ev.knownFor = knownFor(o.containerId);
        return core::addInFlight(ev, opts_.addInFlightBound);
    };
}

// How long this allot-gc has known `containerId`'s entry as one to release.
std::chrono::milliseconds Reclaimer::knownFor(const std::string& containerId) {
    std::lock_guard l(knownM_);
    const auto now = Clock::now();
    if (known_.size() > 100000)
        std::erase_if(known_,
                      [&](const auto& k) { return now - k.second > 2 * opts_.addInFlightBound; });
    auto [it, fresh] = known_.try_emplace(containerId, now);
    (void)fresh;
    return std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second);
}

// Pools in parallel; then each item learns what its pools' writes did. Returns how many
// pools were written.
size_t Reclaimer::writePools(std::span<ReleaseItem> items, const PoolGroups& groups,
                             const SandboxProof& proof) {
    const std::vector<std::pair<std::pair<std::string, std::string>, PoolGroup>> work(
        groups.begin(), groups.end());
    std::vector<PoolOutcome> outcomes(work.size());
    parallelFor(clusters_, work.size(), [&](size_t k, Cluster& c) {
        const auto& [ns, pool] = work[k].first;
        outcomes[k] = releaseGroup(c, ns, pool, work[k].second, items, proof);
    });
    for (size_t k = 0; k < work.size(); ++k) {
        if (outcomes[k].error)
            for (const auto& m : work[k].second.members)
                if (!items[m.first].failure) items[m.first].failure = outcomes[k].error;
        // A pool where something of this node's was released or kept holds this node's entries:
        // the node sweep looks there again.
        if (!outcomes[k].released.empty() || !outcomes[k].kept.empty())
            nodePools_.insert(
                PoolKey{work[k].first.first, work[k].first.second, work[k].second.networkName});
        for (auto& [i, r] : outcomes[k].released) items[i].released.push_back(std::move(r));
        for (auto& kept : outcomes[k].kept) {
            items[kept.item].kept.emplace_back(kept.ip, std::move(kept.why));
            items[kept.item].waitsForAdd |= kept.addInFlight;
        }
    }
    return work.size();
}

// Apply: the guarded write of one pool (release.h re-reads and re-selects on a conflict).
Reclaimer::PoolOutcome Reclaimer::releaseGroup(Cluster& c, const std::string& ns,
                                               const std::string& poolName, const PoolGroup& group,
                                               std::span<const ReleaseItem> items,
                                               const SandboxProof& proof) {
    PoolOutcome out;
    PoolPlan plan;
    auto rel = releaseFromPool(c, ns, poolName,
                               [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                                   plan = planPool(p, group, items, proof, opts_.node);
                                   auto looked = lookAgain(c, plan, items);
                                   if (!looked) return looked.error();
                                   settle(plan, *looked);
                                   return plan.release;
                               });
    out.kept = plan.kept;
    if (!rel) {
        out.error = "IPPool " + ns + "/" + poolName + ": " + rel.error().message;
        return out;
    }
    for (auto& r : *rel) {
        if (!group.networkName.empty())
            r.networkNames.insert(r.networkNames.begin(), group.networkName);
        out.released.emplace_back(plan.owners[r.offset], std::move(r));
    }
    return out;
}

// Entries without a pod UID: the pool was read before this look, so a pod re-created since
// (whose ADD could have taken the entry over) is seen here.
Result<std::map<size_t, Liveness>> Reclaimer::lookAgain(Cluster& c, const PoolPlan& plan,
                                                        std::span<const ReleaseItem> items) {
    std::map<size_t, Liveness> looked;
    for (const auto& [i, offs] : plan.lookAgain) {
        auto pod = c.getPod(items[i].gone.ns, items[i].gone.name);
        if (!pod) return pod.error();
        looked[i] = livenessOf(*pod, items[i].gone);
    }
    return looked;
}

void Reclaimer::finish(std::vector<ReleaseItem>& items, Clock::time_point now) {
    // 5. The overlapping-range reservations of what was released (and of earlier attempts).
    auto stillPending = dropReservations(items);
    // 6. Report, and retry what failed.
    for (size_t i = 0; i < items.size(); ++i) {
        ReleaseItem& it = items[i];
        reportItem(it);
        if (it.failure) {
            ReleaseWork w = std::move(it.w);
            w.pendingReservations = std::move(stillPending[i]);
            retryOrGiveUp(std::move(w), *it.failure, now);
        } else if (it.waitsForAdd) {
            // Kept only while an ADD may run: decided again once it no longer can.
            ReleaseWork w = std::move(it.w);
            w.pendingReservations = std::move(stillPending[i]);
            w.due = now + opts_.addInFlightBound + std::chrono::seconds(1);
            std::lock_guard l(m_);
            queue_.push(std::move(w));
        }
    }
}

// Apply: the reservations, in parallel. Returns, per item, those still to delete.
std::vector<std::vector<Released>> Reclaimer::dropReservations(std::vector<ReleaseItem>& items) {
    std::vector<std::pair<size_t, const Released*>> drops;
    for (size_t i = 0; i < items.size(); ++i) {
        for (const auto& r : items[i].released) drops.emplace_back(i, &r);
        for (const auto& r : items[i].w.pendingReservations) drops.emplace_back(i, &r);
    }
    std::vector<std::optional<std::string>> dropErr(drops.size());
    parallelFor(clusters_, drops.size(), [&](size_t k, Cluster& c) {
        auto d = dropReservation(c, *drops[k].second);
        if (!d)
            dropErr[k] = "reservation of " + drops[k].second->ip.str() + ": " + d.error().message;
    });
    std::vector<std::vector<Released>> stillPending(items.size());
    for (size_t k = 0; k < drops.size(); ++k) {
        if (!dropErr[k]) continue;
        ReleaseItem& it = items[drops[k].first];
        stillPending[drops[k].first].push_back(*drops[k].second);
        if (!it.failure) it.failure = dropErr[k];
    }
    logging::logDebug("batch: " + std::to_string(drops.size()) + " reservations dropped");
    return stillPending;
}

void Reclaimer::reportItem(const ReleaseItem& it) {
    if (!it.released.empty()) {
        metrics_.addReleases(it.w.reason, it.released.size());
        std::string what;
        for (const auto& r : it.released) what += (what.empty() ? "" : ", ") + describe(r);
        const char* why = it.w.reason == "catch_up"     ? "deleted while allot-gc was not running"
                          : it.w.reason == "node_sweep" ? "gone, found by the node sweep"
                                                        : "deleted";
        // One line per address, each with its pool and ip as fields.
        for (const auto& r : it.released)
            logging::logInfo("released " + describe(r) + " of pod " + it.gone.ref() + " (uid " +
                                 it.gone.uid + ", " + why + ")",
                             logFields(r));
        events_.emit({false, "AddressReleased",
                      "released " + what + " of pod " + it.gone.ref() + " (" + why + ")",
                      podRef(it.gone.ns, it.gone.name, it.gone.uid)});
    }
    std::string what;
    for (const auto& [ip, why] : it.kept)
        if (keptReported_.insert(it.gone.uid + " " + ip.str()).second)
            what += (what.empty() ? "" : ", ") + ip.str() + " (" + why + ")";
    if (keptReported_.size() > 100000) keptReported_.clear();  // reported again, at worst
    if (!what.empty()) {
        const std::string msg = "kept " + what + " of deleted pod " + it.gone.ref() +
                                ": its sandbox may still run; the runtime's DEL, or the node "
                                "sweep once its node proves the sandbox gone, frees it";
        logging::logInfo(msg + " (uid " + it.gone.uid + ")", {.pod = it.gone.ref()});
        events_.emit({false, "AddressKept", msg, podRef(it.gone.ns, it.gone.name, it.gone.uid)});
    }
    if (it.released.empty() && !it.failure && it.live == Liveness::OtherUid) {
        logging::logInfo(
            "pod " + it.gone.ref() + " (uid " + it.gone.uid +
                ") was re-created under the same name: its addresses are left to the new pod",
            {.pod = it.gone.ref()});
    }
}

}  // namespace allot::gc
