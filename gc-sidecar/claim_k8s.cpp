// ClaimSource over the Kubernetes API (gc-sidecar/claim_gc.h): IPAMClaims and StatefulSets.

#include "gc-sidecar/claim_gc.h"
#include "k8s/ipam_claim.h"
#include "k8s/statefulset.h"

namespace allot::gc {

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

  private:
    k8s::Client& client_;
};

}  // namespace

std::unique_ptr<ClaimSource> makeK8sClaimSource(cluster::K8sCluster& cluster) {
    return std::make_unique<K8sClaimSource>(cluster);
}

}  // namespace allot::gc
