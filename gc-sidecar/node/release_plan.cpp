#include "gc-sidecar/node/release_plan.h"

namespace allot::gc {

bool mayFree(const ReleaseItem& it) {
    // A pod re-created under the name (OtherUid) does not take the old one's addresses over
    // (core::mayTakeOver): the old UID's entries go, once proven unused.
    return !it.failure && (it.live == Liveness::Gone || it.live == Liveness::OtherUid);
}

PoolGroups groupByPool(std::span<const ReleaseItem> items, const std::set<PoolKey>& nodePools,
                       const std::vector<ScanFind>& scanned) {
    PoolGroups groups;
    auto join = [&](const std::string& ns, const std::string& pool, const std::string& net,
                    size_t i, bool scan) {
        PoolGroup& g = groups[{ns, pool}];
        if (g.networkName.empty()) g.networkName = net;
        for (const auto& m : g.members)
            if (m.first == i) return;
        g.members.emplace_back(i, scan);
    };
    for (size_t i = 0; i < items.size(); ++i) {
        const ReleaseItem& it = items[i];
        if (!mayFree(it)) continue;
        for (const auto& k : it.pools) join(k.ns, k.pool, k.networkName, i, !it.w.hinted.empty());
        // Pods whose networks are unknown are looked for only in the pools known to hold this
        // node's entries (and, when their annotation names networks that cannot be resolved,
        // wherever a scan found them): a deletion never lists every pool otherwise.
        if (it.scanAll)
            for (const auto& k : nodePools) join(k.ns, k.pool, k.networkName, i, true);
    }
    for (const auto& f : scanned)
        if (f.item < items.size() && items[f.item].scanAll && mayFree(items[f.item]))
            join(f.ns, f.pool, "", f.item, true);
    return groups;
}

SandboxProof::SandboxProof(Probe probe, Runtime runtime, AddCheck addCheck)
    : probe_(std::move(probe)), runtime_(std::move(runtime)), addCheck_(std::move(addCheck)) {}

core::NamespaceAnswer SandboxProof::netns(const core::IpAddress& ip) const {
    std::call_once(probed_, [&] {
        if (!probe_) return;
        if (auto held = probe_()) held_ = std::move(*held);
    });
    if (!held_) return core::NamespaceAnswer::Unknown;
    return held_->count(ip) ? core::NamespaceAnswer::Holds : core::NamespaceAnswer::Absent;
}

core::SandboxEvidence SandboxProof::evidence(const core::Owner& entry,
                                             const core::IpAddress& ip) const {
    core::SandboxEvidence e;
    e.add = addCheck_ ? addCheck_(entry) : core::AddInFlight::No;
    if (e.add != core::AddInFlight::No) return e;  // kept whatever the rest says
    e.runtime = runtime_ ? runtime_(entry.containerId) : core::RuntimeAnswer::NotAsked;
    if (e.runtime == core::RuntimeAnswer::NotReady || e.runtime == core::RuntimeAnswer::NotAsked)
        e.netns = netns(ip);
    return e;
}

PoolPlan planPool(const store::Pool& p, const PoolGroup& group, std::span<const ReleaseItem> items,
                  const SandboxProof& proof, const std::string& node) {
    PoolPlan plan;
    const auto cidr = core::Cidr::parse(p.range);
    // True when the address may still be in use by the pod's sandbox.
    auto mayRun = [&](size_t i, core::u128 off, const core::Owner& owner) {
        if (!cidr) return true;  // a range allot cannot read: nothing is proven
        const core::SandboxFinding f = core::sandboxGone(proof.evidence(owner, cidr->at(off)));
        if (!f.gone) plan.kept.push_back({i, cidr->at(off), std::string(f.why), f.addInFlight});
        return !f.gone;
    };
    for (const auto& [off, owner] : p.allocations) {
        for (const auto& [i, scan] : group.members) {
            if (items[i].failure) continue;
            MatchKind m = matchGone(owner, items[i].gone, node, scan);
            // Under a re-created pod's name, only entries of the old UID are the old pod's.
            if (m == MatchKind::PodRef && items[i].live == Liveness::OtherUid) m = MatchKind::None;
            if (m == MatchKind::None) continue;
            if (mayRun(i, off, owner)) break;
            if (m == MatchKind::Uid) {
                plan.release.push_back(off);
                plan.owners[off] = i;
            } else {
                plan.lookAgain[i].push_back(off);
            }
            break;
        }
    }
    return plan;
}

void settle(PoolPlan& plan, const std::map<size_t, Liveness>& looked) {
    for (auto& [i, offs] : plan.lookAgain) {
        auto l = looked.find(i);
        if (l == looked.end() || l->second != Liveness::Gone) continue;
        for (auto off : offs) {
            plan.release.push_back(off);
            plan.owners[off] = i;
        }
    }
    plan.lookAgain.clear();
}

}  // namespace allot::gc
