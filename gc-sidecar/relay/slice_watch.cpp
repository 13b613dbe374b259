#include "gc-sidecar/relay/slice_watch.h"

#include <vector>

#include "store/node_slice_codec.h"

namespace allot::gc {

std::optional<std::string> NodeSliceCopy::keep(const json::Value& nodeSlicePool) const {
    // Only the slices allot-gc's slice controller manages: it seals before a slice moves.
    auto p = store::decodeNodeSlicePool(nodeSlicePool);
    if (!p.managed) return std::nullopt;
    // The plugin reads a NodeSlicePool refusing node_slice_parts itself, and so sees why.
    if (!p.partsRefused.empty()) return std::nullopt;
    return store::nodeSliceOf(p, node_);
}

std::optional<k8s::RelayResponse> NodeSliceCopy::answer(const k8s::RelayRequest& r) const {
    using Kind = k8s::RelayResponse::Kind;
    auto q = k8s::parseRelayNodeSlicePath(r.path);
    if (!q || r.method != "GET") return std::nullopt;
    if (q->node != node_)
        return k8s::RelayResponse{Kind::Refused, 0, -1, "this relay keeps the slices of " + node_};
    auto found = lookup(q->ns, q->name);
    if (!found.synced)
        return k8s::RelayResponse{Kind::Refused, 0, -1, "the NodeSlicePool watch is not synced"};
    if (!found.kept) return k8s::RelayResponse{Kind::Answered, 404, -1, ""};
    return k8s::RelayResponse{Kind::Answered, 200, -1, std::move(*found.kept)};
}

}  // namespace allot::gc
