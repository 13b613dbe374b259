#pragma once
// What the engine asks of the node's DEL journal: where a release it could not finish goes,
// for allot-gc to replay (common/node_state keeps it in files).

#include <string>
#include <vector>

#include "core/result.h"

namespace allot::engine {

// A release that could not reach the store, kept for allot-gc to replay.
struct JournalEntry {
    std::string poolNamespace;
    std::vector<std::string> pools;  // empty: every pool of the network
    std::string networkName;
    std::string containerId;
    std::string ifName;
    std::string podRef;
    std::string node;
    // Reservations (object names) to delete if they still belong to this container: written
    // when the pool was released but its reservations could not be deleted in time.
    std::vector<std::string> reservations;
    std::string file;  // set when read back
};

// Where the plugin's DEL leaves what it could not finish.
class ReleaseJournal {
  public:
    virtual ~ReleaseJournal() = default;
    virtual core::Result<void> record(const JournalEntry& e) = 0;
};

}  // namespace allot::engine
