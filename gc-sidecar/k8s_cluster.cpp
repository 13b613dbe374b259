#include "gc-sidecar/k8s_cluster.h"

#include "core/ownership.h"
#include "gc-sidecar/nad.h"
#include "k8s/timestamp.h"
#include "k8s/resources.h"
#include "store/pool_codec.h"

namespace allot::gc {

using k8s::parseTime;

using core::Errc;
using core::makeError;

namespace {

std::string stringAt(const json::Value& obj, std::initializer_list<const char*> path) {
    const json::Value* v = &obj;
    for (const char* k : path) {
        if (!v->isObject()) return {};
        v = v->find(k);
        if (!v) return {};
    }
    return v->isString() ? v->asString() : std::string();
}

PodInfo podInfoOf(const json::Value& pod) {
    PodInfo p{stringAt(pod, {"metadata", "uid"}), stringAt(pod, {"status", "phase"}), {}};
    p.mirrorOf = stringAt(pod, {"metadata", "annotations", core::kConfigMirrorAnnotation.data()});
    p.nodeName = stringAt(pod, {"spec", "nodeName"});
    return p;
}

}  // namespace

template <typename T>
Result<T> K8sCluster::seen(Result<T> r) {
    if (!r && r.code() != Errc::NotFound && r.code() != Errc::Conflict &&
        r.code() != Errc::AlreadyExists && onError_)
        onError_(r.error());
    return r;
}

Result<store::Pool> K8sCluster::getPool(const std::string& ns, const std::string& name) {
    auto obj = seen(client_.get(k8s::objectPath(k8s::kIPPool, ns, name)));
    if (!obj) return obj.error();
    auto p = store::decodePool(*obj);
    if (!p) return makeError(Errc::Invalid, "IPPool " + ns + "/" + name + ": " + p.error().message);
    return p;
}

Result<store::Pool> K8sCluster::updatePool(const std::string& ns, const store::Pool& pool) {
    if (pool.resourceVersion.empty())
        return makeError(Errc::Internal,
                         "updatePool without a resourceVersion would be unconditional");
    store::Pool fitted = pool;
    if (auto f = store::fitPool(fitted, ns); !f) return f.error();
    auto obj = seen(
        client_.replace(k8s::objectPath(k8s::kIPPool, ns, pool.name), store::encodePool(fitted, ns)));
    if (!obj) return obj.error();
    auto p = store::decodePool(*obj);
    if (!p)
        return makeError(Errc::Invalid,
                         "IPPool " + ns + "/" + pool.name + ": " + p.error().message);
    return p;
}

Result<void> K8sCluster::eachPool(
    const std::string& ns, const std::function<bool(store::Pool&)>& fn,
    const std::function<void(const std::string&, const std::string&)>& onBad) {
    k8s::ListOptions o;
    o.limit = kPoolPageSize;
    auto rv =
        seen(client_.listEach(k8s::collectionPath(k8s::kIPPool, ns), o, [&](json::Value& item) {
            auto p = store::decodePool(item);
            if (!p) {
                if (onBad) onBad(stringAt(item, {"metadata", "name"}), p.error().message);
                return true;
            }
            return fn(*p);
        }));
    if (!rv) return rv.error();
    return {};
}

Result<store::Reservation> K8sCluster::getReservation(const std::string& ns,
                                                      const std::string& name) {
    auto obj = seen(client_.get(k8s::objectPath(k8s::kOverlappingRangeIPReservation, ns, name)));
    if (!obj) return obj.error();
    auto r = store::decodeReservation(*obj);
    if (!r) return makeError(Errc::Invalid, r.error().message);
    return r;
}

Result<void> K8sCluster::deleteReservation(const std::string& ns, const std::string& name,
                                           const std::string& resourceVersion) {
    std::optional<k8s::Preconditions> pre;
    if (!resourceVersion.empty()) pre = k8s::Preconditions{"", resourceVersion};
    auto r =
        seen(client_.remove(k8s::objectPath(k8s::kOverlappingRangeIPReservation, ns, name), pre));
    if (!r) return r.error();
    return {};
}

Result<void> K8sCluster::createReservation(const std::string& ns, const store::Reservation& r) {
    store::Reservation x = r;
    x.resourceVersion.clear();
    auto obj = seen(client_.create(k8s::collectionPath(k8s::kOverlappingRangeIPReservation, ns),
                                   store::encodeReservation(x, ns)));
    if (!obj) return obj.error();
    return {};
}

Result<void> K8sCluster::eachReservation(const std::string& ns,
                                         const std::function<bool(ReservationInfo&)>& fn) {
    k8s::ListOptions o;
    o.limit = kReservationPageSize;
    auto rv = seen(client_.listEach(
        k8s::collectionPath(k8s::kOverlappingRangeIPReservation, ns), o, [&](json::Value& item) {
            auto r = store::decodeReservation(item);
            if (!r) return true;
            ReservationInfo info{std::move(*r), {}};
            if (auto t = parseTime(stringAt(item, {"metadata", "creationTimestamp"})))
                info.created = *t;
            return fn(info);
        }));
    if (!rv) return rv.error();
    return {};
}

Result<std::optional<PodInfo>> K8sCluster::getPod(const std::string& ns, const std::string& name) {
    auto obj = seen(client_.get(k8s::objectPath(k8s::kPod, ns, name)));
    if (!obj) {
        if (obj.code() == Errc::NotFound) return std::optional<PodInfo>();
        return obj.error();
    }
    PodInfo p = podInfoOf(*obj);
    return std::optional<PodInfo>(std::move(p));
}

Result<void> K8sCluster::eachPod(
    const std::string& ns,
    const std::function<bool(const std::string&, const std::string&, PodInfo&)>& fn) {
    k8s::ListOptions o;
    o.limit = kPodPageSize;
    auto rv = seen(client_.listEach(k8s::collectionPath(k8s::kPod, ns), o, [&](json::Value& item) {
        PodInfo p = podInfoOf(item);
        return fn(stringAt(item, {"metadata", "namespace"}), stringAt(item, {"metadata", "name"}),
                  p);
    }));
    if (!rv) return rv.error();
    return {};
}

Result<void> K8sCluster::eachNode(
    const std::function<bool(const std::string&, NodeInfo&)>& fn) {
    static constexpr k8s::Resource kNode{"", "v1", "nodes", "Node"};
    k8s::ListOptions o;
    o.limit = kPodPageSize;
    auto rv = seen(client_.listEach(k8s::collectionPath(kNode, ""), o, [&](json::Value& item) {
        NodeInfo n;
        const json::Value* st = item.find("status");
        const json::Value* conds = st && st->isObject() ? st->find("conditions") : nullptr;
        if (conds && conds->isArray()) {
            for (const auto& c : conds->items()) {
                if (!c.isObject() || stringAt(c, {"type"}) != "Ready") continue;
                n.ready = stringAt(c, {"status"}) == "True";
                if (auto t = parseTime(stringAt(c, {"lastTransitionTime"}))) n.notReadySince = *t;
            }
        }
        return fn(stringAt(item, {"metadata", "name"}), n);
    }));
    if (!rv) return rv.error();
    return {};
}

Result<std::string> K8sCluster::getNadConfig(const std::string& ns, const std::string& name) {
    auto obj = seen(client_.get(k8s::objectPath(k8s::kNetworkAttachmentDefinition, ns, name)));
    if (!obj) return obj.error();
    return nadSpecConfig(*obj);
}

Result<std::string> K8sCluster::nodeSlice(const std::string& ns, const std::string& sliceName,
                                          const std::string& node) {
    auto obj = seen(client_.get(k8s::objectPath(k8s::kNodeSlicePool, ns, sliceName)));
    if (!obj) return obj.error();
    const json::Value* status = obj->find("status");
    const json::Value* allocs =
        status && status->isObject() ? status->find("allocations") : nullptr;
    if (allocs && allocs->isArray()) {
        for (const auto& a : allocs->items()) {
            if (!a.isObject()) continue;
            const json::Value* n = a.find("nodeName");
            const json::Value* r = a.find("sliceRange");
            if (n && n->isString() && n->asString() == node && r && r->isString())
                return r->asString();
        }
    }
    return makeError(Errc::NotFound,
                     "NodeSlicePool " + ns + "/" + sliceName + " has no slice for node " + node);
}

}  // namespace allot::gc
