#pragma once
// Node-local mutual exclusion per pool.

#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"

namespace allot::node {

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

// flock(2) on <dir>/<pool>.lock (mode 0600). Waiting stops at the deadline (Transient).
std::unique_ptr<PoolLocker> makeFileLocker(const std::string& dir);

}  // namespace allot::node
