#include "cli/lookup.h"

#include <ostream>

#include "cli/output.h"
#include "cluster/release.h"
#include "core/anomaly.h"
#include "core/naming.h"

namespace allot::cli {

using core::Errc;

Result<std::vector<Holding>> findEntries(
    cluster::Cluster& c, const std::string& ns,
    const std::function<bool(const core::Cidr&)>& poolWanted,
    const std::function<bool(const core::IpAddress&, const core::Owner&)>& want) {
    std::vector<Holding> out;
    auto r = c.pools(ns).eachPool(
        [&](store::Pool& p) {
            auto cidr = core::Cidr::parse(p.range);
            if (!cidr || !poolWanted(*cidr)) return true;
            for (const auto& [off, o] : p.allocations) {
                if (o == core::Owner{} || off > cidr->hostMask()) continue;
                const core::IpAddress ip = cidr->at(off);
                if (!want(ip, o)) continue;
                out.push_back(
                    {p.name, p.range, ip, off, o, core::networkNamesOf(p.name, p.range, o.node)});
            }
            return true;
        },
        [](const std::string&, const std::string&) {});
    if (!r) return r.error();
    return out;
}

Result<PodSeen> seePod(cluster::Cluster& c, const core::Owner& owner, const core::NodeIndex* nodes,
                       std::optional<cluster::PodInfo>* podOut) {
    const auto slash = owner.podRef.find('/');
    if (owner.podRef.empty() || slash == std::string::npos) return PodSeen{std::nullopt, "unknown"};
    auto pod = c.getPod(owner.podRef.substr(0, slash), owner.podRef.substr(slash + 1));
    if (!pod) return pod.error();
    if (podOut) *podOut = *pod;
    if (!*pod) return PodSeen{std::nullopt, "gone"};
    const auto& p = **pod;
    PodSeen seen{cluster::podState(p, nodes), ""};
    if (core::classifyLeak(owner, seen.get()) == core::LeakReason::OtherUid)
        seen.label = "replaced";
    else if (p.terminal())
        seen.label = "terminal";
    else if (p.phase == "Running")
        seen.label = "running";
    else if (p.phase == "Pending")
        seen.label = "pending";
    else
        seen.label = p.phase.empty() ? "unknown" : p.phase;
    return seen;
}

Result<json::Value> reservationJson(cluster::Cluster& c, const std::string& ns, const Holding& h) {
    json::Value out = json::Value::object();
    for (const auto& net : h.networkNames) {
        const std::string name = core::reservationName(h.ip, net);
        auto r = c.pools(ns).getReservation(name);
        if (!r && r.code() == Errc::NotFound) continue;
        if (!r) return r.error();
        out.set("name", str(name));
        out.set("exists", json::Value::boolean(true));
        out.set("agrees", json::Value::boolean(store::reservedFor(*r, h.owner)));
        out.set("podRef", str(r->podRef));
        out.set("containerID", str(r->containerId));
        return out;
    }
    out.set("name",
            str(core::reservationName(h.ip, h.networkNames.empty() ? "" : h.networkNames[0])));
    out.set("exists", json::Value::boolean(false));
    out.set("agrees", json::Value::boolean(false));
    out.set("podRef", str(""));
    out.set("containerID", str(""));
    return out;
}

json::Value holdingJson(const Holding& h) {
    json::Value v = json::Value::object();
    v.set("ip", str(h.ip.str()));
    v.set("pool", str(h.pool));
    v.set("range", str(h.range));
    v.set("offset", json::Value::numberText(core::u128ToString(h.offset)));
    v.set("containerID", str(h.owner.containerId));
    v.set("podRef", str(h.owner.podRef));
    v.set("interface", str(h.owner.ifName));
    v.set("node", str(h.owner.node));
    v.set("podUID", str(h.owner.podUid));
    v.set("network", str(h.owner.network));
    return v;
}

int apiError(Env& env, const std::string& what, const core::Error& e) {
    env.err << "error: " << what << ": " << e.message << "\n";
    return kExitError;
}

}  // namespace allot::cli
