// SliceCluster over the API server: NADs, Nodes and NodeSlicePools as the cluster reads them
// (the controller's: from its watches), NodeSlicePools written through the cluster's store
// (store/k8s_node_slice_store.h: written whole, guarded by the resourceVersion read).
#include "cluster/k8s_cluster.h"
#include "cluster/nad.h"
#include "engine/pool_transaction.h"
#include "gc-sidecar/leader/slice_controller.h"
#include "store/pool_codec.h"

namespace allot::gc {

using cluster::K8sCluster;

using cluster::NodeInfo;

using cluster::NadInfo;

using core::Errc;

namespace {

class K8sSliceCluster : public SliceCluster {
  public:
    explicit K8sSliceCluster(K8sCluster& c) : c_(c) {}

    Result<std::vector<NadObject>> nads() override {
        std::vector<NadObject> out;
        auto r = c_.eachNad([&](NadInfo& n) {
            out.push_back(
                {std::move(n.ns), std::move(n.name), std::move(n.uid), std::move(n.config)});
            return true;
        });
        if (!r) return r.error();
        return out;
    }

    Result<std::vector<std::string>> nodes() override {
        std::vector<std::string> out;
        auto r = c_.eachNode([&](const std::string& name, NodeInfo&) {
            out.push_back(name);
            return true;
        });
        if (!r) return r.error();
        return out;
    }

    Result<std::vector<store::NodeSlicePool>> slicePools() override { return c_.slicePools(""); }

    Result<void> create(const store::NodeSlicePool& p) override {
        auto r = c_.nodeSlices().createNodeSlicePool(p);
        if (!r) return r.error();
        return {};
    }

    Result<void> update(const store::NodeSlicePool& p) override {
        auto r = c_.nodeSlices().updateNodeSlicePool(p);
        if (!r) return r.error();
        return {};
    }

    Result<void> remove(const store::NodeSlicePool& p) override {
        return c_.nodeSlices().removeNodeSlicePool(p.ns, p.name, p.resourceVersion);
    }

    Result<bool> sealSlicePool(const std::string& ns, const std::string& pool,
                               const core::Cidr& slice, const std::string& token,
                               bool create) override {
        // One attempt: a lost race means a writer is busy in the pool, so the slice stays.
        engine::RetryPolicy once(engine::Clock::now() + std::chrono::seconds(10), {}, 1);
        engine::PoolTransaction tx(c_.pools(ns), once);
        engine::TxTarget t{pool, slice, create, false};
        t.seal = token;
        auto r = tx.run(t, [](const store::Pool&) {
            return Result<std::vector<core::Intent>>(std::vector<core::Intent>{});
        });
        if (!r) return r.error();
        return r->sealed || !r->found;
    }

    Result<void> unsealSlicePool(const std::string& ns, const std::string& pool,
                                 const std::string& token) override {
        engine::RetryPolicy few(engine::Clock::now() + std::chrono::seconds(10), {}, 3);
        engine::PoolTransaction tx(c_.pools(ns), few);
        engine::TxTarget t{pool, std::nullopt, false, false};
        t.lift = token;
        auto r = tx.run(t, [](const store::Pool&) {
            return Result<std::vector<core::Intent>>(std::vector<core::Intent>{});
        });
        if (!r) return r.error();
        return {};
    }

    Result<bool> slicePoolHolds(const std::string& ns, const std::string& pool) override {
        auto p = c_.pools(ns).getPool(pool);
        if (!p && p.code() == Errc::NotFound) return false;
        if (!p) return p.error();
        return !p->allocations.empty() || !p->undecoded.empty();
    }

  private:
    K8sCluster& c_;
};

}  // namespace

std::unique_ptr<SliceCluster> makeK8sSliceCluster(K8sCluster& cluster) {
    return std::make_unique<K8sSliceCluster>(cluster);
}

}  // namespace allot::gc
