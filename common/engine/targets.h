#pragma once
// Which pools a config's ranges live in on this node: core::poolTargets' names, with the node's
// slices read from the store in node-slice mode.

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/ip_range.h"
#include "engine/context.h"

namespace allot::engine {

// The pool name and effective range of each configured range on this node.
struct Target {
    core::IpRange range;
    std::string pool;
    std::string nodeSlicePool;  // node-slice mode: the NodeSlicePool that gave `range`
    size_t rangeIndex = 0;      // of cfg.ranges; several targets share one with slice parts
    // With node_slice_parts > 1: why allot-gc's slice controller refuses them on the network
    // (the NodeSlicePool's word); "" while honoured. ADD fails on it; DEL, CHECK, GC and STATUS
    // go on over every part.
    std::string partsRefused = {};
};

// What a node without a slice (yet) means to the caller: an ADD waits for one (Errc::
// SliceAwaited, retried), a release skips that range (nothing was allocated from a slice the
// node never had).
enum class MissingSlice { Await, Skip };

// One per range, in order; in node-slice mode with node_slice_parts, one per part of each
// range's slice (part 0 first). In node-slice mode the node's slice comes from `store`: the
// node relay's watched copy unless `fresh` (then a read of the NodeSlicePool in `poolNamespace`).
// The one resolution for every caller (the engine's verbs, allot-gc's releases).
core::Result<std::vector<Target>> resolveTargets(
    store::PoolStore& store, const core::ValidatedConfig& cfg, const std::string& netName,
    const std::string& node, const std::string& poolNamespace, bool fresh, MissingSlice missing);
// The engine's: its context's store, node and namespace; a missing slice is awaited.
core::Result<std::vector<Target>> resolveTargets(Context& ctx, const core::ValidatedConfig& cfg,
                                                 const std::string& netName, bool fresh = false);

// The targets grouped by range, in order: each range's parts (one, unless node_slice_parts).
using Parts = std::vector<const Target*>;
std::vector<Parts> byRange(const std::vector<Target>& targets);

// Whereabouts returns the gateway with every address, inside the range or not (a pool that is
// a block of the subnet); allot only with addresses of its family.
std::optional<core::IpAddress> gatewayFor(const core::ValidatedConfig& cfg, const core::IpRange& r);

}  // namespace allot::engine
