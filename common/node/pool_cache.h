#pragma once
// The node's memory of pool objects: an uncontended ADD can skip the read.

#include <memory>
#include <optional>
#include <string>

#include "store/pool_store.h"

namespace allot::node {

// Remembers the last pool object this node read or wrote, so an uncontended ADD can skip the
// read: the write carries the cached resourceVersion and fails with Conflict if stale.
class PoolCache {
public:
    virtual ~PoolCache() = default;
    // Keyed by namespace and name: the same pool name in two namespaces is two pools.
    virtual std::optional<store::Pool> load(const std::string& ns, const std::string& pool) = 0;
    virtual void save(const std::string& ns, const store::Pool& pool) = 0;
    virtual void drop(const std::string& ns, const std::string& pool) = 0;
};

// The last pool seen, as <dir>/<namespace>.<pool>.cache (mode 0600); only ever a hint (see PoolCache).
std::unique_ptr<PoolCache> makeFileCache(const std::string& dir);

}  // namespace allot::node
