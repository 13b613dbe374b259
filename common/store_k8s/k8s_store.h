#pragma once
// PoolStore over the Kubernetes API: IPPool and OverlappingRangeIPReservation objects in one
// namespace (whereabouts.cni.cncf.io/v1alpha1), written as Whereabouts writes them.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "k8s/client.h"
#include "k8s/error_tap.h"
#include "store/pool_codec.h"
#include "store/pool_store.h"
#include "store_k8s/k8s_node_slice_store.h"

namespace allot::store {

class K8sStore : public PoolStore {
  public:
    // Owns its client (the plugin: one namespace per call).
    K8sStore(k8s::Client client, std::string ns)
        : owned_(std::move(client)), client_(&*owned_), ns_(std::move(ns)), slices_(*client_) {}
    // Borrows `client`, which must outlive the store (allot-gc: one client per thread, one store
    // per namespace on it). `onError` sees the failed requests k8s::ErrorTap reports.
    K8sStore(k8s::Client& client, std::string ns, std::function<void(const core::Error&)> onError)
        : client_(&client),
          ns_(std::move(ns)),
          seen_(onError),
          slices_(client, std::move(onError)) {}
    K8sStore(const K8sStore&) = delete;
    K8sStore& operator=(const K8sStore&) = delete;

    // updatePool uses PUT with metadata.resourceVersion: the API server answers 409 Conflict
    // when another writer got there first. createPool and updatePool apply the size policy
    // first: a write the policy refuses (TooLarge, "is full") is never sent.
    Result<Pool> getPool(const std::string& name) override;
    Result<Pool> createPool(const Pool& pool) override;
    Result<Pool> updatePool(Pool pool) override;
    Result<void> eachPool(const std::function<bool(Pool&)>& fn, const BadPool& onBad) override;
    Result<Reservation> getReservation(const std::string& name) override;
    Result<Reservation> createReservation(const Reservation& r) override;
    Result<void> deleteReservation(const std::string& name,
                                   const std::string& resourceVersion) override;
    Result<void> eachReservation(const std::function<bool(Reservation&)>& fn) override;
    // Unless `fresh`, asks the node relay's watched copy first (k8s::relayNodeSlicePath); else
    // reads the NodeSlicePool as K8sNodeSliceStore does.
    Result<NodeSlice> nodeSlice(const std::string& sliceName, const std::string& node,
                                bool fresh) override;
    Result<void> ping() override;
    void setDeadline(std::chrono::steady_clock::time_point d) override { client_->setDeadline(d); }

    void setSizePolicy(const SizePolicy& p) override { sizePolicy_ = p; }

    k8s::Client& client() { return *client_; }
    const std::string& poolNamespace() const { return ns_; }

  private:
    std::optional<k8s::Client> owned_;
    k8s::Client* client_;
    std::string ns_;
    k8s::ErrorTap seen_;
    SizePolicy sizePolicy_;
    K8sNodeSliceStore slices_;  // on client_, with the same tap
};

// Page sizes of the lists: pools can be large objects; a page is all that is held in memory.
inline constexpr int64_t kPoolPageSize = 10;
inline constexpr int64_t kReservationPageSize = 500;

inline constexpr const char* kDefaultPoolNamespace = "kube-system";

// Connects as `kubeconfig` (empty: in-cluster). The namespace is `ns` if set, else the
// kubeconfig context's, else kube-system.
Result<std::unique_ptr<K8sStore>> openK8sStore(const std::string& kubeconfig, const std::string& ns,
                                               k8s::Client::Options options);

}  // namespace allot::store
