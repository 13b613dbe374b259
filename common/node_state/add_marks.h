#pragma once
// The node's marks of ADDs in flight (engine/add_marks.h), one empty file per container in
// kAddMarksDir, named by the container ID; the file's mtime is when its last ADD started. The
// plugin marks and unmarks; allot-gc reads a mark's age (core::AddEvidence) and prunes marks
// past the bound. The directory is allot's own (0700, root), never followed through a symlink.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "engine/add_marks.h"

namespace allot::node_state {

// On the host; tmpfs, so a reboot (which ends every sandbox) clears it. allot-gc's DaemonSet
// mounts /run/allot.
inline constexpr const char* kAddMarksDir = "/run/allot/adds";

class FileAddMarks : public engine::AddMarks {
  public:
    explicit FileAddMarks(std::string dir = kAddMarksDir) : dir_(std::move(dir)) {}
    core::Result<void> mark(const std::string& containerId) override;
    void unmark(const std::string& containerId) override;

    // How old the mark of `containerId` is at `now`; nullopt when there is none (nor the
    // directory). Internal when it cannot be read: the caller cannot tell.
    core::Result<std::optional<std::chrono::milliseconds>> age(
        const std::string& containerId, std::chrono::system_clock::time_point now) const;
    // Removes the marks older than `bound` at `now` (ADDs that can no longer be running); how
    // many. At most `limit` entries are looked at per call.
    size_t prune(std::chrono::milliseconds bound, std::chrono::system_clock::time_point now,
                 size_t limit = 100000);

    const std::string& dir() const { return dir_; }

  private:
    std::string path(const std::string& containerId) const;
    std::string dir_;
};

}  // namespace allot::node_state
