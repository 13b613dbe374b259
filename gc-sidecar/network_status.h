#pragma once
// The Multus network-status annotation of a pod: which networks it was attached to.

#include <string>
#include <string_view>
#include <vector>

#include "core/ip.h"
#include "core/result.h"

namespace allot::gc {

inline constexpr const char* kNetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status";
// Annotations are limited to 256 KiB in total by the API server; anything larger is not one.
inline constexpr size_t kMaxNetworkStatusBytes = 256u << 10;
inline constexpr size_t kMaxNetworkStatusEntries = 128;

struct NetworkStatus {
    std::string name;  // "namespace/nad" (or "nad": the pod's namespace)
    std::string interface;
    std::vector<core::IpAddress> ips;  // written bare or as CIDRs
    bool isDefault = false;
};

// Errors: Decode, saying what is wrong, for anything but a JSON list of objects each with a
// string "name"; for an "ips" that is not a list of IP addresses; for more than
// kMaxNetworkStatusEntries entries, more than kMaxNetworkStatusBytes, or nesting deeper than 8.
core::Result<std::vector<NetworkStatus>> parseNetworkStatus(std::string_view text);

// The NetworkAttachmentDefinition an entry names: {namespace, name}; a bare name is in
// `podNamespace`. Errors: Decode for an empty part or more than one '/'.
core::Result<std::pair<std::string, std::string>> nadOf(const NetworkStatus& s,
                                                        const std::string& podNamespace);

}  // namespace allot::gc
