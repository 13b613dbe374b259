#pragma once
// The node-local DEL journal: releases the plugin could not finish, replayed by allot-gc.
// One file per entry, written atomically (temp file, fsync, rename, fsync dir), mode 0600.
// The plugin writes it and allot-gc reads it, possibly across versions: the file format
// (journal.cpp) only ever gains keys.

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace allot::node {

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

// The journal directory.
class Journal : public ReleaseJournal {
  public:
    explicit Journal(std::string dir) : dir_(std::move(dir)) {}
    core::Result<void> append(const JournalEntry& e);
    core::Result<void> record(const JournalEntry& e) override { return append(e); }
    // Every readable entry; unreadable files are reported in `bad` (path: reason) and left.
    core::Result<std::vector<JournalEntry>> entries(std::vector<std::string>* bad = nullptr) const;
    core::Result<void> remove(const JournalEntry& e);
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
};

std::unique_ptr<ReleaseJournal> makeFileJournal(const std::string& dir);

}  // namespace allot::node
