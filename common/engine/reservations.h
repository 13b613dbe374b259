#pragma once
// OverlappingRangeIPReservations: an address claimed cluster-wide, across pools whose ranges
// overlap. Ordered against pool entries one way (see pool_transaction.h): created after the
// pool entry is written, deleted after the entry is removed, and only while the ownership rule
// (core::heldBy) says the reservation is still the releasing owner's.

#include <string>
#include <vector>

#include "core/allocator.h"
#include "engine/retry_policy.h"
#include "store/pool_store.h"

namespace allot::engine {

// Claims reservation `name` for `owner`. Returns "" when it is the owner's (made now or
// earlier), else who holds it (a podRef, or "container <id>"). `entryTakenOver`: the owner's
// pool entry was handed over from an earlier sandbox of the same pod (core::mayTakeOver); that
// sandbox's reservation is then handed over too (core::mayTakeOverReservation): re-made for
// the new container, so the old one's release never takes it.
core::Result<std::string> reserve(store::PoolStore& store, const std::string& name,
                                  const core::Owner& owner, bool entryTakenOver = false);

// Deletes the first of `names` (the candidate names of one address, in order) that exists,
// if it is held by `owner`, guarded by the resourceVersion read. Absent, or another's: success.
core::Result<void> unreserve(store::PoolStore& store, const std::vector<std::string>& names,
                             const core::Owner& owner);

// Deletes reservations whose create answer was lost, but only those that are `owner`'s. A
// create the client stopped waiting for may still be in flight at the server, so a name not
// found yet is looked at again within `retry` (there is no event to wait for).
void forgetUncertain(store::PoolStore& store, const std::vector<std::string>& names,
                     const core::Owner& owner, const RetryPolicy& retry);

// The repair loop's two writes, the only ones not ordered against a pool entry by the call
// that wrote it: each is decided by a pass that read the pools and the reservations.
//
// Deletes a reservation the pass found held by no pool entry, guarded by the resourceVersion
// it read: one re-made or handed over since is kept (Conflict). Absent: success.
core::Result<void> dropOrphan(store::PoolStore& store, const std::string& name,
                              const std::string& resourceVersion);
// Re-creates the reservation a live pool entry is missing, for the entry's owner.
// AlreadyExists when another took the name meanwhile: theirs is kept.
core::Result<void> restoreReservation(store::PoolStore& store, const std::string& name,
                                      const core::Owner& owner);

}  // namespace allot::engine
