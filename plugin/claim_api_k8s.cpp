// ClaimApi over the Kubernetes API (plugin/claims.h): the pod (its networks annotation and its
// StatefulSet), the IPAMClaim, and its status subresource.

#include <map>

#include "cni/network_selection.h"
#include "engine/retry_policy.h"
#include "k8s/client.h"
#include "k8s/ipam_claim.h"
#include "k8s/relay.h"
#include "k8s/statefulset.h"
#include "plugin/claims.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

class K8sClaimApi : public ClaimApi {
  public:
    K8sClaimApi(k8s::Client& c, Clock::time_point deadline) : client_(c), deadline_(deadline) {}

    Result<PodFacts> pod(const std::string& ns, const std::string& name) override {
        auto pod = client_.get(k8s::objectPath(k8s::kPod, ns, name));
        if (!pod) return pod.error();
        PodFacts facts;
        facts.statefulSet = k8s::controllingStatefulSet(*pod);
        const json::Value* meta = pod->find("metadata");
        const json::Value* ann = meta && meta->isObject() ? meta->find("annotations") : nullptr;
        if (!ann || !ann->isObject()) return facts;
        auto v = ann->getString(cni::kNetworksAnnotation);
        if (!v) return makeError(Errc::InvalidConfig, v.error().message);
        facts.networks = v->value_or("");
        return facts;
    }

    // From the node relay's copy when it has the claim (k8s::relayClaimPath), else a GET. A
    // copy that lags shows an empty status that another pod's ADD has just written: the status
    // write then fails on the resourceVersion, re-reads from the API server, finds the other
    // addresses and refuses (setStatus), so the runtime's retry gets the claim's addresses.
    Result<core::IpamClaimView> claim(const std::string& ns, const std::string& name) override {
        auto copy = fromRelay(ns, name);
        auto obj = copy ? Result<json::Value>(std::move(*copy))
                        : client_.get(k8s::objectPath(k8s::kIPAMClaim, ns, name));
        if (!obj) return obj.error();
        auto view = k8s::ipamClaimView(*obj);
        if (!view) return makeError(Errc::InvalidConfig, view.error().message);
        read_[ns + "/" + name] = std::move(*obj);  // the status write starts from it
        return view;
    }

    Result<void> setStatus(const std::string& ns, const std::string& name,
                           const core::ClaimStatus& st) override {
        const std::string path = k8s::objectPath(k8s::kIPAMClaim, ns, name);
        engine::RetryPolicy retry(deadline_);
        auto it = read_.find(ns + "/" + name);
        std::optional<json::Value> obj;
        if (it != read_.end()) obj = it->second;
        for (;;) {
            if (!obj) {
                auto fresh = client_.get(path);
                if (!fresh) return fresh.error();
                auto view = k8s::ipamClaimView(*fresh);
                if (!view) return makeError(Errc::InvalidConfig, view.error().message);
                // Written meanwhile by another pod's ADD: never overwritten.
                if (!view->ips.empty() && st.allocated && view->ips != st.ips)
                    return makeError(Errc::Conflict, "status.ips was written meanwhile");
                obj = std::move(*fresh);
            }
            auto w = client_.replace(
                path + "/status",
                k8s::withClaimStatus(std::move(*obj), st, std::chrono::system_clock::now()));
            if (w) return {};
            obj.reset();
            if (w.code() != Errc::Conflict) return w.error();
            if (!retry.wait()) return retry.gaveUp(w.error());
        }
    }

  private:
    std::optional<json::Value> fromRelay(const std::string& ns, const std::string& name) {
        auto body = client_.askRelay(k8s::relayClaimPath(ns, name));
        if (!body) return std::nullopt;
        auto obj = json::parse(*body);
        if (!obj || !obj->isObject()) return std::nullopt;  // ask the API server instead
        return std::move(*obj);
    }

    k8s::Client& client_;
    Clock::time_point deadline_;
    std::map<std::string, json::Value> read_;
};

}  // namespace

std::unique_ptr<ClaimApi> makeK8sClaimApi(k8s::Client& client, Clock::time_point deadline) {
    return std::make_unique<K8sClaimApi>(client, deadline);
}

}  // namespace allot::plugin
