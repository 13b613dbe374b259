#pragma once
// The read side of allot-gc's repair pass, shared with `kubectl allot check`: list the Nodes,
// the reservations, the NodeSlicePools and the pools of one namespace (a page at a time, keeping
// only the compact indexes of core::PassAnalysis), then the pods of only the namespaces the pools'
// entries point to (keeping only the pods named). What is leaked or inconsistent is then
// `analysis->finish(pods)`: pure, in core/anomaly.h. Nothing here writes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster.h"
#include "core/anomaly.h"

namespace allot::cluster {

struct ScanOptions {
    std::string poolNamespace = "kube-system";
    // A pod whose Node is NotReady this long is on a lost node (core::NodeIndex).
    std::chrono::milliseconds leakGrace{std::chrono::minutes(5)};
    // Nodes some earlier scan listed, kept by the caller across scans (a Node listed before and
    // missing now is gone); null: none.
    std::set<std::string>* nodesSeen = nullptr;
    // Polled between items: true stops the scan (Transient "stopped").
    std::function<bool()> stopped;
    // The Nodes as an earlier scanNodes of the same pass listed them (several pool namespaces,
    // one Node list); null: listed here.
    const core::NodeIndex* listedNodes = nullptr;
};

struct PoolUse {
    std::string pool, range;
    uint64_t size = 0, used = 0;       // as core::PoolUsage
    std::string releaseLogUnreadable;  // store::Pool::releasedUnreadable
};

struct Scan {
    core::NodeIndex nodes;
    std::optional<core::PassAnalysis> analysis;
    std::vector<PoolUse> usage;                            // per decodable pool
    std::unordered_map<std::string, core::PodState> pods;  // those the pools name
    size_t podsListed = 0, pools = 0, allocations = 0, reservations = 0, nodeSlicePools = 0;
};

// Lists the Nodes into `nodes` (their names added to opts.nodesSeen).
Result<void> scanNodes(Cluster& c, const ScanOptions& opts, core::NodeIndex& nodes);

// Fills `out` (which the caller keeps: the analysis refers to its NodeIndex). Errors: the
// store's or the API's, with what was being listed.
Result<void> scan(Cluster& c, const ScanOptions& opts, Scan& out);

// A pool as core::PassAnalysis reads it (valid while `p` lives).
core::PoolEntries poolEntries(const store::Pool& p);

// A reservation as core::PassAnalysis reads it.
core::ReservationEntry reservationEntry(store::Reservation& r);

}  // namespace allot::cluster
