#include "engine/commit.h"

#include <algorithm>
#include <memory>

#include "core/naming.h"
#include "engine/pool_transaction.h"
#include "engine/reservations.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;
using store::Pool;

RetryPolicy retryFor(const Context& ctx) {
    return RetryPolicy(ctx.deadline, {}, 0, ctx.sleep);
}

namespace {

using Guard = std::unique_ptr<PoolLocker::Guard>;

Result<Guard> lockPool(Context& ctx, const std::string& pool,
                       std::optional<Clock::time_point> until = {}) {
    if (!ctx.locker) return Guard();
    return ctx.locker->acquire(ctx.poolNamespace + "." + pool, until.value_or(ctx.deadline));
}

// A pool's release log that cannot be read, for the call's log (once per pool).
void noteUnreadable(Context& ctx, const std::string& pool, const TxResult& r) {
    if (!r.releaseLogUnreadable.empty())
        ctx.report.warnings.insert("IPPool " + ctx.poolNamespace + "/" + pool + ": " +
                                   r.releaseLogUnreadable);
}

constexpr size_t kMaxBatch = 64;  // requests one pool write serves
// A holder of the lock with less time than this left serves only itself: a batch must not
// fail at one caller's deadline what others still had time for.
constexpr auto kServeOthersMargin = std::chrono::seconds(2);
// How long a request taken by the holder of the lock waits for its answer past its own
// deadline: the holder's write ends by the holder's deadline, which starts no later and is
// the default budget unless a config raises it.
constexpr auto kServedWait = std::chrono::milliseconds(core::kDefaultDeadlineMs);

core::Intent toIntent(const core::ValidatedConfig& cfg, const Target& t, const CommitRequest& r) {
    if (r.release) return core::Intent::release(r.owner);
    // Each request with its own config's window and gateway, never the holder's.
    auto in = r.window ? core::Intent::take(r.owner, *r.window, r.gateway)
                       : core::Intent::take(r.owner, t.range, gatewayFor(cfg, t.range));
    in.requested = r.requested;
    in.avoid = r.avoid;
    in.cooldownS = r.cooldownS;
    return in;
}

// A take into a sealed slice pool (TxTarget::unseal): only when a NodeSlicePool read newer
// than the seal still gives this node the pool's slice.
Result<void> confirmSlice(Context& ctx, const Target& t, const std::string& token) {
    auto s = ctx.store.nodeSlice(t.nodeSlicePool, ctx.node, true);
    if (!s && s.code() != Errc::NotFound) return s.error();
    const std::string what = "IPPool " + t.pool + " is sealed: allot-gc's slice controller ";
    if (s && s->resourceVersion == token)
        return makeError(Errc::SliceSealed, what + "is taking slice " + t.range.cidr().str() +
                                                " from node " + ctx.node + " (NodeSlicePool " +
                                                t.nodeSlicePool + " not rewritten yet)");
    if (s)
        if (auto now = core::Cidr::parse(s->slice); now && *now == t.range.cidr()) return {};
    return makeError(Errc::SliceMoved, what + "took slice " + t.range.cidr().str() + " from node " +
                                           ctx.node + " (NodeSlicePool " + t.nodeSlicePool +
                                           " now gives it " + (s ? s->slice : std::string("none")) +
                                           ")");
}

// Applies a batch of requests (takes and releases) to one pool with one write. Returns one answer
// per request; a request that fails on its own (exhaustion, a refused requested IP, nothing to
// release) does not hold back the others. An error is a failure of the whole batch (the
// store, the deadline), which says nothing about the others' requests.
Result<std::vector<Result<core::Pick>>> commitBatch(
    Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
    const std::vector<const CommitRequest*>& batch) {
    std::vector<core::Intent> intents;
    for (const CommitRequest* r : batch) intents.push_back(toIntent(cfg, t, *r));
    // Releases alone never create a pool.
    const bool anyClaim =
        std::any_of(batch.begin(), batch.end(), [](const CommitRequest* r) { return !r->release; });
    auto retry = retryFor(ctx);
    PoolTransaction tx(ctx.store, retry, ctx.cache, ctx.poolNamespace);
    TxTarget target{t.pool, t.range.cidr(), anyClaim, true};
    if (!t.nodeSlicePool.empty())
        target.unseal = [&](const std::string& token) { return confirmSlice(ctx, t, token); };
    auto res =
        tx.run(target, [&](const Pool&) { return Result<std::vector<core::Intent>>(intents); });
    ctx.report.conflicts += tx.conflicts();
    if (!res) return res.error();
    noteUnreadable(ctx, t.pool, *res);
    std::vector<Result<core::Pick>> out;
    for (size_t i = 0; i < batch.size(); ++i)
        out.push_back(res->found ? std::move(res->outcomes[i].pick)
                                 : makeError(Errc::NotFound, "no pool"));
    return out;
}

// The lock holder's write: `req` and what others queued meanwhile (when time allows), each
// answered; a failed batch answers nobody else, each of them tries for itself.
Result<core::Pick> commitAsHolder(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                                  const CommitRequest& req, CommitQueue::Ticket* ticket) {
    std::vector<CommitQueue::Waiting> others;
    if (ticket && ctx.deadline - Clock::now() > kServeOthersMargin)
        others = ctx.queue->waiting(*ticket, kMaxBatch - 1);
    std::vector<const CommitRequest*> batch{&req};
    for (const auto& w : others) batch.push_back(&w.request);
    auto answers = commitBatch(ctx, cfg, t, batch);
    if (!answers) {
        std::vector<std::string> ids;
        for (const auto& w : others) ids.push_back(w.id);
        if (ticket) ctx.queue->giveBack(*ticket, ids);
        return answers.error();
    }
    for (size_t i = 0; i < others.size(); ++i)
        ctx.queue->answer(*ticket, others[i].id, (*answers)[i + 1]);
    ctx.report.served += static_cast<int>(others.size());
    return std::move((*answers)[0]);
}

}  // namespace

Result<core::Pick> commit(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                          CommitRequest req, std::optional<CleanupGrace>& grace) {
    req.window = t.range;
    req.gateway = gatewayFor(cfg, t.range);
    req.cooldownS = cfg.raw.cooldownS;
    // The locks are declared before the ticket so that they outlive it: the request leaves the
    // queue before the lock drops. The other way round, the next holder finds this finished
    // request still queued, its process alive, and serves it again: an entry written for a
    // container whose ADD may have failed (and been rolled back) meanwhile.
    Result<Guard> guard = Guard();
    Result<Guard> served = Guard();
    std::unique_ptr<CommitQueue::Ticket> ticket;
    if (ctx.queue) {
        auto tk = ctx.queue->submit(ctx.poolNamespace + "." + t.pool, req);
        if (!tk) return tk.error();
        ticket = std::move(*tk);
    }
    guard = lockPool(ctx, t.pool);
    if (ticket)
        if (auto a = ctx.queue->answered(*ticket)) return std::move(*a);
    if (guard) return commitAsHolder(ctx, cfg, t, req, ticket.get());
    // Out of time, unless the holder has taken the request: then the entry it is writing is
    // this call's, and giving up now would leave it behind for a failed ADD.
    if (!ticket || ctx.queue->withdraw(*ticket)) return guard.error();
    served = lockPool(ctx, t.pool, Clock::now() + kServedWait);
    if (auto a = ctx.queue->answered(*ticket)) {
        // Served late: what the call still has to do (its reservation) gets the grace a
        // cleanup gets, rather than fail at once and take the address back.
        if (!grace) grace.emplace(ctx);
        return std::move(*a);
    }
    return served ? guard.error() : served.error();
}

Result<void> dropReservations(Context& ctx, const core::ValidatedConfig& cfg,
                              const Released& released) {
    if (!cfg.raw.enableOverlappingRanges) return {};
    for (const auto& [ip, owner] : released)
        if (auto d = unreserve(ctx.store, {core::reservationName(ip, cfg.raw.networkName)}, owner);
            !d)
            return d.error();
    return {};
}

// The pool entry goes first so the release waits on no reservation call inside the node lock;
// a reservation left behind by a crash in between is an orphan the repair loop deletes.
Result<core::IpAddress> releaseOne(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                                   const core::Owner& owner) {
    std::optional<CleanupGrace> grace;
    auto r = commit(ctx, cfg, t, CommitRequest{owner, std::nullopt, {}, true}, grace);
    if (!r) return r.error();
    if (auto d = dropReservations(ctx, cfg, {{r->ip, owner}}); !d) return d.error();
    return r->ip;
}

Result<Released> releaseWhere(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                              const std::function<bool(const core::Owner&)>& match) {
    auto guard = lockPool(ctx, t.pool);
    if (!guard) return guard.error();
    auto retry = retryFor(ctx);
    PoolTransaction tx(ctx.store, retry, ctx.cache, ctx.poolNamespace);
    auto res = tx.run({t.pool, t.range.cidr(), false, false}, [&](const Pool& pool) {
        std::vector<core::Intent> out;
        for (const auto& [off, o] : pool.allocations)
            if (match(o)) out.push_back(core::Intent::releaseIfHeld(off, o));
        return Result<std::vector<core::Intent>>(std::move(out));
    });
    ctx.report.conflicts += tx.conflicts();
    if (!res) return res.error();
    noteUnreadable(ctx, t.pool, *res);
    Released released;
    for (const auto& o : res->outcomes)
        if (o.pick) released.emplace_back(o.pick->ip, o.released);
    if (auto d = dropReservations(ctx, cfg, released); !d) return d.error();
    return released;
}

// A create the client stopped waiting for may still land, so a name not found yet is looked
// at again, three times a quarter second apart, within the cleanup grace.
void forgetUncertain(Context& ctx, const std::vector<std::string>& names,
                     const core::Owner& owner) {
    if (names.empty()) return;
    CleanupGrace grace(ctx);
    const Backoff quarter{std::chrono::milliseconds(250), std::chrono::milliseconds(250)};
    engine::forgetUncertain(ctx.store, names, owner,
                            RetryPolicy(Clock::time_point::max(), quarter, 3));
}

}  // namespace allot::engine
