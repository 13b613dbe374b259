#pragma once
// In-memory PoolStore and NodeSliceStore for unit tests, with fault injection. Thread-safe.

#include <map>
#include <mutex>
#include <optional>

#include "store/node_slice_store.h"
#include "store/pool_store.h"

namespace allot::store {

class MemoryStore : public PoolStore, public NodeSliceStore {
  public:
    // `ns`: the pool namespace, where nodeSlice reads NodeSlicePools (K8sStore's default).
    explicit MemoryStore(std::string ns = "kube-system") : ns_(std::move(ns)) {}

    Result<Pool> getPool(const std::string& name) override;
    Result<Pool> createPool(const Pool& pool) override;
    Result<Pool> updatePool(Pool pool) override;
    Result<void> eachPool(const std::function<bool(Pool&)>& fn, const BadPool& onBad) override;
    Result<Reservation> getReservation(const std::string& name) override;
    Result<Reservation> createReservation(const Reservation& r) override;
    Result<void> deleteReservation(const std::string& name,
                                   const std::string& resourceVersion) override;
    Result<void> eachReservation(const std::function<bool(Reservation&)>& fn) override;
    Result<NodeSlice> nodeSlice(const std::string& sliceName, const std::string& node,
                                bool fresh) override;
    Result<void> ping() override;

    // NodeSlicePools are kept as the codec encodes them and decoded on each read, so what a
    // test writes comes back as it would from the API server.
    Result<std::vector<NodeSlicePool>> listNodeSlicePools(const std::string& ns) override;
    Result<NodeSlicePool> getNodeSlicePool(const std::string& ns, const std::string& name) override;
    Result<NodeSlicePool> createNodeSlicePool(const NodeSlicePool& p) override;
    Result<NodeSlicePool> updateNodeSlicePool(const NodeSlicePool& p) override;
    Result<void> removeNodeSlicePool(const std::string& ns, const std::string& name,
                                     const std::string& resourceVersion) override;
    const std::string& poolNamespace() const { return ns_; }
    // Pool writes follow the same size policy as the Kubernetes store (sizes as encodePool
    // would write the object), so callers see the same TooLarge and dropped fields.
    void setSizePolicy(const SizePolicy& p) override;

    // Writes NodeSlicePool `sliceName` of the pool namespace (created when missing) so that it
    // gives `node` the slice `cidr`, with a new resourceVersion; an empty `cidr` takes the
    // node's slice away. Test setup: no fault injection, not counted in calls().
    void setNodeSlice(const std::string& sliceName, const std::string& node,
                      const std::string& cidr);
    // What a cached nodeSlice read (fresh false) answers, as a node relay's watched copy does
    // until its watch catches up; by default the current slice.
    void setCachedNodeSlice(const std::string& sliceName, const std::string& node,
                            const std::string& cidr);
    int freshSliceReads() const;
    // The slice controller's refusal of node_slice_parts on NodeSlicePool `sliceName` ("":
    // none), written as setNodeSlice writes. Like the node relay, a cached read does not answer
    // for a refused NodeSlicePool.
    void setNodeSlicePartsRefused(const std::string& sliceName, const std::string& why);

    // Fault injection: the next `n` calls of any kind fail with `code`.
    void failNext(int n, core::Errc code);
    // The next `n` updatePool calls see a concurrent writer and return Conflict.
    void conflictNext(int n);
    // Every call fails with Transient until cleared (an unreachable API server).
    void setUnreachable(bool down);
    int calls() const;

  private:
    std::optional<core::Error> injected();
    std::optional<core::Error> fitted(Pool& p);
    // Under mu_, without fault injection.
    Result<NodeSlicePool> readSlicePool(const std::string& ns, const std::string& name) const;
    NodeSlicePool storeSlicePool(NodeSlicePool p);                   // with a new resourceVersion
    NodeSlicePool ownSlicePool(const std::string& sliceName) const;  // in ns_, or a new one

    mutable std::mutex mu_;
    std::map<std::string, Pool> pools_;
    std::map<std::string, Reservation> reservations_;
    std::string ns_;
    // NodeSlicePools by namespace and name, as encodeNodeSlicePool writes them.
    std::map<std::pair<std::string, std::string>, json::Value> slicePools_;
    std::map<std::pair<std::string, std::string>, std::string> cachedSlices_;  // slice, node
    int freshSliceReads_ = 0;
    uint64_t version_ = 0;
    int failLeft_ = 0;
    core::Errc failCode_ = core::Errc::Transient;
    int conflictLeft_ = 0;
    bool down_ = false;
    SizePolicy sizePolicy_;
    int calls_ = 0;
};

}  // namespace allot::store
