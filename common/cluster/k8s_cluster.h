#pragma once
// Cluster over the Kubernetes API (one k8s::Client: one request at a time).

#include <functional>
#include <map>
#include <memory>

#include "cluster/cluster.h"
#include "k8s/client.h"
#include "k8s/error_tap.h"
#include "store_k8s/k8s_node_slice_store.h"
#include "store_k8s/k8s_store.h"

namespace allot::cluster {

// Page size of pod lists: pods can be large objects; a page's text and one pod as a JSON tree
// are all that is held in memory (k8s::Client::listEach).
inline constexpr int64_t kPodPageSize = 100;

struct WatchedObjects;

class K8sCluster : public Cluster {
  public:
    // `onError` sees the failed requests k8s::ErrorTap reports (for the API error metric).
    K8sCluster(k8s::Client client, std::function<void(const core::Error&)> onError)
        : client_(std::move(client)),
          seen_(std::move(onError)),
          slices_(client_, seen_.fn()),
          pageSize_(kPodPageSize) {}
    // The per-namespace stores borrow client_: never moved.
    K8sCluster(const K8sCluster&) = delete;
    K8sCluster& operator=(const K8sCluster&) = delete;

    store::PoolStore& pools(const std::string& ns) override;
    Result<std::optional<PodInfo>> getPod(const std::string& ns, const std::string& name) override;
    Result<void> eachPod(
        const std::string& ns,
        const std::function<bool(const std::string&, const std::string&, PodInfo&)>& fn) override;
    // From the watched pod index when there is one (the controller's), else by lists.
    Result<void> eachNamedPod(const std::unordered_set<std::string>& refs,
                              const std::function<bool(const std::string&, PodInfo&)>& fn) override;
    Result<void> eachNode(const std::function<bool(const std::string&, NodeInfo&)>& fn) override;
    Result<std::string> getNadConfig(const std::string& ns, const std::string& name) override;
    Result<void> eachNad(const std::function<bool(NadInfo&)>& fn) override;
    // From nodeSlices(); none when the NodeSlicePool resource is not installed.
    Result<std::vector<core::NodeSliceView>> nodeSlicePools(const std::string& ns) override;
    // Each report is a Lease allot-node-<node> (labelled allot.cni.dev/node-report), written
    // with a server-side apply.
    Result<std::vector<core::NodeReport>> nodeReports(const std::string& ns) override;
    Result<void> putNodeReport(const std::string& ns, const core::NodeReport& r) override;
    Result<std::optional<std::string>> nodeUid(const std::string& name) override;

    k8s::Client& client() { return client_; }
    // The NodeSlicePools of every namespace, on client_ (the slice controller, kubectl allot).
    store::NodeSliceStore& nodeSlices() { return slices_; }
    // The NodeSlicePools of `ns` (every namespace when empty), read through the watched set
    // when there is one; the writes go through nodeSlices().
    Result<std::vector<store::NodeSlicePool>> slicePools(const std::string& ns);
    // Pods and Nodes per list page (default kPodPageSize): allot-gc keeps pages small for its
    // memory, a one-shot CLI trades memory for fewer round trips.
    void setPageSize(int64_t n) { pageSize_ = n; }
    // Nodes, NADs, NodeSlicePools and the named pods from watch-fed sets (the controller's)
    // instead of a LIST per call; they must outlive this. getPod still asks the API server: it
    // is the fresh read a release is decided on.
    void readThrough(const WatchedObjects* watched) { watched_ = watched; }

  private:
    k8s::Client client_;
    k8s::ErrorTap seen_;
    std::map<std::string, std::unique_ptr<store::K8sStore>> stores_;  // on client_, by namespace
    store::K8sNodeSliceStore slices_;                                 // on client_
    int64_t pageSize_;
    const WatchedObjects* watched_ = nullptr;
};

}  // namespace allot::cluster
