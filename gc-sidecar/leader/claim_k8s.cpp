// ClaimSource over the Kubernetes API (gc-sidecar/claim_gc.h): IPAMClaims and StatefulSets.

#include "cni/network_selection.h"
#include "gc-sidecar/leader/claim_gc.h"
#include "k8s/ipam_claim.h"
#include "k8s/statefulset.h"

namespace allot::gc {

using core::Result;

namespace {

class K8sClaimSource : public ClaimSource {
  public:
    K8sClaimSource(cluster::K8sCluster& c, const ClaimNames* names)
        : client_(c.client()), names_(names) {}

    Result<std::set<std::string>> listClaims() override {
        if (names_) {
            auto watched = names_->names();
            // Not served when the watch last asked (it asks again every few minutes): a CRD
            // installed since is read here, by a list per pass, until the watch has it.
            if (watched || watched.code() != core::Errc::NotFound) return watched;
        }
        auto listed = list();
        if (listed && names_) names_->servedAfterAll();
        return listed;
    }

    Result<std::set<std::string>> list() {
        std::set<std::string> out;
        k8s::ListOptions opts;
        opts.limit = 500;
        auto r = client_.listEach(k8s::collectionPath(k8s::kIPAMClaim, ""), opts,
                                  [&](json::Value& item) {
                                      const json::Value* m = item.find("metadata");
                                      if (!m || !m->isObject()) return true;
                                      const json::Value* ns = m->find("namespace");
                                      const json::Value* name = m->find("name");
                                      if (ns && name && ns->isString() && name->isString())
                                          out.insert(ns->asString() + "/" + name->asString());
                                      return true;
                                  });
        if (!r) return r.error();
        return out;
    }

    Result<bool> exists(const std::string& ns, const std::string& name) override {
        auto r = client_.get(k8s::objectPath(k8s::kIPAMClaim, ns, name));
        if (r) return true;
        if (r.code() == core::Errc::NotFound) return false;
        return r.error();
    }

    Result<std::optional<core::StatefulSetView>> statefulSet(const std::string& ns,
                                                             const std::string& name) override {
        auto r = client_.get(k8s::objectPath(k8s::kStatefulSet, ns, name));
        if (!r && r.code() == core::Errc::NotFound) return std::optional<core::StatefulSetView>();
        if (!r) return r.error();
        auto v = k8s::statefulSetView(*r);
        if (!v) return v.error();
        return std::optional<core::StatefulSetView>(std::move(*v));
    }

    Result<bool> referencedByLivePod(const std::string& ns, const std::string& claim) override {
        k8s::ListOptions opts;
        opts.limit = 500;
        opts.fieldSelector = "status.phase!=Succeeded,status.phase!=Failed";
        bool found = false;
        auto r = client_.listEach(k8s::collectionPath(k8s::kPod, ns), opts, [&](json::Value& pod) {
            found = referencesClaim(pod, claim);
            return !found;
        });
        if (!r) return r.error();
        return found;
    }

  private:
    // The pod's networks annotation names `claim` in one of its elements, where the plugin
    // reads it (cni::claimReference: cni-args first). An annotation that cannot be read names
    // none (Multus could not have started the pod on it either).
    static bool referencesClaim(const json::Value& pod, const std::string& claim) {
        const json::Value* md = pod.find("metadata");
        const json::Value* ann = md && md->isObject() ? md->find("annotations") : nullptr;
        const json::Value* v =
            ann && ann->isObject() ? ann->find(cni::kNetworksAnnotation) : nullptr;
        if (!v || !v->isString()) return false;
        auto elements = cni::selections(v->asString());
        if (!elements) return false;
        for (const auto& e : *elements)
            if (cni::claimReference(e) == claim) return true;
        return false;
    }

    k8s::Client& client_;
    const ClaimNames* names_;
};

}  // namespace

std::unique_ptr<ClaimSource> makeK8sClaimSource(cluster::K8sCluster& cluster,
                                                const ClaimNames* names) {
    return std::make_unique<K8sClaimSource>(cluster, names);
}

void ClaimNames::beginList() {
    std::lock_guard l(mu_);
    state_ = State::Listing;
    names_.clear();
}

bool ClaimNames::set(const Key& key, Claim) {
    std::lock_guard l(mu_);
    names_.insert(key.first + "/" + key.second);
    return false;  // a claim that exists frees nothing
}

bool ClaimNames::erase(const Key& key) {
    std::lock_guard l(mu_);
    return names_.erase(key.first + "/" + key.second) != 0;
}

void ClaimNames::listed() {
    std::lock_guard l(mu_);
    state_ = State::Listed;
}

void ClaimNames::lost() {
    std::lock_guard l(mu_);
    state_ = State::Unlisted;
    names_.clear();
}

void ClaimNames::notServed() {
    std::lock_guard l(mu_);
    state_ = State::NotServed;
    names_.clear();
}

void ClaimNames::servedAfterAll() const {
    if (onServed_) onServed_();
}

Result<std::set<std::string>> ClaimNames::names() const {
    std::lock_guard l(mu_);
    switch (state_) {
        case State::Listed:
            return names_;
        case State::NotServed:
            return core::makeError(core::Errc::NotFound,
                                   "the cluster does not serve IPAMClaims (k8s.cni.cncf.io)");
        default:
            return core::makeError(core::Errc::Transient,
                                   "IPAMClaims are not listed yet (their watch is starting)");
    }
}

}  // namespace allot::gc
