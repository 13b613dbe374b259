#pragma once
// Cluster over the Kubernetes API (one k8s::Client: one request at a time).

#include <functional>

#include "gc-sidecar/cluster.h"
#include "k8s/client.h"

namespace allot::gc {

class K8sCluster : public Cluster {
  public:
    // `onError` sees every failed request except the expected outcomes NotFound, Conflict and
    // AlreadyExists (for the API error metric).
    K8sCluster(k8s::Client client, std::function<void(const core::Error&)> onError)
        : client_(std::move(client)), onError_(std::move(onError)) {}

    Result<store::Pool> getPool(const std::string& ns, const std::string& name) override;
    Result<store::Pool> updatePool(const std::string& ns, const store::Pool& pool) override;
    Result<void> eachPool(
        const std::string& ns, const std::function<bool(store::Pool&)>& fn,
        const std::function<void(const std::string&, const std::string&)>& onBad) override;
    Result<store::Reservation> getReservation(const std::string& ns,
                                              const std::string& name) override;
    Result<void> deleteReservation(const std::string& ns, const std::string& name,
                                   const std::string& resourceVersion) override;
    Result<void> createReservation(const std::string& ns, const store::Reservation& r) override;
    Result<void> eachReservation(const std::string& ns,
                                 const std::function<bool(ReservationInfo&)>& fn) override;
    Result<std::optional<PodInfo>> getPod(const std::string& ns, const std::string& name) override;
    Result<void> eachPod(
        const std::string& ns,
        const std::function<bool(const std::string&, const std::string&, PodInfo&)>& fn) override;
    Result<void> eachNode(const std::function<bool(const std::string&, NodeInfo&)>& fn) override;
    Result<std::string> getNadConfig(const std::string& ns, const std::string& name) override;
    Result<std::string> nodeSlice(const std::string& ns, const std::string& sliceName,
                                  const std::string& node) override;

    k8s::Client& client() { return client_; }

  private:
    template <typename T>
    Result<T> seen(Result<T> r);

    k8s::Client client_;
    std::function<void(const core::Error&)> onError_;
};

// Page sizes: pods and pools can be large objects; a page is all that is held in memory.
inline constexpr int64_t kPodPageSize = 100;
inline constexpr int64_t kPoolPageSize = 10;
inline constexpr int64_t kReservationPageSize = 500;

}  // namespace allot::gc
