#include "gc-sidecar/relay/object_watch.h"

#include "engine/retry_policy.h"
#include "log/log.h"

namespace allot::gc {

std::pair<std::string, std::string> objectKey(const json::Value& obj) {
    const json::Value* md = obj.find("metadata");
    auto str = [&](const char* k) {
        const json::Value* v = md && md->isObject() ? md->find(k) : nullptr;
        return v && v->isString() ? v->asString() : std::string();
    };
    return {str("namespace"), str("name")};
}

void KeyedCopy::set(const json::Value& obj) {
    auto key = objectKey(obj);
    if (auto k = keep(obj))
        kept_[std::move(key)] = std::move(*k);
    else
        kept_.erase(key);
}

void KeyedCopy::listBegin() {
    lost();
}

void KeyedCopy::listAdd(const json::Value& obj) {
    std::lock_guard l(mu_);
    set(obj);
}

void KeyedCopy::listCommit() {
    std::lock_guard l(mu_);
    synced_ = true;
}

void KeyedCopy::apply(const k8s::WatchEvent& ev) {
    std::lock_guard l(mu_);
    switch (ev.type) {
        case k8s::WatchEvent::Type::Added:
        case k8s::WatchEvent::Type::Modified:
            set(ev.object);
            break;
        case k8s::WatchEvent::Type::Deleted:
            kept_.erase(objectKey(ev.object));
            break;
        default:
            break;
    }
}

void KeyedCopy::lost() {
    std::lock_guard l(mu_);
    synced_ = false;
    kept_.clear();
}

size_t KeyedCopy::size() const {
    std::lock_guard l(mu_);
    return kept_.size();
}

KeyedCopy::Lookup KeyedCopy::lookup(const std::string& ns, const std::string& name) const {
    std::lock_guard l(mu_);
    if (!synced_) return {};
    auto it = kept_.find({ns, name});
    return {true, it == kept_.end() ? std::nullopt : std::optional<std::string>(it->second)};
}

ObjectWatch::ObjectWatch(k8s::Client client, std::string collection, std::string what,
                         WatchedCopy& copy, StopSignal& stop)
    : client_(std::move(client)),
      collection_(std::move(collection)),
      what_(std::move(what)),
      copy_(copy),
      stop_(stop) {
    stop_.onStop([this] { recheck(); });
}

void ObjectWatch::recheck() {
    {
        std::lock_guard l(wakeMu_);
        wake_ = true;
    }
    wakeCv_.notify_all();
}

// The engine's one backoff schedule, waited on the stop signal. A resource the cluster does not
// serve is asked for again only every few minutes (every node lists it, and an optional CRD
// may never be installed), or at once on recheck().
void ObjectWatch::pause() {
    if (notServed_) {
        std::unique_lock l(wakeMu_);
        wakeCv_.wait_for(l, kNotServedRecheck, [this] { return wake_; });
        wake_ = false;
        return;
    }
    stop_.waitFor(engine::Backoff{std::chrono::milliseconds(500), std::chrono::seconds(30)}.delay(
        failures_++));
}

void ObjectWatch::run() {
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

bool ObjectWatch::relist(std::string& rv) {
    size_t items = 0;
    k8s::ListOptions o;
    o.limit = kListPageSize;
    copy_.listBegin();
    auto listed = client_.listEach(collection_, o, [&](json::Value& item) {
        copy_.listAdd(item);
        ++items;
        return true;
    });
    notServed_ = !listed && listed.code() == core::Errc::NotFound;
    if (!listed) {
        // A resource the cluster does not serve (an optional CRD): said once, tried again.
        if (!notServed_) {
            logging::logWarn("listing " + what_ + " failed: " + listed.error().message +
                             " (this copy is used once it succeeds)");
            return false;
        }
        copy_.notServed();
        if (!std::exchange(saidNotServed_, true))
            logging::logInfo(what_ +
                             " are not served by this cluster: this copy holds none "
                             "(asked again every 5 minutes)");
        return false;
    }
    copy_.listCommit();
    logging::logInfo("listed " + std::to_string(items) + " " + what_ +
                     ": kept current by a watch from here on");
    rv = *listed;
    failures_ = 0;
    saidNotServed_ = false;
    return true;
}

bool ObjectWatch::watchFrom(std::string& rv) {
    k8s::WatchOptions w;
    w.resourceVersion = rv;
    w.allowWatchBookmarks = true;
    w.timeoutSeconds = 300;
    auto r = client_.watch(collection_, w, [&](const k8s::WatchEvent& ev) {
        copy_.apply(ev);
        return !stop_.stopped();
    });
    if (r) {
        rv = *r;
        return true;  // the server ended the watch: resume from where it was
    }
    copy_.lost();
    if (r.code() != core::Errc::Expired) {
        logging::logWarn(what_ + " watch failed: " + r.error().message + "; listing again");
        pause();
    }
    return false;
}

}  // namespace allot::gc
