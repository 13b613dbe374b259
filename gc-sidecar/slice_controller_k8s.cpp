// SliceCluster over the API server: NADs, Nodes and NodeSlicePools by list, NodeSlicePools
// written whole (PUT, guarded by the resourceVersion read: Whereabouts' controller writes them
// with plain update too, and the CRD has no status subresource).
#include "cluster/k8s_cluster.h"
#include "cluster/nad.h"
#include "engine/pool_transaction.h"
#include "gc-sidecar/slice_controller.h"
#include "k8s/resources.h"
#include "store/pool_codec.h"

namespace allot::gc {

using cluster::K8sCluster;

using cluster::NodeInfo;

using cluster::NadInfo;

using core::Errc;
using json::Value;

namespace {

constexpr const char* kManagedBy = kSliceManagedByLabel;
constexpr const char* kManager = kSliceManager;
constexpr int64_t kPageSize = 100;

std::string str(const Value* v) {
    return v && v->isString() ? v->asString() : std::string();
}
std::string strAt(const Value& obj, const char* a, const char* b) {
    const Value* x = obj.find(a);
    return x && x->isObject() ? str(x->find(b)) : std::string();
}
bool boolOf(const Value* v) {
    return v && v->isBool() && v->asBool();
}

Value& member(Value& obj, const char* key) {
    Value* v = obj.find(key);
    if (v && v->isObject()) return *v;
    return obj.set(key, Value::object());
}

NodeSlicePoolObject decodeSlicePool(Value& item) {
    NodeSlicePoolObject p;
    p.ns = strAt(item, "metadata", "namespace");
    p.name = strAt(item, "metadata", "name");
    p.resourceVersion = strAt(item, "metadata", "resourceVersion");
    p.range = strAt(item, "spec", "range");
    p.sliceSize = strAt(item, "spec", "sliceSize");
    const Value* md = item.find("metadata");
    const Value* labels = md && md->isObject() ? md->find("labels") : nullptr;
    p.managed = labels && labels->isObject() && str(labels->find(kManagedBy)) == kManager;
    p.partsRefused = store::partsRefusedOf(item);
    const Value* owners = md && md->isObject() ? md->find("ownerReferences") : nullptr;
    if (owners && owners->isArray())
        for (const auto& o : owners->items())
            if (o.isObject())
                p.owners.push_back({str(o.find("apiVersion")), str(o.find("kind")),
                                    str(o.find("name")), str(o.find("uid")),
                                    boolOf(o.find("controller")),
                                    boolOf(o.find("blockOwnerDeletion"))});
    const Value* st = item.find("status");
    const Value* allocs = st && st->isObject() ? st->find("allocations") : nullptr;
    if (allocs && allocs->isArray())
        for (const auto& a : allocs->items())
            if (a.isObject())
                p.allocations.push_back({str(a.find("nodeName")), str(a.find("sliceRange"))});
    p.raw = std::move(item);
    return p;
}

Value ownersJson(const std::vector<OwnerRef>& owners) {
    Value arr = Value::array();
    for (const auto& o : owners) {
        Value r = Value::object();
        r.set("apiVersion", Value::string(o.apiVersion));
        r.set("kind", Value::string(o.kind));
        r.set("name", Value::string(o.name));
        r.set("uid", Value::string(o.uid));
        if (o.controller) r.set("controller", Value::boolean(true));
        if (o.blockOwnerDeletion) r.set("blockOwnerDeletion", Value::boolean(true));
        arr.push(std::move(r));
    }
    return arr;
}

// The object to write: what was read, with this controller's fields set.
Value encodeSlicePool(const NodeSlicePoolObject& p) {
    Value obj = p.raw.isObject() ? p.raw : Value::object();
    obj.set("apiVersion", Value::string(k8s::apiVersion(k8s::kNodeSlicePool)));
    obj.set("kind", Value::string("NodeSlicePool"));
    Value& md = member(obj, "metadata");
    md.set("name", Value::string(p.name));
    md.set("namespace", Value::string(p.ns));
    if (!p.resourceVersion.empty()) md.set("resourceVersion", Value::string(p.resourceVersion));
    if (p.managed) member(md, "labels").set(kManagedBy, Value::string(kManager));
    if (!p.partsRefused.empty())
        member(md, "annotations")
            .set(store::kPartsRefusedAnnotation, Value::string(p.partsRefused));
    else if (Value* ann = md.find("annotations"); ann && ann->isObject())
        ann->erase(store::kPartsRefusedAnnotation);
    if (p.owners.empty())
        md.erase("ownerReferences");
    else
        md.set("ownerReferences", ownersJson(p.owners));
    Value& spec = member(obj, "spec");
    spec.set("range", Value::string(p.range));
    spec.set("sliceSize", Value::string(p.sliceSize));
    Value allocs = Value::array();
    for (const auto& a : p.allocations) {
        Value e = Value::object();
        e.set("nodeName", Value::string(a.nodeName));
        e.set("sliceRange", Value::string(a.sliceRange));
        allocs.push(std::move(e));
    }
    member(obj, "status").set("allocations", std::move(allocs));
    return obj;
}

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

    Result<std::vector<NodeSlicePoolObject>> slicePools() override {
        std::vector<NodeSlicePoolObject> out;
        k8s::ListOptions o;
        o.limit = kPageSize;
        auto rv =
            c_.client().listEach(k8s::collectionPath(k8s::kNodeSlicePool, ""), o, [&](Value& item) {
                out.push_back(decodeSlicePool(item));
                return true;
            });
        if (!rv) return rv.error();
        return out;
    }

    Result<void> create(const NodeSlicePoolObject& p) override {
        auto r =
            c_.client().create(k8s::collectionPath(k8s::kNodeSlicePool, p.ns), encodeSlicePool(p));
        if (!r) return r.error();
        return {};
    }

    Result<void> update(const NodeSlicePoolObject& p) override {
        auto r = c_.client().replace(k8s::objectPath(k8s::kNodeSlicePool, p.ns, p.name),
                                     encodeSlicePool(p));
        if (!r) return r.error();
        return {};
    }

    Result<void> remove(const NodeSlicePoolObject& p) override {
        auto r = c_.client().remove(k8s::objectPath(k8s::kNodeSlicePool, p.ns, p.name),
                                    k8s::Preconditions{"", p.resourceVersion});
        if (!r) return r.error();
        return {};
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
