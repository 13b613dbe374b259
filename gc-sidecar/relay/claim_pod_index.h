#pragma once
// This node's pods' k8s.v1.cni.cncf.io/networks annotations and StatefulSets, kept by the pod
// watch, so that the node relay answers the plugin's GET of a pod (an ADD on a network with
// allowPersistentIPs or sticky_statefulsets reads its IPAMClaim reference and its StatefulSet
// there, engine/owned_add.h) without an API round trip. A pod it
// does not have (not seen yet, another node's, an annotation over the plugin's limit) is
// forwarded to the API server as before.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "gc-sidecar/rules/pod_record.h"
#include "k8s/relay.h"

namespace allot::gc {

class PodNetworksIndex {
  public:
    void set(const PodRecord& r);
    void erase(const PodRecord& r);  // only while the record's UID is the one kept
    void reset(const std::unordered_map<std::string, PodRecord>& byUid);  // after a relist
    // The pod as a Pod object with only its namespace, name, uid, networks annotation and
    // controlling StatefulSet (an ownerReferences entry), for
    // a GET of /api/v1/namespaces/<ns>/pods/<name> it has; nullopt for anything else.
    std::optional<k8s::RelayResponse> answer(const k8s::RelayRequest& req) const;
    size_t size() const;

  private:
    struct Entry {
        std::string uid;
        std::optional<std::string> networks;
        std::optional<core::StatefulSetRef> statefulSet;
    };
    mutable std::mutex mu_;
    std::map<std::string, Entry> pods_;  // by "namespace/name"
};

}  // namespace allot::gc
