#pragma once
// The pool store: where allocations live. The plugin picks addresses with core/allocator and
// commits them here with optimistic concurrency. Implementations: MemoryStore (tests) and
// K8sStore (IPPool / OverlappingRangeIPReservation objects). Both pass one conformance suite
// (test/unit/store/store_conformance.h).

#include <chrono>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/result.h"
#include "json/json.h"

namespace allot::store {

using core::Result;

struct Pool {
    std::string name;
    std::string range;                // spec.range, canonical CIDR text
    core::AllocationMap allocations;  // offset -> owner
    std::string resourceVersion;      // opaque; empty until stored
    // Object metadata the store keeps but allot does not interpret (labels, annotations,
    // owner references): written back unchanged. Null for a new pool.
    json::Value meta;
};

// One OverlappingRangeIPReservation: an IP claimed cluster-wide.
struct Reservation {
    std::string name;  // core::reservationName(ip, network)
    std::string containerId;
    std::string podRef;
    std::string ifName;
    std::string resourceVersion;
};

class PoolStore {
public:
    virtual ~PoolStore() = default;

    // The pool named `name`. NotFound when absent; Invalid when the stored object cannot be
    // decoded (the message names the field).
    virtual Result<Pool> getPool(const std::string& name) = 0;

    // Stores a new pool (its resourceVersion is ignored) and returns it as stored.
    // AlreadyExists when a pool of that name exists.
    virtual Result<Pool> createPool(const Pool& pool) = 0;

    // Replaces the pool's allocations if and only if the stored resourceVersion equals
    // pool.resourceVersion. Conflict when it does not (someone else wrote first: re-read and
    // retry); NotFound when the pool is gone. Returns the pool as stored, with its new version.
    virtual Result<Pool> updatePool(const Pool& pool) = 0;

    // Every pool in the store's namespace.
    virtual Result<std::vector<Pool>> listPools() = 0;

    // NotFound when absent.
    virtual Result<Reservation> getReservation(const std::string& name) = 0;
    // AlreadyExists when the name is taken (by anyone, including the same owner).
    virtual Result<Reservation> createReservation(const Reservation& r) = 0;
    // Deletes the reservation. With a non-empty resourceVersion, only if it is unchanged since
    // read (Conflict otherwise). NotFound when absent.
    virtual Result<void> deleteReservation(const std::string& name,
                                           const std::string& resourceVersion) = 0;
    virtual Result<std::vector<Reservation>> listReservations() = 0;

    // Node-slice mode: the slice (CIDR text) that NodeSlicePool `sliceName` assigns to `node`.
    // NotFound when the pool or the node's slice does not exist.
    virtual Result<std::string> nodeSlice(const std::string& sliceName, const std::string& node) = 0;

    // Cheap reachability probe for STATUS. Transient/Unauthorized/Forbidden on failure.
    virtual Result<void> ping() = 0;

    // Moves the point after which calls fail with Transient without trying (cleanup after a
    // failed call gets a short grace of its own). Stores without deadlines ignore it.
    virtual void setDeadline(std::chrono::steady_clock::time_point) {}
};

// True when reservation `r` was made for `owner`: same container and interface, or (as
// Whereabouts writes them, without a container ID) the same pod and interface.
bool reservedFor(const Reservation& r, const core::Owner& owner);

}  // namespace allot::store
