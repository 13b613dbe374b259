#pragma once
// The node relay's copy of this node's slices (k8s::relayNodeSlicePath): allot-gc lists and
// watches the NodeSlicePools and keeps the slice each gives its node, so that an ADD in slice
// mode reads no NodeSlicePool while the copy is current. The copy may lag the API server by a
// watch event; a plugin acting on a stale slice still cannot claim in a pool whose slice was
// taken from its node (the slice controller seals it first: engine::TxTarget::unseal). Only
// NodeSlicePools allot-gc's controller manages are kept: another controller (Whereabouts')
// seals nothing, so for its objects the plugin reads the NodeSlicePool on every ADD; so it
// does for one refusing node_slice_parts (store::kPartsRefusedAnnotation), whose refusal it
// reads with the object. Until
// the first list, and from a failed watch until the next list, the copy answers nothing and the
// plugin reads the NodeSlicePool itself.

#include <optional>
#include <string>
#include <utility>

#include "gc-sidecar/relay/object_watch.h"
#include "json/json.h"
#include "k8s/client.h"
#include "k8s/relay.h"

namespace allot::gc {

class NodeSliceCopy : public KeyedCopy {
  public:
    explicit NodeSliceCopy(std::string node) : node_(std::move(node)) {}

    // The relay's answer to a local question (k8s::relayLocal), nullopt for one it does not
    // handle: this node's slice in NodeSlicePool ns/name (200, the CIDR), none (404), or
    // Refused while not synced or for another node.
    std::optional<k8s::RelayResponse> answer(const k8s::RelayRequest& r) const;

  protected:
    // This node's slice (its CIDR) in a NodeSlicePool allot-gc's controller manages.
    std::optional<std::string> keep(const json::Value& nodeSlicePool) const override;

  private:
    std::string node_;
};

}  // namespace allot::gc
