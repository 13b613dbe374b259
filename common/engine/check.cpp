#include "engine/check.h"

#include <algorithm>

#include "core/naming.h"
#include "core/ownership.h"
#include "engine/targets.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

// The entry `owner` shares through its IPAMClaim (a migration target), if any.
std::optional<core::u128> sharedEntry(const core::AllocationMap& allocs, const core::Owner& owner) {
    if (owner.claim.empty()) return std::nullopt;
    for (const auto& [off, o] : allocs)
        if (core::sharesClaim(o, owner)) return off;
    return std::nullopt;
}

// CHECK of one range: the part holding (or sharing) the owner's entry, its address listed in
// prevResult, its reservation the owner's (or the entry holder's, for a shared claim).
Result<IpResult> checkRange(Context& ctx, const core::ValidatedConfig& cfg, const Parts& parts,
                            const core::Owner& owner, const std::vector<IpResult>& prev) {
    std::optional<store::Pool> pool;
    std::optional<core::u128> off;
    const Target* t = parts[0];
    for (size_t k = 0; k < parts.size() && !off; ++k) {
        auto p = ctx.store.getPool(parts[k]->pool);
        if (!p && (p.code() != Errc::NotFound || parts.size() == 1)) {
            if (p.code() == Errc::NotFound)
                return makeError(Errc::NotFound, "IPPool " + t->pool + " does not exist");
            return p.error();
        }
        if (!p) continue;
        off = core::findHolder(p->allocations, owner.containerId, owner.ifName);
        if (!off) off = sharedEntry(p->allocations, owner);
        if (off) pool = std::move(*p), t = parts[k];
    }
    if (!off)
        return makeError(Errc::NotFound, "IPPool " + t->pool +
                                             (parts.size() > 1 ? " (and its parts)" : "") +
                                             " has no allocation for container " +
                                             owner.containerId + " interface " + owner.ifName);
    // A shared claim's reservation names the entry's holder, not this container.
    const core::Owner& holder = pool->allocations.at(*off);
    core::IpAddress ip = t->range.cidr().at(*off);
    bool listed =
        std::any_of(prev.begin(), prev.end(), [&](const IpResult& r) { return r.ip == ip; });
    if (!listed)
        return makeError(Errc::NotFound, "prevResult does not list " + ip.str() +
                                             ", which IPPool " + t->pool +
                                             " holds for this container");
    if (cfg.raw.enableOverlappingRanges) {
        auto r = ctx.store.getReservation(core::reservationName(ip, cfg.raw.networkName));
        if (!r) {
            if (r.code() == Errc::NotFound)
                return makeError(Errc::NotFound,
                                 "no OverlappingRangeIPReservation for " + ip.str());
            return r.error();
        }
        if (!store::reservedFor(*r, owner) && !store::reservedFor(*r, holder))
            return makeError(Errc::NotFound,
                             "the reservation of " + ip.str() + " belongs to " + r->podRef);
    }
    return IpResult{ip, t->range.cidr().length(), gatewayFor(cfg, t->range)};
}

}  // namespace

Result<std::vector<IpResult>> check(Context& ctx, const core::ValidatedConfig& cfg,
                                    const std::string& netName, const core::Owner& owner,
                                    const std::vector<IpResult>& listed) {
    auto targets = resolveTargets(ctx, cfg, netName);
    if (!targets) return targets.error();
    std::vector<IpResult> out;
    for (const Parts& parts : byRange(*targets)) {
        auto r = checkRange(ctx, cfg, parts, owner, listed);
        if (!r) return r.error();
        out.push_back(*r);
    }
    return out;
}

Result<void> status(Context& ctx, const core::ValidatedConfig& cfg) {
    // One read per pool is the whole probe: it proves the store answers, that we may read it,
    // and whether the pool has room. A pool not created yet is empty, not an error.
    // A slice kept in parts is exhausted when every part is.
    auto targets = resolveTargets(ctx, cfg, "");
    if (!targets) return targets.error();
    for (const Parts& parts : byRange(*targets)) {
        bool room = false;
        for (const Target* t : parts) {
            auto pool = ctx.store.getPool(t->pool);
            if (!pool && pool.code() != Errc::NotFound) return pool.error();
            room = room || !pool ||
                   core::freeCount(t->range, pool->allocations, gatewayFor(cfg, t->range)) > 0;
        }
        const Target& t = *parts[0];
        if (!room)
            return makeError(Errc::Exhausted, "IPPool " + t.pool +
                                                  (parts.size() > 1 ? " and its parts" : "") +
                                                  " (" + t.range.cidr().str() + ") is exhausted");
    }
    return {};
}

}  // namespace allot::engine
