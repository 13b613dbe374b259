#pragma once
// Which addresses the network namespaces on this node hold: the proof allot-gc asks for
// before it frees the address of a pod whose deletion did not show its sandbox stopped (a
// force delete, a stopped kubelet). Namespaces are found in /run/netns (ip netns, containerd,
// CRI-O) and through every process's /proc/<pid>/ns/net (needs the host's PID namespace); the
// node's own namespace (allot-gc's, with hostNetwork) is left out. Reading another namespace
// needs CAP_SYS_ADMIN (setns): without it the probe fails, and nothing is freed on its word.
// A process whose ns/net link this process may not follow (the ptrace rules: a process with
// capabilities allot-gc lacks) has its namespace's addresses read from /proc/<pid>/net.
// The probe fails, rather than report what it saw, whenever it may not have seen everything:
// past its limits, or when a namespace still there cannot be opened or read (a process that
// ended meanwhile holds nothing and is skipped).

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

struct ProbeOptions {
    // Entries of the netns directories and of procDir together, and distinct namespaces read:
    // past either, the probe fails (Exhausted).
    size_t maxEntries = 4 * 8192;
    size_t maxNamespaces = 8192;
    // Where a thread inside a namespace reads its fib_trie and if_inet6.
    std::string netDir = "/proc/thread-self/net";
};

// Reads every namespace's local addresses. `netnsDirs` default: /run/netns, /var/run/netns (one
// that does not exist holds none). Internal when a directory, a namespace or its address files
// cannot be read (if_inet6 may be absent: a kernel without IPv6); Exhausted past a limit.
core::Result<ProbeReport> probeNodeAddresses(const std::vector<std::string>& netnsDirs,
                                             const std::string& procDir = "/proc",
                                             const ProbeOptions& options = {});

// Parsers of /proc/<pid>/net/fib_trie and /proc/<pid>/net/if_inet6 (exposed for tests).
std::set<core::IpAddress> localAddressesFromFibTrie(const std::string& text);
std::set<core::IpAddress> addressesFromIfInet6(const std::string& text);

}  // namespace allot::gc
