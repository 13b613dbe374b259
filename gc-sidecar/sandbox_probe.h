#pragma once
// Which addresses the network namespaces on this node hold: the proof allot-gc asks for
// before it frees the address of a pod whose deletion did not show its sandbox stopped (a
// force delete, a stopped kubelet). Namespaces are found in /run/netns (ip netns, containerd,
// CRI-O) and through every process's /proc/<pid>/ns/net (needs the host's PID namespace); the
// node's own namespace (allot-gc's, with hostNetwork) is left out. Reading another namespace
// needs CAP_SYS_ADMIN (setns): without it the probe fails, and nothing is freed on its word.

#include <set>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/result.h"

namespace allot::gc {

struct ProbeReport {
    std::set<core::IpAddress> addresses;
    size_t namespaces = 0;
};

// Reads every namespace's local addresses. `netnsDirs` default: /run/netns, /var/run/netns.
core::Result<ProbeReport> probeNodeAddresses(const std::vector<std::string>& netnsDirs,
                                             const std::string& procDir = "/proc");

// Parsers of /proc/<pid>/net/fib_trie and /proc/<pid>/net/if_inet6 (exposed for tests).
std::set<core::IpAddress> localAddressesFromFibTrie(const std::string& text);
std::set<core::IpAddress> addressesFromIfInet6(const std::string& text);

}  // namespace allot::gc
