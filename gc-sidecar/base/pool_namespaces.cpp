#include "gc-sidecar/base/pool_namespaces.h"

#include "cluster/nad.h"

namespace allot::gc {

using cluster::parseNadConfig;

using cluster::NadInfo;

using cluster::Cluster;

using core::Result;

PoolNamespaces::PoolNamespaces(std::string defaultNamespace, std::vector<std::string> ipamTypes,
                               std::vector<std::string> flatFiles)
    : default_(std::move(defaultNamespace)),
      ipamTypes_(std::move(ipamTypes)),
      flatFiles_(std::move(flatFiles)) {}

void PoolNamespaces::learn(const std::string& ns) {
    if (ns.empty() || ns == default_) return;
    std::lock_guard l(m_);
    if (learned_.size() < kMaxPoolNamespaces) learned_.insert(ns);
}

Result<void> PoolNamespaces::refresh(Cluster& c) {
    std::vector<std::string> named;
    auto r = c.eachNad([&](NadInfo& n) {
        if (n.config.empty()) return true;
        auto nets = parseNadConfig(n.config, ipamTypes_, flatFiles_);
        if (!nets) return true;  // reported where the NAD is used (release, slices, check)
        for (const auto& net : *nets) named.push_back(net.config.raw.poolNamespace);
        return true;
    });
    for (const auto& ns : named) learn(ns);
    if (!r && r.code() != core::Errc::NotFound) return r.error();
    return {};
}

std::set<std::string> PoolNamespaces::all() const {
    std::lock_guard l(m_);
    std::set<std::string> out = learned_;
    out.insert(default_);
    return out;
}

}  // namespace allot::gc
