#pragma once
// Picks addresses from a pool snapshot. Storing the result is the store's job (see
// store/pool_store.h); this layer decides only which offset an owner gets.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/ip.h"
#include "core/ip_range.h"
#include "core/result.h"

namespace allot::core {

// Who holds an address. node and podUid are allot's optional fields: empty when the entry
// was written by Whereabouts or pruned by its CRD schema.
struct Owner {
    std::string containerId;
    std::string podRef;  // "namespace/name"
    std::string ifName;
    std::string node;
    std::string podUid;
    std::string network;  // the CNI network name that allocated it (GC scope)
    // The IPAMClaim ("namespace/name") that owns the address (core/ownership.h: claimOwned);
    // allot's optional field, empty for an ordinary pod's entry.
    std::string claim = {};

    friend bool operator==(const Owner&, const Owner&) = default;
};

// Offset from the range's network address -> owner, as in IPPool.spec.allocations.
using AllocationMap = std::map<u128, Owner>;

// The released-address cooldown (released_ip_cooldown_s) of one pool: when each recently
// released offset was freed (unix seconds), kept for `keepS` (the longest cooldown a config
// using the pool asked for). Optional both ways: a pool without it has no recent releases.
struct ReleaseLog {
    int64_t keepS = 0;
    std::map<u128, int64_t> at;

    friend bool operator==(const ReleaseLog&, const ReleaseLog&) = default;
};

inline constexpr int64_t kMaxCooldownS = 86'400;
// Most offsets a release log keeps (the oldest release gives way): about 25 bytes each in the
// annotation, well under the API server's 256 KiB for all of an object's annotations.
inline constexpr size_t kMaxReleaseLog = 4096;

enum class PickKind {
    Existing,    // (containerId, ifName) already held it: idempotent ADD
    HandedOver,  // the same (podRef, ifName) held it under an older container ID
    New,
    // Held for the owner's IPAMClaim under another pod (live migration): the address is
    // shared, the entry (and its reservation) stays its holder's.
    Shared,
};

struct Pick {
    IpAddress ip;
    u128 offset = 0;
    PickKind kind = PickKind::New;
};

struct PickRequest {
    Owner owner;
    std::optional<IpAddress> requested;    // a specific address, or the lowest free one
    std::optional<IpAddress> gateway;      // never handed out
    const std::set<u128>* skip = nullptr;  // offsets found taken elsewhere (reservations)
    // Cooldown: a free offset released less than `cooldownS` before `now` is handed out only
    // when nothing else is free (then the one released longest ago).
    const ReleaseLog* released = nullptr;
    int64_t cooldownS = 0;
    int64_t now = 0;
};

// Chooses an address and records it in `allocs`. Errors: Exhausted when nothing is free;
// InvalidConfig when a requested address is outside the range, excluded, reserved, or held by
// someone else (the message names it).
Result<Pick> pick(const IpRange& range, AllocationMap& allocs, const PickRequest& req);

// Finds the entry held by (containerId, ifName).
std::optional<u128> findHolder(const AllocationMap& allocs, std::string_view containerId,
                               std::string_view ifName);

// Removes every entry held by (containerId, ifName); returns how many were removed.
size_t release(AllocationMap& allocs, std::string_view containerId, std::string_view ifName);

// Free allocatable addresses left (saturated like IpRange::capacity), gateway excluded.
u128 freeCount(const IpRange& range, const AllocationMap& allocs,
               const std::optional<IpAddress>& gateway);

}  // namespace allot::core
