#pragma once
// What the engine asks of the node so that no proof ever frees an address whose ADD may still
// be running (core::addInFlight): a mark, left before an ADD writes any pool and kept after the
// plugin answers, because the runtime's ADD goes on (the main plugin configures the address,
// the runtime finishes the sandbox) after allot's part is done. The runtime's DEL removes it;
// allot-gc reads the marks' ages and prunes the old ones. common/node_state keeps them in files.

#include <string>

#include "core/result.h"

namespace allot::engine {

class AddMarks {
  public:
    virtual ~AddMarks() = default;
    // Before an ADD for `containerId` writes anything; refreshes an earlier mark. An error
    // fails the ADD: an entry without its mark could be freed while its ADD runs.
    virtual core::Result<void> mark(const std::string& containerId) = 0;
    // After the runtime's DEL for `containerId`; a mark that is not there is no error.
    virtual void unmark(const std::string& containerId) = 0;
};

}  // namespace allot::engine
