#include "store_k8s/k8s_node_slice_store.h"

#include "k8s_api/resources.h"

namespace allot::store {

using core::Errc;
using core::makeError;

Result<std::vector<NodeSlicePool>> K8sNodeSliceStore::listNodeSlicePools(const std::string& ns) {
    std::vector<NodeSlicePool> out;
    k8s::ListOptions o;
    o.limit = kNodeSlicePoolPageSize;
    auto rv = seen_(
        client_.listEach(k8s::collectionPath(k8s::kNodeSlicePool, ns), o, [&](json::Value& item) {
            out.push_back(decodeNodeSlicePool(std::move(item)));
            return true;
        }));
    if (!rv) return rv.error();
    return out;
}

Result<NodeSlicePool> K8sNodeSliceStore::getNodeSlicePool(const std::string& ns,
                                                          const std::string& name) {
    auto obj = seen_(client_.get(k8s::objectPath(k8s::kNodeSlicePool, ns, name)));
    if (!obj) return obj.error();
    return decodeNodeSlicePool(std::move(*obj));
}

Result<NodeSlicePool> K8sNodeSliceStore::createNodeSlicePool(const NodeSlicePool& p) {
    NodeSlicePool fresh = p;
    fresh.resourceVersion.clear();
    json::Value body = encodeNodeSlicePool(fresh);
    // A copy of a read object still carries its version in `raw`: the server refuses a create
    // that names one.
    if (json::Value* md = body.find("metadata")) md->erase("resourceVersion");
    auto obj = seen_(client_.create(k8s::collectionPath(k8s::kNodeSlicePool, p.ns), body));
    if (!obj) return obj.error();
    return decodeNodeSlicePool(std::move(*obj));
}

Result<NodeSlicePool> K8sNodeSliceStore::updateNodeSlicePool(const NodeSlicePool& p) {
    if (p.resourceVersion.empty())
        return makeError(Errc::Internal,
                         "NodeSlicePool update without a resourceVersion would be unconditional");
    auto obj = seen_(client_.replace(k8s::objectPath(k8s::kNodeSlicePool, p.ns, p.name),
                                     encodeNodeSlicePool(p)));
    if (!obj) return obj.error();
    return decodeNodeSlicePool(std::move(*obj));
}

Result<void> K8sNodeSliceStore::removeNodeSlicePool(const std::string& ns, const std::string& name,
                                                    const std::string& resourceVersion) {
    if (resourceVersion.empty())
        return makeError(Errc::Internal,
                         "NodeSlicePool delete without a resourceVersion would be unconditional");
    auto r = seen_(client_.remove(k8s::objectPath(k8s::kNodeSlicePool, ns, name),
                                  k8s::Preconditions{"", resourceVersion}));
    if (!r) return r.error();
    return {};
}

}  // namespace allot::store
