#include "store_k8s/k8s_store.h"

#include "k8s_api/resources.h"
#include "store/pool_codec.h"

namespace allot::store {

using core::Errc;
using core::makeError;

namespace {

// A decode failure of an object the server returned is Invalid, naming the object.
template <typename T>
Result<T> decoded(Result<T> r, const std::string& what) {
    if (r) return r;
    return makeError(Errc::Invalid, what + ": " + r.error().message);
}

}  // namespace

Result<Pool> K8sStore::getPool(const std::string& name) {
    PoolStreamDecoder decoder;  // entries decoded as parsed: the pool is not held as a tree
    auto obj = seen_(client_->get(k8s::objectPath(k8s::kIPPool, ns_, name), decoder.taps()));
    if (!obj) return obj.error();
    return decoded(decoder.finish(*obj), "IPPool " + ns_ + "/" + name);
}

Result<Pool> K8sStore::createPool(const Pool& pool) {
    Pool p = pool;
    p.resourceVersion.clear();
    if (auto f = fitPool(p, ns_, sizePolicy_); !f) return f.error();
    auto obj = seen_(client_->create(k8s::collectionPath(k8s::kIPPool, ns_), encodePool(p, ns_)));
    if (!obj) return obj.error();
    return decoded(decodePool(*obj), "IPPool " + ns_ + "/" + pool.name);
}

Result<Pool> K8sStore::updatePool(Pool pool) {
    if (pool.resourceVersion.empty())
        return makeError(Errc::Internal,
                         "updatePool without a resourceVersion would be unconditional");
    pool.written.clear();
    auto fitted = fitPool(pool, ns_, sizePolicy_);
    if (!fitted) return fitted.error();
    std::string text = encodePool(pool, ns_).dump();
    const std::string where = "IPPool " + ns_ + "/" + pool.name;
    PoolWriteDecoder answer;  // the answer's spec is what was sent: not decoded again
    auto obj = seen_(client_->replaceEncoded(k8s::objectPath(k8s::kIPPool, ns_, pool.name), text,
                                             answer.taps()));
    if (!obj) return obj.error();
    return decoded(answer.finish(std::move(pool), std::move(text), fitted->size, *obj), where);
}

Result<void> K8sStore::eachPool(const std::function<bool(Pool&)>& fn, const BadPool& onBad) {
    k8s::ListOptions o;
    o.limit = kPoolPageSize;
    std::optional<core::Error> bad;
    PoolStreamDecoder decoder;  // entries decoded as parsed: no pool is held as a JSON tree
    auto rv = seen_(client_->listEach(
        k8s::collectionPath(k8s::kIPPool, ns_), o,
        [&](json::Value& item) {
            auto p = decoder.finish(item);
            if (p) return fn(*p);
            const json::Value* meta = item.find("metadata");
            const json::Value* name = meta ? meta->find("name") : nullptr;
            const std::string n = name && name->isString() ? name->asString() : "(unnamed)";
            if (onBad) {
                onBad(n, p.error().message);
                return true;
            }
            bad = makeError(Errc::Invalid, "IPPool " + ns_ + "/" + n + ": " + p.error().message);
            return false;
        },
        decoder.taps()));
    if (!rv) return rv.error();
    if (bad) return *bad;
    return {};
}

Result<Reservation> K8sStore::getReservation(const std::string& name) {
    auto obj = seen_(client_->get(k8s::objectPath(k8s::kOverlappingRangeIPReservation, ns_, name)));
    if (!obj) return obj.error();
    return decoded(decodeReservation(*obj), "OverlappingRangeIPReservation " + name);
}

Result<Reservation> K8sStore::createReservation(const Reservation& r) {
    Reservation x = r;
    x.resourceVersion.clear();
    auto obj = seen_(client_->create(k8s::collectionPath(k8s::kOverlappingRangeIPReservation, ns_),
                                     encodeReservation(x, ns_)));
    if (!obj) return obj.error();
    return decoded(decodeReservation(*obj), "OverlappingRangeIPReservation " + r.name);
}

Result<void> K8sStore::deleteReservation(const std::string& name,
                                         const std::string& resourceVersion) {
    std::optional<k8s::Preconditions> pre;
    if (!resourceVersion.empty()) pre = k8s::Preconditions{"", resourceVersion};
    auto r = seen_(
        client_->remove(k8s::objectPath(k8s::kOverlappingRangeIPReservation, ns_, name), pre));
    if (!r) return r.error();
    return {};
}

Result<void> K8sStore::eachReservation(const std::function<bool(Reservation&)>& fn) {
    k8s::ListOptions o;
    o.limit = kReservationPageSize;
    auto rv = seen_(client_->listEach(k8s::collectionPath(k8s::kOverlappingRangeIPReservation, ns_),
                                      o, [&](json::Value& item) {
                                          auto r = decodeReservation(item);
                                          return r ? fn(*r) : true;
                                      }));
    if (!rv) return rv.error();
    return {};
}

Result<NodeSlice> K8sStore::nodeSlice(const std::string& sliceName, const std::string& node,
                                      bool fresh) {
    if (!fresh)
        if (auto s = client_->askRelay(k8s::relayNodeSlicePath(ns_, sliceName, node)))
            return NodeSlice{std::move(*s), ""};
    return nodeSliceIn(slices_.getNodeSlicePool(ns_, sliceName), node);
}

Result<void> K8sStore::ping() {
    k8s::ListOptions o;
    o.limit = 1;
    auto r = seen_(client_->list(k8s::collectionPath(k8s::kOverlappingRangeIPReservation, ns_), o));
    if (!r) return r.error();
    return {};
}

Result<std::unique_ptr<K8sStore>> openK8sStore(const std::string& kubeconfig, const std::string& ns,
                                               k8s::Client::Options options) {
    auto client = k8s::makeClient(kubeconfig, std::move(options));
    if (!client) return client.error();
    std::string space = ns;
    if (space.empty()) space = client->config().namespace_;
    if (space.empty()) space = kDefaultPoolNamespace;
    return std::make_unique<K8sStore>(std::move(*client), space);
}

}  // namespace allot::store
