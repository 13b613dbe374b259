#include "cluster/k8s_cluster.h"

#include "cluster/nad.h"
#include "cluster/watched.h"
#include "core/ownership.h"
#include "k8s_api/resources.h"
#include "k8s_api/timestamp.h"

namespace allot::cluster {

using json::stringAt;
using k8s::parseTime;

using core::Errc;

PodInfo podInfoOf(const json::Value& pod) {
    PodInfo p{stringAt(pod, {"metadata", "uid"}), stringAt(pod, {"status", "phase"}), {}};
    p.mirrorOf = stringAt(pod, {"metadata", "annotations", core::kConfigMirrorAnnotation.data()});
    p.nodeName = stringAt(pod, {"spec", "nodeName"});
    return p;
}

store::PoolStore& K8sCluster::pools(const std::string& ns) {
    auto& slot = stores_[ns];
    if (!slot) slot = std::make_unique<store::K8sStore>(client_, ns, seen_.fn());
    return *slot;
}

Result<std::optional<PodInfo>> K8sCluster::getPod(const std::string& ns, const std::string& name) {
    auto obj = seen_(client_.get(k8s::objectPath(k8s::kPod, ns, name)));
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
    o.limit = pageSize_;
    auto rv = seen_(client_.listEach(k8s::collectionPath(k8s::kPod, ns), o, [&](json::Value& item) {
        PodInfo p = podInfoOf(item);
        return fn(stringAt(item, {"metadata", "namespace"}), stringAt(item, {"metadata", "name"}),
                  p);
    }));
    if (!rv) return rv.error();
    return {};
}

Result<void> K8sCluster::eachNamedPod(const std::unordered_set<std::string>& refs,
                                      const std::function<bool(const std::string&, PodInfo&)>& fn) {
    if (!watched_) return Cluster::eachNamedPod(refs, fn);
    for (const auto& ref : refs) {
        const auto slash = ref.find('/');
        if (slash == std::string::npos) continue;
        auto pod = watched_->pods.find(ref.substr(0, slash), ref.substr(slash + 1));
        if (!pod) return pod.error();
        if (*pod && !fn(ref, **pod)) break;
    }
    return {};
}

NodeInfo nodeInfoOf(const json::Value& item) {
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
    const json::Value* spec = item.find("spec");
    const json::Value* taints = spec && spec->isObject() ? spec->find("taints") : nullptr;
    if (taints && taints->isArray())
        for (const auto& t : taints->items())
            if (t.isObject() && stringAt(t, {"key"}) == core::kOutOfServiceTaint)
                n.outOfService = true;
    const std::string os = stringAt(item, {"metadata", "labels", "kubernetes.io/os"});
    n.linux = os.empty() || os == "linux";
    return n;
}

NadInfo nadInfoOf(const json::Value& item) {
    auto cfg = nadSpecConfig(item);
    return NadInfo{stringAt(item, {"metadata", "namespace"}), stringAt(item, {"metadata", "name"}),
                   stringAt(item, {"metadata", "uid"}), cfg ? std::move(*cfg) : std::string()};
}

store::NodeSlicePool nodeSlicePoolOf(const json::Value& item) {
    return store::decodeNodeSlicePool(item);
}

Result<void> K8sCluster::eachNode(const std::function<bool(const std::string&, NodeInfo&)>& fn) {
    if (watched_)
        return watched_->nodes.each(
            [&](const WatchedSet<NodeInfo>::Key& k, NodeInfo& n) { return fn(k.second, n); });
    k8s::ListOptions o;
    o.limit = pageSize_;
    auto rv =
        seen_(client_.listEach(k8s::collectionPath(k8s::kNode, ""), o, [&](json::Value& item) {
            NodeInfo n = nodeInfoOf(item);
            return fn(stringAt(item, {"metadata", "name"}), n);
        }));
    if (!rv) return rv.error();
    return {};
}

Result<std::optional<std::string>> K8sCluster::nodeUid(const std::string& name) {
    auto obj = seen_(client_.get(k8s::objectPath(k8s::kNode, "", name)));
    if (!obj) {
        if (obj.code() == Errc::NotFound) return std::optional<std::string>();
        return obj.error();
    }
    return std::optional<std::string>(stringAt(*obj, {"metadata", "uid"}));
}

Result<std::string> K8sCluster::getNadConfig(const std::string& ns, const std::string& name) {
    auto obj = seen_(client_.get(k8s::objectPath(k8s::kNetworkAttachmentDefinition, ns, name)));
    if (!obj) return obj.error();
    return nadSpecConfig(*obj);
}

Result<void> K8sCluster::eachNad(const std::function<bool(NadInfo&)>& fn) {
    if (watched_)
        return watched_->nads.each(
            [&](const WatchedSet<NadInfo>::Key&, NadInfo& n) { return fn(n); });
    k8s::ListOptions o;
    o.limit = pageSize_;
    auto rv = seen_(client_.listEach(k8s::collectionPath(k8s::kNetworkAttachmentDefinition, ""), o,
                                     [&](json::Value& item) {
                                         NadInfo n = nadInfoOf(item);
                                         return fn(n);
                                     }));
    if (!rv) return rv.error();
    return {};
}

Result<std::vector<store::NodeSlicePool>> K8sCluster::slicePools(const std::string& ns) {
    if (!watched_) return slices_.listNodeSlicePools(ns);
    std::vector<store::NodeSlicePool> out;
    auto r = watched_->slicePools.each(
        [&](const WatchedSet<store::NodeSlicePool>::Key& k, store::NodeSlicePool& p) {
            if (ns.empty() || k.first == ns) out.push_back(std::move(p));
            return true;
        });
    if (!r) return r.error();
    return out;
}

Result<std::vector<core::NodeSliceView>> K8sCluster::nodeSlicePools(const std::string& ns) {
    auto pools = slicePools(ns);
    // NotFound: the NodeSlicePool resource is not installed.
    if (!pools && pools.code() == Errc::NotFound) return std::vector<core::NodeSliceView>{};
    if (!pools) return pools.error();
    std::vector<core::NodeSliceView> out;
    for (auto& p : *pools)
        out.push_back({std::move(p.name), std::move(p.range), std::move(p.allocations)});
    return out;
}

}  // namespace allot::cluster
