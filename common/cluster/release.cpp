#include "cluster/release.h"

#include <optional>

#include "core/naming.h"
#include "core/ownership.h"
#include "engine/pool_transaction.h"
#include "engine/reservations.h"

namespace allot::cluster {

// Through the engine: `select` plans on each read, and each entry it picks is released only
// while the owner it saw still holds it (core::Intent::ReleaseIfHeld).
Result<std::vector<Released>> releaseFromPool(Cluster& c, const std::string& ns,
                                              const std::string& poolName, const Selector& select,
                                              int maxAttempts, bool claimsGone) {
    engine::RetryPolicy retry(engine::Clock::time_point::max(), {}, maxAttempts);
    retry.onlyConflicts();  // the release queue retries the rest, with its own backoff
    engine::PoolTransaction tx(c.pools(ns), retry);
    std::optional<store::Pool> seen;
    auto res = tx.run({poolName, std::nullopt, false, false}, [&](const store::Pool& pool) {
        seen = pool;
        auto offsets = select(pool);
        if (!offsets) return Result<std::vector<core::Intent>>(offsets.error());
        std::vector<core::Intent> out;
        for (core::u128 off : *offsets)
            if (auto it = pool.allocations.find(off); it != pool.allocations.end()) {
                out.push_back(core::Intent::releaseIfHeld(off, it->second));
                out.back().claimGone = claimsGone;
            }
        return Result<std::vector<core::Intent>>(std::move(out));
    });
    if (!res) return res.error();
    std::vector<Released> out;
    for (const auto& o : res->outcomes)
        if (o.pick)
            out.push_back(Released{ns, poolName, o.pick->ip, o.pick->offset, o.released,
                                   core::networkNamesOf(seen->name, seen->range, o.released.node)});
    return out;
}

Result<void> dropReservation(Cluster& c, const Released& r) {
    std::vector<std::string> names;
    for (const auto& net : r.networkNames) names.push_back(core::reservationName(r.ip, net));
    return engine::unreserve(c.pools(r.ns), names, r.owner);
}

}  // namespace allot::cluster
