#pragma once
// What allot-gc reads and writes in the cluster, namespace by namespace. K8sCluster is the
// real one (k8s_cluster.h); unit tests use an in-memory fake. One instance serves one thread.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"
#include "store/pool_store.h"

namespace allot::gc {

using core::Result;

struct PodInfo {
    std::string uid;
    std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
    // A mirror pod's kubernetes.io/config.mirror annotation: its static pod's own UID.
    std::string mirrorOf;
    std::string nodeName;   // spec.nodeName; empty while unscheduled
    bool nodeLost = false;  // set by the repair pass: its Node is gone, or NotReady past the grace
    // A pod in a terminal phase never runs again: its addresses are no longer in use.
    bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

// A Node as the repair loop needs it: Ready, or since when it is not.
struct NodeInfo {
    bool ready = false;
    std::chrono::system_clock::time_point notReadySince{};  // Ready condition's last transition
};

struct ReservationInfo {
    store::Reservation r;
    std::chrono::system_clock::time_point created;  // metadata.creationTimestamp
};

class Cluster {
  public:
    virtual ~Cluster() = default;

    // NotFound when absent.
    virtual Result<store::Pool> getPool(const std::string& ns, const std::string& name) = 0;
    // Writes iff the stored resourceVersion is pool.resourceVersion: Conflict when not,
    // NotFound when the pool is gone. Returns the stored pool.
    virtual Result<store::Pool> updatePool(const std::string& ns, const store::Pool& pool) = 0;
    // Every pool of `ns`, a page at a time (memory stays bounded); `fn` may move the pool away
    // and returns false to stop. A pool that cannot be decoded is passed to `onBad` (name,
    // reason) and skipped.
    virtual Result<void> eachPool(
        const std::string& ns, const std::function<bool(store::Pool&)>& fn,
        const std::function<void(const std::string&, const std::string&)>& onBad) = 0;

    virtual Result<store::Reservation> getReservation(const std::string& ns,
                                                      const std::string& name) = 0;
    // With a resourceVersion, only if unchanged since read (Conflict otherwise). NotFound when
    // absent.
    virtual Result<void> deleteReservation(const std::string& ns, const std::string& name,
                                           const std::string& resourceVersion) = 0;
    // AlreadyExists when the name is taken.
    virtual Result<void> createReservation(const std::string& ns, const store::Reservation& r) = 0;
    virtual Result<void> eachReservation(const std::string& ns,
                                         const std::function<bool(ReservationInfo&)>& fn) = 0;

    // nullopt when the pod does not exist.
    virtual Result<std::optional<PodInfo>> getPod(const std::string& ns,
                                                  const std::string& name) = 0;
    // Every pod of namespace `ns` ("" = the whole cluster), paginated.
    virtual Result<void> eachPod(
        const std::string& ns,
        const std::function<bool(const std::string& ns, const std::string& name, PodInfo&)>&
            fn) = 0;

    // Every Node, paginated.
    virtual Result<void> eachNode(
        const std::function<bool(const std::string& name, NodeInfo&)>& fn) = 0;

    // spec.config of a NetworkAttachmentDefinition. NotFound when the NAD is absent or has none.
    virtual Result<std::string> getNadConfig(const std::string& ns, const std::string& name) = 0;
    // The slice NodeSlicePool `sliceName` gives `node`. NotFound when there is none.
    virtual Result<std::string> nodeSlice(const std::string& ns, const std::string& sliceName,
                                          const std::string& node) = 0;
};

}  // namespace allot::gc
