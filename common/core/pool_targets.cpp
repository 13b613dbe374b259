#include "core/pool_targets.h"

#include "core/naming.h"
#include "core/node_slices.h"

namespace allot::core {

Result<std::vector<SliceSource>> sliceSources(const ValidatedConfig& cfg,
                                              const std::string& netName) {
    std::vector<SliceSource> out;
    if (!cfg.sliceSize) return out;
    const std::string net = cfg.raw.networkName.empty() ? netName : cfg.raw.networkName;
    if (net.empty())
        return makeError(Errc::InvalidConfig,
                         "node_slice_size needs \"network_name\" or a network \"name\"");
    // Each range of a dual-stack network has its own NodeSlicePool (core/node_slices.h).
    for (size_t i = 0; i < cfg.ranges.size(); ++i)
        out.push_back({i, nodeSlicePoolName(net, i, cfg.ranges[i].cidr())});
    return out;
}

namespace {

// The node's slice of `range` from NodeSlicePool `source`, checked.
Result<IpRange> sliceOf(const IpRange& range, const std::string& source, const std::string& node,
                        const std::string& slice) {
    auto sr = IpRange::fromSpec({slice, "", "", {}}, "NodeSlicePool " + source + " slice");
    if (!sr) return makeError(Errc::Invalid, sr.error().message);
    if (!range.cidr().contains(sr->cidr().network()))
        return makeError(Errc::Invalid, "NodeSlicePool " + source + " gives node " + node +
                                            " slice " + slice + " outside " + range.cidr().str());
    return sr;
}

}  // namespace

Result<std::vector<PoolTarget>> poolTargets(const ValidatedConfig& cfg, const std::string& netName,
                                            const std::string& node,
                                            const std::vector<std::optional<std::string>>& slices) {
    std::vector<PoolTarget> out;
    auto sources = sliceSources(cfg, netName);
    if (!sources) return sources.error();
    if (sources->empty()) {
        for (size_t i = 0; i < cfg.ranges.size(); ++i)
            out.push_back(
                {cfg.ranges[i], poolName(cfg.ranges[i].cidr(), cfg.raw.networkName, ""), "", i});
        return out;
    }
    for (const auto& [i, source] : *sources) {
        if (i >= slices.size() || !slices[i]) continue;
        auto sr = sliceOf(cfg.ranges[i], source, node, *slices[i]);
        if (!sr) return sr.error();
        const std::string pool = poolName(sr->cidr(), cfg.raw.networkName, node);
        if (cfg.sliceParts == 1) {
            out.push_back({*sr, pool, source, i});
            continue;
        }
        for (int k = 0; k < cfg.sliceParts; ++k) {
            auto part = slicePartRange(sr->cidr(), cfg.sliceParts, k);
            if (!part) return makeError(Errc::Invalid, part.error().message);
            out.push_back({*part, slicePartPoolName(pool, k), source, i});
        }
    }
    return out;
}

}  // namespace allot::core
