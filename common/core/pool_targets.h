#pragma once
// Which IPPools a network config allocates from: the one statement of it, for the plugin's
// verbs, allot-gc's releases and slice controller, and kubectl allot.
//
// Plain: one IPPool per range, poolName(range, network_name, ""). Node slices
// (node_slice_size): each range has a NodeSlicePool (sliceSources), which gives each node one
// slice of it; the node allocates from poolName(slice, network_name, node), or with
// node_slice_parts from that pool's parts (slicePartPoolName), each holding a block of the slice.

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/ip_range.h"
#include "core/result.h"

namespace allot::core {

struct SliceSource {
    size_t rangeIndex = 0;
    std::string nodeSlicePool;
};

// The NodeSlicePool each range of a sliced config reads, in range order; empty when `cfg` is
// not sliced. `netName` is the CNI network's name, which names the NodeSlicePool when
// network_name is not set; InvalidConfig when neither is.
Result<std::vector<SliceSource>> sliceSources(const ValidatedConfig& cfg,
                                              const std::string& netName);

struct PoolTarget {
    IpRange range;  // what the pool hands out: the range, the node's slice, or a block of it
    std::string pool;
    std::string nodeSlicePool;  // sliced: the NodeSlicePool that gave the slice; else ""
    size_t rangeIndex = 0;      // of cfg.ranges; several targets share one with slice parts
};

// The pools of `cfg` on `node`, range by range (with node_slice_parts, part 0 first). Sliced:
// `slices[i]` is the node's slice of range i as sliceSources' NodeSlicePool gives it, nullopt
// when it gives the node none (that range's pools are left out). Invalid, naming the
// NodeSlicePool, when a slice is not a CIDR inside its range.
Result<std::vector<PoolTarget>> poolTargets(const ValidatedConfig& cfg, const std::string& netName,
                                            const std::string& node,
                                            const std::vector<std::optional<std::string>>& slices);

}  // namespace allot::core
