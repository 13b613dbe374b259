#pragma once
// Node-local mutual exclusion per pool, as files.

#include <memory>
#include <string>

#include "engine/pool_locker.h"

namespace allot::node_state {

// flock(2) on <dir>/<pool>.lock (mode 0600). Waiting stops at the deadline (Transient).
std::unique_ptr<engine::PoolLocker> makeFileLocker(const std::string& dir);

}  // namespace allot::node_state
