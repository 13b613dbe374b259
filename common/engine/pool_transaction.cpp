#include "engine/pool_transaction.h"

#include <algorithm>
#include <chrono>

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

Result<core::Cidr> poolCidr(const store::Pool& pool, const TxTarget& t) {
    auto stored = core::Cidr::parse(pool.range);
    if (t.cidr && (!stored || !(*stored == *t.cidr)))
        return makeError(Errc::InvalidConfig, "pool name collision: IPPool " + pool.name +
                                                  " holds range \"" + pool.range +
                                                  "\", not this network's " + t.cidr->str());
    if (!stored)
        return makeError(Errc::Invalid, "IPPool " + pool.name + ": bad range " + pool.range);
    return *stored;
}

// The release log's clock: wall time, as every node sees it (cooldowns are seconds long).
int64_t unixNow() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

Result<store::Pool> PoolTransaction::read(const TxTarget& t, bool useCache, bool& fromCache) {
    fromCache = false;
    if (useCache && cache_ && t.cidr) {
        if (auto c = cache_->load(ns_, t.pool); c && c->range == t.cidr->str()) {
            fromCache = true;
            return std::move(*c);
        }
    }
    auto p = store_.getPool(t.pool);
    if (p || p.code() != Errc::NotFound || !t.create || !t.cidr) return p;
    store::Pool fresh{t.pool, t.cidr->str(), {}, {}};
    fresh.sealed = t.seal;
    auto made = store_.createPool(fresh);
    if (!made && made.code() == Errc::AlreadyExists) return store_.getPool(t.pool);
    return made;
}

// The only caller of PoolStore::updatePool in allot.
Result<store::Pool> PoolTransaction::write(const std::string& pool, store::Pool next) {
    auto written = store_.updatePool(std::move(next));
    if (cache_) {
        if (written)
            cache_->save(ns_, *written);
        else
            cache_->drop(ns_, pool);
    }
    if (!written && written.code() == Errc::Conflict) ++conflicts_;
    return written;
}

core::Error PoolTransaction::retryOrGiveUp(const core::Error& e, bool& again) {
    again = retry_.retries(e.code) && retry_.wait();
    if (again) return e;
    return retry_.attempts() > 0 ? retry_.gaveUp(e) : e;
}

Result<bool> PoolTransaction::sealing(const TxTarget& t, const std::vector<core::Intent>& intents,
                                      store::Pool& next, bool changed) {
    if (!t.seal.empty()) {
        if (!next.allocations.empty() || !next.undecoded.empty()) return false;
        next.sealed = t.seal;
        return true;
    }
    if (!t.lift.empty()) {
        if (next.sealed != t.lift) return false;
        next.sealed.clear();
        return true;
    }
    if (next.sealed.empty() || !changed) return true;
    const bool claims = std::any_of(intents.begin(), intents.end(), [](const core::Intent& i) {
        return i.kind == core::Intent::Kind::Take;
    });
    if (!claims) return true;
    if (!t.unseal)
        return makeError(Errc::Conflict, "IPPool " + t.pool + " is sealed (" + next.sealed +
                                             "): its node slice is being taken away");
    if (auto u = t.unseal(next.sealed); !u) return u.error();
    next.sealed.clear();
    return true;
}

Result<TxResult> PoolTransaction::run(const TxTarget& t, const Plan& plan) {
    bool useCache = t.useCache;
    core::Error last{Errc::Transient,
                     "the deadline passed before the pool could be read or written"};
    for (bool again = true; again;) {
        if (retry_.expired()) return retry_.attempts() > 0 ? retry_.gaveUp(last) : last;
        bool fromCache = false;
        auto pool = read(t, useCache, fromCache);
        useCache = false;
        if (!pool && pool.code() == Errc::NotFound)
            return TxResult{{}, t.cidr.value_or(core::Cidr{}), false};
        if (!pool) {
            last = retryOrGiveUp(pool.error(), again);
            continue;
        }
        auto cidr = poolCidr(*pool, t);
        if (!cidr) return cidr.error();
        auto intents = plan(*pool);
        if (!intents) return intents.error();
        store::Pool next = std::move(*pool);  // a large pool is not copied (nor sent as a copy)
        auto res = core::applyBatch(*cidr, next.allocations, *intents, &next.released, unixNow());
        if (fromCache && res.wantsFresh) continue;  // decide that on fresh data
        TxResult out{std::move(res.outcomes), *cidr, true};
        out.releaseLogUnreadable = next.releasedUnreadable;
        auto seal = sealing(t, *intents, next, res.changed);
        if (!seal) return seal.error();
        if (!*seal) return out;
        if (!res.changed && t.seal.empty() && t.lift.empty()) return out;
        auto written = write(t.pool, std::move(next));
        out.sealed = written && !t.seal.empty();
        out.lifted = written && !t.lift.empty();
        if (written) return out;
        if (written.code() == Errc::NotFound) {  // deleted meanwhile: read again
            last = retryOrGiveUp(
                makeError(Errc::Conflict, "IPPool " + t.pool + " was deleted meanwhile"), again);
            continue;
        }
        // The pool object, not the range, is out of room (allot's estimate, or etcd refused
        // it): no attempt here can help. It stays TooLarge (CNI 11, with its own advice), and
        // the message says what would help.
        if (written.code() == Errc::TooLarge)
            return makeError(Errc::TooLarge,
                             written.error().message +
                                 "; split the network with node_slice_size or smaller ranges");
        last = retryOrGiveUp(written.error(), again);
    }
    return last;
}

}  // namespace allot::engine
