#include "gc-sidecar/relay/claim_pod_index.h"

#include "cni/network_selection.h"
#include "json/json.h"
#include "k8s/statefulset.h"

namespace allot::gc {

namespace {

constexpr std::string_view kPodsPrefix = "/api/v1/namespaces/";

// "ns/name" of a GET of one pod; nullopt for any other request.
std::optional<std::string> podKey(const k8s::RelayRequest& req) {
    if (req.method != "GET" || !k8s::relayAllowed(req.method, req.path)) return std::nullopt;
    std::string_view p = req.path;
    if (p.substr(0, kPodsPrefix.size()) != kPodsPrefix) return std::nullopt;
    p.remove_prefix(kPodsPrefix.size());
    auto slash = p.find('/');
    if (slash == std::string_view::npos || p.substr(slash, 6) != "/pods/") return std::nullopt;
    return std::string(p.substr(0, slash)) + "/" + std::string(p.substr(slash + 6));
}

}  // namespace

void PodNetworksIndex::set(const PodRecord& r) {
    // Over the plugin's limit: not kept, so the plugin reads it itself and names the limit.
    if (r.networks && r.networks->size() > cni::kMaxNetworksAnnotationBytes) {
        erase(r);
        return;
    }
    std::lock_guard l(mu_);
    pods_[r.ns + "/" + r.name] = Entry{r.uid, r.networks, r.statefulSet};
}

void PodNetworksIndex::erase(const PodRecord& r) {
    std::lock_guard l(mu_);
    auto it = pods_.find(r.ns + "/" + r.name);
    if (it != pods_.end() && it->second.uid == r.uid) pods_.erase(it);
}

void PodNetworksIndex::reset(const std::unordered_map<std::string, PodRecord>& byUid) {
    {
        std::lock_guard l(mu_);
        pods_.clear();
    }
    for (const auto& [uid, r] : byUid) set(r);
}

size_t PodNetworksIndex::size() const {
    std::lock_guard l(mu_);
    return pods_.size();
}

std::optional<k8s::RelayResponse> PodNetworksIndex::answer(const k8s::RelayRequest& req) const {
    auto key = podKey(req);
    if (!key) return std::nullopt;
    Entry e;
    {
        std::lock_guard l(mu_);
        auto it = pods_.find(*key);
        if (it == pods_.end()) return std::nullopt;
        e = it->second;
    }
    auto md = json::Value::object();
    md.set("namespace", json::Value::string(key->substr(0, key->find('/'))));
    md.set("name", json::Value::string(key->substr(key->find('/') + 1)));
    md.set("uid", json::Value::string(e.uid));
    if (e.statefulSet) {
        auto refs = json::Value::array();
        refs.push(k8s::statefulSetOwnerReference(*e.statefulSet));
        md.set("ownerReferences", std::move(refs));
    }
    if (e.networks) {
        auto ann = json::Value::object();
        ann.set(std::string(cni::kNetworksAnnotation), json::Value::string(*e.networks));
        md.set("annotations", std::move(ann));
    }
    auto pod = json::Value::object();
    pod.set("apiVersion", json::Value::string("v1"));
    pod.set("kind", json::Value::string("Pod"));
    pod.set("metadata", std::move(md));
    return k8s::RelayResponse{k8s::RelayResponse::Kind::Answered, 200, -1, pod.dump()};
}

}  // namespace allot::gc
