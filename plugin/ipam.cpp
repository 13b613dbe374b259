#include "plugin/ipam.h"

#include <algorithm>
#include <random>
#include <set>
#include <thread>

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
    ++ctx.storeRetries;
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
        if (auto c = ctx.cache->load(t.pool); c && c->range == t.range.cidr().str()) {
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

std::optional<core::IpAddress> gatewayFor(const core::ValidatedConfig& cfg, const core::IpRange& r) {
    if (cfg.gateway && r.cidr().contains(*cfg.gateway)) return cfg.gateway;
    return std::nullopt;
}

void forgetReservations(EngineContext& ctx, const std::vector<std::string>& names,
                        const std::string& keep) {
    for (const auto& n : names)
        if (n != keep) (void)ctx.store.deleteReservation(n, "");
}

Result<core::Pick> addOne(EngineContext& ctx, const core::ValidatedConfig& cfg, const Target& t,
                          const core::Owner& owner, std::optional<core::IpAddress> requested) {
    auto guard = lockPool(ctx, t.pool);
    if (!guard) return guard.error();
    std::set<core::u128> skip;
    std::vector<std::string> mine;  // reservations this call created
    bool allowCache = true;
    int attempt = 0;
    core::Error last{Errc::Transient, "no attempt made"};
    for (;;) {
        if (Clock::now() >= ctx.deadline) {
            forgetReservations(ctx, mine, "");
            return gaveUp(last, attempt);
        }
        bool fromCache = false;
        auto pool = readPool(ctx, t, allowCache, true, fromCache);
        if (!pool) {
            last = pool.error();
            if (!retryable(pool.code()) || !backoff(ctx, attempt++)) {
                forgetReservations(ctx, mine, "");
                return attempt > 1 ? gaveUp(last, attempt) : last;
            }
            continue;
        }
        if (auto ok = checkRange(*pool, t.range); !ok) return ok.error();
        core::AllocationMap allocs = pool->allocations;
        auto pick = core::pick(t.range, allocs, {owner, requested, gatewayFor(cfg, t.range), &skip});
        if (!pick) {
            if (fromCache) {  // decide exhaustion or a refused request on fresh data only
                allowCache = false;
                continue;
            }
            forgetReservations(ctx, mine, "");
            return pick.error();
        }
        if (pick->kind == core::PickKind::Existing && fromCache) {
            allowCache = false;  // an answer without a write must come from fresh data
            continue;
        }
        std::string resName;
        if (cfg.raw.enableOverlappingRanges) {
            resName = core::reservationName(pick->ip, cfg.raw.networkName);
            store::Reservation r{resName, owner.containerId, owner.podRef, owner.ifName, {}};
            auto made = ctx.store.createReservation(r);
            if (made) {
                mine.push_back(resName);
            } else if (made.code() == Errc::AlreadyExists) {
                auto existing = ctx.store.getReservation(resName);
                if (existing && !store::reservedFor(*existing, owner)) {
                    if (requested) {
                        forgetReservations(ctx, mine, "");
                        return makeError(Errc::InvalidConfig,
                                         "requested IP " + pick->ip.str() +
                                             " is reserved by an overlapping range for " +
                                             existing->podRef);
                    }
                    skip.insert(pick->offset);  // taken through another pool: pick again
                    continue;
                }
                if (!existing && existing.code() != Errc::NotFound) {
                    last = existing.error();
                    if (!retryable(last.code) || !backoff(ctx, attempt++)) {
                        forgetReservations(ctx, mine, "");
                        return gaveUp(last, attempt);
                    }
                    continue;
                }
                if (!existing) continue;  // deleted meanwhile: claim it again
            } else {
                last = made.error();
                if (!retryable(last.code) || !backoff(ctx, attempt++)) {
                    forgetReservations(ctx, mine, "");
                    return attempt > 1 ? gaveUp(last, attempt) : last;
                }
                continue;
            }
        }
        if (pick->kind == core::PickKind::Existing) {
            forgetReservations(ctx, mine, resName);
            return pick;
        }
        Pool next = *pool;
        next.allocations = std::move(allocs);
        auto written = ctx.store.updatePool(next);
        if (written) {
            if (ctx.cache) ctx.cache->save(*written);
            forgetReservations(ctx, mine, resName);
            return pick;
        }
        last = written.error();
        if (ctx.cache) ctx.cache->drop(t.pool);
        allowCache = false;
        if (written.code() == Errc::Conflict) ++ctx.conflicts;
        if (written.code() == Errc::NotFound) continue;
        if (!retryable(written.code()) || !backoff(ctx, attempt++)) {
            forgetReservations(ctx, mine, "");
            return attempt > 1 ? gaveUp(last, attempt) : last;
        }
    }
}

// Removes entries matching `match` from one pool; returns the released addresses.
template <typename Match>
Result<std::vector<std::pair<core::IpAddress, core::Owner>>> releaseWhere(
    EngineContext& ctx, const Target& t, bool allowCache, Match match) {
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
            if (!retryable(last.code) || !backoff(ctx, attempt++)) return gaveUp(last, attempt);
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
        auto written = ctx.store.updatePool(next);
        if (written) {
            if (ctx.cache) ctx.cache->save(*written);
            return released;
        }
        last = written.error();
        if (ctx.cache) ctx.cache->drop(t.pool);
        allowCache = false;
        if (written.code() == Errc::Conflict) ++ctx.conflicts;
        if (written.code() == Errc::NotFound) return Released{};
        if (!retryable(last.code) || !backoff(ctx, attempt++)) return gaveUp(last, attempt);
    }
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
            ctx.deadline = std::max(ctx.deadline, Clock::now() + std::chrono::seconds(5));
            for (size_t j : taken) {
                const core::Owner& o = owner;
                auto rel = releaseWhere(ctx, (*targets)[j], false, [&](const core::Owner& x) {
                    return x.containerId == o.containerId && x.ifName == o.ifName;
                });
                if (rel) (void)dropReservations(ctx, cfg, *rel);
            }
            ctx.deadline = saved;
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
    auto match = [&](const core::Owner& x) {
        return x.containerId == owner.containerId && x.ifName == owner.ifName;
    };
    auto journalIt = [&](const std::vector<std::string>& pools, const core::Error& why) -> Result<bool> {
        if (!ctx.journal) return why;
        JournalEntry e{ctx.poolNamespace, pools, cfg.raw.networkName, owner.containerId,
                       owner.ifName, owner.podRef, ctx.node};
        auto r = ctx.journal->record(e);
        if (!r) return makeError(Errc::Transient, why.message + "; and the journal failed: " + r.error().message);
        return true;
    };
    auto targets = resolveTargets(ctx, cfg, "");
    if (!targets) {
        if (targets.code() == Errc::Transient) return journalIt({}, targets.error());
        return targets.error();
    }
    std::vector<std::string> pending;
    std::optional<core::Error> firstError;
    for (const auto& t : *targets) {
        auto rel = releaseWhere(ctx, t, true, match);
        if (rel) {
            auto d = dropReservations(ctx, cfg, *rel);
            if (!d && !firstError) firstError = d.error();  // a stray reservation: repair loop
            continue;
        }
        if (rel.code() != Errc::Transient && rel.code() != Errc::Conflict) return rel.error();
        pending.push_back(t.pool);
        if (!firstError) firstError = rel.error();
    }
    if (!pending.empty()) return journalIt(pending, *firstError);
    return false;
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
        auto rel = releaseWhere(ctx, t, false, [&](const core::Owner& x) {
            // Only what provably belongs to this node and this network.
            if (x.node.empty() || x.node != ctx.node) return false;
            if (x.network.empty() || x.network != netName) return false;
            return std::none_of(valid.begin(), valid.end(), [&](const Attachment& a) {
                return a.containerId == x.containerId && a.ifName == x.ifName;
            });
        });
        if (!rel) return rel.error();
        auto d = dropReservations(ctx, cfg, *rel);
        if (!d) return d.error();
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
