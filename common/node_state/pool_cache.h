#pragma once
// The node's memory of pool objects: an uncontended ADD can skip the read.

#include <memory>
#include <optional>
#include <string>

#include "engine/pool_cache.h"

namespace allot::node_state {

// The last pool seen, as <dir>/<namespace>.<pool>.cache (mode 0600); only ever a hint (see
// PoolCache).
std::unique_ptr<engine::PoolCache> makeFileCache(const std::string& dir);

}  // namespace allot::node_state
