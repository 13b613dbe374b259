#pragma once
// The Multus network-status annotation of a pod: which networks it was attached to.

#include <string>
#include <string_view>
#include <vector>

#include "cluster/nad.h"
#include "core/ip.h"
#include "core/result.h"

namespace allot::gc {

inline constexpr const char* kNetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status";
// Annotations are limited to 256 KiB in total by the API server; anything larger is not one.
inline constexpr size_t kMaxNetworkStatusBytes = 256u << 10;
inline constexpr size_t kMaxNetworkStatusEntries = 128;
inline constexpr size_t kMaxNamespaceBytes = 63;  // a DNS-1123 label
inline constexpr size_t kMaxNadNameBytes = 253;   // a DNS-1123 subdomain

struct NetworkStatus {
    std::string name;  // "namespace/nad" (or "nad": the pod's namespace)
    std::string interface;
    std::vector<core::IpAddress> ips;  // written bare or as CIDRs
    bool isDefault = false;
};

// Errors: Decode, saying what is wrong, for anything but a JSON list of objects each with a
// string "name"; for an "ips" that is not a list of IP addresses; for more than
// kMaxNetworkStatusEntries entries, more than kMaxNetworkStatusBytes, or nesting deeper than 8.
// Error messages are one printable line of bounded length (they are logged and put in Events):
// text from the annotation is quoted through printable().
core::Result<std::vector<NetworkStatus>> parseNetworkStatus(std::string_view text);

// The NetworkAttachmentDefinition an entry names: {namespace, name}; a bare name is in
// `podNamespace`. Both are valid Kubernetes names (a DNS-1123 label, a DNS-1123 subdomain),
// safe in a request path. Errors: Decode for anything else (an empty part, more than one '/',
// "..", upper case, a '?', too long).
core::Result<std::pair<std::string, std::string>> nadOf(const NetworkStatus& s,
                                                        const std::string& podNamespace);

using cluster::printable;  // cluster/nad.h

}  // namespace allot::gc
