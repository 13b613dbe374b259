#pragma once
// Nodes, NetworkAttachmentDefinitions, NodeSlicePools and Pods as the controller reads them:
// kept current by a watch (one LIST, then WATCH; gc-sidecar's ObjectWatch fills them) instead
// of listed again by every repair and slice pass, so a pass costs the API server nothing for
// them however many Nodes and pods the cluster has. Pods are kept packed (pod_index.h). Until the
// first list, and from a lost watch until the next list, a set is not synced and a read of it is
// Transient: a pass never works from a partial picture.

#include <concepts>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/pod_index.h"
#include "core/result.h"
#include "json/json.h"
#include "store/node_slice_codec.h"

namespace allot::cluster {

// What a repair pass needs of a Node object, and of a NAD object (the one decoding of each);
// a NodeSlicePool whole (the slice controller writes it back, guarded by its resourceVersion:
// a copy the watch has not caught up with yet only costs a Conflict, read again next pass).
NodeInfo nodeInfoOf(const json::Value& node);
NadInfo nadInfoOf(const json::Value& nad);
PodInfo podInfoOf(const json::Value& pod);
store::NodeSlicePool nodeSlicePoolOf(const json::Value& nsp);

// One kind's objects by (namespace, name), as T.
template <typename T>
class WatchedSet {
  public:
    using Key = std::pair<std::string, std::string>;
    explicit WatchedSet(std::string what) : what_(std::move(what)) {}

    void replace(std::map<Key, T> items) {
        std::lock_guard l(mu_);
        items_ = std::move(items);
        synced_ = true;
    }
    // Each says whether what a pass reads changed (a type without == always has).
    bool set(Key key, T item) {
        std::lock_guard l(mu_);
        auto [it, added] = items_.try_emplace(std::move(key), item);
        if (added) return true;
        if constexpr (std::equality_comparable<T>)
            if (it->second == item) return false;
        it->second = std::move(item);
        return true;
    }
    bool erase(const Key& key) {
        std::lock_guard l(mu_);
        return items_.erase(key) != 0;
    }
    void lost() {
        std::lock_guard l(mu_);
        synced_ = false;
        items_.clear();
    }
    bool synced() const {
        std::lock_guard l(mu_);
        return synced_;
    }
    // A snapshot, taken under the lock; `fn` runs outside it (false stops).
    core::Result<void> each(const std::function<bool(const Key&, T&)>& fn) const {
        std::vector<std::pair<Key, T>> copy;
        {
            std::lock_guard l(mu_);
            if (!synced_)
                return core::makeError(core::Errc::Transient,
                                       what_ + " are not listed yet (their watch is starting)");
            copy.assign(items_.begin(), items_.end());
        }
        for (auto& [k, v] : copy)
            if (!fn(k, v)) break;
        return {};
    }
    // A list streamed in (gc-sidecar's ObjectWatch): it starts from nothing, set() per object,
    // and the set reads as listed from listed() on.
    void beginList() { lost(); }
    void listed() {
        std::lock_guard l(mu_);
        synced_ = true;
    }

  private:
    std::string what_;
    mutable std::mutex mu_;
    bool synced_ = false;
    std::map<Key, T> items_;
};

// The sets a controller's K8sCluster reads through (K8sCluster::readThrough).
struct WatchedObjects {
    WatchedSet<NodeInfo> nodes{"Nodes"};
    WatchedSet<NadInfo> nads{"NetworkAttachmentDefinitions"};
    WatchedSet<store::NodeSlicePool> slicePools{"NodeSlicePools"};
    PodIndex pods;
    bool synced() const {
        return nodes.synced() && nads.synced() && slicePools.synced() && pods.synced();
    }
};

}  // namespace allot::cluster
