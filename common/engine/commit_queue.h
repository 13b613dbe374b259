#pragma once
// What the engine asks of a node's group commit: ADDs for one pool on one node share one pool
// write (common/node_state keeps the queue in files).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/ip_range.h"
#include "core/result.h"

namespace allot::engine {

// What one ADD asks of one pool.
struct CommitRequest {
    core::Owner owner;
    std::optional<core::IpAddress> requested;
    // Offsets found reserved through another pool: never picked, and dropped if this owner
    // already holds one of them.
    std::vector<core::u128> avoid;
    // Instead of an address: take out what (containerId, ifName) holds (answer: the address
    // it held; NotFound when nothing).
    bool release = false;
    // The requesting config's own window of the pool (range_start/range_end/exclude) and
    // gateway. Configs that share one pool narrow it differently, so a batch picks for each
    // request with its own; unset: the window of the config serving the batch.
    std::optional<core::IpRange> window;
    std::optional<core::IpAddress> gateway;
    int64_t cooldownS = 0;  // the requesting config's released_ip_cooldown_s
};

// ADDs for one pool on one node queue for the same lock; each first leaves its request here,
// and whoever holds the lock serves every request waiting then with one pool write, leaving
// each its answer. A request whose process has died is discarded, so a killed plugin never
// gets an address written for it after its death is visible.
//
// A request the holder has taken (waiting()) is its to answer: its requester can no longer
// withdraw it (withdraw() says so), and waits for the answer instead of giving up at its
// deadline while the holder writes an entry for it (which would be left behind by an ADD that
// failed). A holder whose write fails gives what it took back (giveBack()).
class CommitQueue {
  public:
    virtual ~CommitQueue() = default;
    // A queued request; destroying it withdraws the request and any answer.
    class Ticket {
      public:
        virtual ~Ticket() = default;
    };
    struct Waiting {
        std::string id;
        CommitRequest request;
    };
    virtual core::Result<std::unique_ptr<Ticket>> submit(const std::string& pool,
                                                         const CommitRequest& request) = 0;
    // The answer a holder of the lock left for this ticket, if any.
    virtual std::optional<core::Result<core::Pick>> answered(Ticket& ticket) = 0;
    // Takes the unanswered requests of live processes for the ticket's pool, other than its
    // own, at most `max`: each must then be answered, or given back. Call with the pool lock
    // held.
    virtual std::vector<Waiting> waiting(Ticket& self, size_t max) = 0;
    virtual void answer(Ticket& self, const std::string& id, const core::Result<core::Pick>& a) = 0;
    // Returns taken requests unanswered (the holder's write failed): they can be withdrawn
    // again, or taken by the next holder.
    virtual void giveBack(Ticket& self, const std::vector<std::string>& ids) = 0;
    // Takes the ticket's request out of the queue before its deadline ends the wait for the
    // lock. False when a holder has already taken it: its answer is coming, and the entry it
    // writes is this request's.
    virtual bool withdraw(Ticket& ticket) = 0;
};

}  // namespace allot::engine
