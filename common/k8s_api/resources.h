#pragma once
// The resources allot uses, and API paths for them.

#include <string>
#include <string_view>

#include "core/result.h"

namespace allot::k8s {

struct Resource {
    std::string_view group;  // "" for the core group
    std::string_view version;
    std::string_view plural;
    std::string_view kind;
    bool namespaced = true;
};

inline constexpr Resource kIPPool{"whereabouts.cni.cncf.io", "v1alpha1", "ippools", "IPPool"};
inline constexpr Resource kOverlappingRangeIPReservation{"whereabouts.cni.cncf.io", "v1alpha1",
                                                         "overlappingrangeipreservations",
                                                         "OverlappingRangeIPReservation"};
inline constexpr Resource kNodeSlicePool{"whereabouts.cni.cncf.io", "v1alpha1", "nodeslicepools",
                                         "NodeSlicePool"};
inline constexpr Resource kPod{"", "v1", "pods", "Pod"};
inline constexpr Resource kNode{"", "v1", "nodes", "Node"};
inline constexpr Resource kNetworkAttachmentDefinition{
    "k8s.cni.cncf.io", "v1", "network-attachment-definitions", "NetworkAttachmentDefinition"};
inline constexpr Resource kEvent{"", "v1", "events", "Event"};
inline constexpr Resource kLease{"coordination.k8s.io", "v1", "leases", "Lease"};
inline constexpr Resource kDaemonSet{"apps", "v1", "daemonsets", "DaemonSet"};

// "group/version", or "v1" for the core group: the apiVersion field of objects.
std::string apiVersion(const Resource& res);

// "/apis/<group>/<version>[/namespaces/<ns>]/<plural>"; an empty ns (or a cluster-scoped
// resource) gives the all-namespaces collection. ns is URL-escaped.
std::string collectionPath(const Resource& res, const std::string& ns);
// collectionPath + "/" + escaped name.
std::string objectPath(const Resource& res, const std::string& ns, const std::string& name);

// Percent-encodes everything but RFC 3986 unreserved characters (for path segments and query
// values alike).
std::string urlEscape(std::string_view s);

}  // namespace allot::k8s
