#pragma once
// A batch of changes to one pool snapshot, applied purely. Every writer of a pool (the
// plugin's group commit and DEL, the GC verb, allot-gc's releases, its repair loop and its
// journal replay) states what it wants as intents; the engine (common/engine) applies them
// here to a fresh or cached snapshot and writes the result with one guarded write.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/allocator.h"

namespace allot::core {

struct Intent {
    enum class Kind {
        // An address for `owner`: the one it holds (idempotent), one an earlier sandbox of
        // the same pod held (handover), `requested`, or the lowest free one in `window`.
        Take,
        // Whatever (owner.containerId, owner.ifName) holds: a CNI DEL's sandbox. An entry owned
        // by an IPAMClaim stays (NotFound, "kept for IPAMClaim ...": core::mayRelease).
        Release,
        // The entry at `offset`, only while it still belongs to `owner` as the writer saw it
        // (core::heldBy): a decision made on an older read never frees another's address. An
        // entry owned by an IPAMClaim is freed only with `claimGone`.
        ReleaseIfHeld,
    };
    Kind kind = Kind::Take;
    Owner owner;
    // Take only.
    std::optional<IpAddress> requested;
    std::vector<u128> avoid;           // offsets found reserved through another pool
    std::optional<IpRange> window;     // the requester's own window of the pool (required)
    std::optional<IpAddress> gateway;  // never handed out
    int64_t cooldownS = 0;             // released_ip_cooldown_s of the requester's config
    // ReleaseIfHeld only.
    u128 offset = 0;
    bool claimGone = false;  // a confirmed read found the entry's IPAMClaim gone

    static Intent take(Owner o, IpRange window, std::optional<IpAddress> gateway = {}) {
        Intent i{Kind::Take, std::move(o)};
        i.window = std::move(window);
        i.gateway = gateway;
        return i;
    }
    static Intent release(Owner o) { return Intent{Kind::Release, std::move(o)}; }
    static Intent releaseIfHeld(u128 offset, Owner o) {
        Intent i{Kind::ReleaseIfHeld, std::move(o)};
        i.offset = offset;
        return i;
    }
};

struct Outcome {
    // Take: the address. Release kinds: the address freed, or NotFound when nothing was.
    Result<Pick> pick = makeError(Errc::Internal, "not applied");
    Owner released;  // release kinds: the entry as it was
};

struct BatchResult {
    std::vector<Outcome> outcomes;  // one per intent, in order
    bool changed = false;           // the snapshot differs: it must be written
    // An answer that a stale snapshot could have made wrong (exhaustion, a refused requested
    // address, nothing to release, an existing entry to confirm): re-apply on fresh data
    // before trusting it.
    bool wantsFresh = false;
};

// Applies `batch` to `allocs` in order; each intent sees the effects of those before it.
// `cidr` is the pool's range: it maps offsets to addresses. Configs that share one pool narrow
// it differently, so each claim picks in its own window. One intent failing (Exhausted,
// InvalidConfig, NotFound) does not hold back the others.
//
// With `log` (the pool's ReleaseLog) and the wall clock `now` (unix seconds): entries past
// their cooldown or whose offset is in use again are dropped; a claim with a cooldown passes
// over recently released offsets (core::pick) and raises log->keepS to its cooldown; while
// keepS > 0 every release records its offset's time. Changes to the log alone do not set
// `changed`: they ride along with the next write.
BatchResult applyBatch(const Cidr& cidr, AllocationMap& allocs, const std::vector<Intent>& batch,
                       ReleaseLog* log = nullptr, int64_t now = 0);

}  // namespace allot::core
