#include "gc-sidecar/node/pod_watch.h"

#include <malloc.h>

#include <random>

#include "cni/network_selection.h"
#include "core/ownership.h"
#include "engine/retry_policy.h"
#include "gc-sidecar/node/network_status.h"
#include "k8s/statefulset.h"
#include "k8s_api/resources.h"
#include "log/log.h"

namespace allot::gc {

using core::Errc;

std::optional<PodRecord> podRecordOf(const json::Value& pod) {
    const json::Value* md = pod.find("metadata");
    if (!md || !md->isObject()) return std::nullopt;
    auto str = [&](const char* k) {
        const json::Value* v = md->find(k);
        return v && v->isString() ? v->asString() : std::string();
    };
    PodRecord r{str("namespace"), str("name"), str("uid"), false, {}};
    if (r.ns.empty() || r.name.empty() || r.uid.empty()) return std::nullopt;
    if (const json::Value* a = md->find("annotations"); a && a->isObject()) {
        if (const json::Value* s = a->find(kNetworkStatusAnnotation); s && s->isString()) {
            r.hasNetworkStatus = true;
            r.networkStatus = s->asString();
        }
        if (const json::Value* m = a->find(core::kConfigMirrorAnnotation.data());
            m && m->isString())
            r.mirrorOf = m->asString();
        if (const json::Value* n = a->find(cni::kNetworksAnnotation); n && n->isString())
            r.networks = n->asString();
    }
    if (const json::Value* spec = pod.find("spec"); spec && spec->isObject())
        if (const json::Value* h = spec->find("hostNetwork"); h && h->isBool())
            r.hostNetwork = h->asBool();
    r.statefulSet = k8s::controllingStatefulSet(pod);
    return r;
}

void PodWatch::run() {
    std::string rv;
    while (!stop_.stopped()) {
        if (!relist(rv)) {
            pause();
            continue;
        }
        while (!stop_.stopped()) {
            if (!watchFrom(rv)) break;
        }
        if (!stop_.stopped() && failures_ > 0) pause();
    }
}

bool PodWatch::relist(std::string& rv) {
    k8s::ListOptions o;
    o.fieldSelector = "spec.nodeName=" + opts_.node;
    o.limit = 100;
    std::unordered_map<std::string, PodRecord> fresh;
    auto listed = client_.listEach(k8s::collectionPath(k8s::kPod, ""), o, [&](json::Value& item) {
        if (auto r = podRecordOf(item)) fresh.insert_or_assign(r->uid, std::move(*r));
        return true;
    });
    if (!listed) {
        metrics_.addWatchRestart();
        metrics_.addApiError(core::errcName(listed.code()));
        logging::logWarn("listing the pods of node " + opts_.node +
                         " failed: " + listed.error().message);
        return false;
    }
    // Pods that disappeared while no watch was open: deleted.
    std::unordered_map<std::string, PodRecord> before;
    {
        std::lock_guard l(mu_);
        before.swap(pods_);
        pods_ = std::move(fresh);
    }
    for (auto& [uid, rec] : before)
        if (!pods_.count(uid)) onDeleted_(std::move(rec));
    if (index_) index_->reset(pods_);
    ::malloc_trim(0);  // the list's pages are gone: do not keep their peak
    rv = *listed;
    metrics_.watchProgress();
    // Every relist, not only the first: a pod created and deleted in the gap (after a 410) was
    // never seen, and only a catch-up against the pools finds its entries.
    logging::logInfo("pod watch of node " + opts_.node + (synced_ ? " relisted: " : " synced: ") +
                     std::to_string(pods_.size()) + " pods");
    {
        std::lock_guard l(mu_);
        synced_ = true;
    }
    onSynced_(*live());
    return true;
}

std::optional<std::vector<PodRecord>> PodWatch::live() const {
    std::lock_guard l(mu_);
    if (!synced_) return std::nullopt;
    std::vector<PodRecord> out;
    out.reserve(pods_.size());
    for (const auto& [uid, rec] : pods_) out.push_back(rec);
    return out;
}

bool PodWatch::watchFrom(std::string& rv) {
    static thread_local std::minstd_rand rng{std::random_device{}()};
    k8s::WatchOptions w;
    w.fieldSelector = "spec.nodeName=" + opts_.node;
    w.resourceVersion = rv;
    w.allowWatchBookmarks = true;
    // Spread the reconnects of many nodes (as client-go does: between 1x and 2x).
    const int64_t base = std::max<int64_t>(1, opts_.watchTimeout.count() / 1000);
    std::uniform_int_distribution<int64_t> d(base, base + base / 4);
    w.timeoutSeconds = d(rng);
    auto r = client_.watch(k8s::collectionPath(k8s::kPod, ""), w, [&](const k8s::WatchEvent& ev) {
        metrics_.watchProgress();
        if (const json::Value* md = ev.object.find("metadata"); md && md->isObject())
            if (const json::Value* v = md->find("resourceVersion");
                v && v->isString() && !v->asString().empty())
                rv = v->asString();
        failures_ = 0;
        switch (ev.type) {
            case k8s::WatchEvent::Type::Added:
            case k8s::WatchEvent::Type::Modified:
                if (auto rec = podRecordOf(ev.object)) {
                    if (index_) index_->set(*rec);
                    std::lock_guard l(mu_);
                    pods_.insert_or_assign(rec->uid, std::move(*rec));
                }
                break;
            case k8s::WatchEvent::Type::Deleted:
                if (auto rec = podRecordOf(ev.object)) {
                    {
                        std::lock_guard l(mu_);
                        auto it = pods_.find(rec->uid);
                        if (!rec->hasNetworkStatus && it != pods_.end() &&
                            it->second.hasNetworkStatus) {
                            // The final object lost the annotation: keep the last one seen,
                            // and the final object's word on the sandbox.
                            rec->hasNetworkStatus = true;
                            rec->networkStatus = std::move(it->second.networkStatus);
                        }
                        if (it != pods_.end()) pods_.erase(it);
                    }
                    if (index_) index_->erase(*rec);
                    onDeleted_(std::move(*rec));
                }
                break;
            default:
                break;
        }
        return !stop_.stopped();
    });
    if (r) {
        rv = *r;
        metrics_.watchProgress();
        return true;  // the server ended the watch: resume
    }
    metrics_.addWatchRestart();
    if (r.code() == Errc::Expired) {
        logging::logInfo("pod watch of node " + opts_.node + " expired (410): relisting");
        failures_ = 0;
        return false;
    }
    metrics_.addApiError(core::errcName(r.code()));
    logging::logWarn("pod watch of node " + opts_.node + " failed: " + r.error().message +
                     " (resuming from " + rv + ")");
    pause();
    return true;
}

// The engine's one backoff schedule, waited on the stop signal so shutdown is never delayed.
void PodWatch::pause() {
    stop_.waitFor(engine::Backoff{opts_.backoffMin, opts_.backoffMax}.delay(failures_++));
}

}  // namespace allot::gc
