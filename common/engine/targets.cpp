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

namespace {

std::string partsRefusedWhy(const core::ValidatedConfig& cfg, const std::string& netName,
                            const std::string& poolNamespace, const std::string& sliceName,
                            const std::string& why) {
    return "node_slice_parts " + std::to_string(cfg.sliceParts) + " is refused on network " +
           (cfg.raw.networkName.empty() ? netName : cfg.raw.networkName) +
           " by allot-gc's slice controller (NodeSlicePool " + poolNamespace + "/" + sliceName +
           "): " + why;
}

}  // namespace

Result<std::vector<Target>> resolveTargets(store::PoolStore& store,
                                           const core::ValidatedConfig& cfg,
                                           const std::string& netName, const std::string& node,
                                           const std::string& poolNamespace, bool fresh,
                                           MissingSlice missing) {
    auto sources = core::sliceSources(cfg, netName);
    if (!sources) return sources.error();
    std::vector<std::optional<std::string>> slices(cfg.ranges.size());
    std::vector<std::string> refused(cfg.ranges.size());
    for (const auto& [i, sliceName] : *sources) {
        auto slice = store.nodeSlice(sliceName, node, fresh);
        if (!slice && slice.code() == Errc::NotFound && missing == MissingSlice::Skip) continue;
        if (!slice && slice.code() == Errc::NotFound)
            return makeError(Errc::SliceAwaited, "no node slice allocated yet for node " + node +
                                                     " in NodeSlicePool " + sliceName + " (" +
                                                     slice.error().message +
                                                     "): allot-gc's leader assigns slices");
        if (!slice) return slice.error();
        slices[i] = slice->slice;
        if (cfg.sliceParts > 1 && !slice->partsRefused.empty())
            refused[i] =
                partsRefusedWhy(cfg, netName, poolNamespace, sliceName, slice->partsRefused);
    }
    auto targets = core::poolTargets(cfg, netName, node, slices);
    if (!targets) return targets.error();
    std::vector<Target> out;
    for (auto& t : *targets)
        out.push_back({std::move(t.range), std::move(t.pool), std::move(t.nodeSlicePool),
                       t.rangeIndex, refused[t.rangeIndex]});
    return out;
}

Result<std::vector<Target>> resolveTargets(Context& ctx, const core::ValidatedConfig& cfg,
                                           const std::string& netName, bool fresh) {
    return resolveTargets(ctx.store, cfg, netName, ctx.node, ctx.poolNamespace, fresh,
                          MissingSlice::Await);
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
