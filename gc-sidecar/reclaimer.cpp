#include "gc-sidecar/reclaimer.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <span>
#include <thread>

#include "core/naming.h"
#include "log/log.h"
#include "gc-sidecar/nad.h"
#include "gc-sidecar/network_status.h"
#include "node/journal.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

void parallelFor(const std::vector<Cluster*>& clusters, size_t n,
                 const std::function<void(size_t, Cluster&)>& fn) {
    if (n == 0) return;
    const size_t workers = std::min(clusters.size(), n);
    std::atomic<size_t> next{0};
    auto body = [&](Cluster& c) {
        for (size_t i; (i = next.fetch_add(1)) < n;) fn(i, c);
    };
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    for (size_t w = 1; w < workers; ++w) threads.emplace_back([&, w] { body(*clusters[w]); });
    body(*clusters[0]);
    for (auto& t : threads) t.join();
}

namespace {

std::string describe(const Released& r) {
    std::string s = r.ip.str() + " (pool " + r.ns + "/" + r.pool;
    if (!r.owner.network.empty()) s += ", network " + r.owner.network;
    if (!r.owner.ifName.empty()) s += ", interface " + r.owner.ifName;
    return s + ")";
}

}  // namespace

// Per-batch state of one Work.
struct Reclaimer::Item {
    Work w;
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
    std::vector<Released> released;
    std::vector<core::IpAddress> kept;  // its sandbox may still run: not freed here
    std::string keptWhy;
};

Reclaimer::Reclaimer(ReclaimerOptions opts, std::vector<Cluster*> clusters, EventSink& events,
                     Metrics& metrics, StopSignal& stop)
    : opts_(std::move(opts)),
      clusters_(std::move(clusters)),
      events_(events),
      metrics_(metrics),
      stop_(stop) {
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
        logging::logDebug("pod " + pod.ns + "/" + pod.name + " ran on the host network: nothing to release");
        return;
    }
    if (!pod.mirrorOf.empty()) {
        // The static pod runs on until its manifest goes; the kubelet's DEL frees it then.
        logging::logDebug("mirror pod " + pod.ns + "/" + pod.name + " deleted: its static pod keeps its addresses");
        return;
    }
    {
        std::lock_guard l(m_);
        Work w;
        w.pod = std::move(pod);
        w.reason = "pod_deleted";
        w.due = Clock::now();
        queue_.push_back(std::move(w));
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
    }
    while (!stop_.stopped()) {
        {
            std::unique_lock l(m_);
            auto wake = opts_.journalDir.empty() ? Clock::time_point::max() : nextJournal_;
            for (const auto& w : queue_) wake = std::min(wake, w.due);
            if (catchUpRequest_) wake = std::min(wake, catchUpAt_);
            cv_.wait_until(l, wake, [&] {
                if (stopping_) return true;
                const auto now = Clock::now();
                if (catchUpRequest_ && now >= catchUpAt_) return true;
                if (!opts_.journalDir.empty() && now >= nextJournal_) return true;
                return std::any_of(queue_.begin(), queue_.end(),
                                   [&](const Work& w) { return w.due <= now; });
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
        auto r = doCatchUp(*catchUpReq);
        std::lock_guard l(m_);
        if (r) {
            if (!caughtUp_) {
                metrics_.setReady();
                logging::logInfo("ready: first sync and catch-up complete");
            }
            caughtUp_ = true;
        } else {
            catchUpBackoff_ = std::clamp(catchUpBackoff_ * 2, opts_.retryBase, opts_.retryMax);
            catchUpAt_ = Clock::now() + catchUpBackoff_;
            logging::logWarn("catch-up scan failed (retrying in " + std::to_string(catchUpBackoff_.count()) +
                    "ms): " + r.error().message);
            if (!catchUpRequest_) catchUpRequest_ = std::move(catchUpReq);
        }
    }
    std::vector<Item> items;
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
    if (journalDue) replayJournal();
}

std::vector<Reclaimer::Work> Reclaimer::takeDue(Clock::time_point now) {
    std::lock_guard l(m_);
    auto firstDue = std::stable_partition(queue_.begin(), queue_.end(),
                                          [&](const Work& w) { return w.due > now; });
    const size_t due = static_cast<size_t>(queue_.end() - firstDue);
    const size_t take = std::min(due, opts_.maxBatch);
    std::vector<Work> batch(
        std::make_move_iterator(queue_.end() - static_cast<std::ptrdiff_t>(take)),
        std::make_move_iterator(queue_.end()));
    queue_.resize(queue_.size() - take);
    return batch;
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
        if (poolNamespaces_.size() < 256) poolNamespaces_.insert(ns2);
        for (const auto& r : cfg.ranges) {
            if (!cfg.sliceSize) {
                out.push_back(
                    {ns2, core::poolName(r.cidr(), cfg.raw.networkName, ""), cfg.raw.networkName});
                continue;
            }
            const std::string sliceName =
                cfg.raw.networkName.empty() ? n.networkName : cfg.raw.networkName;
            auto slice = c.nodeSlice(ns2, sliceName, opts_.node);
            if (!slice) {
                if (slice.code() == Errc::NotFound)
                    continue;  // no slice here: nothing was allocated
                return slice.error();
            }
            auto sc = core::Cidr::parse(*slice);
            if (!sc) continue;
            out.push_back(
                {ns2, core::poolName(*sc, cfg.raw.networkName, opts_.node), cfg.raw.networkName});
        }
    }
    return out;
}

void Reclaimer::resolveTargets(Item& it, Cluster& c) {
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

// Pods whose network-status names networks that cannot be resolved: one scan of every pool
// namespace known to allot-gc finds the pools holding their entries on this node.
void Reclaimer::scanEveryPool(Cluster& main, std::span<Item> items, const std::vector<size_t>& scanners,
                              const std::function<void(const std::string&, const std::string&, size_t)>& found) {
    std::vector<size_t> everywhere;
    for (size_t i : scanners)
        if (items[i].scanEveryPool) everywhere.push_back(i);
    if (everywhere.empty()) return;
    std::set<std::string> namespaces = poolNamespaces_;
    namespaces.insert(opts_.poolNamespace);
    for (const auto& pns : namespaces) {
        auto r = main.eachPool(
            pns,
            [&](store::Pool& p) {
                for (const auto& [off, owner] : p.allocations)
                    for (size_t i : everywhere)
                        if (matchGone(owner, items[i].gone, opts_.node, true) != MatchKind::None)
                            found(pns, p.name, i);
                return true;
            },
            [](const std::string& name, const std::string& why) {
                logging::logWarn("IPPool " + name + " cannot be decoded: " + why);
            });
        if (!r)
            for (size_t i : everywhere) items[i].failure = "list pools: " + r.error().message;
    }
}

void Reclaimer::checkLiveness(std::vector<Item>& all, size_t from) {
    // Many deleted pods of one namespace: one paginated list is far cheaper for the API
    // server than a GET each.
    constexpr size_t kListThreshold = 16;
    std::map<std::string, std::vector<size_t>> byNs;
    for (size_t i = from; i < all.size(); ++i) {
        const Item& it = all[i];
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
            Item& it = all[t.idx[0]];
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
                Item& it = all[i];
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

void Reclaimer::releaseBatch(std::vector<Work> batch, std::vector<Item>& all) {
    const size_t from = all.size();
    for (auto& w : batch) {
        Item it;
        it.w = std::move(w);
        it.gone = GonePod{it.w.pod.ns, it.w.pod.name, it.w.pod.uid, ""};
        all.push_back(std::move(it));
    }
    // This batch's items: a view over the tail of `all`.
    std::span<Item> items(all.data() + from, all.size() - from);
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
        if (it.malformed && !it.w.warned) {
            it.w.warned = true;
            metrics_.addAnomalyFound("malformed_network_status");
            events_.emit({true, "MalformedNetworkStatus",
                          "the k8s.v1.cni.cncf.io/network-status annotation of deleted pod " +
                              it.gone.ref() + " is malformed (" + it.malformedWhy.substr(0, 300) +
                              "): searching this node's allocations by pod instead",
                          podRef(it.gone.ns, it.gone.name, it.gone.uid)});
            logging::logWarn("pod " + it.gone.ref() + ": malformed network-status: " + it.malformedWhy);
        }
    }

    logging::logDebug("batch of " + std::to_string(items.size()) + ": targets resolved at " + ms());
    // 2. Does a pod of that namespace/name exist now? Asked after the pod's deletion was seen,
    //    so a pod found now is a re-creation (or a wrong relist): its addresses stay.
    checkLiveness(all, from);
    logging::logDebug("batch: liveness checked at " + ms());
    // 3. Group the gone pods by pool; one scan of every pool finds the pools of pods whose
    //    networks are unknown. A member matches with scan rules unless the pool is one its
    //    own networks name.
    struct Group {
        std::string networkName;
        std::vector<std::pair<size_t, bool>> members;  // item, scan rules
    };
    std::map<std::pair<std::string, std::string>, Group> groups;
    auto join = [&](const std::string& ns, const std::string& pool, const std::string& net,
                    size_t i, bool scan) {
        Group& g = groups[{ns, pool}];
        if (g.networkName.empty()) g.networkName = net;
        for (const auto& m : g.members)
            if (m.first == i) return;
        g.members.emplace_back(i, scan);
    };
    std::vector<size_t> scanners;
    for (size_t i = 0; i < items.size(); ++i) {
        Item& it = items[i];
        if (it.failure || it.live != Liveness::Gone) continue;
        for (const auto& k : it.pools) join(k.ns, k.pool, k.networkName, i, !it.w.hinted.empty());
        if (it.scanAll) scanners.push_back(i);
    }
    // Pods whose networks are unknown are looked for only in the pools known to hold this
    // node's entries (found by the catch-up scans and by earlier releases): a deletion never
    // lists every pool. An entry made after the last catch-up and never named by a NAD is
    // left to the kubelet's DEL or the repair loop.
    for (size_t i : scanners)
        for (const auto& k : nodePools_) join(k.ns, k.pool, k.networkName, i, true);
    scanEveryPool(main, items, scanners,
                  [&](const std::string& ns, const std::string& pool, size_t i) { join(ns, pool, "", i, true); });

    // The sandbox proof: a pod whose object did not show its sandbox stopped has an address
    // freed only when no network namespace on this node holds it.
    std::optional<std::set<core::IpAddress>> nodeHeld;
    std::string noProof = "its deletion did not show its containers stopped";
    bool needProbe = false;
    for (const auto& [key, g] : groups)
        for (const auto& m : g.members) needProbe = needProbe || !items[m.first].w.pod.sandboxGone;
    if (needProbe) {
        if (!opts_.probe) {
            noProof += ", and no namespace probe runs";
        } else if (auto held = opts_.probe(); held) {
            nodeHeld = std::move(*held);
        } else {
            noProof += ", and the node's namespaces cannot be read (" + held.error().message + ")";
        }
    }

    // 4. One guarded write per pool.
    std::vector<std::pair<std::pair<std::string, std::string>, Group>> work(groups.begin(),
                                                                            groups.end());
    struct PoolOutcome {
        std::vector<std::pair<size_t, Released>> released;
        std::vector<std::pair<size_t, core::IpAddress>> kept;
        std::optional<std::string> error;
    };
    std::vector<PoolOutcome> outcomes(work.size());
    parallelFor(clusters_, work.size(), [&](size_t k, Cluster& c) {
        const auto& [ns, poolName] = work[k].first;
        const Group& group = work[k].second;
        std::map<core::u128, size_t> owners;
        Selector select = [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
            owners.clear();
            outcomes[k].kept.clear();
            std::vector<core::u128> out;
            const auto cidr = core::Cidr::parse(p.range);
            // True when the address may still be in use by the pod's sandbox.
            auto mayRun = [&](size_t i, core::u128 off) {
                if (items[i].w.pod.sandboxGone) return false;
                if (nodeHeld && cidr && nodeHeld->count(cidr->at(off)) == 0) return false;
                if (cidr) outcomes[k].kept.emplace_back(i, cidr->at(off));
                return true;
            };
            std::map<size_t, std::vector<core::u128>> byRef;  // need a fresh look at the pod
            for (const auto& [off, owner] : p.allocations) {
                for (const auto& [i, scan] : group.members) {
                    if (items[i].failure) continue;
                    MatchKind m = matchGone(owner, items[i].gone, opts_.node, scan);
                    if (m != MatchKind::None && mayRun(i, off)) break;
                    if (m == MatchKind::Uid) {
                        out.push_back(off);
                        owners[off] = i;
                        break;
                    }
                    if (m == MatchKind::PodRef) {
                        byRef[i].push_back(off);
                        break;
                    }
                }
            }
            // Entries without a pod UID: the pool was read before this check, so a pod
            // re-created since (whose ADD could have taken the entry over) is seen here.
            for (auto& [i, offs] : byRef) {
                auto pod = c.getPod(items[i].gone.ns, items[i].gone.name);
                if (!pod) return pod.error();
                if (livenessOf(*pod, items[i].gone) != Liveness::Gone) continue;
                for (auto off : offs) {
                    out.push_back(off);
                    owners[off] = i;
                }
            }
            return out;
        };
        auto rel = releaseFromPool(c, ns, poolName, select);
        if (!rel) {
            outcomes[k].error = "IPPool " + ns + "/" + poolName + ": " + rel.error().message;
            return;
        }
        for (auto& r : *rel) {
            if (!group.networkName.empty())
                r.networkNames.insert(r.networkNames.begin(), group.networkName);
            outcomes[k].released.emplace_back(owners[r.offset], std::move(r));
        }
    });
    for (size_t k = 0; k < work.size(); ++k) {
        if (outcomes[k].error)
            for (const auto& m : work[k].second.members)
                if (!items[m.first].failure) items[m.first].failure = outcomes[k].error;
        if (!outcomes[k].released.empty())
            nodePools_.insert(PoolKey{work[k].first.first, work[k].first.second, work[k].second.networkName});
        for (auto& [i, r] : outcomes[k].released) items[i].released.push_back(std::move(r));
        for (auto& [i, ip] : outcomes[k].kept) {
            items[i].kept.push_back(ip);
            items[i].keptWhy = nodeHeld ? "its deletion did not show its containers stopped, and "
                                          "a network namespace on this node still holds it"
                                        : noProof;
        }
    }

    logging::logDebug("batch: " + std::to_string(work.size()) + " pools written at " + ms());
}

void Reclaimer::finish(std::vector<Item>& items, Clock::time_point now) {
    // 5. The overlapping-range reservations of what was released (and of earlier attempts).
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
        Item& it = items[drops[k].first];
        stillPending[drops[k].first].push_back(*drops[k].second);
        if (!it.failure) it.failure = dropErr[k];
    }

    logging::logDebug("batch: " + std::to_string(drops.size()) + " reservations dropped");
    // 6. Report, and retry what failed.
    for (size_t i = 0; i < items.size(); ++i) {
        Item& it = items[i];
        if (!it.released.empty()) {
            metrics_.addReleases(it.w.reason, it.released.size());
            std::string what;
            for (const auto& r : it.released) what += (what.empty() ? "" : ", ") + describe(r);
            const char* why =
                it.w.reason == "catch_up" ? "deleted while allot-gc was not running" : "deleted";
            logging::logInfo("released " + what + " of pod " + it.gone.ref() + " (uid " + it.gone.uid +
                    ", " + why + ")");
            events_.emit({false, "AddressReleased",
                          "released " + what + " of pod " + it.gone.ref() + " (" + why + ")",
                          podRef(it.gone.ns, it.gone.name, it.gone.uid)});
        }
        if (!it.kept.empty()) {
            std::string what;
            for (const auto& ip : it.kept) what += (what.empty() ? "" : ", ") + ip.str();
            const std::string msg = "kept " + what + " of deleted pod " + it.gone.ref() +
                                    ": its sandbox may still run (" + it.keptWhy +
                                    "); the kubelet's DEL or the repair loop frees it";
            logging::logInfo(msg + " (uid " + it.gone.uid + ")");
            events_.emit({false, "AddressKept", msg, podRef(it.gone.ns, it.gone.name, it.gone.uid)});
        }
        if (it.released.empty() && !it.failure && it.live == Liveness::OtherUid) {
            logging::logInfo("pod " + it.gone.ref() + " (uid " + it.gone.uid +
                    ") was re-created under the same name: its addresses are left to the new pod");
        }
        if (it.failure) {
            Work w = std::move(it.w);
            w.pendingReservations = std::move(stillPending[i]);
            retryOrGiveUp(std::move(w), *it.failure, now);
        }
    }
}

void Reclaimer::retryOrGiveUp(Work w, const std::string& error, Clock::time_point now) {
    ++w.attempts;
    if (w.attempts >= opts_.releaseRetries) {
        metrics_.addReleaseFailure();
        logging::logError("giving up releasing the addresses of pod " + w.pod.ns + "/" + w.pod.name +
                 " after " + std::to_string(w.attempts) + " attempts: " + error);
        events_.emit({true, "ReleaseFailed",
                      "could not release the addresses of deleted pod " + w.pod.ns + "/" +
                          w.pod.name + " after " + std::to_string(w.attempts) +
                          " attempts: " + error.substr(0, 400) + " (the repair loop will retry)",
                      podRef(w.pod.ns, w.pod.name, w.pod.uid)});
        return;
    }
    static thread_local std::minstd_rand rng{std::random_device{}()};
    const auto cap = std::min<int64_t>(opts_.retryMax.count(), opts_.retryBase.count()
                                                                   << std::min(w.attempts - 1, 16));
    std::uniform_int_distribution<int64_t> d(cap / 2, std::max<int64_t>(cap, 1));
    w.due = now + std::chrono::milliseconds(d(rng));
    logging::logWarn("releasing the addresses of pod " + w.pod.ns + "/" + w.pod.name + " failed (attempt " +
            std::to_string(w.attempts) + ", retrying): " + error);
    std::lock_guard l(m_);
    queue_.push_back(std::move(w));
}

Result<void> Reclaimer::doCatchUp(const std::vector<PodRecord>& live) {
    std::set<std::string> uids, refs;
    for (const auto& p : live) {
        uids.insert(p.uid);
        refs.insert(p.ns + "/" + p.name);
    }
    // key: uid, or podref when there is none
    std::map<std::string, Work> found;
    std::set<PoolKey> nodePools;
    std::unique_lock<std::mutex> scan;
    if (opts_.scanLock) scan = std::unique_lock(*opts_.scanLock);
    // --namespace, and every pool namespace a NAD's IPAM `namespace` key has named so far.
    std::set<std::string> namespaces = poolNamespaces_;
    namespaces.insert(opts_.poolNamespace);
    Result<void> r;
    for (const auto& pns : namespaces) {
        r = clusters_[0]->eachPool(
            pns,
            [&](store::Pool& p) {
                for (const auto& [off, o] : p.allocations) {
                    if (o.node == opts_.node) nodePools.insert(PoolKey{pns, p.name, ""});
                    if (o.node != opts_.node || o.podRef.empty()) continue;
                    if (o.podUid.empty() ? refs.count(o.podRef) != 0 : uids.count(o.podUid) != 0)
                        continue;
                    const std::string key = o.podUid.empty() ? "ref:" + o.podRef : "uid:" + o.podUid;
                    Work& w = found[key];
                    if (w.reason.empty()) {
                        auto [ns, name] = splitPodRef(o.podRef);
                        w.pod = PodRecord{ns, name, o.podUid, false, {}};
                        w.reason = "catch_up";
                    }
                    w.hinted.insert(PoolKey{pns, p.name, ""});
                }
                return true;
            },
            [](const std::string& name, const std::string& why) {
                logging::logWarn("IPPool " + name + " cannot be decoded: " + why);
            });
        if (!r) break;
    }
    if (scan.owns_lock()) scan.unlock();
    ::malloc_trim(0);
    if (!r) return r.error();
    nodePools_ = std::move(nodePools);
    logging::logInfo("catch-up: " + std::to_string(live.size()) + " pods on node " + opts_.node + ", " +
            std::to_string(found.size()) + " with allocations and no pod");
    std::vector<Work> batch;
    for (auto& [k, w] : found) batch.push_back(std::move(w));
    std::vector<Item> items;
    if (!batch.empty()) releaseBatch(std::move(batch), items);
    if (!items.empty()) finish(items, Clock::now());
    return {};
}

void Reclaimer::replayJournal() {
    node::Journal journal(opts_.journalDir);
    std::vector<std::string> bad;
    auto entries = journal.entries(&bad);
    for (const auto& b : bad)
        if (reportedBadJournal_.insert(b).second) logging::logWarn("journal entry skipped: " + b);
    if (!entries) {
        logging::logWarn("journal " + opts_.journalDir + ": " + entries.error().message);
        return;
    }
    Cluster& c = *clusters_[0];
    for (const auto& e : *entries) {
        if (stop_.stopped()) return;
        const std::string ns = e.poolNamespace.empty() ? opts_.poolNamespace : e.poolNamespace;
        // The container the plugin's DEL was for: only its own records go (core::heldBy), never
        // those a newer sandbox of the same pod took over.
        const core::Owner caller{e.containerId, e.podRef, e.ifName, "", "", ""};
        std::vector<std::string> pools = e.pools;
        std::optional<std::string> failure;
        if (pools.empty()) {
            auto r = c.eachPool(
                ns,
                [&](store::Pool& p) {
                    for (const auto& [off, o] : p.allocations)
                        if (core::heldBy(o, caller)) {
                            pools.push_back(p.name);
                            break;
                        }
                    return true;
                },
                nullptr);
            if (!r) failure = r.error().message;
        }
        std::vector<Released> released;
        for (const auto& pool : pools) {
            if (failure) break;
            auto rel = releaseFromPool(
                c, ns, pool, [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                    std::vector<core::u128> out;
                    for (const auto& [off, o] : p.allocations)
                        if (core::heldBy(o, caller)) out.push_back(off);
                    return out;
                });
            if (!rel) {
                failure = "IPPool " + ns + "/" + pool + ": " + rel.error().message;
                break;
            }
            for (auto& r : *rel) {
                r.networkNames.insert(r.networkNames.begin(), e.networkName);
                released.push_back(std::move(r));
            }
        }
        for (const auto& r : released) {
            if (failure) break;
            auto d = dropReservation(c, r);
            if (!d) failure = "reservation of " + r.ip.str() + ": " + d.error().message;
        }
        // Reservations the plugin named: the pool was released but their deletion did not
        // finish. Delete each only while it is still this container's.
        for (const auto& name : e.reservations) {
            if (failure) break;
            auto r = c.getReservation(ns, name);
            if (!r) {
                if (r.code() != core::Errc::NotFound) failure = "reservation " + name + ": " + r.error().message;
                continue;
            }
            if (!ownsReservation(*r, caller)) continue;
            auto d = c.deleteReservation(ns, name, r->resourceVersion);
            if (!d && d.code() != core::Errc::NotFound && d.code() != core::Errc::Conflict)
                failure = "reservation " + name + ": " + d.error().message;
        }
        if (!released.empty()) {
            metrics_.addReleases("journal", released.size());
            std::string what;
            for (const auto& r : released) what += (what.empty() ? "" : ", ") + describe(r);
            logging::logInfo("journal: released " + what + " of container " + e.containerId + " (" +
                    e.podRef + ")");
            auto [pns, pname] = splitPodRef(e.podRef);
            if (!pns.empty())
                events_.emit(
                    {false, "AddressReleased",
                     "released " + what + " of pod " + e.podRef +
                         " (a DEL the plugin journaled while the API server was unreachable)",
                     podRef(pns, pname, "")});
        }
        if (failure) {
            metrics_.addJournalFailure();
            logging::logWarn("journal entry " + e.file + " not replayed yet: " + *failure);
            continue;
        }
        if (auto rm = journal.remove(e); !rm)
            logging::logWarn("journal entry " + e.file + ": " + rm.error().message);
    }
}

}  // namespace allot::gc
