#pragma once
// The node-local DEL journal: releases the plugin could not finish, replayed by allot-gc.
// One file per entry, written atomically (temp file, fsync, rename, fsync dir), mode 0600.

#include <string>
#include <vector>

#include "core/result.h"

namespace allot::store {

struct JournalRecord {
    std::string poolNamespace;
    std::vector<std::string> pools;  // empty: every pool of the network
    std::string networkName;
    std::string containerId;
    std::string ifName;
    std::string podRef;
    std::string node;
    std::string file;  // set when read back
    // Reservations (object names) to delete if they still belong to this container: written
    // when the pool was released but its reservations could not be deleted in time.
    std::vector<std::string> reservations;
};

class Journal {
public:
    explicit Journal(std::string dir) : dir_(std::move(dir)) {}
    core::Result<void> append(const JournalRecord& r);
    // Every readable entry; unreadable files are reported in `bad` (path: reason) and left.
    core::Result<std::vector<JournalRecord>> entries(std::vector<std::string>* bad = nullptr) const;
    core::Result<void> remove(const JournalRecord& r);
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
};

// Writes `data` to `path` atomically with `mode` (temp file in the same dir, fsync, rename).
core::Result<void> writeFileAtomic(const std::string& path, const std::string& data, unsigned mode);
// Creates `dir` and its parents with `mode` if missing.
core::Result<void> makeDirs(const std::string& dir, unsigned mode);

}  // namespace allot::store
