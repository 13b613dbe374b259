#pragma once
// ADD: one address per configured range for an owner, each pool entry written (batched with
// the node's other ADDs) and then reserved cluster-wide, in that order.

#include <functional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "engine/context.h"
#include "engine/retry_policy.h"

namespace allot::engine {

// Called when an ADD's last range has its pool entry and its reservation is about to be asked
// for, with every range's address so far: what may run alongside that reservation (a claim's
// status write). Called again if the reservation moves the address elsewhere; not called when
// no reservation follows.
using BeforeReserve = std::function<void(const std::vector<IpResult>&)>;

// How often an ADD reads a slice it waits for: allot-gc's leader assigns slices every few
// seconds (--slice-interval, 5 s by default), so a read every second at most.
inline constexpr Backoff kSliceAwait{std::chrono::milliseconds(250), std::chrono::seconds(1)};

// One address per range, in order, then the config's static addresses; a later failure
// releases the ranges taken earlier. `netName` is the network config's name. A requested
// address must fall in a configured range (one per range). In node-slice mode a slice found
// moved to another node is resolved again once, from a fresh read; while this node has no slice
// yet (SliceAwaited), the slice is read again on kSliceAwait's schedule until the deadline.
core::Result<std::vector<IpResult>> add(Context& ctx, const core::ValidatedConfig& cfg,
                                        const std::string& netName, const core::Owner& owner,
                                        const std::vector<core::IpAddress>& requested,
                                        const BeforeReserve& beforeReserve = {});

}  // namespace allot::engine
