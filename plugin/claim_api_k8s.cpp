// IpamClaimApi over the Kubernetes API (plugin/claim_api_k8s.h): the pod (its networks annotation
// and its StatefulSet), the IPAMClaim, and its status subresource.

#include "plugin/claim_api_k8s.h"

#include <future>
#include <map>

#include "cni/network_selection.h"
#include "engine/retry_policy.h"
#include "k8s/client.h"
#include "k8s/ipam_claim.h"
#include "k8s/relay.h"
#include "k8s/statefulset.h"

namespace allot::plugin {

using engine::Clock;

using core::Errc;
using core::makeError;
using core::Result;

namespace {

class K8sClaimApi : public engine::IpamClaimApi {
  public:
    K8sClaimApi(k8s::Client& c, Clock::time_point deadline) : client_(c), deadline_(deadline) {}

    Result<engine::PodFacts> pod(const std::string& ns, const std::string& name) override {
        auto pod = client_.get(k8s::objectPath(k8s::kPod, ns, name));
        if (!pod) return pod.error();
        engine::PodFacts facts;
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
        const json::Value* st = obj->find("status");
        read_[ns + "/" + name] = *obj;  // the status write starts from it
        readStatus_[ns + "/" + name] = st ? *st : json::Value::object();
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
            if (w) {
                read_[ns + "/" + name] = std::move(*w);
                return {};
            }
            obj.reset();
            if (w.code() != Errc::Conflict) return w.error();
            if (!retry.wait()) return retry.gaveUp(w.error());
        }
    }

    // On a sibling client, so the node relay forwards it beside the caller's reservation.
    bool startStatus(const std::string& ns, const std::string& name,
                     const core::ClaimStatus& st) override {
        auto it = read_.find(ns + "/" + name);
        if (!client_.relayInUse() || it == read_.end() || pending_.valid()) return false;
        if (!side_) {
            auto c = client_.sibling();
            if (!c) return false;
            side_.emplace(std::move(*c));
        }
        pendingKey_ = it->first;
        try {
            pending_ = std::async(
                std::launch::async,
                [this, path = k8s::objectPath(k8s::kIPAMClaim, ns, name) + "/status",
                 body = k8s::withClaimStatus(it->second, st, std::chrono::system_clock::now())] {
                    return side_->replace(path, body);
                });
        } catch (const std::system_error&) {
            return false;  // no thread to be had: written after the ADD instead
        }
        return true;
    }

    Result<void> awaitStatus() override {
        if (!pending_.valid()) return {};
        auto w = pending_.get();
        if (!w) {
            read_.erase(pendingKey_);  // stale now, or unknown: setStatus reads it again
            return w.error();
        }
        read_[pendingKey_] = std::move(*w);
        return {};
    }

    // One write, from the object this process last wrote (read again when that write's answer
    // was lost): its resourceVersion is the guard.
    Result<void> restoreStatus(const std::string& ns, const std::string& name,
                               const std::vector<std::string>& ips) override {
        const std::string key = ns + "/" + name, path = k8s::objectPath(k8s::kIPAMClaim, ns, name);
        auto was = readStatus_.find(key);
        if (was == readStatus_.end())
            return makeError(Errc::Conflict, "IPAMClaim " + key + ": not read by this call");
        auto it = read_.find(key);
        if (it == read_.end()) {
            auto fresh = client_.get(path);
            if (!fresh) return fresh.error();
            it = read_.insert_or_assign(key, std::move(*fresh)).first;
        }
        auto view = k8s::ipamClaimView(it->second);
        if (!view || view->ips != ips) return {};  // not the status this call wrote
        json::Value body = it->second;
        body.set("status", was->second);
        auto w = client_.replace(path + "/status", body);
        if (!w) return w.error();
        it->second = std::move(*w);
        return {};
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
    std::map<std::string, json::Value> read_;        // the claim as last read or written
    std::map<std::string, json::Value> readStatus_;  // its status as claim() read it
    std::optional<k8s::Client> side_;                // startStatus's connection
    std::future<Result<json::Value>> pending_;
    std::string pendingKey_;
};

}  // namespace

std::unique_ptr<engine::IpamClaimApi> makeK8sClaimApi(k8s::Client& client,
                                                      Clock::time_point deadline) {
    return std::make_unique<K8sClaimApi>(client, deadline);
}

}  // namespace allot::plugin
