#pragma once
// PoolStore over the Kubernetes API: IPPool and OverlappingRangeIPReservation objects in one
// namespace (whereabouts.cni.cncf.io/v1alpha1), written as Whereabouts writes them.

#include <memory>
#include <string>

#include "k8s/client.h"
#include "store/pool_codec.h"
#include "store/pool_store.h"

namespace allot::store {

class K8sStore : public PoolStore {
public:
    K8sStore(k8s::Client client, std::string ns) : client_(std::move(client)), ns_(std::move(ns)) {}

    // updatePool uses PUT with metadata.resourceVersion: the API server answers 409 Conflict
    // when another writer got there first. createPool and updatePool apply the size policy
    // first: a write the policy refuses (Exhausted, "is full") is never sent.
    Result<Pool> getPool(const std::string& name) override;
    Result<Pool> createPool(const Pool& pool) override;
    Result<Pool> updatePool(const Pool& pool) override;
    Result<std::vector<Pool>> listPools() override;
    Result<Reservation> getReservation(const std::string& name) override;
    Result<Reservation> createReservation(const Reservation& r) override;
    Result<void> deleteReservation(const std::string& name, const std::string& resourceVersion) override;
    Result<std::vector<Reservation>> listReservations() override;
    Result<std::string> nodeSlice(const std::string& sliceName, const std::string& node) override;
    Result<void> ping() override;
    void setDeadline(std::chrono::steady_clock::time_point d) override { client_.setDeadline(d); }

    void setSizePolicy(const SizePolicy& p) override { sizePolicy_ = p; }

    k8s::Client& client() { return client_; }
    const std::string& poolNamespace() const { return ns_; }

private:
    k8s::Client client_;
    std::string ns_;
    SizePolicy sizePolicy_;
};

inline constexpr const char* kDefaultPoolNamespace = "kube-system";

// Connects as `kubeconfig` (empty: in-cluster). The namespace is `ns` if set, else the
// kubeconfig context's, else kube-system.
Result<std::unique_ptr<K8sStore>> openK8sStore(const std::string& kubeconfig, const std::string& ns,
                                               k8s::Client::Options options);

}  // namespace allot::store
