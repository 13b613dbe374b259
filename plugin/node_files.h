#pragma once
// Node-local state of the plugin: per-pool file locks, the pool cache, the DEL journal, the
// node name.

#include <memory>
#include <string>

#include "plugin/ipam.h"

namespace allot::plugin {

inline constexpr const char* kDefaultLockDir = "/run/allot/locks";
inline constexpr const char* kDefaultJournalDir = "/var/lib/allot/journal";

// flock(2) on <dir>/<pool>.lock (mode 0600). Waiting stops at the deadline (Transient).
std::unique_ptr<PoolLocker> makeFileLocker(const std::string& dir);
// The last pool seen, as <dir>/<namespace>.<pool>.cache (mode 0600); only ever a hint (see PoolCache).
std::unique_ptr<PoolCache> makeFileCache(const std::string& dir);
std::unique_ptr<ReleaseJournal> makeFileJournal(const std::string& dir);
// Requests and answers as files in <dir>/<pool>.q/ (dir 0700, files 0600). A requester holds
// a shared flock on its request file while it waits, which is how the holder of the pool lock
// tells a live requester from a dead one.
std::unique_ptr<ClaimQueue> makeFileClaimQueue(const std::string& dir);

// NODENAME, then a "nodename" file beside the flat config / configuration_path, then
// /etc/cni/net.d/{allot.d,whereabouts.d}/nodename, then the host name.
std::string lookupNodeName(const std::string& envNodeName, const std::string& flatFile,
                           const std::string& configurationPath);

}  // namespace allot::plugin
