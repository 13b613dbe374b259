#include "gc-sidecar/slice_watch.h"

#include <vector>

#include "engine/retry_policy.h"
#include "gc-sidecar/slice_controller.h"
#include "k8s/resources.h"
#include "log/log.h"
#include "store/pool_codec.h"

namespace allot::gc {

namespace {

std::pair<std::string, std::string> keyOf(const json::Value& obj) {
    const json::Value* md = obj.find("metadata");
    auto str = [&](const char* k) {
        const json::Value* v = md && md->isObject() ? md->find(k) : nullptr;
        return v && v->isString() ? v->asString() : std::string();
    };
    return {str("namespace"), str("name")};
}

// Whether allot-gc's slice controller manages the object: it seals before a slice moves.
bool managedByAllot(const json::Value& nodeSlicePool) {
    const json::Value* md = nodeSlicePool.find("metadata");
    const json::Value* labels = md && md->isObject() ? md->find("labels") : nullptr;
    const json::Value* by =
        labels && labels->isObject() ? labels->find(kSliceManagedByLabel) : nullptr;
    return by && by->isString() && by->asString() == kSliceManager;
}

}  // namespace

void NodeSliceCopy::set(const json::Value& nodeSlicePool) {
    auto key = keyOf(nodeSlicePool);
    if (!managedByAllot(nodeSlicePool)) {
        slices_.erase(key);
        return;
    }
    if (auto s = store::nodeSliceOf(nodeSlicePool, node_))
        slices_[key] = std::move(*s);
    else
        slices_.erase(key);
}

void NodeSliceCopy::replace(const std::vector<json::Value>& nodeSlicePools) {
    std::lock_guard l(mu_);
    slices_.clear();
    for (const auto& p : nodeSlicePools) set(p);
    synced_ = true;
}

void NodeSliceCopy::apply(const k8s::WatchEvent& ev) {
    std::lock_guard l(mu_);
    switch (ev.type) {
        case k8s::WatchEvent::Type::Added:
        case k8s::WatchEvent::Type::Modified:
            set(ev.object);
            break;
        case k8s::WatchEvent::Type::Deleted:
            slices_.erase(keyOf(ev.object));
            break;
        default:
            break;
    }
}

void NodeSliceCopy::lost() {
    std::lock_guard l(mu_);
    synced_ = false;
    slices_.clear();
}

bool NodeSliceCopy::synced() const {
    std::lock_guard l(mu_);
    return synced_;
}

std::optional<k8s::RelayResponse> NodeSliceCopy::answer(const k8s::RelayRequest& r) const {
    using Kind = k8s::RelayResponse::Kind;
    auto q = k8s::parseRelayNodeSlicePath(r.path);
    if (!q || r.method != "GET") return std::nullopt;
    if (q->node != node_)
        return k8s::RelayResponse{Kind::Refused, 0, -1, "this relay keeps the slices of " + node_};
    std::lock_guard l(mu_);
    if (!synced_)
        return k8s::RelayResponse{Kind::Refused, 0, -1, "the NodeSlicePool watch is not synced"};
    auto it = slices_.find({q->ns, q->name});
    if (it == slices_.end()) return k8s::RelayResponse{Kind::Answered, 404, -1, ""};
    return k8s::RelayResponse{Kind::Answered, 200, -1, it->second};
}

// The engine's one backoff schedule, waited on the stop signal.
void NodeSliceWatch::pause() {
    stop_.waitFor(engine::Backoff{std::chrono::milliseconds(500), std::chrono::seconds(30)}.delay(
        failures_++));
}

void NodeSliceWatch::run() {
    std::string rv;
    while (!stop_.stopped()) {
        if (!relist(rv)) {
            pause();
            continue;
        }
        while (!stop_.stopped() && watchFrom(rv)) {
        }
    }
}

bool NodeSliceWatch::relist(std::string& rv) {
    std::vector<json::Value> items;
    k8s::ListOptions o;
    o.limit = 100;
    auto listed =
        client_.listEach(k8s::collectionPath(k8s::kNodeSlicePool, ""), o, [&](json::Value& item) {
            items.push_back(std::move(item));
            return true;
        });
    if (!listed) {
        logging::logWarn("listing NodeSlicePools failed: " + listed.error().message +
                         " (the relay answers no slice until it succeeds)");
        return false;
    }
    copy_.replace(items);
    rv = *listed;
    failures_ = 0;
    return true;
}

bool NodeSliceWatch::watchFrom(std::string& rv) {
    k8s::WatchOptions w;
    w.resourceVersion = rv;
    w.allowWatchBookmarks = true;
    w.timeoutSeconds = 300;
    auto r = client_.watch(k8s::collectionPath(k8s::kNodeSlicePool, ""), w,
                           [&](const k8s::WatchEvent& ev) {
                               copy_.apply(ev);
                               return !stop_.stopped();
                           });
    if (r) {
        rv = *r;
        return true;  // the server ended the watch: resume from where it was
    }
    copy_.lost();
    if (r.code() != core::Errc::Expired) {
        logging::logWarn("NodeSlicePool watch failed: " + r.error().message + "; listing again");
        pause();
    }
    return false;
}

}  // namespace allot::gc
