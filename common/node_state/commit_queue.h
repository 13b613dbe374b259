#pragma once
// Node-local group commit, as files.

#include <memory>
#include <string>

#include "engine/commit_queue.h"

namespace allot::node_state {

// Requests and answers as files in <dir>/<pool>.q/ (dir 0700, files 0600). A requester holds
// a shared flock on its request file while it waits, which is how the holder of the pool lock
// tells a live requester from a dead one.
std::unique_ptr<engine::CommitQueue> makeFileCommitQueue(const std::string& dir);

}  // namespace allot::node_state
