#include "plugin/ipam.h"

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include "core/ownership.h"
#include "core/naming.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;
using core::Result;
using store::Pool;

namespace {

// Backoff with full jitter: 5 ms doubling to 400 ms. Returns false when the deadline would
// pass before the next attempt.
bool backoff(EngineContext& ctx, int attempt) {
    static thread_local std::minstd_rand rng{std::random_device{}()};
    int capMs = std::min(400, 5 << std::min(attempt, 7));
    std::uniform_int_distribution<int> d(capMs / 2, capMs);
    auto wait = std::chrono::milliseconds(d(rng));
    if (Clock::now() + wait >= ctx.deadline) return false;
    if (ctx.sleep) ctx.sleep(wait);
    else std::this_thread::sleep_for(wait);
    return true;
}

bool retryable(Errc c) { return c == Errc::Conflict || c == Errc::Transient; }

core::Error gaveUp(const core::Error& last, int attempts) {
    return makeError(last.code == Errc::Conflict ? Errc::Transient : last.code,
                     last.message + " (gave up after " + std::to_string(attempts) +
                         " attempts at the deadline)");
}

Result<std::unique_ptr<PoolLocker::Guard>> lockPool(EngineContext& ctx, const std::string& pool) {
    if (!ctx.locker) return std::unique_ptr<PoolLocker::Guard>();
    return ctx.locker->acquire(ctx.poolNamespace + "." + pool, ctx.deadline);
}

Result<void> checkRange(const Pool& pool, const core::IpRange& range) {
    auto stored = core::Cidr::parse(pool.range);
    if (!stored || !(*stored == range.cidr())) {
        return makeError(Errc::InvalidConfig,
                         "pool name collision: IPPool " + pool.name + " holds range \"" + pool.range +
                             "\", not this network's " + range.cidr().str());
    }
    return {};
}

// Reads the pool, from the node cache when allowed; creates it when missing.
Result<Pool> readPool(EngineContext& ctx, const Target& t, bool allowCache, bool create,
                      bool& fromCache) {
    fromCache = false;
    if (allowCache && ctx.cache) {
        if (auto c = ctx.cache->load(ctx.poolNamespace, t.pool); c && c->range == t.range.cidr().str()) {
            fromCache = true;
            return *c;
        }
    }
    auto p = ctx.store.getPool(t.pool);
    if (p || p.code() != Errc::NotFound || !create) return p;
    Pool fresh{t.pool, t.range.cidr().str(), {}, {}};
    auto made = ctx.store.createPool(fresh);
    if (!made && made.code() == Errc::AlreadyExists) return ctx.store.getPool(t.pool);
    return made;
}

// Whereabouts returns the gateway with every address, inside the range or not (a pool that is
// a block of the subnet); allot only with addresses of its family.
std::optional<core::IpAddress> gatewayFor(const core::ValidatedConfig& cfg, const core::IpRange& r) {
    if (cfg.gateway && cfg.gateway->family() == r.family()) return cfg.gateway;
    return std::nullopt;
}

// Cleanup after a failed or finished attempt must still reach the store when the call's own
// deadline is spent; it gets a short grace of its own.
constexpr auto kCleanupGrace = std::chrono::seconds(3);

void allowCleanup(EngineContext& ctx) {
    ctx.store.setDeadline(std::max(ctx.deadline, Clock::now() + kCleanupGrace));
}

// Deletes reservations whose create outcome is unknown, but only those that are ours. A create
// the client stopped waiting for may still be in flight at the server, so a name not found yet
// is looked at again after a short pause (there is no event to wait for), within the grace.
void forgetUncertain(EngineContext& ctx, const std::vector<std::string>& names, const core::Owner& owner) {
    if (names.empty()) return;
    allowCleanup(ctx);
    for (const auto& n : names) {
        for (int look = 0; look < 3; ++look) {
            if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
            auto r = ctx.store.getReservation(n);
            if (!r && r.code() == Errc::NotFound) continue;
            if (r && r->containerId == owner.containerId && r->ifName == owner.ifName)
                (void)ctx.store.deleteReservation(n, r->resourceVersion);
            break;
        }
    }
    ctx.store.setDeadline(ctx.deadline);
}

// Deletes the reservations of released addresses that still belong to their owner.
Result<void> dropReservations(EngineContext& ctx, const core::ValidatedConfig& cfg,
                              const std::vector<std::pair<core::IpAddress, core::Owner>>& released) {
    if (!cfg.raw.enableOverlappingRanges) return {};
    for (const auto& [ip, owner] : released) {
        std::string name = core::reservationName(ip, cfg.raw.networkName);
        auto r = ctx.store.getReservation(name);
        if (!r) {
            if (r.code() == Errc::NotFound) continue;
            return r.error();
        }
        if (!store::reservedFor(*r, owner)) continue;
        auto d = ctx.store.deleteReservation(name, r->resourceVersion);
        if (!d && d.code() != Errc::NotFound && d.code() != Errc::Conflict) return d.error();
    }
    return {};
}

// Removes entries matching `match` from one pool; returns the released addresses.
// The reservations go first: an address is never free in the pool while its reservation
// still blocks it elsewhere, and a DEL retried after a lost answer still finds the pool entry
// (and with it the addresses whose reservations to delete).
template <typename Match>
Result<std::vector<std::pair<core::IpAddress, core::Owner>>> releaseWhere(
    EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t, bool allowCache,
    Match match) {
    using Released = std::vector<std::pair<core::IpAddress, core::Owner>>;
    auto guard = lockPool(ctx, t.pool);
    if (!guard) return guard.error();
    int attempt = 0;
    core::Error last{Errc::Transient, "no attempt made"};
    for (;;) {
        if (Clock::now() >= ctx.deadline) return gaveUp(last, attempt);
        bool fromCache = false;
        auto pool = readPool(ctx, t, allowCache, false, fromCache);
        if (!pool && pool.code() == Errc::NotFound) return Released{};
        if (!pool) {
            last = pool.error();
            if (!retryable(last.code)) return last;
            if (!backoff(ctx, attempt++)) return gaveUp(last, attempt);
            continue;
        }
        if (auto ok = checkRange(*pool, t.range); !ok) return ok.error();
        Released released;
        Pool next = *pool;
        for (auto it = next.allocations.begin(); it != next.allocations.end();) {
            if (match(it->second)) {
                released.emplace_back(t.range.cidr().at(it->first), it->second);
                it = next.allocations.erase(it);
            } else {
                ++it;
            }
        }
        if (released.empty()) {
            if (fromCache) {
                allowCache = false;
                continue;
            }
            return released;
        }
        // Stale cached data is harmless here: a reservation is deleted only while it is still
        // this owner's, and a stale write fails with Conflict.
        if (auto d = dropReservations(ctx, cfg, released); !d) {
            last = d.error();
            if (!retryable(last.code)) return last;
            if (!backoff(ctx, attempt++)) return gaveUp(last, attempt);
            continue;
        }
        auto written = ctx.store.updatePool(next);
        if (written) {
            if (ctx.cache) ctx.cache->save(ctx.poolNamespace, *written);
            return released;
        }
        last = written.error();
        if (ctx.cache) ctx.cache->drop(ctx.poolNamespace, t.pool);
        allowCache = false;
        if (written.code() == Errc::Conflict) ++ctx.conflicts;
        if (written.code() == Errc::NotFound) return Released{};
        if (!retryable(last.code)) return last;
        if (!backoff(ctx, attempt++)) return gaveUp(last, attempt);
    }
}


constexpr size_t kMaxBatch = 64;  // requests one pool write serves
// A holder of the lock with less time than this left serves only itself: a batch must not
// fail at one caller's deadline what others still had time for.
constexpr auto kServeOthersMargin = std::chrono::seconds(2);

core::Error deadlineError(const core::Error& last, int attempts) {
    if (attempts == 0)
        return makeError(Errc::Transient, "the deadline passed before the pool could be read or written");
    return gaveUp(last, attempts);
}

// Applies a batch of claims (and releases) to one pool with one write, retrying conflicts on
// fresh data. Returns one answer per request; a request that fails on its own (exhaustion, a
// refused requested IP, nothing to release) does not hold back the others. An error is a
// failure of the whole batch (the store, the deadline), which says nothing about the others'
// requests.
Result<std::vector<Result<core::Pick>>> commitClaims(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                                     const Target& t,
                                                     const std::vector<const ClaimRequest*>& batch) {
    std::vector<Result<core::Pick>> out(batch.size(), makeError(Errc::Internal, "not answered"));
    bool allowCache = true;
    int attempt = 0;
    core::Error last{Errc::Transient, "no attempt made"};
    auto retry = [&](const core::Error& e) {
        last = e;
        return retryable(e.code) && backoff(ctx, attempt++);
    };
    auto givenUp = [&] { return attempt > 1 ? gaveUp(last, attempt) : last; };

    // Releases alone never create a pool.
    const bool anyClaim = std::any_of(batch.begin(), batch.end(), [](const ClaimRequest* r) { return !r->release; });
    for (;;) {
        if (Clock::now() >= ctx.deadline) return deadlineError(last, attempt);
        bool fromCache = false;
        auto pool = readPool(ctx, t, allowCache, anyClaim, fromCache);
        if (!pool && pool.code() == Errc::NotFound && !anyClaim) {
            for (auto& o : out) o = makeError(Errc::NotFound, "no pool");
            return out;
        }
        if (!pool) {
            if (!retry(pool.error())) return givenUp();
            continue;
        }
        if (auto ok = checkRange(*pool, t.range); !ok) return ok.error();

        Pool next = *pool;
        bool changed = false, stale = false;
        for (size_t i = 0; i < batch.size() && !stale; ++i) {
            const ClaimRequest& r = *batch[i];
            auto held = core::findHolder(next.allocations, r.owner.containerId, r.owner.ifName);
            if (r.release) {
                stale = fromCache && !held;  // "nothing to release": fresh data only
                if (held) {
                    out[i] = core::Pick{t.range.cidr().at(*held), *held, core::PickKind::Existing};
                    core::release(next.allocations, r.owner.containerId, r.owner.ifName);
                    changed = true;
                } else {
                    out[i] = makeError(Errc::NotFound, "nothing held");
                }
                continue;
            }
            std::set<core::u128> skip(r.avoid.begin(), r.avoid.end());
            if (held && skip.count(*held)) {
                next.allocations.erase(*held);
                changed = true;
            }
            // Each request with its own config's window and gateway, never the holder's.
            const core::IpRange& window = r.window ? *r.window : t.range;
            const auto gateway = r.window ? r.gateway : gatewayFor(cfg, t.range);
            auto p = core::pick(window, next.allocations, {r.owner, r.requested, gateway, &skip});
            // Exhaustion, a refused request or an answer without a write: fresh data only.
            stale = fromCache && (!p || p->kind == core::PickKind::Existing);
            changed = changed || (p && p->kind != core::PickKind::Existing);
            out[i] = std::move(p);
        }
        if (stale) {
            allowCache = false;
            continue;
        }
        if (!changed) return out;
        auto written = ctx.store.updatePool(next);
        if (written) {
            if (ctx.cache) ctx.cache->save(ctx.poolNamespace, *written);
            return out;
        }
        if (ctx.cache) ctx.cache->drop(ctx.poolNamespace, t.pool);
        allowCache = false;
        if (written.code() == Errc::Conflict) ++ctx.conflicts;
        if (written.code() == Errc::NotFound) continue;
        core::Error e = written.error();
        // The pool object, not the range, is out of room (the store sent nothing, or etcd
        // refused the object): CNI code 11, at once, with the store's sizes.
        if (e.code == Errc::Exhausted || (e.code == Errc::Invalid && e.message.find("too large") != std::string::npos))
            return makeError(Errc::Transient, e.message +
                                                  "; split the network with node_slice_size or smaller ranges");
        if (!retry(e)) return givenUp();
    }
}

// Applies `req` to the pool under the node lock. With a claim queue, the holder of the lock
// commits every request queued meanwhile in the same write, and a request served by another
// holder finds its answer without writing at all.
Result<core::Pick> claim(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                         ClaimRequest req) {
    req.window = t.range;
    req.gateway = gatewayFor(cfg, t.range);
    std::unique_ptr<ClaimQueue::Ticket> ticket;
    if (ctx.queue) {
        auto tk = ctx.queue->submit(ctx.poolNamespace + "." + t.pool, req);
        if (!tk) return tk.error();
        ticket = std::move(*tk);
    }
    auto guard = lockPool(ctx, t.pool);
    if (ticket)
        if (auto a = ctx.queue->answered(*ticket)) return std::move(*a);
    if (!guard) return guard.error();
    std::vector<ClaimQueue::Waiting> others;
    if (ticket && ctx.deadline - Clock::now() > kServeOthersMargin)
        others = ctx.queue->waiting(*ticket, kMaxBatch - 1);
    std::vector<const ClaimRequest*> batch{&req};
    for (const auto& w : others) batch.push_back(&w.request);
    auto answers = commitClaims(ctx, cfg, t, batch);
    // A failed batch answers nobody else: each of them tries for itself, with its own time.
    if (!answers) return answers.error();
    for (size_t i = 0; i < others.size(); ++i) ctx.queue->answer(*ticket, others[i].id, (*answers)[i + 1]);
    ctx.served += static_cast<int>(others.size());
    return std::move((*answers)[0]);
}

// Takes (containerId, ifName)'s entry out of one pool through the claim queue, then its
// reservation, if still the owner's. NotFound when the pool held nothing for it. The pool
// entry goes first so the release waits on no reservation call inside the node lock; a
// reservation left behind by a crash in between is an orphan the repair loop deletes.
Result<core::IpAddress> releaseOne(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                                   const core::Owner& owner) {
    ClaimRequest req{owner, std::nullopt, {}, true};
    auto r = claim(ctx, cfg, t, req);
    if (!r) return r.error();
    if (auto d = dropReservations(ctx, cfg, {{r->ip, owner}}); !d) return d.error();
    return r->ip;
}

// Claims `name` cluster-wide for `owner`. Returns "" when the reservation is the owner's (made
// now or earlier), else who holds it.
Result<std::string> reserve(EngineContext& ctx, const std::string& name, const core::Owner& owner) {
    for (int look = 0;; ++look) {
        auto made = ctx.store.createReservation({name, owner.containerId, owner.podRef, owner.ifName, {}});
        if (made) return std::string();
        if (made.code() != Errc::AlreadyExists) return made.error();
        auto existing = ctx.store.getReservation(name);
        if (existing) {
            const core::Owner held{existing->containerId, existing->podRef, existing->ifName, "", "", ""};
            if (core::heldBy(held, owner)) return std::string();
            // An earlier sandbox of this pod holds it (a handover): record the new container on
            // it, so that the old one's release never takes it (core/ownership.h).
            if (core::mayTakeOver(held, owner) && look < 3) {
                auto d = ctx.store.deleteReservation(name, existing->resourceVersion);
                if (d || d.code() == Errc::NotFound || d.code() == Errc::Conflict) continue;
                return d.error();
            }
            return existing->podRef.empty() ? "container " + existing->containerId : existing->podRef;
        }
        // Deleted between the two calls: create again, a few times.
        if (existing.code() != Errc::NotFound || look == 3) return existing.error();
    }
}

// One address from one range. The pool entry is written first (batched with the node's other
// ADDs), then the address is reserved cluster-wide, outside the node lock; an address found
// reserved through another pool is given back in the next claim and another one picked. No
// address is returned before both its pool entry and its reservation are this owner's.
Result<core::Pick> addOne(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                          const core::Owner& owner, std::optional<core::IpAddress> requested) {
    ClaimRequest req{owner, requested, {}};
    bool wrote = false;     // this call put an entry in the pool
    std::string uncertain;  // a reservation create whose answer was lost
    int attempt = 0;
    core::Error last{Errc::Transient, "no attempt made"};

    // Every way out without an address takes back what this call wrote.
    auto fail = [&](core::Error e) -> Result<core::Pick> {
        if (!wrote && uncertain.empty()) return e;
        auto saved = ctx.deadline;
        ctx.deadline = std::max(ctx.deadline, Clock::now() + kCleanupGrace);
        if (!uncertain.empty()) forgetUncertain(ctx, {uncertain}, owner);
        allowCleanup(ctx);
        if (wrote) (void)releaseOne(ctx, cfg, t, owner);
        ctx.deadline = saved;
        ctx.store.setDeadline(saved);
        return e;
    };

    for (;;) {
        auto c = claim(ctx, cfg, t, req);
        if (!c) return fail(c.error());
        wrote = wrote || c->kind != core::PickKind::Existing;
        if (!cfg.raw.enableOverlappingRanges) return c;
        const std::string name = core::reservationName(c->ip, cfg.raw.networkName);
        Result<std::string> holder = std::string();
        for (;;) {
            holder = reserve(ctx, name, owner);
            if (holder) break;
            if (holder.code() == Errc::Transient) uncertain = name;
            last = holder.error();
            if (!retryable(last.code) || !backoff(ctx, attempt++))
                return fail(attempt > 1 ? gaveUp(last, attempt) : last);
        }
        if (holder->empty()) return c;
        if (uncertain == name) uncertain.clear();  // it was not ours after all
        if (requested)
            return fail(makeError(Errc::InvalidConfig, "requested IP " + c->ip.str() +
                                                           " is reserved by an overlapping range for " + *holder));
        req.avoid.push_back(c->offset);
    }
}

}  // namespace

Result<std::vector<Target>> resolveTargets(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                           const std::string& netName) {
    std::vector<Target> out;
    for (const auto& r : cfg.ranges) {
        if (!cfg.sliceSize) {
            out.push_back({r, core::poolName(r.cidr(), cfg.raw.networkName, "")});
            continue;
        }
        std::string sliceName = cfg.raw.networkName.empty() ? netName : cfg.raw.networkName;
        if (sliceName.empty())
            return makeError(Errc::InvalidConfig, "node_slice_size needs \"network_name\" or a network \"name\"");
        auto slice = ctx.store.nodeSlice(sliceName, ctx.node);
        if (!slice) {
            if (slice.code() == Errc::NotFound)
                return makeError(Errc::Transient, "no node slice allocated yet for node " + ctx.node +
                                                      " in NodeSlicePool " + sliceName);
            return slice.error();
        }
        auto sr = core::IpRange::fromSpec({*slice, "", "", {}}, "NodeSlicePool " + sliceName + " slice");
        if (!sr) return makeError(Errc::Invalid, sr.error().message);
        if (!r.cidr().contains(sr->cidr().network()))
            return makeError(Errc::Invalid, "NodeSlicePool " + sliceName + " gives node " + ctx.node +
                                                " slice " + *slice + " outside " + r.cidr().str());
        out.push_back({*sr, core::poolName(sr->cidr(), cfg.raw.networkName, ctx.node)});
    }
    return out;
}

Result<CniResult> add(EngineContext& ctx, const core::ValidatedConfig& cfg, const NetConf& net,
                      const core::Owner& owner, const std::vector<core::IpAddress>& requested) {
    auto targets = resolveTargets(ctx, cfg, net.name);
    if (!targets) return targets.error();

    // Each requested address must fall in exactly one range; one per range.
    std::vector<std::optional<core::IpAddress>> want(targets->size());
    for (const auto& ip : requested) {
        bool placed = false;
        for (size_t i = 0; i < targets->size() && !placed; ++i) {
            if (!(*targets)[i].range.cidr().contains(ip)) continue;
            if (want[i])
                return makeError(Errc::InvalidConfig, "requested IPs " + want[i]->str() + " and " +
                                                          ip.str() + " fall in the same range");
            want[i] = ip;
            placed = true;
        }
        if (!placed) return makeError(Errc::InvalidConfig, "requested IP " + ip.str() + " is in no configured range");
    }

    CniResult result;
    std::vector<size_t> taken;  // ranges newly allocated by this call, for rollback
    for (size_t i = 0; i < targets->size(); ++i) {
        const Target& t = (*targets)[i];
        auto pick = addOne(ctx, cfg, t, owner, want[i]);
        if (!pick) {
            // Roll back what this call took; the deadline may have passed, so give it a moment.
            auto saved = ctx.deadline;
            ctx.deadline = std::max(ctx.deadline, Clock::now() + kCleanupGrace);
            ctx.store.setDeadline(ctx.deadline);
            for (size_t j : taken) (void)releaseOne(ctx, cfg, (*targets)[j], owner);
            ctx.deadline = saved;
            ctx.store.setDeadline(saved);
            return makeError(pick.code(), "range " + t.range.cidr().str() + ": " + pick.error().message);
        }
        if (pick->kind != core::PickKind::Existing) taken.push_back(i);
        result.ips.push_back({pick->ip, t.range.cidr().length(), gatewayFor(cfg, t.range)});
    }
    for (const auto& [sip, gw] : cfg.staticAddresses) result.ips.push_back({sip.ip, sip.prefix, gw});
    result.routes = net.routes;
    result.dns = net.dns;
    return result;
}

Result<bool> del(EngineContext& ctx, const core::ValidatedConfig& cfg, const core::Owner& owner) {
    JournalEntry pending{ctx.poolNamespace, {}, cfg.raw.networkName, owner.containerId,
                         owner.ifName, owner.podRef, ctx.node, {}};
    auto journalIt = [&](const core::Error& why) -> Result<bool> {
        ctx.journalReason = why.message;
        if (!ctx.journal) return why;
        auto r = ctx.journal->record(pending);
        if (!r) return makeError(Errc::Transient, why.message + "; and the journal failed: " + r.error().message);
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
    for (const auto& t : *targets) {
        // The pool entry, through the node's claim queue (one write for every release and
        // ADD waiting on this pool), then the reservation.
        auto r = claim(ctx, cfg, t, ClaimRequest{owner, std::nullopt, {}, true});
        if (!r) {
            if (r.code() == Errc::NotFound) continue;
            unfinished(r.error());
            pending.pools.push_back(t.pool);  // allot-gc drops the reservations of what it releases
            continue;
        }
        if (auto d = dropReservations(ctx, cfg, {{r->ip, owner}}); !d) {
            unfinished(d.error());
            pending.reservations.push_back(core::reservationName(r->ip, cfg.raw.networkName));
        }
    }
    if (!pending.pools.empty() || !pending.reservations.empty()) return journalIt(*firstError);
    return false;
}

Result<void> journalRelease(ReleaseJournal& journal, const core::ValidatedConfig& cfg, const core::Owner& owner,
                            const std::string& poolNamespace) {
    JournalEntry e{poolNamespace, {}, cfg.raw.networkName, owner.containerId, owner.ifName, owner.podRef, owner.node, {}};
    if (!cfg.sliceSize)
        for (const auto& r : cfg.ranges) e.pools.push_back(core::poolName(r.cidr(), cfg.raw.networkName, ""));
    return journal.record(e);
}

Result<std::vector<IpResult>> check(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                    const NetConf& net, const core::Owner& owner) {
    if (!net.prevResult.isObject())
        return makeError(Errc::InvalidConfig, "\"prevResult\" is required for CHECK");
    auto prev = prevResultIps(net.prevResult);
    auto targets = resolveTargets(ctx, cfg, net.name);
    if (!targets) return targets.error();
    std::vector<IpResult> out;
    for (const auto& t : *targets) {
        auto pool = ctx.store.getPool(t.pool);
        if (!pool) {
            if (pool.code() == Errc::NotFound)
                return makeError(Errc::NotFound, "IPPool " + t.pool + " does not exist");
            return pool.error();
        }
        auto off = core::findHolder(pool->allocations, owner.containerId, owner.ifName);
        if (!off)
            return makeError(Errc::NotFound, "IPPool " + t.pool + " has no allocation for container " +
                                                 owner.containerId + " interface " + owner.ifName);
        core::IpAddress ip = t.range.cidr().at(*off);
        bool listed = std::any_of(prev.begin(), prev.end(), [&](const IpResult& r) { return r.ip == ip; });
        if (!listed)
            return makeError(Errc::NotFound, "prevResult does not list " + ip.str() + ", which IPPool " +
                                                 t.pool + " holds for this container");
        if (cfg.raw.enableOverlappingRanges) {
            auto r = ctx.store.getReservation(core::reservationName(ip, cfg.raw.networkName));
            if (!r) {
                if (r.code() == Errc::NotFound)
                    return makeError(Errc::NotFound, "no OverlappingRangeIPReservation for " + ip.str());
                return r.error();
            }
            if (!store::reservedFor(*r, owner))
                return makeError(Errc::NotFound, "the reservation of " + ip.str() + " belongs to " + r->podRef);
        }
        out.push_back({ip, t.range.cidr().length(), gatewayFor(cfg, t.range)});
    }
    return out;
}

Result<size_t> gc(EngineContext& ctx, const core::ValidatedConfig& cfg, const std::string& netName,
                  const std::vector<Attachment>& valid) {
    auto targets = resolveTargets(ctx, cfg, netName);
    if (!targets) return targets.error();
    size_t total = 0;
    for (const auto& t : *targets) {
        auto rel = releaseWhere(ctx, cfg, t, false, [&](const core::Owner& x) {
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
    auto targets = resolveTargets(ctx, cfg, "");
    if (!targets) return targets.error();
    for (const auto& t : *targets) {
        auto pool = ctx.store.getPool(t.pool);
        if (!pool) {
            if (pool.code() == Errc::NotFound) continue;
            return pool.error();
        }
        if (core::freeCount(t.range, pool->allocations, gatewayFor(cfg, t.range)) == 0)
            return makeError(Errc::Exhausted, "IPPool " + t.pool + " (" + t.range.cidr().str() + ") is exhausted");
    }
    return {};
}

}  // namespace allot::plugin
