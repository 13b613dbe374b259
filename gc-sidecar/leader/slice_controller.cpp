#include "gc-sidecar/leader/slice_controller.h"

#include <algorithm>

#include "cluster/nad.h"
#include "core/naming.h"
#include "core/pool_targets.h"
#include "k8s_api/resources.h"
#include "log/log.h"

namespace allot::gc {

using cluster::parseNadConfig;

using cluster::ObjectRef;

using core::Errc;

namespace {

constexpr const char* kNadKind = "NetworkAttachmentDefinition";
constexpr const char* kNadApiVersion = "k8s.cni.cncf.io/v1";

bool sameSpec(const store::NodeSlicePool& cur, const SliceDesired& d) {
    auto r = core::Cidr::parse(cur.range);
    auto len = core::parseSliceSize(cur.sliceSize);
    return r && len && *r == d.range && *len == d.length;
}

bool changed(const store::NodeSlicePool& a, const store::NodeSlicePool& b) {
    return a.range != b.range || a.sliceSize != b.sliceSize || a.allocations != b.allocations ||
           a.owners != b.owners || a.managed != b.managed || a.partsRefused != b.partsRefused;
}

// node -> its first slice: what a plugin on that node reads.
std::map<std::string, std::string> slicesByNode(const std::vector<core::SliceAllocation>& as) {
    std::map<std::string, std::string> out;
    for (const auto& a : as)
        if (!a.nodeName.empty()) out.emplace(a.nodeName, a.sliceRange);
    return out;
}

void logAssignments(const std::string& key, const std::vector<core::SliceAllocation>& before,
                    const std::vector<core::SliceAllocation>& after) {
    const auto was = slicesByNode(before), now = slicesByNode(after);
    for (const auto& [node, slice] : now) {
        auto it = was.find(node);
        if (it == was.end() || it->second != slice)
            logging::logInfo("NodeSlicePool " + key + ": node " + node + " gets slice " + slice,
                             {.pool = key});
    }
    for (const auto& [node, slice] : was)
        if (!now.count(node))
            logging::logInfo("NodeSlicePool " + key + ": slice " + slice + " of node " + node +
                                 " released (the node is gone and its pool is empty)",
                             {.pool = key});
}

}  // namespace

std::vector<store::OwnerRef> ownersFor(const std::vector<store::OwnerRef>& current,
                                       const std::vector<NadObject>& nads, const std::string& ns) {
    auto isNad = [&](const store::OwnerRef& r, const NadObject& n) {
        return r.kind == kNadKind && (r.uid.empty() ? r.name == n.name : r.uid == n.uid);
    };
    std::vector<store::OwnerRef> out;
    for (const auto& r : current) {
        const bool wanted = std::any_of(nads.begin(), nads.end(), [&](const NadObject& n) {
            return n.ns == ns && isNad(r, n);
        });
        if (r.kind != kNadKind || wanted) out.push_back(r);
    }
    bool hasController =
        std::any_of(out.begin(), out.end(), [](const store::OwnerRef& r) { return r.controller; });
    for (const auto& n : nads) {
        if (n.ns != ns) continue;  // another namespace's owner would be taken for absent
        if (std::any_of(out.begin(), out.end(),
                        [&](const store::OwnerRef& r) { return isNad(r, n); }))
            continue;
        out.push_back({kNadApiVersion, kNadKind, n.name, n.uid, !hasController, !hasController});
        hasController = true;
    }
    return out;
}

SliceController::SliceController(SliceOptions opts, SliceCluster& cluster, EventSink& events,
                                 Metrics& metrics, StopSignal& stop)
    : opts_(std::move(opts)),
      cluster_(cluster),
      events_(events),
      metrics_(metrics),
      stop_(stop),
      loop_(stop) {}

void SliceController::run() {
    loop_.setMinGap(opts_.interval);
    loop_.run(
        [this] {
            exhaustedSeen_.clear();  // a new term reports again
            pendingLifts_.clear();   // and seals nothing of another leader's back
        },
        [this]() -> Clock::duration {
            auto rep = pass();
            // Said once per distinct failure: a cluster without the NAD CRD would say it
            // every pass.
            if (!rep.ok && rep.error != lastError_)
                logging::logWarn("node-slice pass failed: " + rep.error);
            lastError_ = rep.ok ? std::string() : rep.error;
            // A lost race is settled on a fresh read soon, not a whole interval later.
            if (rep.conflicts > 0)
                return std::min<Clock::duration>(opts_.interval, std::chrono::milliseconds(200));
            // A failed pass (a write refused, a read failed) is tried again soon.
            return rep.ok ? std::max(opts_.interval, opts_.resync) : opts_.interval;
        });
}

bool SliceController::warnOnce(const std::string& key, const std::string& message) {
    if (warned_.size() > 1000) warned_.clear();
    if (!warned_.insert(key).second) return false;
    logging::logWarn(message);
    return true;
}

// node_slice_parts > 1 only where every NAD of the network asks for the same count and keeps
// the reservations (core::refuseSliceParts). Otherwise the NodeSlicePool says so (the plugin's
// ADD with parts then fails, naming the NADs; DEL and the rest go on over every part), and a
// Warning Event on it and on each offending NAD says so, once.
void SliceController::refuseParts(SliceDesired& d) {
    auto r = core::refuseSliceParts(d.asks);
    if (!r) return;
    d.refused = r->message;
    const std::string msg = "NodeSlicePool " + d.ns + "/" + d.name + ": " + r->message +
                            "; until then ADDs asking for node_slice_parts fail";
    if (!warnOnce(d.ns + "/" + d.name + " refused " + r->message, msg)) return;
    events_.emit(
        {true, kPartsRefusedReason, msg,
         ObjectRef{"NodeSlicePool", k8s::apiVersion(k8s::kNodeSlicePool), d.ns, d.name, ""}});
    constexpr size_t kMaxNadEvents = 8;  // the NADs are a user's list
    for (size_t i = 0; i < r->offenders.size() && i < kMaxNadEvents; ++i) {
        const NadObject& n = d.nads[r->offenders[i]];
        events_.emit({true, kPartsRefusedReason, msg,
                      ObjectRef{kNadKind, kNadApiVersion, n.ns, n.name, n.uid}});
    }
}

bool SliceController::addWanted(Wanted& w, const NadObject& nad) {
    const std::string where = "NetworkAttachmentDefinition " + nad.ns + "/" + nad.name;
    auto nets = parseNadConfig(nad.config, opts_.ipamTypes, opts_.flatFiles);
    if (!nets) {
        warnOnce(where + " " + nets.error().message,
                 where + ": " + nets.error().message + " (its node slices are left as they are)");
        return true;  // it may want some: nothing of it is deleted
    }
    bool wants = false;
    for (const auto& n : *nets) {
        const auto& cfg = n.config;
        if (!cfg.sliceSize || cfg.ranges.empty()) continue;
        auto sources = core::sliceSources(cfg, n.networkName);
        if (!sources) {
            warnOnce(where + " noname", where + ": " + sources.error().message);
            continue;
        }
        const std::string ns =
            cfg.raw.poolNamespace.empty() ? opts_.poolNamespace : cfg.raw.poolNamespace;
        wants = true;
        for (const auto& [i, sliceName] : *sources) {
            const core::Cidr& r = cfg.ranges[i].cidr();
            auto len = i == 0 ? core::Result<int>(*cfg.sliceSize)
                              : core::sliceLengthFor(cfg.ranges[0].cidr(), *cfg.sliceSize, r);
            if (!len) continue;  // validate() refused this already
            SliceDesired d{ns,
                           sliceName,
                           r,
                           *len,
                           i == 0 ? cfg.raw.nodeSliceSize : "/" + std::to_string(*len),
                           cfg.raw.networkName,
                           {},
                           cfg.sliceParts};
            auto [it, fresh] = w.pools.emplace(Key{ns, d.name}, d);
            if (!fresh && (it->second.range != d.range || it->second.length != d.length)) {
                warnOnce(where + " conflict " + d.name,
                         where + " wants NodeSlicePool " + ns + "/" + d.name + " as " + r.str() +
                             " in /" + std::to_string(*len) + " slices, another NAD as " +
                             it->second.range.str() + " in /" + std::to_string(it->second.length) +
                             ": the first (by namespace/name) wins");
                continue;
            }
            it->second.nads.push_back({nad.ns, nad.name, nad.uid, ""});
            it->second.asks.push_back({nad.ns + "/" + nad.name, cfg.raw.type, cfg.sliceParts,
                                       cfg.raw.enableOverlappingRanges});
            it->second.parts = std::max(it->second.parts, cfg.sliceParts);
        }
    }
    return wants;
}

SliceController::Wanted SliceController::wanted(const std::vector<NadObject>& nads) {
    std::vector<const NadObject*> sorted;
    for (const auto& n : nads) sorted.push_back(&n);
    std::sort(sorted.begin(), sorted.end(), [](const NadObject* a, const NadObject* b) {
        return std::tie(a->ns, a->name) < std::tie(b->ns, b->name);
    });
    Wanted w;
    for (const NadObject* n : sorted) {
        if (n->config.empty()) continue;  // Multus reads it from a file: not ours to see
        if (addWanted(w, *n)) w.keepUids.insert(n->uid);
    }
    for (auto& [key, d] : w.pools) refuseParts(d);
    return w;
}

SliceReport SliceController::pass() {
    SliceReport rep;
    if (leading()) liftPending();
    auto nads = cluster_.nads();
    if (!nads) return rep.error = "NetworkAttachmentDefinitions: " + nads.error().message, rep;
    auto nodes = cluster_.nodes();
    if (!nodes) return rep.error = "Nodes: " + nodes.error().message, rep;
    auto existing = cluster_.slicePools();
    if (!existing) return rep.error = "NodeSlicePools: " + existing.error().message, rep;
    Wanted w = wanted(*nads);
    std::map<Key, const store::NodeSlicePool*> byKey;
    for (const auto& p : *existing) byKey[{p.ns, p.name}] = &p;
    std::vector<SliceGauge> gauges;
    for (const auto& [key, d] : w.pools) {
        if (stop_.stopped() || !leading()) return rep.error = "no longer leading", rep;
        auto it = byKey.find(key);
        reconcile(d, it == byKey.end() ? nullptr : it->second, *nodes, rep, gauges);
    }
    if (!leading()) return rep.error = "no longer leading", rep;
    deleteUnwanted(*existing, w, rep);
    metrics_.setNodeSlices(std::move(gauges));
    rep.pools = w.pools.size();
    rep.ok = true;
    return rep;
}

// Parts 1..parts-1 of a node's slice pool: whether one holds an address (an error: yes).
bool SliceController::anyPartHolds(const std::string& ns, const std::string& pool, int parts) {
    for (int k = 1; k < parts; ++k) {
        auto holds = cluster_.slicePoolHolds(ns, core::slicePartPoolName(pool, k));
        if (!holds || *holds) return true;
    }
    return false;
}

bool SliceController::sealParts(const SliceDesired& d, const std::string& pool,
                                const core::Cidr& slice, const std::string& token) {
    std::vector<std::string> sealed;
    for (int k = 0; k < d.parts; ++k) {
        const std::string part = core::slicePartPoolName(pool, k);
        // While the network refuses parts, no part is created (sealed) that is not there yet.
        auto r = cluster_.sealSlicePool(d.ns, part, slice, token, k == 0 || d.refused.empty());
        if (r && *r) {
            sealed.push_back(part);
            pendingLifts_.erase({d.ns, part});
            continue;
        }
        if (!r)
            logging::logWarn("NodeSlicePool " + d.ns + "/" + d.name + ": IPPool " + part +
                                 " not sealed (" + r.error().message +
                                 "): its slice stays assigned",
                             {.pool = d.ns + "/" + part, .network = d.networkName});
        // An ADD landed in this part since anyPartHolds looked (or the seal failed): the slice
        // stays, so none of its parts may stay sealed (a seal holding the NodeSlicePool's
        // resourceVersion refuses the node's claims until that object is written again).
        for (const auto& p : sealed) {
            if (auto u = cluster_.unsealSlicePool(d.ns, p, token); !u) {
                logging::logWarn("IPPool " + d.ns + "/" + p + ": seal not taken back (" +
                                     u.error().message + "), trying again next pass",
                                 {.pool = d.ns + "/" + p, .network = d.networkName});
                pendingLifts_[{d.ns, p}] = token;
            }
        }
        return false;
    }
    return true;
}

void SliceController::liftPending() {
    for (auto it = pendingLifts_.begin(); it != pendingLifts_.end();) {
        const auto& [key, token] = *it;
        it = cluster_.unsealSlicePool(key.first, key.second, token) ? pendingLifts_.erase(it)
                                                                    : std::next(it);
    }
}

void SliceController::reconcile(const SliceDesired& d, const store::NodeSlicePool* cur,
                                const std::vector<std::string>& nodes, SliceReport& rep,
                                std::vector<SliceGauge>& gauges) {
    const std::string key = d.ns + "/" + d.name;
    core::SliceInput in{d.range, d.length,
                        cur ? cur->allocations : std::vector<core::SliceAllocation>{}, nodes};
    auto busy = [&](const core::SliceAllocation& a) {
        auto c = core::Cidr::parse(a.sliceRange);
        if (!c) return false;
        const std::string pool = core::poolName(*c, d.networkName, a.nodeName);
        // The token: the NodeSlicePool as read now, which the write that frees the slice is
        // guarded by (the plugin's side: engine::TxTarget::unseal). With parts, none is sealed
        // while any part holds an address (a part left sealed under a slice that stays would
        // refuse the node's ADDs until the NodeSlicePool is written again); every part up to
        // the most a config may name is looked at, in case a NAD asked for fewer parts since.
        if (anyPartHolds(d.ns, pool, d.parts > 1 ? core::kMaxSliceParts : 1)) return true;
        return !sealParts(d, pool, *c, cur ? cur->resourceVersion : "new");
    };
    auto plan = core::planSlices(in, busy);
    if (!plan) {
        const std::string msg = "NodeSlicePool " + key + " not written: " + plan.error().message;
        if (warnOnce(key + " " + plan.error().message, msg) && !d.nads.empty())
            events_.emit(
                {true, "NodeSlicesInvalid", msg,
                 ObjectRef{kNadKind, kNadApiVersion, d.nads[0].ns, d.nads[0].name, d.nads[0].uid}});
        return;
    }
    store::NodeSlicePool next = cur ? *cur : store::NodeSlicePool{};
    next.ns = d.ns;
    next.name = d.name;
    if (!cur || !sameSpec(*cur, d)) {
        next.range = d.range.str();
        next.sliceSize = d.sliceSize;
    }
    next.allocations = plan->allocations;
    next.owners = ownersFor(cur ? cur->owners : std::vector<store::OwnerRef>{}, d.nads, d.ns);
    next.managed = true;
    next.partsRefused = d.refused;
    if (cur && !cur->partsRefused.empty() && d.refused.empty())
        logging::logInfo("NodeSlicePool " + key + ": node_slice_parts honoured again",
                         {.pool = key, .network = d.networkName});
    if (!cur || changed(*cur, next)) {
        logAssignments(key, cur ? cur->allocations : std::vector<core::SliceAllocation>{},
                       next.allocations);
        write(next, cur != nullptr, rep);
    }
    gauges.push_back({d.ns, d.name, plan->total, plan->free, plan->unassigned.size()});
    rep.nodesWithout += plan->unassigned.size();
    reportExhausted(d, *plan, d.range);
}

void SliceController::write(const store::NodeSlicePool& next, bool exists, SliceReport& rep) {
    auto r = exists ? cluster_.update(next) : cluster_.create(next);
    if (r) {
        ++(exists ? rep.updated : rep.created);
        return;
    }
    if (r.code() == Errc::Conflict || r.code() == Errc::AlreadyExists ||
        r.code() == Errc::NotFound) {
        ++rep.conflicts;  // someone else wrote first: read again
        return;
    }
    logging::logWarn("NodeSlicePool " + next.ns + "/" + next.name + ": " +
                         (exists ? "update" : "create") + " failed: " + r.error().message,
                     {.pool = next.ns + "/" + next.name});
}

void SliceController::reportExhausted(const SliceDesired& d, const core::SlicePlan& plan,
                                      const core::Cidr& range) {
    const std::string key = d.ns + "/" + d.name;
    std::set<std::string> now;
    for (const auto& node : plan.unassigned) {
        const std::string seen = key + " " + node;
        now.insert(seen);
        if (!exhaustedSeen_.insert(seen).second) continue;
        const std::string msg =
            "no free slice for node " + node + " in NodeSlicePool " + key + ": all " +
            std::to_string(plan.total) + " slices of /" + std::to_string(d.length) + " in " +
            range.str() + " are taken; pods on the node cannot get an address on this network";
        logging::logWarn(msg, {.pool = key, .network = d.networkName});
        events_.emit({true, "NodeSlicesExhausted", msg, ObjectRef{"Node", "v1", "", node, ""}});
        events_.emit(
            {true, "NodeSlicesExhausted", msg,
             ObjectRef{"NodeSlicePool", "whereabouts.cni.cncf.io/v1alpha1", d.ns, d.name, ""}});
    }
    for (auto it = exhaustedSeen_.lower_bound(key + " "); it != exhaustedSeen_.end();) {
        if (it->compare(0, key.size() + 1, key + " ") != 0) break;
        it = now.count(*it) ? std::next(it) : exhaustedSeen_.erase(it);
    }
}

void SliceController::deleteUnwanted(const std::vector<store::NodeSlicePool>& existing,
                                     const Wanted& w, SliceReport& rep) {
    for (const auto& p : existing) {
        if (w.pools.count({p.ns, p.name})) continue;
        bool nadOwned = false, kept = false;
        for (const auto& o : p.owners) {
            if (o.kind != kNadKind) continue;
            nadOwned = true;
            kept = kept || w.keepUids.count(o.uid) > 0;
        }
        // Only a slice pool this controller (or Whereabouts') made, and no NAD left for it.
        if ((!p.managed && !nadOwned) || kept) continue;
        auto r = cluster_.remove(p);
        if (r || r.code() == Errc::NotFound) {
            ++rep.deleted;
            logging::logInfo("NodeSlicePool " + p.ns + "/" + p.name +
                                 " deleted: no NetworkAttachmentDefinition wants it any more",
                             {.pool = p.ns + "/" + p.name});
        } else if (r.code() == Errc::Conflict) {
            ++rep.conflicts;
        } else {
            logging::logWarn(
                "NodeSlicePool " + p.ns + "/" + p.name + ": delete failed: " + r.error().message,
                {.pool = p.ns + "/" + p.name});
        }
    }
}

}  // namespace allot::gc
