#pragma once
// Node slices (node_slice_size): a range cut into per-node blocks, recorded in a NodeSlicePool
// (spec.range, spec.sliceSize, status.allocations[{nodeName, sliceRange}]) as Whereabouts'
// node-slice controller records them. Pure: the slice controller in allot-gc reads and writes,
// this decides.
//
// allot's additions to Whereabouts' contract:
// - IPv6 slices, and dual-stack: every range of `ipRanges` gets its own NodeSlicePool (the
//   first one keeps Whereabouts' name), cut into as many slices as the first range;
// - a slice size change never renumbers a live pod: a node keeps a slice of the old size until
//   its pool is empty, new nodes get the new size;
// - a slice whose node is gone is freed only once its pool is empty.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ip.h"
#include "core/result.h"

namespace allot::core {

// A NodeSlicePool lists every slice (~50 bytes each): a range cut finer than this is refused,
// so that the object stays well under etcd's 1.5 MiB request limit (~400 KiB at most). More
// than Kubernetes' supported 5,000 nodes.
inline constexpr size_t kMaxNodeSlices = 8192;
inline constexpr int kMaxSliceBits = 13;  // log2(kMaxNodeSlices)

// "/24" or "24" (as Whereabouts reads spec.sliceSize). InvalidConfig naming the value otherwise.
Result<int> parseSliceSize(std::string_view text);

// The NodeSlicePool of ranges[index]. The first range's is `sliceName` (network_name, else the
// network's "name"), exactly as Whereabouts names it; a further range's (dual-stack, allot
// only) is `sliceName-<normalized range>`.
std::string nodeSlicePoolName(const std::string& sliceName, size_t index, const Cidr& range);

// The slice prefix length for `range` when the first range `first` is cut at `firstLength`:
// the same number of slices in every range, so that every node can get one of each.
// InvalidConfig when that does not fit `range`'s family.
Result<int> sliceLengthFor(const Cidr& first, int firstLength, const Cidr& range);

// Every slice of `range` at prefix `length`, in address order. InvalidConfig when `length` is
// not longer than the range's prefix, is past the family's width, or gives more than
// kMaxNodeSlices slices.
Result<std::vector<Cidr>> carveSlices(const Cidr& range, int length);

struct SliceAllocation {
    std::string nodeName;  // "" = free
    std::string sliceRange;
    friend bool operator==(const SliceAllocation&, const SliceAllocation&) = default;
};

struct SliceInput {
    Cidr range;                            // the NodeSlicePool's spec.range now
    int sliceLength = 0;                   // its slice prefix length now
    std::vector<SliceAllocation> current;  // status.allocations as read ({} for a new pool)
    std::vector<std::string> nodes;        // every Node in the cluster
};

struct SlicePlan {
    // In address order; then, at the end, slices outside the range (or clashing with another
    // entry) that still hold addresses: kept so that their pools stay known until empty.
    std::vector<SliceAllocation> allocations;
    std::vector<std::string> unassigned;  // Nodes left without a slice (sorted): too few slices
    size_t total = 0;                     // entries inside the range
    size_t free = 0;                      // of which no node holds
};

// Asked only for an entry that would otherwise be freed or dropped: true while the node's
// slice pool still holds an allocation (a caller that cannot tell must say true).
using SliceBusy = std::function<bool(const SliceAllocation&)>;

// The allocations after one reconciliation, deterministic for the same input:
// - a Node keeps its slice while it exists, the slice lies in the range and has the current
//   size (or, another size, while its pool is busy);
// - a gone Node's slice stays its own while busy, else it is freed (same size) or dropped;
// - the range is cut at the current size around the slices kept; Nodes without a slice get
//   the free ones in name order, lowest address first.
// Errors: as carveSlices.
Result<SlicePlan> planSlices(const SliceInput& in, const SliceBusy& busy);

// What one NetworkAttachmentDefinition of a network asks of its slices.
struct SlicePartsAsk {
    std::string nad;           // "namespace/name"
    std::string type;          // its IPAM type: "allot" or "whereabouts"
    int parts = 1;             // node_slice_parts
    bool reservations = true;  // enable_overlapping_ranges
};

struct SlicePartsRefusal {
    std::string message;            // names each offending NAD and what it asks
    std::vector<size_t> offenders;  // indices into the asks
};

// A slice in parts is kept apart from a config that reads only part 0 (Whereabouts' plugin,
// allot with fewer parts) by the OverlappingRangeIPReservations alone, and Whereabouts' DEL
// deletes a reservation by name without looking at its owner: so node_slice_parts > 1 is
// honoured on a network only while every NAD of it asks for the same count and keeps the
// reservations. nullopt when it is (or when no NAD asks for parts); else the NADs that break
// the rule (every one in `offenders`, the first few named in `message`).
std::optional<SlicePartsRefusal> refuseSliceParts(const std::vector<SlicePartsAsk>& asks);

// A NodeSlicePool as the repair pass reads it.
struct NodeSliceView {
    std::string name;   // metadata.name
    std::string range;  // spec.range
    std::vector<SliceAllocation> allocations;
};

// What the NodeSlicePools say of a node's slice pool (an IPPool named
// [network_name-]node-<slice>).
struct SlicePoolInfo {
    std::string nodeSlicePool;     // the NodeSlicePool whose range holds the pool's range
    std::string node;              // the node the pool's name gives
    std::vector<Cidr> nodeSlices;  // the slices that NodeSlicePool assigns that node now
    std::string rangeHolder;       // the node the pool's range is assigned to now ("": nobody)
};

// Whether IPPool `pool` (spec.range `range`) is a node's slice pool: named
// [prefix-]node-<normalized range>, its range inside a NodeSlicePool's range and cut finer. The
// prefix is the NodeSlicePool's network name (its name, less a dual-stack range suffix) or
// nothing (a network without network_name); a name both ways can be read is read as naming a
// node for which `knownNode` is true. A slice's part k > 0 (`<that name>-part-<k>`,
// node_slice_parts) is that node's slice pool too. nullopt: not a slice pool.
std::optional<SlicePoolInfo> slicePoolOf(const std::vector<NodeSliceView>& nodeSlicePools,
                                         const std::string& pool, const Cidr& range,
                                         const std::function<bool(const std::string&)>& knownNode);

}  // namespace allot::core
