#include "engine/release.h"

#include <algorithm>

#include "core/naming.h"
#include "core/pool_targets.h"
#include "engine/commit.h"
#include "engine/targets.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

// The parts a DEL releases in: each one this node's copy shows the owner's entry in, or has no
// copy of. Every write this node makes updates its copy (or drops it when it cannot), and no
// other writer adds this node's containers, so a copy without the entry is trusted.
Parts delParts(Context& ctx, const Parts& parts, const core::Owner& owner) {
    if (parts.size() < 2 || !ctx.cache) return parts;
    Parts out;
    for (const Target* t : parts) {
        auto copy = ctx.cache->load(ctx.poolNamespace, t->pool);
        if (!copy || core::findHolder(copy->allocations, owner.containerId, owner.ifName))
            out.push_back(t);
    }
    return out;
}

}  // namespace

Result<bool> del(Context& ctx, const core::ValidatedConfig& cfg, const core::Owner& owner) {
    JournalEntry pending{
        ctx.poolNamespace, {}, cfg.raw.networkName, owner.containerId, owner.ifName, owner.podRef,
        ctx.node,          {}};
    auto journalIt = [&](const core::Error& why) -> Result<bool> {
        ctx.report.journalReason = why.message;
        if (!ctx.journal) return why;
        auto r = ctx.journal->record(pending);
        if (!r)
            return makeError(Errc::Transient,
                             why.message + "; and the journal failed: " + r.error().message);
        return true;
    };
    // The runtime's DEL is its own proof: no ADD of this container is in flight any more.
    if (ctx.marks) ctx.marks->unmark(owner.containerId);
    auto targets = resolveTargets(ctx, cfg, "");
    if (!targets) return journalIt(targets.error());  // no pools named: allot-gc searches them
    std::optional<core::Error> firstError;
    // Every failure is unfinished work for allot-gc, not a reason to block teardown: a store
    // that stays away, a 401/403 after a restart, a pool allot cannot decode.
    auto unfinished = [&](const core::Error& e) {
        if (!firstError) firstError = e;
    };
    // The pool entry, through the node's commit queue (one write for every release and ADD
    // waiting on this pool), then the reservation. False: the pool held nothing for the owner.
    auto releaseIn = [&](const Target& t) {
        std::optional<CleanupGrace> late;
        auto r = commit(ctx, cfg, t, CommitRequest{owner, std::nullopt, {}, true}, late);
        if (!r) {
            if (r.code() == Errc::NotFound) return false;
            unfinished(r.error());
            pending.pools.push_back(t.pool);  // allot-gc drops the reservations of what it releases
            return true;
        }
        ctx.report.pools.emplace_back(r->ip, t.pool);
        if (auto d = dropReservations(ctx, cfg, {{r->ip, owner}}); !d) {
            unfinished(d.error());
            pending.reservations.push_back(core::reservationName(r->ip, cfg.raw.networkName));
        }
        return true;
    };
    for (const Parts& parts : byRange(*targets))
        for (const Target* t : delParts(ctx, parts, owner)) releaseIn(*t);
    if (!pending.pools.empty() || !pending.reservations.empty()) return journalIt(*firstError);
    return false;
}

Result<void> journalRelease(ReleaseJournal& journal, const core::ValidatedConfig& cfg,
                            const core::Owner& owner, const std::string& poolNamespace) {
    JournalEntry e{poolNamespace, {},           cfg.raw.networkName, owner.containerId,
                   owner.ifName,  owner.podRef, owner.node,          {}};
    // Plain pools are named here; a slice pool allot-gc finds by its node's slices.
    if (!cfg.sliceSize)
        if (auto targets = core::poolTargets(cfg, "", owner.node, {}))
            for (const auto& t : *targets) e.pools.push_back(t.pool);
    return journal.record(e);
}

Result<size_t> gc(Context& ctx, const core::ValidatedConfig& cfg, const std::string& netName,
                  const std::vector<cni::Attachment>& valid) {
    auto targets = resolveTargets(ctx, cfg, netName);
    if (!targets) return targets.error();
    size_t total = 0;
    for (const auto& t : *targets) {
        auto rel = releaseWhere(ctx, cfg, t, [&](const core::Owner& x) {
            // Only what provably belongs to this node and this network.
            if (x.node.empty() || x.node != ctx.node) return false;
            if (x.network.empty() || x.network != netName) return false;
            return std::none_of(valid.begin(), valid.end(), [&](const cni::Attachment& a) {
                return a.containerId == x.containerId && a.ifName == x.ifName;
            });
        });
        if (!rel) return rel.error();
        total += rel->size();
    }
    return total;
}

}  // namespace allot::engine
