#include "core/allocator.h"

#include "core/ownership.h"

namespace allot::core {

std::optional<u128> findHolder(const AllocationMap& allocs, std::string_view containerId,
                               std::string_view ifName) {
    for (const auto& [offset, owner] : allocs) {
        if (owner.containerId == containerId && owner.ifName == ifName) return offset;
    }
    return std::nullopt;
}

size_t release(AllocationMap& allocs, std::string_view containerId, std::string_view ifName) {
    size_t n = 0;
    for (auto it = allocs.begin(); it != allocs.end();) {
        if (it->second.containerId == containerId && it->second.ifName == ifName) {
            it = allocs.erase(it);
            ++n;
        } else {
            ++it;
        }
    }
    return n;
}

namespace {

bool isGateway(const IpAddress& ip, const std::optional<IpAddress>& gw) {
    return gw && *gw == ip;
}

// If `value` falls inside an exclude, the last address of the (merged) excluded run.
std::optional<u128> excludeEnd(const IpRange& range, u128 value) {
    std::optional<u128> end;
    u128 probe = value;
    for (bool moved = true; moved;) {
        moved = false;
        for (const Cidr& c : range.excludes()) {
            if (c.first().value() <= probe && probe <= c.last().value()) {
                end = c.last().value();
                if (*end >= range.end().value()) return end;
                probe = *end + 1;
                moved = true;
            }
        }
    }
    return end;
}

// The address this owner already holds, or a pod's earlier sandbox's (handed over); nullopt
// when neither.
std::optional<Result<Pick>> pickExisting(const Cidr& cidr, AllocationMap& allocs,
                                         const PickRequest& req) {
    const Owner& owner = req.owner;
    if (auto held = findHolder(allocs, owner.containerId, owner.ifName)) {
        IpAddress ip = cidr.at(*held);
        if (req.requested && *req.requested != ip) {
            return makeError(Errc::InvalidConfig, "container " + owner.containerId + " interface " +
                                                      owner.ifName + " already holds " + ip.str() +
                                                      ", not the requested " +
                                                      req.requested->str());
        }
        return Pick{ip, *held, PickKind::Existing};
    }
    // Live migration: the address already held for this owner's IPAMClaim, under another pod.
    for (const auto& [offset, o] : allocs) {
        if (owner.claim.empty()) break;
        if (!sharesClaim(o, owner)) continue;
        IpAddress ip = cidr.at(offset);
        if (req.requested && *req.requested != ip) break;
        return Pick{ip, offset, PickKind::Shared};
    }
    if (owner.podRef.empty()) return std::nullopt;
    for (auto& [offset, o] : allocs) {
        if (!mayTakeOver(o, owner)) continue;
        IpAddress ip = cidr.at(offset);
        if (req.requested && *req.requested != ip) break;
        // A new sandbox of the same pod keeps its address (StatefulSet semantics).
        o = owner;
        return Pick{ip, offset, PickKind::HandedOver};
    }
    return std::nullopt;
}

bool skipped(const PickRequest& req, u128 off) {
    return req.skip && req.skip->count(off) != 0;
}

// The requested address, when it is in the range, not excluded, not the gateway and free.
Result<Pick> pickRequested(const IpRange& range, AllocationMap& allocs, const PickRequest& req) {
    const Cidr& cidr = range.cidr();
    const IpAddress& ip = *req.requested;
    std::string what = "requested IP " + ip.str();
    if (!cidr.contains(ip))
        return makeError(Errc::InvalidConfig, what + " is outside " + cidr.str());
    if (range.isNetworkOrBroadcast(ip))
        return makeError(Errc::InvalidConfig,
                         what + " is the network or broadcast address of " + cidr.str());
    if (ip < range.start() || range.end() < ip)
        return makeError(Errc::InvalidConfig, what + " is outside range_start..range_end (" +
                                                  range.start().str() + "-" + range.end().str() +
                                                  ")");
    if (range.excluded(ip)) return makeError(Errc::InvalidConfig, what + " is excluded");
    if (isGateway(ip, req.gateway)) return makeError(Errc::InvalidConfig, what + " is the gateway");
    u128 off = cidr.offsetOf(ip);
    if (auto it = allocs.find(off); it != allocs.end()) {
        // Live migration: the claim's address, held for it under another pod, is shared.
        if (sharesClaim(it->second, req.owner)) return Pick{ip, off, PickKind::Shared};
        return makeError(
            Errc::InvalidConfig,
            what + " is already allocated to " +
                (it->second.podRef.empty() ? it->second.containerId : it->second.podRef));
    }
    if (skipped(req, off))
        return makeError(Errc::InvalidConfig, what + " is reserved by an overlapping range");
    allocs.emplace(off, req.owner);
    return Pick{ip, off, PickKind::New};
}

// When `off` was released less than the request's cooldown ago: its release time.
std::optional<int64_t> coolingSince(const PickRequest& req, u128 off) {
    if (!req.released || req.cooldownS <= 0) return std::nullopt;
    auto it = req.released->at.find(off);
    if (it == req.released->at.end() || it->second + req.cooldownS <= req.now) return std::nullopt;
    return it->second;
}

Pick take(const Cidr& cidr, AllocationMap& allocs, u128 off, const Owner& owner) {
    allocs.emplace(off, owner);
    return Pick{cidr.at(off), off, PickKind::New};
}

// Lowest free: walk candidate offsets upward, jumping over allocations and excludes. A free
// offset still cooling down is passed over; when nothing else is free, the one released
// longest ago is handed out (a cooldown never causes exhaustion).
Result<Pick> pickLowest(const IpRange& range, AllocationMap& allocs, const PickRequest& req) {
    const Cidr& cidr = range.cidr();
    const u128 endOff = cidr.offsetOf(range.end());
    u128 off = cidr.offsetOf(range.start());
    auto it = allocs.lower_bound(off);
    std::optional<std::pair<int64_t, u128>> cooling;  // (released at, offset)
    while (true) {
        if (auto ex = excludeEnd(range, cidr.network().value() + off)) {
            u128 exOff = *ex - cidr.network().value();
            if (exOff >= endOff) break;
            off = exOff + 1;
            it = allocs.lower_bound(off);
            continue;
        }
        while (it != allocs.end() && it->first < off) ++it;
        bool taken = (it != allocs.end() && it->first == off) || skipped(req, off) ||
                     isGateway(cidr.at(off), req.gateway);
        if (!taken) {
            auto since = coolingSince(req, off);
            if (!since) return take(cidr, allocs, off, req.owner);
            if (!cooling || *since < cooling->first) cooling = {*since, off};
        }
        if (off >= endOff) break;
        ++off;
    }
    if (cooling) return take(cidr, allocs, cooling->second, req.owner);
    return makeError(Errc::Exhausted, "no free address in " + range.start().str() + "-" +
                                          range.end().str() + " (" + cidr.str() + ")");
}

}  // namespace

Result<Pick> pick(const IpRange& range, AllocationMap& allocs, const PickRequest& req) {
    if (auto existing = pickExisting(range.cidr(), allocs, req)) return std::move(*existing);
    if (req.requested) return pickRequested(range, allocs, req);
    return pickLowest(range, allocs, req);
}

u128 freeCount(const IpRange& range, const AllocationMap& allocs,
               const std::optional<IpAddress>& gateway) {
    u128 cap = range.capacity();
    u128 used = 0;
    for (const auto& [offset, owner] : allocs) {
        if (range.allocatable(range.cidr().at(offset))) ++used;
    }
    if (gateway && range.allocatable(*gateway) &&
        allocs.find(range.cidr().offsetOf(*gateway)) == allocs.end())
        ++used;
    return used >= cap ? 0 : cap - used;
}

}  // namespace allot::core
