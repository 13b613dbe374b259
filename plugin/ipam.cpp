#include "plugin/ipam.h"

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include "core/naming.h"
#include "core/ownership.h"
#include "core/pool_targets.h"
#include "engine/pool_transaction.h"
#include "engine/reservations.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;
using core::Result;
using store::Pool;

namespace {

// The engine's retry policy for this call: its deadline, and the test's sleep when set.
engine::RetryPolicy retryFor(const EngineContext& ctx) {
    return engine::RetryPolicy(ctx.deadline, {}, 0, ctx.sleep);
}

Result<std::unique_ptr<PoolLocker::Guard>> lockPool(EngineContext& ctx, const std::string& pool,
                                                    std::optional<Clock::time_point> until = {}) {
    if (!ctx.locker) return std::unique_ptr<PoolLocker::Guard>();
    return ctx.locker->acquire(ctx.poolNamespace + "." + pool, until.value_or(ctx.deadline));
}

// Whereabouts returns the gateway with every address, inside the range or not (a pool that is
// a block of the subnet); allot only with addresses of its family.
std::optional<core::IpAddress> gatewayFor(const core::ValidatedConfig& cfg,
                                          const core::IpRange& r) {
    if (cfg.gateway && cfg.gateway->family() == r.family()) return cfg.gateway;
    return std::nullopt;
}

// Cleanup after a failed or finished attempt must still reach the store when the call's own
// deadline is spent; it gets a short grace of its own.
constexpr auto kCleanupGrace = std::chrono::seconds(3);

void allowCleanup(EngineContext& ctx) {
    ctx.store.setDeadline(std::max(ctx.deadline, Clock::now() + kCleanupGrace));
}

}  // namespace

CleanupGrace::CleanupGrace(EngineContext& ctx) : ctx_(ctx), saved_(ctx.deadline) {
    ctx_.deadline = std::max(saved_, Clock::now() + kCleanupGrace);
    ctx_.store.setDeadline(ctx_.deadline);
}

CleanupGrace::~CleanupGrace() {
    ctx_.deadline = saved_;
    ctx_.store.setDeadline(saved_);
}

namespace {

// Deletes reservations whose create answer was lost, if they turn out to be ours: a create the
// client stopped waiting for may still land, so a name not found yet is looked at again, three
// times a quarter second apart, within the cleanup grace.
void forgetUncertain(EngineContext& ctx, const std::vector<std::string>& names,
                     const core::Owner& owner) {
    if (names.empty()) return;
    allowCleanup(ctx);
    const engine::Backoff quarter{std::chrono::milliseconds(250), std::chrono::milliseconds(250)};
    engine::forgetUncertain(ctx.store, names, owner,
                            engine::RetryPolicy(Clock::time_point::max(), quarter, 3));
    ctx.store.setDeadline(ctx.deadline);
}

// Deletes the reservations of released addresses that still belong to their owner.
Result<void> dropReservations(
    EngineContext& ctx, const core::ValidatedConfig& cfg,
    const std::vector<std::pair<core::IpAddress, core::Owner>>& released) {
    if (!cfg.raw.enableOverlappingRanges) return {};
    for (const auto& [ip, owner] : released)
        if (auto d = engine::unreserve(ctx.store, {core::reservationName(ip, cfg.raw.networkName)},
                                       owner);
            !d)
            return d.error();
    return {};
}

// Removes the entries `match` picks (on each fresh read) from one pool under the node lock,
// then their reservations: the engine's one order. Returns the released addresses.
// A pool's release log that cannot be read, for the call's log (once per pool).
void noteUnreadable(EngineContext& ctx, const std::string& pool, const engine::TxResult& r) {
    if (!r.releaseLogUnreadable.empty())
        ctx.warnings.insert("IPPool " + ctx.poolNamespace + "/" + pool + ": " +
                            r.releaseLogUnreadable);
}

template <typename Match>
Result<std::vector<std::pair<core::IpAddress, core::Owner>>> releaseWhere(
    EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t, Match match) {
    using Released = std::vector<std::pair<core::IpAddress, core::Owner>>;
    auto guard = lockPool(ctx, t.pool);
    if (!guard) return guard.error();
    auto retry = retryFor(ctx);
    engine::PoolTransaction tx(ctx.store, retry, ctx.cache, ctx.poolNamespace);
    auto res = tx.run({t.pool, t.range.cidr(), false, false}, [&](const Pool& pool) {
        std::vector<core::Intent> out;
        for (const auto& [off, o] : pool.allocations)
            if (match(o)) out.push_back(core::Intent::releaseIfHeld(off, o));
        return Result<std::vector<core::Intent>>(std::move(out));
    });
    ctx.conflicts += tx.conflicts();
    if (!res) return res.error();
    noteUnreadable(ctx, t.pool, *res);
    Released released;
    for (const auto& o : res->outcomes)
        if (o.pick) released.emplace_back(o.pick->ip, o.released);
    if (auto d = dropReservations(ctx, cfg, released); !d) return d.error();
    return released;
}

constexpr size_t kMaxBatch = 64;  // requests one pool write serves
// A holder of the lock with less time than this left serves only itself: a batch must not
// fail at one caller's deadline what others still had time for.
constexpr auto kServeOthersMargin = std::chrono::seconds(2);
// How long a request taken by the holder of the lock waits for its answer past its own
// deadline: the holder's write ends by the holder's deadline, which starts no later and is
// the default budget unless a config raises it.
constexpr auto kServedWait = std::chrono::milliseconds(core::kDefaultDeadlineMs);

core::Intent toIntent(const core::ValidatedConfig& cfg, const Target& t, const ClaimRequest& r) {
    if (r.release) return core::Intent::release(r.owner);
    // Each request with its own config's window and gateway, never the holder's.
    auto in = r.window ? core::Intent::claim(r.owner, *r.window, r.gateway)
                       : core::Intent::claim(r.owner, t.range, gatewayFor(cfg, t.range));
    in.requested = r.requested;
    in.avoid = r.avoid;
    in.cooldownS = r.cooldownS;
    return in;
}

// A claim into a sealed slice pool (engine::TxTarget::unseal): only when a NodeSlicePool read
// newer than the seal still gives this node the pool's slice.
Result<void> confirmSlice(EngineContext& ctx, const Target& t, const std::string& token) {
    auto s = ctx.store.nodeSlice(t.nodeSlicePool, ctx.node, true);
    if (!s && s.code() != Errc::NotFound) return s.error();
    const std::string what = "IPPool " + t.pool + " is sealed: allot-gc's slice controller ";
    if (s && s->resourceVersion == token) {
        ctx.partSealed = true;
        return makeError(Errc::Transient, what + "is taking slice " + t.range.cidr().str() +
                                              " from node " + ctx.node + " (NodeSlicePool " +
                                              t.nodeSlicePool + " not rewritten yet)");
    }
    if (s)
        if (auto now = core::Cidr::parse(s->slice); now && *now == t.range.cidr()) return {};
    ctx.sliceMoved = true;
    return makeError(Errc::Transient, what + "took slice " + t.range.cidr().str() + " from node " +
                                          ctx.node + " (NodeSlicePool " + t.nodeSlicePool +
                                          " now gives it " + (s ? s->slice : std::string("none")) +
                                          ")");
}

// Applies a batch of claims (and releases) to one pool with one write, through the engine.
// Returns one answer per request; a request that fails on its own (exhaustion, a refused
// requested IP, nothing to release) does not hold back the others. An error is a failure of
// the whole batch (the store, the deadline), which says nothing about the others' requests.
Result<std::vector<Result<core::Pick>>> commitClaims(
    EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
    const std::vector<const ClaimRequest*>& batch) {
    std::vector<core::Intent> intents;
    for (const ClaimRequest* r : batch) intents.push_back(toIntent(cfg, t, *r));
    // Releases alone never create a pool.
    const bool anyClaim =
        std::any_of(batch.begin(), batch.end(), [](const ClaimRequest* r) { return !r->release; });
    auto retry = retryFor(ctx);
    engine::PoolTransaction tx(ctx.store, retry, ctx.cache, ctx.poolNamespace);
    engine::TxTarget target{t.pool, t.range.cidr(), anyClaim, true};
    if (!t.nodeSlicePool.empty())
        target.unseal = [&](const std::string& token) { return confirmSlice(ctx, t, token); };
    auto res =
        tx.run(target, [&](const Pool&) { return Result<std::vector<core::Intent>>(intents); });
    ctx.conflicts += tx.conflicts();
    if (!res) return res.error();
    noteUnreadable(ctx, t.pool, *res);
    std::vector<Result<core::Pick>> out;
    for (size_t i = 0; i < batch.size(); ++i)
        out.push_back(res->found ? std::move(res->outcomes[i].pick)
                                 : makeError(Errc::NotFound, "no pool"));
    return out;
}

// Applies `req` to the pool under the node lock. With a claim queue, the holder of the lock
// commits every request queued meanwhile in the same write, and a request served by another
// holder finds its answer without writing at all.
Result<core::Pick> claim(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                         ClaimRequest req) {
    req.window = t.range;
    req.gateway = gatewayFor(cfg, t.range);
    req.cooldownS = cfg.raw.cooldownS;
    // The locks are declared before the ticket so that they outlive it: the request leaves the
    // queue before the lock drops. The other way round, the next holder finds this finished
    // request still queued, its process alive, and serves it again: an entry written for a
    // container whose ADD may have failed (and been rolled back) meanwhile.
    Result<std::unique_ptr<PoolLocker::Guard>> guard = std::unique_ptr<PoolLocker::Guard>();
    Result<std::unique_ptr<PoolLocker::Guard>> served = std::unique_ptr<PoolLocker::Guard>();
    std::unique_ptr<ClaimQueue::Ticket> ticket;
    if (ctx.queue) {
        auto tk = ctx.queue->submit(ctx.poolNamespace + "." + t.pool, req);
        if (!tk) return tk.error();
        ticket = std::move(*tk);
    }
    guard = lockPool(ctx, t.pool);
    if (ticket)
        if (auto a = ctx.queue->answered(*ticket)) return std::move(*a);
    if (!guard) {
        // Out of time, unless the holder has taken the request: then the entry it is writing
        // is this call's, and giving up now would leave it behind for a failed ADD.
        if (!ticket || ctx.queue->withdraw(*ticket)) return guard.error();
        served = lockPool(ctx, t.pool, Clock::now() + kServedWait);
        if (auto a = ctx.queue->answered(*ticket)) {
            // Served late: what the call still has to do (its reservation) gets the grace a
            // cleanup gets, rather than fail at once and take the address back.
            ctx.deadline = std::max(ctx.deadline, Clock::now() + kCleanupGrace);
            ctx.store.setDeadline(ctx.deadline);
            return std::move(*a);
        }
        return served ? guard.error() : served.error();
    }
    std::vector<ClaimQueue::Waiting> others;
    if (ticket && ctx.deadline - Clock::now() > kServeOthersMargin)
        others = ctx.queue->waiting(*ticket, kMaxBatch - 1);
    std::vector<const ClaimRequest*> batch{&req};
    for (const auto& w : others) batch.push_back(&w.request);
    auto answers = commitClaims(ctx, cfg, t, batch);
    // A failed batch answers nobody else: each of them tries for itself, with its own time.
    if (!answers) {
        std::vector<std::string> ids;
        for (const auto& w : others) ids.push_back(w.id);
        if (ticket) ctx.queue->giveBack(*ticket, ids);
        return answers.error();
    }
    for (size_t i = 0; i < others.size(); ++i)
        ctx.queue->answer(*ticket, others[i].id, (*answers)[i + 1]);
    ctx.served += static_cast<int>(others.size());
    return std::move((*answers)[0]);
}

// Takes (containerId, ifName)'s entry out of one pool through the claim queue, then its
// reservation, if still the owner's. NotFound when the pool held nothing for it. The pool
// entry goes first so the release waits on no reservation call inside the node lock; a
// reservation left behind by a crash in between is an orphan the repair loop deletes.
Result<core::IpAddress> releaseOne(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                   const Target& t, const core::Owner& owner) {
    ClaimRequest req{owner, std::nullopt, {}, true};
    auto r = claim(ctx, cfg, t, req);
    if (!r) return r.error();
    if (auto d = dropReservations(ctx, cfg, {{r->ip, owner}}); !d) return d.error();
    return r->ip;
}

// One address from one range. The pool entry is written first (batched with the node's other
// ADDs), then the address is reserved cluster-wide, outside the node lock; an address found
// reserved through another pool is given back in the next claim and another one picked. No
// address is returned before both its pool entry and its reservation are this owner's.
Result<core::Pick> addOne(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                          const core::Owner& owner, std::optional<core::IpAddress> requested,
                          const std::function<void(core::IpAddress)>& reserving) {
    ClaimRequest req{owner, requested, {}};
    bool wrote = false;     // this call put an entry in the pool
    std::string uncertain;  // a reservation create whose answer was lost
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
        auto c = claim(ctx, cfg, t, req);
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
            holder = engine::reserve(ctx.store, name, owner, tookOver);
            if (holder) break;
            if (holder.code() == Errc::Transient) uncertain = name;
            if (!engine::retryable(holder.code()) || !retry.wait())
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

}  // namespace

Result<std::vector<Target>> resolveTargets(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                           const std::string& netName, bool fresh) {
    auto sources = core::sliceSources(cfg, netName);
    if (!sources) return sources.error();
    std::vector<std::optional<std::string>> slices(cfg.ranges.size());
    std::vector<std::string> refused(cfg.ranges.size());
    for (const auto& [i, sliceName] : *sources) {
        auto slice = ctx.store.nodeSlice(sliceName, ctx.node, fresh);
        if (!slice) {
            if (slice.code() == Errc::NotFound)
                return makeError(Errc::Transient, "no node slice allocated yet for node " +
                                                      ctx.node + " in NodeSlicePool " + sliceName +
                                                      " (" + slice.error().message +
                                                      "): allot-gc's leader assigns slices");
            return slice.error();
        }
        slices[i] = slice->slice;
        if (cfg.sliceParts > 1 && !slice->partsRefused.empty())
            refused[i] = "node_slice_parts " + std::to_string(cfg.sliceParts) +
                         " is refused on network " +
                         (cfg.raw.networkName.empty() ? netName : cfg.raw.networkName) +
                         " by allot-gc's slice controller (NodeSlicePool " + ctx.poolNamespace +
                         "/" + sliceName + "): " + slice->partsRefused;
    }
    auto targets = core::poolTargets(cfg, netName, ctx.node, slices);
    if (!targets) return targets.error();
    std::vector<Target> out;
    for (auto& t : *targets)
        out.push_back({std::move(t.range), std::move(t.pool), std::move(t.nodeSlicePool),
                       t.rangeIndex, refused[t.rangeIndex]});
    return out;
}

namespace {

using Parts = std::vector<const Target*>;

// The targets grouped by range, in order: each range's parts (one, unless node_slice_parts).
std::vector<Parts> byRange(const std::vector<Target>& targets) {
    std::vector<Parts> out;
    for (const auto& t : targets) {
        if (out.size() <= t.rangeIndex) out.resize(t.rangeIndex + 1);
        out[t.rangeIndex].push_back(&t);
    }
    return out;
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

// The parts a DEL releases in: each one this node's copy shows the owner's entry in, or has no
// copy of. Every write this node makes updates its copy (or drops it when it cannot), and no
// other writer adds this node's containers, so a copy without the entry is trusted.
Parts delParts(EngineContext& ctx, const Parts& parts, const core::Owner& owner) {
    if (parts.size() < 2 || !ctx.cache) return parts;
    Parts out;
    for (const Target* t : parts) {
        auto copy = ctx.cache->load(ctx.poolNamespace, t->pool);
        if (!copy || core::findHolder(copy->allocations, owner.containerId, owner.ifName))
            out.push_back(t);
    }
    return out;
}

// The order to try a slice's parts in: one whose copy on this node holds an address for the
// owner first (the same ADD again, a new sandbox of the pod, a claim's migration target), then,
// in address order, those with room in their copy and those this node has no copy of (not
// created yet, or its last write here failed), then the full ones (a copy may be stale: the
// transaction reads a part fresh before it calls it full). So the lowest free address is found
// without reading a full part again, and without a read per part on every ADD of a burst. A
// part without a copy is not searched for the owner: an ADD again whose first write's answer
// was lost can get a second address in an earlier part; the pod's DEL frees both.
Parts partOrder(EngineContext& ctx, const core::ValidatedConfig& cfg, const Parts& parts,
                const core::Owner& owner) {
    Parts held, room, rest;
    for (const Target* t : parts) {
        std::optional<store::Pool> copy;
        if (ctx.cache) copy = ctx.cache->load(ctx.poolNamespace, t->pool);
        if (!copy)
            room.push_back(t);
        else if (holdsFor(*copy, owner))
            held.push_back(t);
        else if (core::freeCount(t->range, copy->allocations, gatewayFor(cfg, t->range)) > 0)
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
    EngineContext& ctx, const core::ValidatedConfig& cfg, const Parts& parts,
    const core::Owner& owner, const std::optional<core::IpAddress>& want,
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
        ctx.partSealed = false;
        auto pick = addOne(ctx, cfg, *t, owner, want, reserving);
        if (pick) return std::make_pair(std::move(*pick), t);
        if (!failed || failed->code == Errc::Exhausted) failed = pick.error();
        if (pick.code() != Errc::Exhausted && !ctx.partSealed) return pick.error();
    }
    return *failed;
}

Result<CniResult> addTo(EngineContext& ctx, const core::ValidatedConfig& cfg, const NetConf& net,
                        const core::Owner& owner, const std::vector<core::IpAddress>& requested,
                        bool fresh) {
    auto targets = resolveTargets(ctx, cfg, net.name, fresh);
    if (!targets) return targets.error();
    // Before anything is written: a slice in parts beside a config that reads only part 0
    // could hand out an address a part holds (core::refuseSliceParts).
    for (const Target& t : *targets)
        if (!t.partsRefused.empty()) return makeError(Errc::InvalidConfig, t.partsRefused);
    const std::vector<Parts> ranges = byRange(*targets);
    auto want = placeRequested(ranges, requested);
    if (!want) return want.error();

    CniResult result;
    std::vector<const Target*> taken;  // parts newly allocated by this call, for rollback
    for (size_t i = 0; i < ranges.size(); ++i) {
        const Target& t = *ranges[i][0];
        std::function<void(core::IpAddress)> reserving;
        if (ctx.beforeReserve && i + 1 == ranges.size())
            reserving = [&](core::IpAddress ip) {
                auto ips = result.ips;
                ips.push_back({ip, t.range.cidr().length(), gatewayFor(cfg, t.range)});
                ctx.beforeReserve(ips);
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
        result.ips.push_back({p.ip, t.range.cidr().length(), gatewayFor(cfg, part->range)});
        ctx.pools.emplace_back(p.ip, part->pool);
    }
    for (const auto& [sip, gw] : cfg.staticAddresses)
        result.ips.push_back({sip.ip, sip.prefix, gw});
    result.routes = net.routes;
    result.dns = net.dns;
    return result;
}

}  // namespace

Result<CniResult> add(EngineContext& ctx, const core::ValidatedConfig& cfg, const NetConf& net,
                      const core::Owner& owner, const std::vector<core::IpAddress>& requested) {
    auto r = addTo(ctx, cfg, net, owner, requested, false);
    if (r || !ctx.sliceMoved) return r;
    // The node's slice came from a stale copy (what the ADD took is rolled back): read it.
    ctx.sliceMoved = false;
    ctx.pools.clear();  // those of the attempt rolled back
    return addTo(ctx, cfg, net, owner, requested, true);
}

Result<bool> del(EngineContext& ctx, const core::ValidatedConfig& cfg, const core::Owner& owner) {
    JournalEntry pending{
        ctx.poolNamespace, {}, cfg.raw.networkName, owner.containerId, owner.ifName, owner.podRef,
        ctx.node,          {}};
    auto journalIt = [&](const core::Error& why) -> Result<bool> {
        ctx.journalReason = why.message;
        if (!ctx.journal) return why;
        auto r = ctx.journal->record(pending);
        if (!r)
            return makeError(Errc::Transient,
                             why.message + "; and the journal failed: " + r.error().message);
        return true;
    };
    auto targets = resolveTargets(ctx, cfg, "");
    if (!targets) return journalIt(targets.error());  // no pools named: allot-gc searches them
    std::optional<core::Error> firstError;
    // Every failure is unfinished work for allot-gc, not a reason to block teardown: a store
    // that stays away, a 401/403 after a restart, a pool allot cannot decode.
    auto unfinished = [&](const core::Error& e) {
        if (!firstError) firstError = e;
    };
    // The pool entry, through the node's claim queue (one write for every release and ADD
    // waiting on this pool), then the reservation. False: the pool held nothing for the owner.
    auto releaseIn = [&](const Target& t) {
        auto r = claim(ctx, cfg, t, ClaimRequest{owner, std::nullopt, {}, true});
        if (!r) {
            if (r.code() == Errc::NotFound) return false;
            unfinished(r.error());
            pending.pools.push_back(t.pool);  // allot-gc drops the reservations of what it releases
            return true;
        }
        ctx.pools.emplace_back(r->ip, t.pool);
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
Result<IpResult> checkRange(EngineContext& ctx, const core::ValidatedConfig& cfg,
                            const Parts& parts, const core::Owner& owner,
                            const std::vector<IpResult>& prev) {
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

Result<std::vector<IpResult>> check(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                    const NetConf& net, const core::Owner& owner) {
    if (!net.prevResult.isObject())
        return makeError(Errc::InvalidConfig, "\"prevResult\" is required for CHECK");
    auto prev = prevResultIps(net.prevResult);
    auto targets = resolveTargets(ctx, cfg, net.name);
    if (!targets) return targets.error();
    std::vector<IpResult> out;
    for (const Parts& parts : byRange(*targets)) {
        auto r = checkRange(ctx, cfg, parts, owner, prev);
        if (!r) return r.error();
        out.push_back(*r);
    }
    return out;
}

Result<size_t> gc(EngineContext& ctx, const core::ValidatedConfig& cfg, const std::string& netName,
                  const std::vector<Attachment>& valid) {
    auto targets = resolveTargets(ctx, cfg, netName);
    if (!targets) return targets.error();
    size_t total = 0;
    for (const auto& t : *targets) {
        auto rel = releaseWhere(ctx, cfg, t, [&](const core::Owner& x) {
            // Only what provably belongs to this node and this network.
            if (x.node.empty() || x.node != ctx.node) return false;
            if (x.network.empty() || x.network != netName) return false;
            return std::none_of(valid.begin(), valid.end(), [&](const Attachment& a) {
                return a.containerId == x.containerId && a.ifName == x.ifName;
            });
        });
        if (!rel) return rel.error();
        total += rel->size();
    }
    return total;
}

Result<void> status(EngineContext& ctx, const core::ValidatedConfig& cfg) {
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

}  // namespace allot::plugin
