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
    explicit K8sClaimSource(cluster::K8sCluster& c) : client_(c.client()) {}

    Result<std::set<std::string>> listClaims() override {
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
};

}  // namespace

std::unique_ptr<ClaimSource> makeK8sClaimSource(cluster::K8sCluster& cluster) {
    return std::make_unique<K8sClaimSource>(cluster);
}

}  // namespace allot::gc
