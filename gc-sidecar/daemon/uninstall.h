#pragma once
// Leaving the node when allot is uninstalled (--uninstall-with). Every pod of the DaemonSet gets
// SIGTERM in a rolling update as well as when the DaemonSet is deleted (kubectl delete -k,
// helm uninstall); only in the second is the DaemonSet gone or marked for deletion. Then
// allot-gc, stopping, removes what the install put on this node: the plugin binary, the files
// install-cni.sh and allot-gc wrote into allot's configuration directory, the plugin's locks
// and its journal's files. The directories themselves stay (they are the pod's mounts), and
// IPPools and reservations stay as they are.

#include <string>
#include <vector>

#include "core/result.h"
#include "k8s/client.h"

namespace allot::gc {

// What allot put on the node, as this container sees it. Empty members are skipped.
struct NodeFiles {
    std::string pluginBinary;            // <--cni-bin-dir>/allot
    std::string confDir;                 // the directory of --node-kubeconfig
    std::vector<std::string> confFiles;  // allot.conf, nodename, the node kubeconfig's name
    std::string locksDir;                // <directory of --relay-socket>/locks: removed whole
    std::string journalDir;              // its *.json files
};

struct Removal {
    std::vector<std::string> removed;  // paths
    std::vector<std::string> failed;   // "path: why"
    int journalEntries = 0;            // releases the journal still held
};

// True when the DaemonSet NAMESPACE/NAME is gone (404) or has a deletionTimestamp: allot is
// being uninstalled. An error: not known, so nothing is removed.
core::Result<bool> daemonSetGone(k8s::Client& client, const std::string& nsName);

// Removes `files`, each path once; a path already absent is neither removed nor failed.
Removal removeNodeFiles(const NodeFiles& files);

}  // namespace allot::gc
