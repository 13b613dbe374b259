#pragma once
// The IPAM configuration model (Whereabouts' keys, same meanings and defaults) and its
// validation. Decoding from JSON happens in plugin/; this layer only checks meaning.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/ip_range.h"
#include "core/result.h"

namespace allot::core {

struct StaticAddress {
    std::string address;  // CIDR, e.g. "10.9.0.5/24"
    std::string gateway;  // optional
};

// An address with its prefix length, host bits kept ("10.9.0.5/24").
struct StaticIp {
    IpAddress ip;
    int prefix = 0;
};

struct IpamConfig {
    std::string type;               // "allot" or "whereabouts"
    std::vector<RangeSpec> ranges;  // top-level range first, then ipRanges, in order
    bool topLevelRange = false;     // ranges[0] came from the top-level "range" keys
    std::string gateway;            // optional
    std::vector<StaticAddress> addresses;
    std::string networkName;  // network_name: pool name prefix
    bool enableOverlappingRanges = true;
    std::string nodeSliceSize;  // node_slice_size, e.g. "/28"; empty = off
    // node_slice_parts: a node's slice kept in this many IPPools (core/naming.h, slicePart*),
    // each holding one block of its addresses, so a full slice's write stays small. 1 = one
    // pool per slice, as Whereabouts (whose plugin reads only the first part).
    int sliceParts = 1;
    std::string kubeconfig;  // kubernetes.kubeconfig
    std::string logFile;
    std::string logLevel;  // debug, verbose, error, panic (Whereabouts' levels)
    std::string configurationPath;
    // allot's own keys (all optional)
    std::string poolNamespace;  // "namespace"; default from kubeconfig, else kube-system
    std::string lockDir;        // node-local lock dir
    std::string journalDir;     // DEL journal dir
    std::string relaySocket;    // allot-gc's node relay; empty = the default path
    int deadlineMs = 0;         // overall per-call deadline; 0 = default
    // released_ip_cooldown_s: a released address waits this long before it is handed out
    // again, unless nothing else is free (core::pick). 0 = off (Whereabouts' behaviour).
    int64_t cooldownS = 0;
    // sticky_statefulsets: a StatefulSet member's address is kept for its name across pod
    // re-creation, owned by the set (core/sticky.h). false = Whereabouts' behaviour.
    bool stickyStatefulSets = false;
};

struct ValidatedConfig {
    IpamConfig raw;
    std::vector<IpRange> ranges;
    std::optional<IpAddress> gateway;
    std::vector<std::pair<StaticIp, std::optional<IpAddress>>> staticAddresses;  // with gateway
    std::optional<int> sliceSize;  // prefix length of node slices
    int sliceParts = 1;            // IPPools per node slice (IpamConfig::sliceParts)
    // Values Whereabouts ignores or repairs, each saying what was done: the plugin logs them.
    std::vector<std::string> warnings;
    // What fails an ADD (not a DEL) with this config, as in Whereabouts: an unreadable exclude.
    std::optional<Error> addError;
};

inline constexpr int kMaxRanges = 16;
inline constexpr int kMaxSliceParts = 16;
inline constexpr int kDefaultDeadlineMs = 60'000;  // well inside kubelet's 4-minute limit
inline constexpr int kMaxDeadlineMs = 180'000;

// Checks every value the way Whereabouts v0.9.4 does: what it refuses is an error
// (Errc::InvalidConfig naming the key and the value), what it ignores or repairs is done the
// same way and described in `warnings`.
Result<ValidatedConfig> validate(const IpamConfig& cfg);

// The same checks, going on past each problem: every error is appended to `errors` (the first
// is the one validate() returns), a bad range or address is left out of the result. For
// linting; a config with any error is refused by the plugin.
ValidatedConfig validateAll(const IpamConfig& cfg, std::vector<Error>& errors);

}  // namespace allot::core
