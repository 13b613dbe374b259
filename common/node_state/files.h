#pragma once
// File primitives the node-local state shares: directories, atomic replacement, bounded reads.

#include <optional>
#include <string>

#include "core/result.h"

namespace allot::node_state {

// An Internal error "WHAT: strerror(errno)" for a failed system call.
core::Error ioError(const std::string& what);

// Creates `dir` and its parents with `mode` if missing.
core::Result<void> makeDirs(const std::string& dir, unsigned mode);

// Writes `data` to `path` atomically with `mode` (temp file in the same dir, fsync, rename,
// fsync of the dir): for records that must survive a crash.
core::Result<void> writeFileAtomic(const std::string& path, const std::string& data, unsigned mode);

// Writes `data` to `path` through a temporary name, so readers see all of it or nothing. For a
// hint or a message, not a record: no fsync. The temporary name is unpredictable and created
// exclusively (mode 0600), never through a symlink; the directory must be allot's own (0700).
bool writeAtomic(const std::string& path, const std::string& data);

// The whole regular file, or nullopt when it is missing, a symlink or larger than `maxBytes`.
std::optional<std::string> readSmall(const std::string& path, size_t maxBytes);

// A pool name as one path component ('/' replaced).
std::string poolFileName(const std::string& pool);

}  // namespace allot::node_state
