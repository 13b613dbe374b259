#include "cluster/scan.h"

#include "cluster/release.h"
#include "core/naming.h"
#include "store/pool_codec.h"

namespace allot::cluster {

using core::Errc;

namespace {

core::Error context(const std::string& what, const core::Error& e) {
    return core::makeError(e.code, what + ": " + e.message);
}

std::optional<std::string> stringMember(const json::Value& v, const char* key) {
    const json::Value* m = v.isObject() ? v.find(key) : nullptr;
    if (m && m->isString()) return m->asString();
    return std::nullopt;
}

bool stopped(const ScanOptions& o) {
    return o.stopped && o.stopped();
}

Result<void> scanPools(Cluster& c, const ScanOptions& o, Scan& s) {
    auto pl = c.pools(o.poolNamespace)
                  .eachPool(
                      [&](store::Pool& p) {
                          ++s.pools;
                          core::PoolEntries entries = poolEntries(p);
                          entries.objectFull = store::cannotGrow(p, o.poolNamespace).value_or("");
                          if (auto use = s.analysis->addPool(entries))
                              s.usage.push_back(
                                  {p.name, p.range, use->size, use->used, p.releasedUnreadable});
                          return !stopped(o);
                      },
                      [&](const std::string& name, const std::string& why) {
                          s.analysis->addUndecodablePool(name, why);
                      });
    s.allocations = s.analysis->allocations();
    if (!pl) return context("list pools", pl.error());
    return {};
}

// Only the pods the allocations name are read (Cluster::eachNamedPod: a list of only their
// namespaces, or the controller's index), so that a scan costs in allocations, not in pods.
Result<void> scanPods(Cluster& c, const ScanOptions& o, Scan& s) {
    auto pr = c.eachNamedPod(s.analysis->wantedPods(), [&](const std::string& ref, PodInfo& p) {
        ++s.podsListed;
        s.pods.insert_or_assign(ref, podState(p, &s.nodes));
        return !stopped(o);
    });
    if (!pr) return pr.error();
    return {};
}

}  // namespace

Result<void> scanNodes(Cluster& c, const ScanOptions& o, core::NodeIndex& nodes) {
    auto nr = c.eachNode([&](const std::string& name, NodeInfo& n) {
        nodes.nodes.emplace(name,
                            core::NodeState{n.ready, n.notReadySince, n.outOfService, n.linux});
        return !stopped(o);
    });
    if (!nr) return context("list nodes", nr.error());
    nodes.listedAt = std::chrono::system_clock::now();
    nodes.grace = o.leakGrace;
    nodes.everListed = o.nodesSeen;
    if (o.nodesSeen)
        for (const auto& [name, n] : nodes.nodes)
            if (o.nodesSeen->size() < 100000) o.nodesSeen->insert(name);
    return {};
}

core::ReservationEntry reservationEntry(store::Reservation& r) {
    return {std::move(r.name),   std::move(r.containerId),     std::move(r.podRef),
            std::move(r.ifName), std::move(r.resourceVersion), r.created};
}

core::PoolEntries poolEntries(const store::Pool& p) {
    core::PoolEntries out{p.name, p.range, &p.allocations, {}, [&p](const core::Owner& o) {
                              return core::networkNamesOf(p.name, p.range, o.node);
                          }};
    for (const auto& [key, u] : p.undecoded)
        out.undecoded.push_back(
            {key, u.reason, stringMember(u.value, "id"), stringMember(u.value, "podref")});
    return out;
}

// Nodes (a pod on a lost one is a leak candidate), reservations, pools a page at a time, then
// the pods those pools name.
Result<void> scan(Cluster& c, const ScanOptions& opts, Scan& out) {
    if (opts.listedNodes)
        out.nodes = *opts.listedNodes;
    else if (auto r = scanNodes(c, opts, out.nodes); !r)
        return r;
    std::vector<core::ReservationEntry> res;
    auto rr = c.pools(opts.poolNamespace).eachReservation([&](store::Reservation& r) {
        res.push_back(reservationEntry(r));
        return !stopped(opts);
    });
    if (!rr) return context("list reservations", rr.error());
    out.reservations = res.size();
    out.analysis.emplace(opts.poolNamespace, std::move(res));
    auto slices = c.nodeSlicePools(opts.poolNamespace);
    if (!slices) return context("list node slice pools", slices.error());
    for (const auto& nsp : *slices)
        for (const auto& a : nsp.allocations)
            if (!a.nodeName.empty()) out.nodes.sliced.insert(a.nodeName);
    out.nodeSlicePools = slices->size();
    out.analysis->setNodeSlices(std::move(*slices), &out.nodes);
    if (auto r = scanPools(c, opts, out); !r) return r;
    if (stopped(opts)) return core::makeError(Errc::Transient, "pass: stopped");
    return scanPods(c, opts, out);
}

core::PodState podState(const PodInfo& pod, const core::NodeIndex* nodes) {
    return {pod.uid,
            pod.mirrorOf,
            pod.terminal(),
            nodes && nodes->gone(pod.nodeName),
            nodes && nodes->notReady(pod.nodeName),
            pod.nodeName};
}

}  // namespace allot::cluster
