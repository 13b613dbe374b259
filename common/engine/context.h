#pragma once
// What one engine call works with (the store, the node's lock, queue, cache and journal, its
// deadline) and what it reports back for the caller's log and counters.

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/ip.h"
#include "engine/add_marks.h"
#include "engine/commit_queue.h"
#include "engine/pool_cache.h"
#include "engine/pool_locker.h"
#include "engine/release_journal.h"
#include "store/pool_store.h"

namespace allot::engine {

using Clock = std::chrono::steady_clock;

// One address an ADD or CHECK answers with.
struct IpResult {
    core::IpAddress ip;
    int prefix = 0;
    std::optional<core::IpAddress> gateway;
};

// What a call did, beside its result: for the caller's log, tests and benchmarks.
struct Report {
    int conflicts = 0;               // pool writes lost to another writer and retried
    int served = 0;                  // other ADDs whose addresses this call's pool writes committed
    std::string journalReason;       // why DEL journaled
    std::set<std::string> warnings;  // what the pools read held that allot could not use
    // The pool (name, in the context's poolNamespace) of each address this call allocated or
    // released.
    std::vector<std::pair<core::IpAddress, std::string>> pools;
};

struct Context {
    explicit Context(store::PoolStore& s) : store(s) {}
    store::PoolStore& store;
    PoolLocker* locker = nullptr;  // null: no node-local lock (tests)
    ReleaseJournal* journal = nullptr;
    PoolCache* cache = nullptr;
    CommitQueue* queue = nullptr;  // null: each ADD writes for itself
    AddMarks* marks = nullptr;     // null: ADDs leave no mark (tests, kubectl allot)
    std::string node;
    std::string poolNamespace;
    Clock::time_point deadline = Clock::time_point::max();
    std::function<void(std::chrono::milliseconds)> sleep;  // backoff; default sleeps
    Report report;
};

// Cleanup after a failed or finished attempt must still reach the store when the call's own
// deadline is spent: while one lives, the call (its deadline and its store's) has a short
// grace. The one way a call's deadline is stretched.
class CleanupGrace {
  public:
    explicit CleanupGrace(Context& ctx);
    ~CleanupGrace();
    CleanupGrace(const CleanupGrace&) = delete;
    CleanupGrace& operator=(const CleanupGrace&) = delete;

  private:
    Context& ctx_;
    Clock::time_point saved_;
};

}  // namespace allot::engine
