#pragma once
// The pool store: where allocations live. The plugin picks addresses with core/allocator and
// commits them here with optimistic concurrency. Implementations: MemoryStore (tests) and
// K8sStore (IPPool / OverlappingRangeIPReservation objects). Both pass one conformance suite
// (test/unit/store/store_conformance.h).

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/result.h"
#include "json/json.h"

namespace allot::store {

using core::Result;

// An allocation entry allot cannot decode (no id, a field that is not a string, a key that is
// not a canonical decimal offset): another writer's, kept verbatim and never handed out.
struct UndecodedEntry {
    json::Value value;   // the entry exactly as stored
    std::string reason;  // why allot cannot read it, for logs, Events and metrics
};

// Fields of one entry that allot does not know (for example a newer Whereabouts' claim
// reference). Written back while the entry still belongs to the owner they were read with.
struct UnknownFields {
    std::string containerId;
    std::string ifName;
    json::Value fields;  // object of the unknown members, in stored order
};

// A node's slice as a NodeSlicePool gives it (PoolStore::nodeSlice).
struct NodeSlice {
    std::string slice;            // CIDR text
    std::string resourceVersion;  // of the NodeSlicePool read; empty from a watched copy
    // node_slice_parts > 1 is not honoured on the network (the slice controller's word, with
    // the NADs it names); "" when it is. A watched copy never holds a refused NodeSlicePool,
    // so this comes from a read of the object.
    std::string partsRefused = {};
};

// What the stored object cost when it was read: the basis of the size check before a write.
struct StoredSize {
    size_t bytes = 0;     // the object as allot encodes it, plus `overhead`
    size_t overhead = 0;  // what the server keeps beside it (metadata.managedFields)
    size_t entries = 0;   // allocation entries then
};

struct Pool {
    std::string name;
    std::string range;                // spec.range, canonical CIDR text
    core::AllocationMap allocations;  // offset -> owner
    std::string resourceVersion;      // opaque; empty until stored
    // Object metadata the store keeps but allot does not interpret (labels, annotations,
    // owner references): written back unchanged. Null for a new pool.
    json::Value meta;
    // Entries allot cannot decode, by their key as stored. Each one whose key names an offset
    // holds that offset in `allocations` with an empty Owner{} placeholder, so it counts as
    // taken; the store writes the verbatim entry, never the placeholder.
    std::map<std::string, UndecodedEntry> undecoded = {};
    // Unknown fields of decoded entries, by offset.
    std::map<core::u128, UnknownFields> unknownFields = {};
    // Top-level and spec members allot does not know (status, spec.x, ...), written back
    // unchanged: an object, or null.
    json::Value other = {};
    StoredSize stored = {};  // zero for a pool not read from a store
    // Recently released offsets (released_ip_cooldown_s), kept in the annotation
    // kReleasedAnnotation (pool_codec.h): never pruned by a CRD schema, ignored by Whereabouts.
    core::ReleaseLog released = {};
    // Node slices: set by allot-gc's slice controller before it takes this slice pool's slice
    // from its node (the NodeSlicePool's resourceVersion it read then); a claim into a sealed
    // pool first confirms the slice is the node's again (engine::TxTarget::unseal). Kept in
    // the annotation kSealedAnnotation (pool_codec.h). Empty: not sealed.
    std::string sealed = {};
    // Why that annotation could not be read ("" when read, or absent): the log then reads
    // empty, and the annotation is kept verbatim until a write with a cooldown replaces it.
    std::string releasedUnreadable = {};
    // The object as a store's write sent it (JSON text, with the resourceVersion it replaced),
    // on the pool that write returns: a node's cache keeps this text instead of encoding the
    // pool again. Empty on any other pool.
    std::string written = {};
};

// One OverlappingRangeIPReservation: an IP claimed cluster-wide.
struct Reservation {
    std::string name;  // core::reservationName(ip, network)
    std::string containerId;
    std::string podRef;
    std::string ifName;
    std::string resourceVersion;
    std::chrono::system_clock::time_point
        created{};  // metadata.creationTimestamp; zero when unknown
};

// How large a pool object may grow, and when allot's optional entry fields give way (the
// policy is explained in pool_codec.h, fitPool applies it). The defaults hold for an API
// server on etcd's default request limit.
inline constexpr size_t kEtcdRequestLimit = 1572864;  // etcd's --max-request-bytes default
struct SizePolicy {
    // Room is left for the etcd key and transaction and for what the server adds.
    size_t maxBytes = kEtcdRequestLimit - 12 * 1024;
    // Below this, every entry keeps allot's optional fields.
    size_t freeBytes = (kEtcdRequestLimit - 12 * 1024) / 2;
    // Above it, only while the pool costs at most ratioTenths/10 of Whereabouts' form.
    unsigned ratioTenths = 11;
};

class PoolStore {
  public:
    virtual ~PoolStore() = default;

    // The pool named `name`. NotFound when absent; Invalid when the object itself cannot be
    // decoded (no spec or range, allocations not an object; the message names the field). An
    // entry allot cannot decode does not fail the pool: it is kept in Pool::undecoded.
    virtual Result<Pool> getPool(const std::string& name) = 0;

    // Stores a new pool (its resourceVersion is ignored) and returns it as stored.
    // AlreadyExists when a pool of that name exists.
    virtual Result<Pool> createPool(const Pool& pool) = 0;

    // Replaces the pool's allocations if and only if the stored resourceVersion equals
    // pool.resourceVersion. Conflict when it does not (someone else wrote first: re-read and
    // retry); NotFound when the pool is gone. Returns the pool as stored, with its new version.
    // Entries in `undecoded` and unknown fields are written back unchanged. A store with a size
    // limit (the API server's) drops allot's optional entry fields (node, poduid, network) as
    // the size policy in pool_codec.h says, and writes nothing when even
    // then the object would pass the limit and grow: TooLarge, with "is full" and the sizes
    // in the message (the pool object, not the range, is out of room).
    // Taken by value: a writer hands its pool over (a large pool is not copied to be sent).
    virtual Result<Pool> updatePool(Pool pool) = 0;

    // Every pool in the store's namespace, a page at a time (memory stays bounded); `fn` may
    // move the pool away and returns false to stop. A pool that cannot be decoded is passed to
    // `onBad` (name, reason) and skipped; without `onBad` it fails the call (Invalid).
    using BadPool = std::function<void(const std::string& name, const std::string& why)>;
    virtual Result<void> eachPool(const std::function<bool(Pool&)>& fn, const BadPool& onBad) = 0;
    Result<std::vector<Pool>> listPools();

    // NotFound when absent.
    virtual Result<Reservation> getReservation(const std::string& name) = 0;
    // AlreadyExists when the name is taken (by anyone, including the same owner).
    virtual Result<Reservation> createReservation(const Reservation& r) = 0;
    // Deletes the reservation. With a non-empty resourceVersion, only if it is unchanged since
    // read (Conflict otherwise). NotFound when absent.
    virtual Result<void> deleteReservation(const std::string& name,
                                           const std::string& resourceVersion) = 0;
    // Every reservation, a page at a time; `fn` returns false to stop. One that cannot be
    // decoded is skipped.
    virtual Result<void> eachReservation(const std::function<bool(Reservation&)>& fn) = 0;
    Result<std::vector<Reservation>> listReservations();

    // Node-slice mode: the slice (CIDR text) that NodeSlicePool `sliceName` assigns to `node`,
    // and the NodeSlicePool's resourceVersion. With `fresh` false a store may answer from a
    // copy kept current by a watch (the node relay's; resourceVersion then empty); with
    // `fresh`, only from a read of the object itself. NotFound when the pool or the node's
    // slice does not exist.
    virtual Result<NodeSlice> nodeSlice(const std::string& sliceName, const std::string& node,
                                        bool fresh) = 0;

    // Cheap reachability probe for STATUS. Transient/Unauthorized/Forbidden on failure.
    virtual Result<void> ping() = 0;

    // Replaces the size policy of pool writes (tests make it small).
    virtual void setSizePolicy(const SizePolicy&) {}

    // Moves the point after which calls fail with Transient without trying (cleanup after a
    // failed call gets a short grace of its own). Stores without deadlines ignore it.
    virtual void setDeadline(std::chrono::steady_clock::time_point) {}
};

// Reservation `r` as the ownership rule (core/ownership.h) sees it.
core::Owner reservationOwner(const Reservation& r);

// True when reservation `r` is held by `owner` (core::heldBy): a reservation that names a
// container belongs to that container only, so a re-created pod's claim (same podref, new
// container) is never taken for the old one's; one without (as Whereabouts writes them)
// belongs to the pod and interface.
bool reservedFor(const Reservation& r, const core::Owner& owner);

}  // namespace allot::store
