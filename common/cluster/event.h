#pragma once
// Kubernetes Events (core/v1) as allot records them: for reclamations and anomalies (allot-gc)
// and for manual releases (kubectl-allot). Posting them is the caller's (allot-gc queues them,
// gc-sidecar/base/events.h).

#include <chrono>
#include <string>

#include "json/json.h"

namespace allot::cluster {

struct ObjectRef {
    std::string kind;           // "Pod", "IPPool", ...
    std::string apiVersion;     // "v1", "whereabouts.cni.cncf.io/v1alpha1"
    std::string ns, name, uid;  // ns empty: cluster-scoped
};

struct EventSpec {
    bool warning = false;
    std::string reason;   // AddressReleased, ReleaseFailed, PoolAnomaly, MalformedNetworkStatus
    std::string message;  // names the IP and the network
    ObjectRef object;
};

// Where an Event about `o` is stored: its namespace; "default" for a cluster-scoped object
// (a Node), as the kubelet does.
std::string eventNamespace(const ObjectRef& o);

ObjectRef podRef(const std::string& ns, const std::string& name, const std::string& uid);
ObjectRef poolRef(const std::string& ns, const std::string& name);

// The Event object for `e` (metadata.generateName from the object's name), reported by
// `component` ("allot-gc", "kubectl-allot") on `node`, as `identity`.
json::Value eventObject(const EventSpec& e, const std::string& node, const std::string& identity,
                        std::chrono::system_clock::time_point now,
                        const std::string& component = "allot-gc");

}  // namespace allot::cluster
