#include "engine/add.h"

#include <algorithm>

#include "core/naming.h"
#include "core/ownership.h"
#include "engine/commit.h"
#include "engine/reservations.h"
#include "engine/targets.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

// One address from one range. The pool entry is written first (batched with the node's other
// ADDs), then the address is reserved cluster-wide, outside the node lock; an address found
// reserved through another pool is given back in the next claim and another one picked. No
// address is returned before both its pool entry and its reservation are this owner's.
Result<core::Pick> addOne(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                          const core::Owner& owner, std::optional<core::IpAddress> requested,
                          const std::function<void(core::IpAddress)>& reserving) {
    CommitRequest req{owner, requested, {}};
    bool wrote = false;                // this call put an entry in the pool
    std::optional<CleanupGrace> late;  // the claim was served past the call's deadline
    std::string uncertain;             // a reservation create whose answer was lost
    auto retry = retryFor(ctx);

    // Every way out without an address takes back what this call wrote.
    auto fail = [&](core::Error e) -> Result<core::Pick> {
        if (!wrote && uncertain.empty()) return e;
        CleanupGrace grace(ctx);
        if (!uncertain.empty()) forgetUncertain(ctx, {uncertain}, owner);
        if (wrote) (void)releaseOne(ctx, cfg, t, owner);
        return e;
    };

    for (;;) {
        auto c = commit(ctx, cfg, t, req, late);
        if (!c) return fail(c.error());
        const bool kept = c->kind == core::PickKind::Existing || c->kind == core::PickKind::Shared;
        wrote = wrote || !kept;
        const bool tookOver = c->kind == core::PickKind::HandedOver;
        // A claim's address shared with the pod that holds it: the reservation is that pod's.
        if (!cfg.raw.enableOverlappingRanges || c->kind == core::PickKind::Shared) return c;
        const std::string name = core::reservationName(c->ip, cfg.raw.networkName);
        if (reserving) reserving(c->ip);
        Result<std::string> holder = std::string();
        for (;;) {
            holder = reserve(ctx.store, name, owner, tookOver);
            if (holder) break;
            if (holder.code() == Errc::Transient) uncertain = name;
            if (!retryable(holder.code()) || !retry.wait())
                return fail(retry.attempts() > 0 ? retry.gaveUp(holder.error()) : holder.error());
        }
        if (holder->empty()) return c;
        if (uncertain == name) uncertain.clear();  // it was not ours after all
        if (requested)
            return fail(makeError(Errc::InvalidConfig,
                                  "requested IP " + c->ip.str() +
                                      " is reserved by an overlapping range for " + *holder));
        req.avoid.push_back(c->offset);
    }
}

// Each requested address placed in its range; one per range.
Result<std::vector<std::optional<core::IpAddress>>> placeRequested(
    const std::vector<Parts>& ranges, const std::vector<core::IpAddress>& requested) {
    std::vector<std::optional<core::IpAddress>> want(ranges.size());
    for (const auto& ip : requested) {
        bool placed = false;
        for (size_t i = 0; i < ranges.size() && !placed; ++i) {
            if (ranges[i].empty() || !ranges[i][0]->range.cidr().contains(ip)) continue;
            if (want[i])
                return makeError(Errc::InvalidConfig, "requested IPs " + want[i]->str() + " and " +
                                                          ip.str() + " fall in the same range");
            want[i] = ip;
            placed = true;
        }
        if (!placed)
            return makeError(Errc::InvalidConfig,
                             "requested IP " + ip.str() + " is in no configured range");
    }
    return want;
}

// Whether `pool` holds an address for `owner`, or one it would take over or share.
bool holdsFor(const store::Pool& pool, const core::Owner& owner) {
    if (core::findHolder(pool.allocations, owner.containerId, owner.ifName)) return true;
    return std::any_of(pool.allocations.begin(), pool.allocations.end(), [&](const auto& e) {
        return core::sharesClaim(e.second, owner) ||
               (!owner.podRef.empty() && core::mayTakeOver(e.second, owner));
    });
}

// The order to try a slice's parts in: one whose copy on this node holds an address for the
// owner first (the same ADD again, a new sandbox of the pod, a claim's migration target), then,
// in address order, those with room in their copy and those this node has no copy of (not
// created yet, or its last write here failed), then the full ones (a copy may be stale: the
// transaction reads a part fresh before it calls it full). So the lowest free address is found
// without reading a full part again, and without a read per part on every ADD of a burst. A
// part without a copy is not searched for the owner: an ADD again whose first write's answer
// was lost can get a second address in an earlier part; the pod's DEL frees both.
Parts partOrder(Context& ctx, const core::ValidatedConfig& cfg, const Parts& parts,
                const core::Owner& owner) {
    Parts held, room, rest;
    for (const Target* t : parts) {
        std::optional<store::Pool> copy;
        if (ctx.cache) copy = ctx.cache->load(ctx.poolNamespace, t->pool);
        if (copy && holdsFor(*copy, owner))
            held.push_back(t);
        else if (!copy ||
                 core::freeCount(t->range, copy->allocations, gatewayFor(cfg, t->range)) > 0)
            room.push_back(t);
        else
            rest.push_back(t);
    }
    held.insert(held.end(), room.begin(), room.end());
    held.insert(held.end(), rest.begin(), rest.end());
    return held;
}

// One address from one range: from its one pool, or from the parts of its slice (the part
// holding a requested address; else partOrder's, going on past a full part or one the slice
// controller has sealed).
Result<std::pair<core::Pick, const Target*>> addToRange(
    Context& ctx, const core::ValidatedConfig& cfg, const Parts& parts, const core::Owner& owner,
    const std::optional<core::IpAddress>& want,
    const std::function<void(core::IpAddress)>& reserving) {
    Parts order = parts;
    if (parts.size() > 1 && want) {
        order = {parts[0]};  // an address in no part: part 0 says what is wrong with it
        for (const Target* t : parts)
            if (!(*want < t->range.start()) && !(t->range.end() < *want)) order = {t};
    } else if (parts.size() > 1) {
        order = partOrder(ctx, cfg, parts, owner);
    }
    std::optional<core::Error> failed;
    for (const Target* t : order) {
        auto pick = addOne(ctx, cfg, *t, owner, want, reserving);
        if (pick) return std::make_pair(*pick, t);
        if (!failed || failed->code == Errc::Exhausted) failed = pick.error();
        if (pick.code() != Errc::Exhausted && pick.code() != Errc::SliceSealed) return pick.error();
    }
    return *failed;
}

// ADD over this node's targets, read from the node relay's copy of its slices unless `fresh`.
Result<std::vector<IpResult>> addTo(Context& ctx, const core::ValidatedConfig& cfg,
                                    const std::string& netName, const core::Owner& owner,
                                    const std::vector<core::IpAddress>& requested,
                                    const BeforeReserve& beforeReserve, bool fresh) {
    auto targets = resolveTargets(ctx, cfg, netName, fresh);
    if (!targets) return targets.error();
    // Before anything is written: a slice in parts beside a config that reads only part 0
    // could hand out an address a part holds (core::refuseSliceParts).
    for (const Target& t : *targets)
        if (!t.partsRefused.empty()) return makeError(Errc::InvalidConfig, t.partsRefused);
    const std::vector<Parts> ranges = byRange(*targets);
    auto want = placeRequested(ranges, requested);
    if (!want) return want.error();

    std::vector<IpResult> result;
    std::vector<const Target*> taken;  // parts newly allocated by this call, for rollback
    for (size_t i = 0; i < ranges.size(); ++i) {
        const Target& t = *ranges[i][0];
        std::function<void(core::IpAddress)> reserving;
        if (beforeReserve && i + 1 == ranges.size())
            reserving = [&](core::IpAddress ip) {
                auto ips = result;
                ips.push_back({ip, t.range.cidr().length(), gatewayFor(cfg, t.range)});
                beforeReserve(ips);
            };
        auto pick = addToRange(ctx, cfg, ranges[i], owner, (*want)[i], reserving);
        if (!pick) {
            // Roll back what this call took; the deadline may have passed, so give it a moment.
            {
                CleanupGrace grace(ctx);
                for (const Target* j : taken) (void)releaseOne(ctx, cfg, *j, owner);
            }
            return makeError(pick.code(),
                             "range " + t.range.cidr().str() + ": " + pick.error().message);
        }
        const auto& [p, part] = *pick;
        if (p.kind == core::PickKind::New || p.kind == core::PickKind::HandedOver)
            taken.push_back(part);
        result.push_back({p.ip, t.range.cidr().length(), gatewayFor(cfg, part->range)});
        ctx.report.pools.emplace_back(p.ip, part->pool);
    }
    for (const auto& [sip, gw] : cfg.staticAddresses) result.push_back({sip.ip, sip.prefix, gw});
    return result;
}

}  // namespace

Result<std::vector<IpResult>> add(Context& ctx, const core::ValidatedConfig& cfg,
                                  const std::string& netName, const core::Owner& owner,
                                  const std::vector<core::IpAddress>& requested,
                                  const BeforeReserve& beforeReserve) {
    if (ctx.marks)
        if (auto m = ctx.marks->mark(owner.containerId); !m)
            return makeError(m.code(),
                             "cannot mark the ADD in flight for allot-gc: " + m.error().message);
    auto r = addTo(ctx, cfg, netName, owner, requested, beforeReserve, false);
    if (!r && r.code() == Errc::SliceMoved) {
        // The node's slice came from a stale copy (what the ADD took is rolled back): read it.
        ctx.report.pools.clear();  // those of the attempt rolled back
        r = addTo(ctx, cfg, netName, owner, requested, beforeReserve, true);
    }
    // A network's slice not assigned yet (pods created with their network, before allot-gc's
    // leader ran): wait for it within the call's deadline instead of failing the sandbox, whose
    // retry kubelet would make only after its own back-off. Nothing was written meanwhile. Read
    // from the node relay's copy where there is one: its watch sees the slice as it is written,
    // and a hundred waiting ADDs then cost the API server nothing.
    RetryPolicy wait(ctx.deadline, kSliceAwait, 0, ctx.sleep);
    while (!r && r.code() == Errc::SliceAwaited && wait.wait())
        r = addTo(ctx, cfg, netName, owner, requested, beforeReserve, false);
    return r;
}

}  // namespace allot::engine
