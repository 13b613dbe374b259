#include "core/anomaly.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "core/ip_range.h"
#include "core/naming.h"
#include "core/ownership.h"

namespace allot::core {

namespace {

std::string namespaceOf(const std::string& podRef) {
    auto slash = podRef.find('/');
    return slash == std::string::npos ? "" : podRef.substr(0, slash);
}

// A reservation as the ownership rule sees it.
Owner reservationOwner(const ReservationEntry& r) {
    return Owner{r.containerId, r.podRef, r.ifName, "", "", ""};
}

// Counted as used, as the allocator counts: inside the range and not its network or
// broadcast address.
bool countsAsUsed(const Cidr& cidr, const IpRange& range, u128 off) {
    return off <= cidr.hostMask() && range.capacity() > 0 &&
           !range.isNetworkOrBroadcast(cidr.at(off));
}

}  // namespace

std::string_view name(AnomalyKind kind) {
    switch (kind) {
        case AnomalyKind::DuplicateIp:
            return "duplicate_ip";
        case AnomalyKind::OutOfRange:
            return "out_of_range";
        case AnomalyKind::ReservationWithoutAllocation:
            return "reservation_without_allocation";
        case AnomalyKind::AllocationWithoutReservation:
            return "allocation_without_reservation";
        case AnomalyKind::UndecodablePool:
            return "undecodable_pool";
        case AnomalyKind::UndecodableEntry:
            return "undecodable_entry";
        case AnomalyKind::SliceNodeGone:
            return "slice_node_gone";
        case AnomalyKind::OutsideNodeSlice:
            return "outside_node_slice";
        case AnomalyKind::PoolObjectFull:
            return "pool_object_full";
    }
    return "unknown";
}

std::string_view name(LeakReason reason) {
    switch (reason) {
        case LeakReason::None:
            return "none";
        case LeakReason::NoPod:
            return "no_pod";
        case LeakReason::OtherUid:
            return "other_uid";
        case LeakReason::Terminal:
            return "terminal";
        case LeakReason::NodeGone:
            return "node_gone";
        case LeakReason::NodeNotReady:
            return "node_not_ready";
    }
    return "none";
}

std::string_view describe(LeakReason reason) {
    switch (reason) {
        case LeakReason::OtherUid:
            return "its pod was re-created with another UID";
        case LeakReason::Terminal:
            return "its pod has terminated";
        case LeakReason::NodeGone:
            return "its pod's Node is gone";
        case LeakReason::NodeNotReady:
            return "its pod's Node is NotReady past the grace period";
        default:
            return "its pod no longer exists";
    }
}

LeakReason classifyLeak(const Owner& entry, const PodState* pod) {
    if (entry.podRef.empty() || claimOwned(entry)) return LeakReason::None;
    if (!pod) return LeakReason::NoPod;
    const std::string ns = namespaceOf(entry.podRef);
    const std::string name = entry.podRef.substr(entry.podRef.find('/') + 1);
    if (otherPodUnderName(entry, PodIdentity{ns, name, pod->uid, pod->mirrorOf}))
        return LeakReason::OtherUid;
    if (pod->terminal) return LeakReason::Terminal;
    if (pod->nodeGone) return LeakReason::NodeGone;
    if (pod->nodeNotReady) return LeakReason::NodeNotReady;
    return LeakReason::None;
}

bool NodeIndex::gone(const std::string& node) const {
    if (node.empty() || nodes.count(node) != 0) return false;
    return (everListed && everListed->count(node) != 0) || sliced.count(node) != 0 ||
           reported.count(node) != 0;
}

bool NodeIndex::outOfService(const std::string& node) const {
    auto it = nodes.find(node);
    return it != nodes.end() && it->second.outOfService;
}

bool NodeIndex::runsAgent(const std::string& node) const {
    auto it = nodes.find(node);
    return it != nodes.end() && it->second.linux && !it->second.outOfService;
}

bool NodeIndex::notReady(const std::string& node) const {
    auto it = nodes.find(node);
    return it != nodes.end() && !it->second.ready && listedAt - it->second.notReadySince >= grace;
}

std::string candidateKey(const LeakCandidate& c) {
    const Owner& o = c.owner;
    return "a\x1f" + c.pool + "\x1f" + u128ToString(c.offset) + "\x1f" + o.containerId + "\x1f" +
           o.ifName + "\x1f" + o.podUid + "\x1f" + o.podRef;
}

std::string missingKey(const MissingReservation& m) {
    return "m\x1f" + m.reservation + "\x1f" + m.owner.containerId;
}

std::string orphanKey(const ReservationEntry& r) {
    return "r\x1f" + r.name + "\x1f" + r.resourceVersion;
}

std::string whoHolds(const Owner& o) {
    std::string s =
        o.podRef.empty() ? "container " + o.containerId.substr(0, 16) : "pod " + o.podRef;
    if (!o.ifName.empty()) s += " " + o.ifName;
    return s;
}

PassAnalysis::PassAnalysis(std::string poolNamespace, std::vector<ReservationEntry> reservations)
    : ns_(std::move(poolNamespace)), res_(std::move(reservations)), matched_(res_.size(), false) {
    for (size_t i = 0; i < res_.size(); ++i) resByName_.emplace(res_[i].name, i);
}

void PassAnalysis::addUndecodablePool(const std::string& pool, const std::string& why) {
    anomalies_.push_back({AnomalyKind::UndecodablePool, "u\x1f" + pool, pool,
                          "IPPool " + ns_ + "/" + pool + " cannot be decoded: " + why});
}

// Another writer's entries allot cannot decode: reported, their reservations kept, their
// offsets (Owner{} placeholders in the allocations) counted as used and otherwise left alone.
void PassAnalysis::addUndecodedEntries(const PoolEntries& p) {
    for (const auto& u : p.undecoded) {
        anomalies_.push_back({AnomalyKind::UndecodableEntry, "e\x1f" + p.name + "\x1f" + u.key,
                              p.name,
                              "IPPool " + ns_ + "/" + p.name + " entry \"" + u.key.substr(0, 64) +
                                  "\" cannot be decoded (" + u.reason +
                                  "); kept as written, its address is not handed out"});
        if (u.containerId) allocContainers_.insert(*u.containerId);
        if (u.podRef) allocPodRefs_.insert(*u.podRef);
    }
}

bool PassAnalysis::matchReservation(const IpAddress& ip, const Owner& o,
                                    const std::vector<std::string>& nets) {
    for (const auto& net : nets) {
        auto f = resByName_.find(reservationName(ip, net));
        if (f == resByName_.end()) continue;
        if (heldBy(reservationOwner(res_[f->second]), o)) {
            matched_[f->second] = true;
            return true;
        }
    }
    return false;
}

void PassAnalysis::setNodeSlices(std::vector<NodeSliceView> nodeSlicePools,
                                 const NodeIndex* nodes) {
    nodeSlicePools_ = std::move(nodeSlicePools);
    nodes_ = nodes;
}

namespace {

std::string sliceList(const std::vector<Cidr>& slices) {
    std::string out;
    for (const auto& c : slices) out += (out.empty() ? "" : ", ") + c.str();
    return out.empty() ? "none" : out;
}

}  // namespace

// A node's slice pool: its node must exist (while it holds addresses), and each address lie in
// a slice its NodeSlicePool gives that node now; the live pods holding them are checked in
// finish().
void PassAnalysis::checkSlicePool(const PoolEntries& p, const Cidr& cidr) {
    if (nodeSlicePools_.empty() || !nodes_ || p.allocations->empty()) return;
    const NodeIndex& ni = *nodes_;
    auto info = slicePoolOf(nodeSlicePools_, p.name, cidr, [&ni](const std::string& n) {
        return ni.nodes.count(n) != 0 || ni.sliced.count(n) != 0;
    });
    if (!info) return;
    const std::string what = "IPPool " + ns_ + "/" + p.name + " (node " + info->node +
                             "'s slice pool, NodeSlicePool " + info->nodeSlicePool + ")";
    const std::string holder =
        info->rangeHolder.empty() || info->rangeHolder == info->node
            ? ""
            : "; " + cidr.str() + " is now node " + info->rangeHolder + "'s slice";
    if (!ni.nodes.empty() && ni.nodes.count(info->node) == 0) {
        anomalies_.push_back({AnomalyKind::SliceNodeGone, "g\x1f" + p.name, p.name,
                              what + " holds " + std::to_string(p.allocations->size()) +
                                  " addresses and Node " + info->node +
                                  " is gone; they are released as their pods go" + holder});
        return;
    }
    for (const auto& [off, o] : *p.allocations) {
        if (off > cidr.hostMask() || o == Owner{}) continue;
        const IpAddress ip = cidr.at(off);
        const bool inSlice = std::any_of(info->nodeSlices.begin(), info->nodeSlices.end(),
                                         [&ip](const Cidr& c) { return c.contains(ip); });
        if (!inSlice)
            anomalies_.push_back({AnomalyKind::OutsideNodeSlice,
                                  "s\x1f" + p.name + "\x1f" + u128ToString(off), p.name,
                                  ip.str() + " in " + what + ", held by " + whoHolds(o) +
                                      ", is outside node " + info->node + "'s slices (" +
                                      sliceList(info->nodeSlices) + ")" + holder});
        else if (!o.podRef.empty())
            sliceHeld_.push_back({p.name, info->node, ip.str(), o});
    }
}

std::optional<PoolUsage> PassAnalysis::addPool(const PoolEntries& p) {
    auto cidr = Cidr::parse(p.range);
    auto range = IpRange::fromSpec({p.range, "", "", {}}, "IPPool " + p.name + " spec.range");
    if (!cidr || !range) {
        anomalies_.push_back(
            {AnomalyKind::UndecodablePool, "u\x1f" + p.name, p.name,
             "IPPool " + ns_ + "/" + p.name + " has an invalid range \"" + p.range + "\""});
        return std::nullopt;
    }
    addUndecodedEntries(p);
    checkSlicePool(p, *cidr);
    if (!p.objectFull.empty())
        anomalies_.push_back({AnomalyKind::PoolObjectFull, "f\x1f" + p.name, p.name, p.objectFull});
    uint64_t used = 0;
    bool poolHasReservations = false;
    // Entries without their reservation, as pointers into the pool: only materialised when
    // the pool turns out to have reservations (a pool written without them has 0 missing).
    std::vector<std::tuple<IpAddress, const Owner*, size_t>> poolMissing;
    for (const auto& [off, o] : *p.allocations) {
        ++allocations_;
        if (o == Owner{}) {  // an undecoded entry's placeholder
            used += countsAsUsed(*cidr, *range, off);
            continue;
        }
        if (!o.containerId.empty()) allocContainers_.insert(o.containerId);
        if (!o.podRef.empty()) allocPodRefs_.insert(o.podRef);
        if (off > cidr->hostMask()) {
            anomalies_.push_back({AnomalyKind::OutOfRange,
                                  "o\x1f" + p.name + "\x1f" + u128ToString(off), p.name,
                                  "IPPool " + ns_ + "/" + p.name + " (" + p.range +
                                      ") has an allocation at offset " + u128ToString(off) +
                                      ", outside its range, held by " + whoHolds(o)});
            continue;
        }
        used += countsAsUsed(*cidr, *range, off);
        const IpAddress ip = cidr->at(off);
        auto [h, fresh] = holders_.try_emplace(ip, Holder{p.name, o});
        if (!fresh && h->second.pool != p.name)
            anomalies_.push_back({AnomalyKind::DuplicateIp,
                                  "d\x1f" + ip.str() + "\x1f" + h->second.pool + "\x1f" + p.name,
                                  p.name,
                                  ip.str() + " is held twice: in IPPool " + h->second.pool +
                                      " by " + whoHolds(h->second.owner) + " and in IPPool " +
                                      p.name + " by " + whoHolds(o)});
        const size_t entryIdx = o.podRef.empty() ? SIZE_MAX : entries_.size();
        if (!o.podRef.empty()) {
            const Holder* holder = &h->second;
            if (!fresh) holder = &shadowed_.emplace_back(Holder{p.name, o});
            entries_.push_back({off, holder, LeakReason::None});
            wanted_.insert(o.podRef);
        }
        const auto nets = p.networkNames(o);
        if (matchReservation(ip, o, nets))
            poolHasReservations = true;
        else
            poolMissing.emplace_back(ip, &o, entryIdx);
    }
    // A pool none of whose entries has a reservation was written without them (overlapping
    // ranges off): nothing is missing there.
    if (poolHasReservations)
        for (const auto& [ip, o, entryIdx] : poolMissing)
            unreserved_.push_back(
                {{p.name, ip, *o, reservationName(ip, p.networkNames(*o).front())}, entryIdx});
    return PoolUsage{static_cast<uint64_t>(std::min<u128>(range->capacity(), ~uint64_t(0))), used};
}

bool PassAnalysis::heldByAnyAllocation(const ReservationEntry& r) const {
    return !r.containerId.empty() ? allocContainers_.count(r.containerId) != 0
                                  : allocPodRefs_.count(r.podRef) != 0;
}

// Reservations nobody holds (matched neither by name nor by owner).
void PassAnalysis::addOrphans(Findings& out) const {
    for (size_t i = 0; i < res_.size(); ++i) {
        const auto& r = res_[i];
        if (matched_[i] || heldByAnyAllocation(r)) continue;
        out.orphans.push_back(i);
        out.anomalies.push_back({AnomalyKind::ReservationWithoutAllocation, orphanKey(r), "",
                                 "OverlappingRangeIPReservation " + ns_ + "/" + r.name + " (" +
                                     (r.podRef.empty() ? "no pod" : "pod " + r.podRef) +
                                     ") has no allocation in any IPPool",
                                 r.name});
    }
}

// Live pods running on another node than the slice pool's: their address is outside their own
// node's slice (a wrong node name at ADD). Reported only: the pod uses the address.
void PassAnalysis::addOtherNodeHolders(const std::unordered_map<std::string, PodState>& pods,
                                       Findings& out) const {
    for (const auto& h : sliceHeld_) {
        auto pod = pods.find(h.owner.podRef);
        if (pod == pods.end() || pod->second.nodeName.empty() || pod->second.nodeName == h.node ||
            classifyLeak(h.owner, &pod->second) != LeakReason::None)
            continue;
        out.anomalies.push_back(
            {AnomalyKind::OutsideNodeSlice, "s\x1f" + h.pool + "\x1f" + h.ip, h.pool,
             h.ip + " in IPPool " + ns_ + "/" + h.pool + " (node " + h.node +
                 "'s slice pool) is held by " + whoHolds(h.owner) + ", which runs on node " +
                 pod->second.nodeName + ": outside that node's slice"});
    }
}

Findings PassAnalysis::finish(const std::unordered_map<std::string, PodState>& pods) {
    Findings out;
    for (auto& e : entries_) {
        const Owner& o = e.holder->owner;
        auto pod = pods.find(o.podRef);
        e.reason = classifyLeak(o, pod == pods.end() ? nullptr : &pod->second);
        if (e.reason != LeakReason::None)
            out.candidates.push_back({e.holder->pool, e.offset, o, e.reason});
    }
    out.anomalies = std::move(anomalies_);
    for (auto& u : unreserved_) {
        if (u.entry != SIZE_MAX && entries_[u.entry].reason != LeakReason::None) continue;
        const MissingReservation& m = u.missing;
        out.anomalies.push_back({AnomalyKind::AllocationWithoutReservation, missingKey(m), m.pool,
                                 m.ip.str() + " in IPPool " + m.pool + " (" + whoHolds(m.owner) +
                                     ") has no OverlappingRangeIPReservation " + m.reservation});
        out.missing.push_back(std::move(u.missing));
    }
    addOrphans(out);
    addOtherNodeHolders(pods, out);
    std::vector<Entry>().swap(entries_);
    std::deque<Holder>().swap(shadowed_);
    std::vector<SliceHeld>().swap(sliceHeld_);
    std::vector<Unreserved>().swap(unreserved_);
    holders_.clear();
    wanted_.clear();
    return out;
}

}  // namespace allot::core
