#pragma once
// The one place that writes a pool. A transaction reads the pool (or takes this node's cached
// copy), applies a pure batch of intents (core/batch.h) planned on what it read, and writes the
// result guarded by the resourceVersion read. A lost race (Conflict), a stale cached copy or a
// transient failure starts again on fresh data, with the caller's RetryPolicy.
//
// Pool entries and OverlappingRangeIPReservations are ordered one way (reservations.h): an
// entry is written before its reservation is created, and removed before its reservation is
// deleted. So an address is never in use without its pool entry, a crash leaves at worst an
// orphan reservation (which blocks the address, never duplicates it, and which allot-gc's
// repair loop deletes), and no call inside a node's pool lock waits on a reservation.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/batch.h"
#include "engine/pool_cache.h"
#include "engine/retry_policy.h"
#include "store/pool_store.h"

namespace allot::engine {

struct TxTarget {
    std::string pool;
    // The range this writer expects the pool to hold: another range under the name is a pool
    // name collision (InvalidConfig). Unset: whatever range the pool holds.
    std::optional<core::Cidr> cidr;
    bool create = false;   // create the pool when missing (needs `cidr`)
    bool useCache = true;  // the first attempt may use the node's cached copy
    // Node slices (store::Pool::sealed). A node's cached slice may be stale: its slice pool
    // stays writable by it only while the slice is its own, and the pool's resourceVersion is
    // what guards that. allot-gc's slice controller seals a slice pool (a guarded write) before
    // it takes the slice from the node, with the NodeSlicePool's resourceVersion it read then.
    // Non-empty `seal`: this transaction is that seal. It writes the token if the pool holds no
    // address (creating the pool empty when missing, needs `cidr`); TxResult::sealed says
    // whether it did. The plan is asked as usual (it should plan nothing).
    std::string seal;
    // A write that claims an address in a sealed pool is made only when `unseal`, asked with
    // the token, says the slice is the node's again (on a NodeSlicePool read newer than the
    // seal); the write then drops the seal. Its error fails the transaction. Unset: such a
    // write fails with Conflict. Releases alone never need it and keep the seal.
    std::function<core::Result<void>(const std::string& token)> unseal;
    // Non-empty `lift`: this transaction takes back a seal written with this token (a slice
    // controller that sealed some of a slice's parts and keeps the slice where it is). A seal
    // with another token, or none, is left as it is; TxResult::lifted says whether it wrote.
    std::string lift;
};

// Plans the intents on each read, so every decision is made on the data it overwrites.
using Plan = std::function<core::Result<std::vector<core::Intent>>(const store::Pool&)>;

struct TxResult {
    std::vector<core::Outcome> outcomes;  // one per planned intent; empty when none
    core::Cidr cidr;                      // the pool's range: offsets to addresses
    bool found = true;                    // false: the pool does not exist (nothing applied)
    bool sealed = false;                  // TxTarget::seal written
    bool lifted = false;                  // TxTarget::lift written
    std::string releaseLogUnreadable;     // store::Pool::releasedUnreadable of what was read
};

class PoolTransaction {
  public:
    PoolTransaction(store::PoolStore& store, RetryPolicy& retry, PoolCache* cache = nullptr,
                    std::string ns = {})
        : store_(store), retry_(retry), cache_(cache), ns_(std::move(ns)) {}

    // Runs `plan` against pool `t.pool` until its outcome is written (or nothing needs
    // writing). A missing pool (not created) answers found=false. Errors: the store's, the
    // plan's, InvalidConfig on a range collision, TooLarge when the object is out of room
    // (at once, the message saying what helps), Transient when the retry policy gives up.
    core::Result<TxResult> run(const TxTarget& t, const Plan& plan);

    int conflicts() const { return conflicts_; }

  private:
    core::Result<store::Pool> read(const TxTarget& t, bool useCache, bool& fromCache);
    core::Result<store::Pool> write(const std::string& pool, store::Pool next);
    core::Error retryOrGiveUp(const core::Error& e, bool& again);
    // Seals `next` (TxTarget::seal), takes a seal back (TxTarget::lift) or lifts its seal for
    // a claim (TxTarget::unseal). False: nothing to write for a seal (the pool holds addresses)
    // or a lift (no seal of that token); an error fails the transaction.
    core::Result<bool> sealing(const TxTarget& t, const std::vector<core::Intent>& intents,
                               store::Pool& next, bool changed);

    store::PoolStore& store_;
    RetryPolicy& retry_;
    PoolCache* cache_;
    std::string ns_;
    int conflicts_ = 0;
};

}  // namespace allot::engine
