#pragma once
// Removing allocations from a pool, and the reservations that went with them, over Cluster.

#include <functional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/allocator.h"

namespace allot::cluster {

struct Released {
    std::string ns, pool;
    core::IpAddress ip;
    core::u128 offset = 0;
    core::Owner owner;
    // network_name prefixes the reservation name may carry; tried in order.
    std::vector<std::string> networkNames;
};

// Called on every fresh read of the pool; returns the offsets to remove. An error aborts.
using Selector = std::function<Result<std::vector<core::u128>>(const store::Pool&)>;

// Reads pool ns/name, removes what `select` picks, and writes it back guarded by the
// resourceVersion it read; on Conflict it reads again and asks `select` again (so a
// decision is always made on the data it overwrites). A missing pool releases nothing.
// Errors: as Cluster, and Transient after `maxAttempts` conflicts. An entry an IPAMClaim owns
// is kept unless `claimsGone`: the caller's confirmed read found the claim of every entry
// `select` picks deleted (core::mayRelease).
Result<std::vector<Released>> releaseFromPool(Cluster& c, const std::string& ns,
                                              const std::string& pool, const Selector& select,
                                              int maxAttempts = 10, bool claimsGone = false);

// Deletes the OverlappingRangeIPReservation of a released address when it still belongs to
// the released owner (never another's), guarded by the resourceVersion read. Absent: success.
Result<void> dropReservation(Cluster& c, const Released& r);

}  // namespace allot::cluster
