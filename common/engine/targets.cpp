#include "engine/targets.h"

#include "core/pool_targets.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;

std::optional<core::IpAddress> gatewayFor(const core::ValidatedConfig& cfg,
                                          const core::IpRange& r) {
    if (cfg.gateway && cfg.gateway->family() == r.family()) return cfg.gateway;
    return std::nullopt;
}

Result<std::vector<Target>> resolveTargets(Context& ctx, const core::ValidatedConfig& cfg,
                                           const std::string& netName, bool fresh) {
    auto sources = core::sliceSources(cfg, netName);
    if (!sources) return sources.error();
    std::vector<std::optional<std::string>> slices(cfg.ranges.size());
    std::vector<std::string> refused(cfg.ranges.size());
    for (const auto& [i, sliceName] : *sources) {
        auto slice = ctx.store.nodeSlice(sliceName, ctx.node, fresh);
        if (!slice) {
            if (slice.code() == Errc::NotFound)
                return makeError(Errc::SliceAwaited, "no node slice allocated yet for node " +
                                                         ctx.node + " in NodeSlicePool " +
                                                         sliceName + " (" + slice.error().message +
                                                         "): allot-gc's leader assigns slices");
            return slice.error();
        }
        slices[i] = slice->slice;
        if (cfg.sliceParts > 1 && !slice->partsRefused.empty())
            refused[i] = "node_slice_parts " + std::to_string(cfg.sliceParts) +
                         " is refused on network " +
                         (cfg.raw.networkName.empty() ? netName : cfg.raw.networkName) +
                         " by allot-gc's slice controller (NodeSlicePool " + ctx.poolNamespace +
                         "/" + sliceName + "): " + slice->partsRefused;
    }
    auto targets = core::poolTargets(cfg, netName, ctx.node, slices);
    if (!targets) return targets.error();
    std::vector<Target> out;
    for (auto& t : *targets)
        out.push_back({std::move(t.range), std::move(t.pool), std::move(t.nodeSlicePool),
                       t.rangeIndex, refused[t.rangeIndex]});
    return out;
}

std::vector<Parts> byRange(const std::vector<Target>& targets) {
    std::vector<Parts> out;
    for (const auto& t : targets) {
        if (out.size() <= t.rangeIndex) out.resize(t.rangeIndex + 1);
        out[t.rangeIndex].push_back(&t);
    }
    return out;
}

}  // namespace allot::engine
