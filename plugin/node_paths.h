#pragma once
// Where a network config may make allot touch the node. A network config is written by
// whoever may create a NetworkAttachmentDefinition in some namespace, and allot runs as root:
// its lock_dir, journal_dir, relay_socket and log_file are honoured only inside allot's own
// directories and those the node's admin names in the flat file.

#include <string>
#include <vector>

#include "core/config.h"

namespace allot::plugin {

// Where the node-local state goes when a network config names no lock_dir / journal_dir.
inline constexpr const char* kDefaultLockDir = "/run/allot/locks";
inline constexpr const char* kDefaultJournalDir = "/var/lib/allot/journal";

inline constexpr const char* kOwnRoots[] = {"/run/allot", "/var/lib/allot", "/var/log/allot"};

struct NodeRoots {
    std::vector<std::string> dirs;      // allowed roots, normalised, allot's own first
    std::vector<std::string> journals;  // journal dirs allot-gc replays
    std::string flatFile;               // the admin flat file they came from ("" if none)
    std::string describe() const;       // "/run/allot, /var/lib/allot, ..." for errors
};

// allot's own roots plus what the first existing file of `adminFlatFiles` names: its
// lock_dir, journal_dir, relay_socket's and log_file's directories, and "node_dirs" (a list of
// directories a network config may use for any of them; a journal_dir there is the admin's
// word that allot-gc replays it). Only the admin's search list counts, never a
// configuration_path from the network config itself.
NodeRoots nodeRoots(const std::vector<std::string>& adminFlatFiles);

// `path` is absolute, has no "." or ".." component, and lies (lexically and after resolving
// the symlinks of its deepest existing ancestor) inside one of `roots.dirs`.
bool insideRoots(const NodeRoots& roots, const std::string& path);

// lock_dir, journal_dir and relay_socket of `cfg` (empty: allot's defaults, always allowed).
// InvalidConfig naming the key and the allowed roots for a path outside them, for a lock or
// journal dir that is a symlink, not a directory, or writable by others, and for a
// journal_dir allot-gc does not replay (the message names the ones it does).
core::Result<void> checkNodePaths(const core::IpamConfig& cfg, const NodeRoots& roots);

// A log_file allot may open: inside the roots. The reason when not.
core::Result<void> checkLogFile(const std::string& path, const NodeRoots& roots);

}  // namespace allot::plugin
