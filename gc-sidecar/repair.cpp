#include "gc-sidecar/repair.h"

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "core/ip_range.h"
#include "core/naming.h"
#include "log/log.h"
#include "gc-sidecar/match.h"
#include "gc-sidecar/reclaimer.h"
#include "gc-sidecar/release.h"
#include "store/pool_codec.h"

namespace allot::gc {

using core::Errc;

namespace {

struct PodLite {
    std::string uid;
    std::string mirrorOf;  // a mirror pod's config.mirror: its static pod's UID
    bool terminal = false;
    bool nodeLost = false;  // its Node is gone, or NotReady past the grace
};

struct ResLite {
    store::Reservation r;
    std::chrono::system_clock::time_point created;
    bool matched = false;
};

struct Candidate {
    std::string pool;
    core::u128 offset = 0;
    core::Owner owner;
    LeakReason reason = LeakReason::None;
};

struct Missing {
    std::string pool;
    core::IpAddress ip;
    core::Owner owner;
    std::string reservation;  // the name it should have
};

struct Anomaly {
    std::string key, kind;
    std::string pool;  // the IPPool it is about; empty: a reservation
    std::string message;
    std::string reservation = {};  // the reservation it is about, when pool is empty
};

std::string allocKey(const std::string& pool, core::u128 off, const core::Owner& o) {
    return "a\x1f" + pool + "\x1f" + core::u128ToString(off) + "\x1f" + o.containerId + "\x1f" +
           o.ifName + "\x1f" + o.podUid + "\x1f" + o.podRef;
}

std::string whoHolds(const core::Owner& o) {
    std::string s =
        o.podRef.empty() ? "container " + o.containerId.substr(0, 16) : "pod " + o.podRef;
    if (!o.ifName.empty()) s += " " + o.ifName;
    return s;
}

ObjectRef objectFor(const core::Owner& o, const std::string& poolNs, const std::string& pool) {
    auto slash = o.podRef.find('/');
    if (slash != std::string::npos && slash > 0 && slash + 1 < o.podRef.size())
        return podRef(o.podRef.substr(0, slash), o.podRef.substr(slash + 1), o.podUid);
    return poolRef(poolNs, pool);
}

}  // namespace

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

PassReport RepairLoop::pass() {
    std::unique_lock<std::mutex> scan;
    if (opts_.scanLock) scan = std::unique_lock(*opts_.scanLock);
    const auto t0 = Clock::now();
    PassReport rep;
    Cluster& c = *clusters_[0];
    const std::string& ns = opts_.poolNamespace;
    auto fail = [&](const std::string& what, const core::Error& e) {
        rep.ok = false;
        rep.error = what + ": " + e.message;
        return rep;
    };

    // 0. Nodes: a pod whose Node is gone, or NotReady for longer than the grace period, will
    // not be torn down by its kubelet; its addresses are leak candidates.
    std::unordered_map<std::string, NodeInfo> nodes;
    auto nr = c.eachNode([&](const std::string& name, NodeInfo& n) {
        nodes.emplace(name, n);
        return !stop_.stopped();
    });
    if (!nr) return fail("list nodes", nr.error());
    const auto wallStart = std::chrono::system_clock::now();
    // "Gone" is a Node this loop has listed before and no longer finds: a name no Node ever
    // had (a runtime without Node objects, as in the local test harness) proves nothing.
    for (const auto& [name, n] : nodes)
        if (nodesSeen_.size() < 100000) nodesSeen_.insert(name);
    auto nodeLost = [&](const std::string& node) {
        if (node.empty()) return false;
        auto it = nodes.find(node);
        if (it == nodes.end()) return nodesSeen_.count(node) != 0;
        return !it->second.ready && wallStart - it->second.notReadySince >= opts_.leakGrace;
    };

    // 1. Reservations.
    std::vector<ResLite> res;
    std::unordered_map<std::string, size_t> resByName;
    auto rr = c.eachReservation(ns, [&](ReservationInfo& r) {
        resByName.emplace(r.r.name, res.size());
        res.push_back(ResLite{std::move(r.r), r.created, false});
        return !stop_.stopped();
    });
    if (!rr) return fail("list reservations", rr.error());
    rep.reservations = res.size();

    // 2. Pools, one page at a time.
    struct Holder {
        std::string pool;
        core::Owner owner;
    };
    std::map<core::IpAddress, Holder> holders;
    std::unordered_set<std::string> allocContainers, allocPodRefs;
    std::vector<Candidate> candidates;
    std::vector<Missing> missing;
    // Entries to hold against their pods once those are listed: only the namespaces that
    // allocations point to are listed, so a pass costs in allocations, not in pods.
    std::vector<Candidate> entries;
    std::vector<std::pair<Missing, size_t>> unreserved;  // (missing, index in entries)
    std::vector<Anomaly> anomalies;
    std::vector<PoolGauge> gauges;
    auto pl = c.eachPool(
        ns,
        [&](store::Pool& p) {
            ++rep.pools;
            auto cidr = core::Cidr::parse(p.range);
            auto range =
                core::IpRange::fromSpec({p.range, "", "", {}}, "IPPool " + p.name + " spec.range");
            if (!cidr || !range) {
                anomalies.push_back(
                    {"u\x1f" + p.name, "undecodable_pool", p.name,
                     "IPPool " + ns + "/" + p.name + " has an invalid range \"" + p.range + "\""});
                return !stop_.stopped();
            }
            uint64_t inRange = 0;
            bool poolHasReservations = false;
            std::vector<Missing> poolMissing;
            // Another writer's entries allot cannot decode: reported, their reservations kept,
            // their offsets (Owner{} placeholders below) counted as used and otherwise left alone.
            for (const auto& [key, u] : p.undecoded) {
                anomalies.push_back({"e\x1f" + p.name + "\x1f" + key, "undecodable_entry", p.name,
                                     "IPPool " + ns + "/" + p.name + " entry \"" + key.substr(0, 64) +
                                         "\" cannot be decoded (" + u.reason +
                                         "); kept as written, its address is not handed out"});
                if (const json::Value* id = u.value.isObject() ? u.value.find("id") : nullptr; id && id->isString())
                    allocContainers.insert(id->asString());
                if (const json::Value* ref = u.value.isObject() ? u.value.find("podref") : nullptr;
                    ref && ref->isString())
                    allocPodRefs.insert(ref->asString());
            }
            std::vector<size_t> poolMissingIdx;  // its entry's index in `entries`
            for (const auto& [off, o] : p.allocations) {
                ++rep.allocations;
                if (store::isPlaceholder(o)) {
                    if (off <= cidr->hostMask() && range->capacity() > 0 && !range->isNetworkOrBroadcast(cidr->at(off)))
                        ++inRange;
                    continue;
                }
                if (!o.containerId.empty()) allocContainers.insert(o.containerId);
                if (!o.podRef.empty()) allocPodRefs.insert(o.podRef);
                if (off > cidr->hostMask()) {
                    anomalies.push_back({"o\x1f" + p.name + "\x1f" + core::u128ToString(off),
                                         "out_of_range", p.name,
                                         "IPPool " + ns + "/" + p.name + " (" + p.range +
                                             ") has an allocation at offset " +
                                             core::u128ToString(off) +
                                             ", outside its range, held by " + whoHolds(o)});
                    continue;
                }
                if (range->capacity() > 0 && !range->isNetworkOrBroadcast(cidr->at(off))) ++inRange;
                const core::IpAddress ip = cidr->at(off);
                auto [h, fresh] = holders.try_emplace(ip, Holder{p.name, o});
                if (!fresh && h->second.pool != p.name)
                    anomalies.push_back(
                        {"d\x1f" + ip.str() + "\x1f" + h->second.pool + "\x1f" + p.name,
                         "duplicate_ip", p.name,
                         ip.str() + " is held twice: in IPPool " + h->second.pool + " by " +
                             whoHolds(h->second.owner) + " and in IPPool " + p.name + " by " +
                             whoHolds(o)});
                const size_t entryIdx = entries.size();
                if (!o.podRef.empty()) entries.push_back({p.name, off, o, LeakReason::None});
                bool has = false;
                const auto nets = networkNamesFor(p, o);
                for (const auto& net : nets) {
                    auto f = resByName.find(core::reservationName(ip, net));
                    if (f == resByName.end()) continue;
                    if (ownsReservation(res[f->second].r, o)) {
                        res[f->second].matched = true;
                        has = true;
                        break;
                    }
                }
                if (has) {
                    poolHasReservations = true;
                } else {
                    poolMissing.push_back({p.name, ip, o, core::reservationName(ip, nets.front())});
                    poolMissingIdx.push_back(o.podRef.empty() ? SIZE_MAX : entryIdx);
                }
            }
            if (poolHasReservations)
                for (size_t m = 0; m < poolMissing.size(); ++m)
                    unreserved.emplace_back(std::move(poolMissing[m]), poolMissingIdx[m]);
            const uint64_t size =
                static_cast<uint64_t>(std::min<core::u128>(range->capacity(), ~uint64_t(0)));
            gauges.push_back({ns, p.name, size, inRange, size > inRange ? size - inRange : 0});
            return !stop_.stopped();
        },
        [&](const std::string& name, const std::string& why) {
            anomalies.push_back({"u\x1f" + name, "undecodable_pool", name,
                                 "IPPool " + ns + "/" + name + " cannot be decoded: " + why});
        });
    if (!pl) return fail("list pools", pl.error());
    if (stop_.stopped()) return fail("pass", core::makeError(Errc::Transient, "stopped"));

    // 3. The pods those entries name, one namespace at a time, keeping only those named.
    std::unordered_map<std::string, PodLite> pods;
    {
        std::unordered_set<std::string> wanted;
        std::set<std::string> podNamespaces;
        for (const auto& e : entries) {
            wanted.insert(e.owner.podRef);
            podNamespaces.insert(splitPodRef(e.owner.podRef).first);
        }
        for (const auto& pns : podNamespaces) {
            auto pr = c.eachPod(pns, [&](const std::string& ns2, const std::string& name, PodInfo& p) {
                ++rep.pods;
                std::string ref = ns2 + "/" + name;
                if (wanted.count(ref))
                    pods.insert_or_assign(std::move(ref),
                                          PodLite{std::move(p.uid), std::move(p.mirrorOf),
                                                  p.terminal(), nodeLost(p.nodeName)});
                return !stop_.stopped();
            });
            if (!pr) return fail("list pods of " + pns, pr.error());
        }
    }
    for (auto& e : entries) {
        auto pod = pods.find(e.owner.podRef);
        PodInfo info;
        if (pod != pods.end())
            info = PodInfo{pod->second.uid, pod->second.terminal ? "Succeeded" : "Running",
                           pod->second.mirrorOf, "", pod->second.nodeLost};
        e.reason = classifyLeak(e.owner, pod == pods.end() ? nullptr : &info);
        if (e.reason != LeakReason::None) candidates.push_back(e);
    }
    for (auto& [m, idx] : unreserved) {
        if (idx != SIZE_MAX && entries[idx].reason != LeakReason::None) continue;
        anomalies.push_back({"m\x1f" + m.reservation + "\x1f" + m.owner.containerId,
                             "allocation_without_reservation", m.pool,
                             m.ip.str() + " in IPPool " + m.pool + " (" + whoHolds(m.owner) +
                                 ") has no OverlappingRangeIPReservation " + m.reservation});
        missing.push_back(std::move(m));
    }
    std::vector<Candidate>().swap(entries);
    pods.clear();
    holders.clear();

    // Reservations nobody holds (matched neither by name nor by owner).
    std::vector<size_t> orphans;
    for (size_t i = 0; i < res.size(); ++i) {
        const auto& r = res[i];
        if (r.matched) continue;
        if (!r.r.containerId.empty() ? allocContainers.count(r.r.containerId) != 0
                                     : allocPodRefs.count(r.r.podRef) != 0)
            continue;
        orphans.push_back(i);
        anomalies.push_back({"r\x1f" + r.r.name + "\x1f" + r.r.resourceVersion,
                             "reservation_without_allocation", "",
                             "OverlappingRangeIPReservation " + ns + "/" + r.r.name + " (" +
                                 (r.r.podRef.empty() ? "no pod" : "pod " + r.r.podRef) +
                                 ") has no allocation in any IPPool",
                             r.r.name});
    }

    // 4. Report anomalies once each while they last, once confirmed on consecutive passes.
    std::map<std::string, int> nowSeen;
    size_t emitted = 0;
    for (const auto& a : anomalies) {
        ++rep.anomalies[a.kind];
        auto before = anomaliesSeen_.find(a.key);
        const int streak = (before == anomaliesSeen_.end() ? 0 : before->second) + 1;
        nowSeen[a.key] = streak;
        if (streak != std::max(1, opts_.anomalyPasses)) continue;
        metrics_.addAnomalyFound(a.kind);
        logging::logWarn("pool anomaly " + a.kind + ": " + a.message);
        if (emitted++ < opts_.maxAnomalyEventsPerPass)
            events_.emit({true, "PoolAnomaly", a.kind + ": " + a.message,
                          a.pool.empty()
                              ? ObjectRef{"OverlappingRangeIPReservation",
                                          "whereabouts.cni.cncf.io/v1alpha1", ns, a.reservation, ""}
                              : poolRef(ns, a.pool)});
    }
    anomaliesSeen_ = std::move(nowSeen);
    std::map<std::string, uint64_t> gaugeAnomalies = rep.anomalies;
    for (const char* k : {"duplicate_ip", "out_of_range", "reservation_without_allocation",
                          "allocation_without_reservation", "undecodable_pool", "undecodable_entry"})
        gaugeAnomalies.try_emplace(k, 0);
    metrics_.setAnomalies(gaugeAnomalies);
    metrics_.setPools(std::move(gauges));

    // 5. Mark: one sighting per candidate; sweep what is due.
    const auto now = Clock::now();
    const auto wallNow = std::chrono::system_clock::now();
    std::vector<std::string> seen;
    std::unordered_map<std::string, size_t> candByKey, missByKey, orphanByKey;
    for (size_t i = 0; i < candidates.size(); ++i) {
        auto k = allocKey(candidates[i].pool, candidates[i].offset, candidates[i].owner);
        candByKey.emplace(k, i);
        seen.push_back(std::move(k));
    }
    for (size_t i = 0; i < missing.size(); ++i) {
        auto k = "m\x1f" + missing[i].reservation + "\x1f" + missing[i].owner.containerId;
        missByKey.emplace(k, i);
        seen.push_back(std::move(k));
    }
    for (size_t i : orphans) {
        auto k = "r\x1f" + res[i].r.name + "\x1f" + res[i].r.resourceVersion;
        orphanByKey.emplace(k, i);
        seen.push_back(std::move(k));
    }
    auto due = tracker_.applyPass(seen, now);
    rep.leakCandidates = candidates.size();
    metrics_.setLeakCandidates(candidates.size());

    std::map<std::string, std::vector<size_t>> releaseByPool;
    std::vector<size_t> toDelete, toCreate;
    size_t budget = static_cast<size_t>(opts_.batch);
    for (const auto& k : due) {
        if (budget == 0) break;
        if (auto it = candByKey.find(k); it != candByKey.end()) {
            releaseByPool[candidates[it->second].pool].push_back(it->second);
            --budget;
        } else if (auto m = missByKey.find(k); m != missByKey.end()) {
            toCreate.push_back(m->second);
            --budget;
        } else if (auto o = orphanByKey.find(k); o != orphanByKey.end()) {
            // The reservation itself must also be older than the grace period.
            if (wallNow - res[o->second].created >= opts_.leakGrace) {
                toDelete.push_back(o->second);
                --budget;
            }
        }
    }

    // 6. Sweep, re-checking everything on fresh data; stop at once when leadership is lost.
    std::vector<std::pair<std::string, std::vector<size_t>>> poolWork(releaseByPool.begin(),
                                                                      releaseByPool.end());
    std::vector<std::vector<Released>> releasedPerPool(poolWork.size());
    std::vector<std::optional<std::string>> poolErr(poolWork.size());
    {
        parallelFor(clusters_, poolWork.size(), [&](size_t k, Cluster& cl) {
            if (stop_.stopped()) return;
            // Named references, not a structured binding: a lambda may not capture one before
            // C++20 as clang 14 implements it.
            const std::string& pool = poolWork[k].first;
            const std::vector<size_t>& idxs = poolWork[k].second;
            auto rel = releaseFromPool(
                cl, ns, pool, [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                    std::vector<core::u128> out;
                    // Checked on every read before the write it decides (a conflict re-reads):
                    // a leader that lost its Lease mid-pass writes nothing more.
                    if (!leading_) return core::makeError(Errc::Transient, "leadership lost");
                    for (size_t i : idxs) {
                        const Candidate& cand = candidates[i];
                        auto e = p.allocations.find(cand.offset);
                        if (e == p.allocations.end() || !(e->second == cand.owner)) continue;
                        auto podNow =
                            cl.getPod(cand.owner.podRef.substr(0, cand.owner.podRef.find('/')),
                                      cand.owner.podRef.substr(cand.owner.podRef.find('/') + 1));
                        if (!podNow) return podNow.error();
                        if (*podNow) (*podNow)->nodeLost = nodeLost((*podNow)->nodeName);
                        const PodInfo* pi = *podNow ? &**podNow : nullptr;
                        if (classifyLeak(cand.owner, pi) == LeakReason::None) continue;
                        out.push_back(cand.offset);
                    }
                    return out;
                });
            if (!rel) {
                poolErr[k] = rel.error().message;
                return;
            }
            for (auto& r : *rel) {
                if (!leading_) break;
                auto d = dropReservation(cl, r);
                if (!d) logging::logWarn("reservation of released " + r.ip.str() + ": " + d.error().message);
            }
            releasedPerPool[k] = std::move(*rel);
        });
    }
    for (size_t k = 0; k < poolWork.size(); ++k) {
        if (poolErr[k])
            logging::logWarn("repair: IPPool " + ns + "/" + poolWork[k].first + ": " + *poolErr[k]);
        for (size_t i : poolWork[k].second)
            tracker_.forget(allocKey(poolWork[k].first, candidates[i].offset, candidates[i].owner));
        for (const auto& r : releasedPerPool[k]) {
            ++rep.released;
            auto reason = LeakReason::NoPod;
            for (size_t i : poolWork[k].second)
                if (candidates[i].offset == r.offset) reason = candidates[i].reason;
            const std::string why =
                reason == LeakReason::OtherUid   ? "its pod was re-created with another UID"
                : reason == LeakReason::Terminal ? "its pod has terminated"
                : reason == LeakReason::NodeLost
                    ? "its pod's node is gone or NotReady past the grace period"
                    : "its pod no longer exists";
            std::string msg = "released leaked " + r.ip.str() + " (pool " + ns + "/" + r.pool +
                              (r.owner.network.empty() ? "" : ", network " + r.owner.network) +
                              ", " + whoHolds(r.owner) + "): " + why;
            logging::logInfo(msg);
            events_.emit({false, "AddressReleased", msg, objectFor(r.owner, ns, r.pool)});
        }
    }
    if (rep.released) metrics_.addReleases("leak", rep.released);

    for (size_t i : toDelete) {
        if (!leading_) break;
        const auto& r = res[i].r;
        tracker_.forget("r\x1f" + r.name + "\x1f" + r.resourceVersion);
        auto d = c.deleteReservation(ns, r.name, r.resourceVersion);
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
    for (size_t i : toCreate) {
        if (!leading_) break;
        const auto& m = missing[i];
        tracker_.forget("m\x1f" + m.reservation + "\x1f" + m.owner.containerId);
        auto made = c.createReservation(ns, store::Reservation{m.reservation, m.owner.containerId,
                                                               m.owner.podRef, m.owner.ifName, ""});
        if (made) {
            ++rep.reservationsCreated;
            logging::logInfo("re-created OverlappingRangeIPReservation " + ns + "/" + m.reservation +
                    " for " + whoHolds(m.owner));
        } else if (made.code() != Errc::AlreadyExists) {
            logging::logWarn("re-creating reservation " + m.reservation + ": " + made.error().message);
        }
    }

    // The pass's indexes are freed now; hand the pages back rather than keep the peak.
    std::vector<ResLite>().swap(res);
    std::vector<Candidate>().swap(candidates);
    ::malloc_trim(0);

    rep.ok = true;
    rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    metrics_.repairPassDone(rep.seconds);
    logging::logInfo("repair pass: " + std::to_string(rep.pods) + " pods, " + std::to_string(rep.pools) +
            " pools, " + std::to_string(rep.allocations) + " allocations, " +
            std::to_string(rep.reservations) + " reservations; " +
            std::to_string(rep.leakCandidates) + " leak candidates, " +
            std::to_string(rep.released) + " released, " + std::to_string(anomalies.size()) +
            " anomalies (" + std::to_string(static_cast<int>(rep.seconds * 1000)) + "ms)");
    return rep;
}

}  // namespace allot::gc
