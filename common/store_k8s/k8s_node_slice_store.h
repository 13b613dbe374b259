#pragma once
// NodeSliceStore over the Kubernetes API: NodeSlicePool objects
// (whereabouts.cni.cncf.io/v1alpha1) in any namespace, written whole with PUT (Whereabouts'
// controller writes them with plain update too, and the CRD has no status subresource).

#include <functional>
#include <string>

#include "k8s/client.h"
#include "k8s/error_tap.h"
#include "store/node_slice_store.h"

namespace allot::store {

// NodeSlicePools per list page: a few hundred bytes each, one per network and range.
inline constexpr int64_t kNodeSlicePoolPageSize = 100;

class K8sNodeSliceStore : public NodeSliceStore {
  public:
    // Borrows `client`, which must outlive the store. `onError` sees the failed requests
    // k8s::ErrorTap reports.
    explicit K8sNodeSliceStore(k8s::Client& client,
                               std::function<void(const core::Error&)> onError = {})
        : client_(client), seen_(std::move(onError)) {}

    // update and remove send the resourceVersion as the API server's precondition: it answers
    // 409 Conflict when another writer got there first.
    Result<std::vector<NodeSlicePool>> listNodeSlicePools(const std::string& ns) override;
    Result<NodeSlicePool> getNodeSlicePool(const std::string& ns, const std::string& name) override;
    Result<NodeSlicePool> createNodeSlicePool(const NodeSlicePool& p) override;
    Result<NodeSlicePool> updateNodeSlicePool(const NodeSlicePool& p) override;
    Result<void> removeNodeSlicePool(const std::string& ns, const std::string& name,
                                     const std::string& resourceVersion) override;

  private:
    k8s::Client& client_;
    k8s::ErrorTap seen_;
};

}  // namespace allot::store
