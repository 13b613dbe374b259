#pragma once
// One request to one pool from this node: an address taken or released, under the node's pool lock,
// batched with the requests queued meanwhile into one guarded pool write (group commit). The
// engine's ADD, DEL and GC are made of these.

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "engine/context.h"
#include "engine/retry_policy.h"
#include "engine/targets.h"

namespace allot::engine {

using Released = std::vector<std::pair<core::IpAddress, core::Owner>>;

// The call's retry policy: its deadline, and the test's sleep when set.
RetryPolicy retryFor(const Context& ctx);

// Applies `req` to target `t`'s pool. With a commit queue, the holder of the lock commits every
// request queued meanwhile in the same write, and a request served by another holder finds its
// answer without writing at all. A request served only after this call's deadline (its entry
// was being written for it) emplaces `grace`, which then covers what the caller still does.
// A release answers the address it took out (NotFound: nothing held). In a sealed slice pool
// a take fails with SliceSealed (allot-gc's slice controller is taking the slice) or
// SliceMoved (the slice is another node's now).
core::Result<core::Pick> commit(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                                CommitRequest req, std::optional<CleanupGrace>& grace);

// Takes (containerId, ifName)'s entry out of one pool through the commit queue, then its
// reservation, if still the owner's. NotFound when the pool held nothing for it.
core::Result<core::IpAddress> releaseOne(Context& ctx, const core::ValidatedConfig& cfg,
                                         const Target& t, const core::Owner& owner);

// Removes the entries `match` picks (on each fresh read) from one pool under the node lock,
// then their reservations: the engine's one order. Returns the released addresses.
core::Result<Released> releaseWhere(Context& ctx, const core::ValidatedConfig& cfg, const Target& t,
                                    const std::function<bool(const core::Owner&)>& match);

// Deletes the reservations of released addresses that still belong to their owner.
core::Result<void> dropReservations(Context& ctx, const core::ValidatedConfig& cfg,
                                    const Released& released);

// Deletes reservations whose create answer was lost, if they turn out to be ours.
void forgetUncertain(Context& ctx, const std::vector<std::string>& names, const core::Owner& owner);

}  // namespace allot::engine
