#pragma once
// What allot-gc reads and writes in the cluster: pools and reservations through common/store,
// pods, Nodes and NADs here. K8sCluster is the
// real one (k8s_cluster.h); unit tests use an in-memory fake. One instance serves one thread.

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

#include "core/node_slices.h"
#include "core/release_rule.h"
#include "core/result.h"
#include "store/pool_store.h"

namespace allot::cluster {

using core::Result;

// Where allot-gc keeps its Leases (the leader's, the node reports) unless told otherwise:
// allot-gc's --lease-namespace and kubectl allot version's.
inline constexpr const char* kDefaultLeaseNamespace = "kube-system";

struct PodInfo {
    std::string uid;
    std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
    // A mirror pod's kubernetes.io/config.mirror annotation: its static pod's own UID.
    std::string mirrorOf;
    std::string nodeName;  // spec.nodeName; empty while unscheduled
    // A pod in a terminal phase never runs again: its addresses are no longer in use.
    bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
    friend bool operator==(const PodInfo&, const PodInfo&) = default;
};

// The pod as core's rules see it (core::PodState): the one place a pod becomes one. With
// `nodes` (a repair pass's), also whether its Node is gone or NotReady past the grace; without
// (a node agent, the CLI), neither is known and both are false.
core::PodState podState(const PodInfo& pod, const core::NodeIndex* nodes = nullptr);

// A NetworkAttachmentDefinition as allot reads it.
struct NadInfo {
    std::string ns, name, uid;
    std::string config;  // spec.config; empty when it has none
    friend bool operator==(const NadInfo&, const NadInfo&) = default;
};

// A Node as the repair loop needs it: Ready, or since when it is not; fenced; its OS.
struct NodeInfo {
    bool ready = false;
    std::chrono::system_clock::time_point notReadySince{};  // Ready condition's last transition
    bool outOfService = false;  // tainted node.kubernetes.io/out-of-service (core::NodeState)
    bool linux = true;          // kubernetes.io/os is linux or unset
    friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

class Cluster {
  public:
    virtual ~Cluster() = default;

    // The pools and reservations of namespace `ns`: common/store, the layer the plugin uses
    // too. Every pool write goes through the engine (release.h); valid while this lives.
    virtual store::PoolStore& pools(const std::string& ns) = 0;

    // nullopt when the pod does not exist.
    virtual Result<std::optional<PodInfo>> getPod(const std::string& ns,
                                                  const std::string& name) = 0;
    // Every pod of namespace `ns` ("" = the whole cluster), paginated.
    virtual Result<void> eachPod(
        const std::string& ns,
        const std::function<bool(const std::string& ns, const std::string& name, PodInfo&)>&
            fn) = 0;

    // Of the pods named in `refs` ("ns/name"), those that exist, each once. By default one
    // list of each namespace they name, keeping only those; the controller's K8sCluster looks
    // them up in its watch-fed index instead (no request).
    virtual Result<void> eachNamedPod(
        const std::unordered_set<std::string>& refs,
        const std::function<bool(const std::string& ref, PodInfo&)>& fn) {
        std::set<std::string> namespaces;
        for (const auto& ref : refs) namespaces.insert(ref.substr(0, ref.find('/')));
        for (const auto& ns : namespaces) {
            bool more = true;
            auto r = eachPod(ns, [&](const std::string& ns2, const std::string& name, PodInfo& p) {
                std::string ref = ns2 + "/" + name;
                if (refs.count(ref)) more = fn(ref, p);
                return more;
            });
            if (!r)
                return core::makeError(r.code(), "list pods of " + ns + ": " + r.error().message);
            if (!more) break;
        }
        return {};
    }

    // Every Node, paginated.
    virtual Result<void> eachNode(
        const std::function<bool(const std::string& name, NodeInfo&)>& fn) = 0;

    // The NodeSlicePools of namespace `ns` (node_slice_size); none where the resource is not
    // installed, or in a cluster that has none.
    virtual Result<std::vector<core::NodeSliceView>> nodeSlicePools(const std::string& ns) {
        (void)ns;
        return std::vector<core::NodeSliceView>{};
    }

    // What each node's allot-gc last reported of the addresses of entries that name no node
    // (core::NodeReport), kept in namespace `ns` (the Lease namespace). None by default.
    virtual Result<std::vector<core::NodeReport>> nodeReports(const std::string& ns) {
        (void)ns;
        return std::vector<core::NodeReport>{};
    }
    // The UID of Node `name`; nullopt when there is no such Node. None by default.
    virtual Result<std::optional<std::string>> nodeUid(const std::string& name) {
        (void)name;
        return std::optional<std::string>();
    }
    // Publishes this node's report (replacing its last one). Unsupported by default.
    virtual Result<void> putNodeReport(const std::string& ns, const core::NodeReport& r) {
        (void)ns;
        (void)r;
        return core::makeError(core::Errc::NotFound, "node reports are not kept here");
    }

    // spec.config of a NetworkAttachmentDefinition. NotFound when the NAD is absent or has none.
    virtual Result<std::string> getNadConfig(const std::string& ns, const std::string& name) = 0;

    // Every NetworkAttachmentDefinition of the cluster, paginated. NotFound when the resource
    // is not installed.
    virtual Result<void> eachNad(const std::function<bool(NadInfo&)>& fn) = 0;
};

}  // namespace allot::cluster
