#include "engine/reservations.h"

#include "core/ownership.h"

namespace allot::engine {

using core::Errc;
using core::Result;

Result<std::string> reserve(store::PoolStore& store, const std::string& name,
                            const core::Owner& owner, bool entryTakenOver) {
    for (int look = 0;; ++look) {
        auto made =
            store.createReservation({name, owner.containerId, owner.podRef, owner.ifName, {}});
        if (made) return std::string();
        if (made.code() != Errc::AlreadyExists) return made.error();
        auto existing = store.getReservation(name);
        if (existing) {
            const core::Owner held = store::reservationOwner(*existing);
            if (core::heldBy(held, owner)) return std::string();
            if (core::mayTakeOverReservation(held, owner, entryTakenOver) && look < 3) {
                auto d = store.deleteReservation(name, existing->resourceVersion);
                if (d || d.code() == Errc::NotFound || d.code() == Errc::Conflict) continue;
                return d.error();
            }
            return existing->podRef.empty() ? "container " + existing->containerId
                                            : existing->podRef;
        }
        // Deleted between the two calls: create again, a few times.
        if (existing.code() != Errc::NotFound || look == 3) return existing.error();
    }
}

Result<void> unreserve(store::PoolStore& store, const std::vector<std::string>& names,
                       const core::Owner& owner) {
    for (const auto& name : names) {
        auto r = store.getReservation(name);
        if (!r) {
            if (r.code() == Errc::NotFound) continue;
            return r.error();
        }
        if (!store::reservedFor(*r, owner)) continue;  // someone else's claim now
        auto d = store.deleteReservation(name, r->resourceVersion);
        if (!d && d.code() != Errc::NotFound && d.code() != Errc::Conflict) return d.error();
        return {};
    }
    return {};
}

void forgetUncertain(store::PoolStore& store, const std::vector<std::string>& names,
                     const core::Owner& owner, const RetryPolicy& retry) {
    for (const auto& n : names) {
        for (RetryPolicy looks = retry;;) {
            auto r = store.getReservation(n);
            if (!r && r.code() == Errc::NotFound && looks.wait()) continue;
            if (r && store::reservedFor(*r, owner))
                (void)store.deleteReservation(n, r->resourceVersion);
            break;
        }
    }
}

Result<void> dropOrphan(store::PoolStore& store, const std::string& name,
                        const std::string& resourceVersion) {
    auto d = store.deleteReservation(name, resourceVersion);
    if (!d && d.code() == Errc::NotFound) return {};
    return d;
}

Result<void> restoreReservation(store::PoolStore& store, const std::string& name,
                                const core::Owner& owner) {
    auto made = store.createReservation({name, owner.containerId, owner.podRef, owner.ifName, {}});
    if (!made) return made.error();
    return {};
}

}  // namespace allot::engine
