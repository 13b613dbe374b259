#pragma once
// Internal to the Reclaimer's source files (reclaimer.cpp, reclaimer_release.cpp): the
// per-batch state of one Work.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gc-sidecar/reclaimer.h"

namespace allot::gc {

// Per-batch state of one Work.
struct Reclaimer::Item {
    Work w;
    GonePod gone;
    bool scanMatch = false;  // match as in a scan (entries must be recorded on this node)
    bool scanAll = false;    // look beyond the pools its networks name
    // Its network-status names networks that cannot be resolved (malformed, or a NAD that is
    // gone or unreadable): the pod had secondary networks, so every pool is looked in. A pod
    // without network-status is looked for only in the pools known to hold this node's entries.
    bool scanEveryPool = false;
    bool malformed = false;
    std::string malformedWhy;
    std::set<PoolKey> pools;
    std::optional<std::string> failure;
    Liveness live = Liveness::Unknown;
    std::vector<cluster::Released> released;
    std::vector<core::IpAddress> kept;  // its sandbox may still run: not freed here
    std::string keptWhy;
};

// The gone pods of one batch, grouped by the pool (ns, name) to look in.
struct Reclaimer::Group {
    std::string networkName;
    std::vector<std::pair<size_t, bool>> members;  // item, scan rules
};

// Which addresses the node's network namespaces still hold, when that could be read.
struct Reclaimer::SandboxProof {
    std::optional<std::set<core::IpAddress>> nodeHeld;
    std::string noProof = "its deletion did not show its containers stopped";
};

// What one pool's write did.
struct Reclaimer::PoolOutcome {
    std::vector<std::pair<size_t, cluster::Released>> released;
    std::vector<std::pair<size_t, core::IpAddress>> kept;
    std::optional<std::string> error;
};

// An IPPool of namespace `ns` that cannot be decoded: skipped, with a warning.
void logUndecodable(const std::string& ns, const std::string& name, const std::string& why);

}  // namespace allot::gc
