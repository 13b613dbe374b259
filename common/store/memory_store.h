#pragma once
// In-memory PoolStore for unit tests, with fault injection. Thread-safe.

#include <map>
#include <mutex>
#include <optional>

#include "store/pool_store.h"

namespace allot::store {

class MemoryStore : public PoolStore {
  public:
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
    // Pool writes follow the same size policy as the Kubernetes store (sizes as encodePool
    // would write the object), so callers see the same TooLarge and dropped fields.
    void setSizePolicy(const SizePolicy& p) override;

    // Each change gives the NodeSlicePool `sliceName` a new resourceVersion; an empty `cidr`
    // takes the node's slice away.
    void setNodeSlice(const std::string& sliceName, const std::string& node,
                      const std::string& cidr);
    // What a cached nodeSlice read (fresh false) answers, as a node relay's watched copy does
    // until its watch catches up; by default the current slice.
    void setCachedNodeSlice(const std::string& sliceName, const std::string& node,
                            const std::string& cidr);
    int freshSliceReads() const;
    // The slice controller's refusal of node_slice_parts on NodeSlicePool `sliceName` ("":
    // none). Like the node relay, a cached read does not answer for a refused NodeSlicePool.
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

    mutable std::mutex mu_;
    std::map<std::string, Pool> pools_;
    std::map<std::string, Reservation> reservations_;
    std::map<std::pair<std::string, std::string>, std::string> slices_;
    std::map<std::pair<std::string, std::string>, std::string> cachedSlices_;
    std::map<std::string, uint64_t> sliceVersions_;
    std::map<std::string, std::string> partsRefused_;
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
