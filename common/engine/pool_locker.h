#pragma once
// What the engine asks of a node's mutual exclusion per pool (common/node_state keeps it in files).

#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"

namespace allot::engine {

// acquire() blocks until the lock is held or the deadline passes (Transient).
class PoolLocker {
  public:
    virtual ~PoolLocker() = default;
    class Guard {
      public:
        virtual ~Guard() = default;
    };
    virtual core::Result<std::unique_ptr<Guard>> acquire(
        const std::string& pool, std::chrono::steady_clock::time_point deadline) = 0;
};

}  // namespace allot::engine
