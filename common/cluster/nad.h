#pragma once
// NetworkAttachmentDefinitions: which IPAM configurations (and so which pools) a network uses.
// The IPAM section is decoded and validated exactly as the plugin does (cni/net_config.h).

#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/result.h"
#include "json/json.h"

namespace allot::cluster {

struct NetworkIpam {
    std::string networkName;       // the CNI network "name" (the conflist's for a list)
    core::ValidatedConfig config;  // the IPAM section as the plugin sees it
};

inline constexpr size_t kMaxNadConfigBytes = 1u << 20;

// Decodes spec.config (a single CNI config with "ipam", or a conflist with "plugins") and
// returns the IPAM configurations whose "type" is in `ownedTypes` (none: empty). Errors:
// Decode for malformed JSON or shape; InvalidConfig (naming the key) when an owned IPAM
// section is invalid. `flatFiles` as for cni::parseNetConf. With `all` (linting), every
// problem of every owned IPAM section is appended there, each naming where it is, and each
// section is returned as far as it could be read; only Decode errors are returned.
core::Result<std::vector<NetworkIpam>> parseNadConfig(std::string_view specConfig,
                                                      const std::vector<std::string>& ownedTypes,
                                                      const std::vector<std::string>& flatFiles,
                                                      std::vector<core::Error>* all = nullptr);

// spec.config of a NetworkAttachmentDefinition object. NotFound when it has none (Multus then
// reads a file on the node, which allot-gc cannot see).
core::Result<std::string> nadSpecConfig(const json::Value& nad);

// `s` cut to `max` bytes (then "..."), with control characters written as \xNN: safe to log
// and to put in an Event whatever a user wrote.
std::string printable(std::string_view s, size_t max);

}  // namespace allot::cluster
