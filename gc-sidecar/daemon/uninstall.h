#pragma once
// Leaving the node when allot is uninstalled (--uninstall-with). Every pod of the DaemonSet gets
// SIGTERM in a rolling update as well as when the DaemonSet is deleted (kubectl delete -k,
// helm uninstall); only in the second is the DaemonSet gone or marked for deletion. Then
// allot-gc, stopping, removes the plugin binary and the files install-cni.sh and allot-gc wrote
// into allot's configuration directory. An uninstall deletes allot's ServiceAccount and RBAC
// beside the DaemonSet, in an order allot-gc cannot choose (kubectl deletes the ServiceAccount
// first, Helm the DaemonSet), so a read refused as Unauthorized (allot-gc's identity is gone)
// says the same. Forbidden alone does not: the API server keeps accepting a deleted
// ServiceAccount's token for a while (its token cache, 10 s by default) while the deleted RBAC
// refuses the read, but a rollback to RBAC without the read (an earlier revision's manifests)
// refuses it for good while allot stays installed. So a Forbidden read is asked again until it
// turns into an answer, for a bounded time, and then nothing is removed.
// Kept: the journal (releases still to make, replayed if allot comes back), the plugin's locks
// (a call may hold one), the directories (the pod's mounts), IPPools and reservations.
//
// Only the pod that installed them removes them. A pod deleted with --force loses its token's
// validity at once, so its allot-gc sees Unauthorized (= uninstalled) while the DaemonSet stays,
// and by then the replacement pod's init container (deploy/install-cni.sh) may have installed
// the plugin again: removing would leave the node without allot, every ADD failing, and nothing
// to put it back. So install-cni.sh, holding an exclusive flock(2) on <conf dir>/.install.lock,
// writes the plugin and its files and last the stamp <conf dir>/installed-by with its pod's UID;
// allot-gc, holding the same lock, removes them (and the stamp) only while the stamp names its
// own pod (--pod-uid). The lock orders the two: either the old pod removes everything before
// the new pod's install-cni runs (which then installs it all again), or the new install's stamp
// is there first and the old pod removes nothing. No --pod-uid or no stamp (an install from
// before stamps): nothing is removed. The lock file stays: one removed while another process
// waits on it would let a third lock a new file beside it.

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/retry_policy.h"
#include "k8s/client.h"

namespace allot::gc {

// What allot put on the node, as this container sees it. Empty members are skipped.
struct NodeFiles {
    std::string pluginBinary;            // <--cni-bin-dir>/allot
    std::string confDir;                 // the directory of --node-kubeconfig
    std::vector<std::string> confFiles;  // allot.conf, nodename, the node kubeconfig's name
    std::vector<std::string> aliases;    // <--cni-bin-dir>/<each --plugin-aliases>
};

struct Removal {
    std::vector<std::string> removed;  // paths
    std::vector<std::string> failed;   // "path: why"
};

// True when allot is being uninstalled: the DaemonSet NAMESPACE/NAME is gone (404) or has a
// deletionTimestamp, or the request is refused as Unauthorized (401: allot-gc's identity went
// with it). Another error, Forbidden included: not known, so nothing is removed.
core::Result<bool> daemonSetGone(k8s::Client& client, const std::string& nsName);

// How long a stopping allot-gc asks again while the read is Forbidden: past the API server's
// default token cache (10 s), within the pod's default termination grace (30 s).
inline constexpr std::chrono::seconds kUninstallPatience{15};

// daemonSetGone, asked again on `retry`'s schedule while it answers Forbidden; then Forbidden.
// The daemon's schedule: a read a second for kUninstallPatience (uninstallRetry).
core::Result<bool> awaitDaemonSetGone(k8s::Client& client, const std::string& nsName,
                                      engine::RetryPolicy retry);
engine::RetryPolicy uninstallRetry();

// Removes `files`; a path already absent is neither removed nor failed. An alias goes only
// while its contents are the plugin binary's: one that another install (Whereabouts' own
// DaemonSet) has written over since is that install's, and stays. Not guarded: the daemon
// calls removeOwnNodeFiles.
Removal removeNodeFiles(const NodeFiles& files);

// In files.confDir, shared with install-cni.sh (which uses the same names).
inline constexpr const char* kInstallLockFile = ".install.lock";
inline constexpr const char* kInstallStampFile = "installed-by";

// How long a stopping allot-gc waits for install-cni.sh's lock: an install holds it for a copy
// of the plugin (well under a second); the pod's termination grace (30 s) is shared with
// kUninstallPatience.
inline constexpr std::chrono::seconds kInstallLockPatience{5};

// Under the install lock (files.confDir/kInstallLockFile, flock(2) exclusive, waited for at most
// `lockWait`): removeNodeFiles(files) and then the stamp, only while the stamp
// (files.confDir/kInstallStampFile, a pod UID and a newline) names `podUid`. Otherwise nothing
// is removed and the error says why: InvalidConfig when `podUid` or files.confDir is empty,
// NotFound when there is no stamp (or an empty one), Conflict when it names another pod,
// Transient when the lock stays held past `lockWait`, Internal when the lock cannot be opened.
core::Result<Removal> removeOwnNodeFiles(const NodeFiles& files, const std::string& podUid,
                                         std::chrono::milliseconds lockWait);

}  // namespace allot::gc
