#pragma once
// The node-local DEL journal: releases the plugin could not finish, replayed by allot-gc.
// One file per entry, written atomically (temp file, fsync, rename, fsync dir), mode 0600.
// The plugin writes it and allot-gc reads it, possibly across versions: the file format
// (journal.cpp) only ever gains keys.

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/release_journal.h"

namespace allot::node_state {

// The journal directory.
class Journal : public engine::ReleaseJournal {
  public:
    explicit Journal(std::string dir) : dir_(std::move(dir)) {}
    core::Result<void> append(const engine::JournalEntry& e);
    core::Result<void> record(const engine::JournalEntry& e) override { return append(e); }
    // Every readable entry; unreadable files are reported in `bad` (path: reason) and left.
    core::Result<std::vector<engine::JournalEntry>> entries(
        std::vector<std::string>* bad = nullptr) const;
    core::Result<void> remove(const engine::JournalEntry& e);
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
};

std::unique_ptr<engine::ReleaseJournal> makeFileJournal(const std::string& dir);

}  // namespace allot::node_state
