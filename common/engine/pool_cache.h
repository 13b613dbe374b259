#pragma once
// What the engine asks of a node's cache of pool objects (common/node_state keeps it in files).

#include <optional>
#include <string>

#include "store/pool_store.h"

namespace allot::engine {

// Remembers the last pool object this node read or wrote, so an uncontended write can skip
// the read: the write carries the cached resourceVersion and fails with Conflict if stale.
// Only ever a hint.
class PoolCache {
  public:
    virtual ~PoolCache() = default;
    // Keyed by namespace and name: the same pool name in two namespaces is two pools.
    virtual std::optional<store::Pool> load(const std::string& ns, const std::string& pool) = 0;
    virtual void save(const std::string& ns, const store::Pool& pool) = 0;
    virtual void drop(const std::string& ns, const std::string& pool) = 0;
};

}  // namespace allot::engine
