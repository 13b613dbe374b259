#pragma once
// The node relay's copy of the IPAMClaims (k8s::relayClaimPath), kept by an ObjectWatch, so
// that an ADD with a claim (engine/owned_add.h) reads it without an API round trip. Each claim is
// kept without managedFields, labels or annotations: what the plugin reads (spec, status) and
// what its status write needs (name, namespace, uid, resourceVersion). A claim the copy does
// not have (not synced, not seen yet, the resource not served) is Refused: the plugin then
// GETs it from the API server, so a claim created a moment before its pod is still found.

#include <optional>
#include <string>

#include "gc-sidecar/relay/object_watch.h"
#include "json/json.h"
#include "k8s/relay.h"

namespace allot::gc {

class ClaimCopy : public KeyedCopy {
  public:
    // The relay's answer to a local question (k8s::relayLocal), nullopt for one it does not
    // handle: the claim's object (200), or Refused when the copy does not have it.
    std::optional<k8s::RelayResponse> answer(const k8s::RelayRequest& r) const;

  protected:
    std::optional<std::string> keep(const json::Value& claim) const override;
};

}  // namespace allot::gc
