#include "gc-sidecar/relay/claim_copy.h"

namespace allot::gc {

std::optional<std::string> ClaimCopy::keep(const json::Value& claim) const {
    json::Value out = json::Value::object();
    for (const char* k : {"apiVersion", "kind", "spec", "status"})
        if (const json::Value* v = claim.find(k)) out.set(k, *v);
    json::Value md = json::Value::object();
    if (const json::Value* from = claim.find("metadata"); from && from->isObject())
        for (const char* k : {"name", "namespace", "uid", "resourceVersion"})
            if (const json::Value* v = from->find(k)) md.set(k, *v);
    out.set("metadata", std::move(md));
    return out.dump();
}

std::optional<k8s::RelayResponse> ClaimCopy::answer(const k8s::RelayRequest& r) const {
    using Kind = k8s::RelayResponse::Kind;
    auto q = k8s::parseRelayClaimPath(r.path);
    if (!q || r.method != "GET") return std::nullopt;
    auto found = lookup(q->ns, q->name);
    if (!found.synced)
        return k8s::RelayResponse{Kind::Refused, 0, -1, "the IPAMClaim watch is not synced"};
    if (!found.kept)
        return k8s::RelayResponse{Kind::Refused, 0, -1,
                                  "no copy of IPAMClaim " + q->ns + "/" + q->name};
    return k8s::RelayResponse{Kind::Answered, 200, -1, std::move(*found.kept)};
}

}  // namespace allot::gc
