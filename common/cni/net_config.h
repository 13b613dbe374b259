#pragma once
// Decodes the network configuration given on stdin (and the optional flat file) into the
// core config model, plus what the CNI layer passes through (routes, dns, prevResult, ...).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"
#include "json/json.h"

namespace allot::cni {

using core::Result;

inline constexpr size_t kMaxConfigBytes = 1 << 20;
inline constexpr size_t kMaxExcludes = 1024;      // per range entry
inline constexpr size_t kMaxNamespaceBytes = 63;  // "namespace": a DNS-1123 label

// Every key of the "ipam" object (and of the flat file merged under it) that the decoder
// reads. docs/configuration.md documents exactly these (the lint test config-doc checks it),
// and a unit test checks that each is decoded.
inline constexpr std::string_view kIpamKeys[] = {
    "type",
    "range",
    "range_start",
    "range_end",
    "exclude",
    "ipRanges",
    "gateway",
    "addresses",
    "routes",
    "dns",
    "network_name",
    "enable_overlapping_ranges",
    "node_slice_size",
    "node_slice_parts",
    "kubernetes",
    "configuration_path",
    "log_file",
    "log_level",
    "log_format",
    "namespace",
    "lock_dir",
    "journal_dir",
    "relay_socket",
    "deadline_ms",
    "released_ip_cooldown_s",
    "sticky_statefulsets",
    "leader_lease_duration",
    "leader_renew_deadline",
    "leader_retry_period",
    "sleep_for_race",
};

struct Attachment {
    std::string containerId;
    std::string ifName;
};

struct NetConf {
    std::string cniVersion;
    std::string name;
    core::IpamConfig ipam;
    json::Value routes;                         // ipam.routes, passed through to the result
    json::Value dns;                            // ipam.dns, passed through to the result
    std::vector<core::IpAddress> requestedIps;  // runtimeConfig.ips, else args.cni.ips
    json::Value prevResult;
    bool hasValidAttachments = false;
    std::vector<Attachment> validAttachments;  // GC: cni.dev/valid-attachments
    std::string flatFile;                      // the flat file that was merged, if any
    // ipam.log_format (also from the flat file): "json" sets it; "text", the default, does not.
    bool jsonLogs = false;
    // IPAMClaim (issue 18): the network opts in with top-level "allowPersistentIPs": true; a
    // claim reference may come in args.cni ("ipam-claim-reference"), else from the pod's
    // network-selection element (network_selection.h); the plugin's ADD acts on them
    // (engine/owned_add.h).
    bool allowPersistentIps = false;
    std::string claimRef;
    // Keys Whereabouts ignores, ignored here too: the plugin logs each (with core's warnings).
    std::vector<std::string> warnings;
};

// Parses stdin. Decode (CNI 6) for malformed JSON or more than kMaxConfigBytes; InvalidConfig
// (CNI 7) naming the key for a value of the wrong type, more than core::kMaxRanges ipRanges,
// more than kMaxExcludes exclude entries in a range, a "namespace" that is no namespace
// name, or "dns"/"routes" that would make a result the main plugin cannot read (Whereabouts
// refuses the same values when it decodes them). `flatFiles` are the default flat-file
// locations, tried in order after ipam.configuration_path (a configuration_path that does not
// exist is skipped, as in Whereabouts); the first that exists is merged under the network
// config.
Result<NetConf> parseNetConf(std::string_view stdinText, const std::vector<std::string>& flatFiles);

// The same, going on past a bad key: every key-level problem is appended to `errors` (the
// first is the one parseNetConf returns) and the key keeps its default. Only a document that
// cannot be read at all (not JSON, no "ipam", an unreadable flat file) is an error here.
// For linting: a config with any `errors` is refused by the plugin.
Result<NetConf> parseNetConfAll(std::string_view stdinText,
                                const std::vector<std::string>& flatFiles,
                                std::vector<core::Error>& errors);

// The default flat-file search list: allot's own first (so a node running both finds allot's
// kubeconfig), then Whereabouts' places.
std::vector<std::string> defaultFlatFiles();

// The search list with the ALLOT_FLAT_FILES override applied: unset gives the defaults; a
// ':'-separated list replaces them (tests point it at a path that does not exist).
std::vector<std::string> flatFiles(const char* allotFlatFilesEnv);

}  // namespace allot::cni
