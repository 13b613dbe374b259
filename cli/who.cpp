// kubectl allot who IP... / pod NAMESPACE/NAME
#include <set>

#include "cli/lookup.h"
#include "cli/output.h"

namespace allot::cli {

namespace {

// One holding with its pod's state and reservation, as documented.
Result<json::Value> describe(Env& env, const Holding& h) {
    auto state = podState(env.cluster, h.owner);
    if (!state) return state.error();
    auto res = reservationJson(env.cluster, env.ns, h);
    if (!res) return res.error();
    json::Value v = holdingJson(h);
    v.set("held", json::Value::boolean(true));
    v.set("podState", str(*state));
    v.set("reservation", std::move(*res));
    return v;
}

void whoTable(std::ostream& out, const json::Value& doc) {
    Table t{
        {"IP", "POOL", "POD", "STATE", "INTERFACE", "NODE", "CONTAINER", "POD UID", "RESERVATION"},
        {}};
    for (const auto& r : list(doc, "results")) {
        if (!flag(r, "held")) {
            t.rows.push_back({text(r, "ip"), "(free)", "", "", "", "", "", "", ""});
            continue;
        }
        const json::Value* res = r.find("reservation");
        std::string rs = !flag(*res, "exists")  ? "missing"
                         : flag(*res, "agrees") ? "ok"
                                                : "other holder";
        t.rows.push_back({text(r, "ip"), text(r, "pool"), text(r, "podRef"), text(r, "podState"),
                          text(r, "interface"), text(r, "node"),
                          text(r, "containerID").substr(0, 12), text(r, "podUID"), rs});
    }
    printTable(out, t);
}

}  // namespace

int runWho(Env& env) {
    std::vector<core::IpAddress> ips;
    for (const auto& a : env.opts.args) {
        auto ip = core::IpAddress::parse(a);
        if (!ip) {
            env.err << "error: \"" << a << "\" is not an IP address\n";
            return kExitUsage;
        }
        ips.push_back(*ip);
    }
    const std::set<core::IpAddress> wanted(ips.begin(), ips.end());
    auto found = findEntries(
        env.cluster, env.ns,
        [&](const core::Cidr& c) {
            for (const auto& ip : wanted)
                if (c.contains(ip)) return true;
            return false;
        },
        [&](const core::IpAddress& ip, const core::Owner&) { return wanted.count(ip) != 0; });
    if (!found) return apiError(env, "list pools of " + env.ns, found.error());
    json::Value doc = json::Value::object(), results = json::Value::array();
    doc.set("namespace", str(env.ns));
    bool missing = false;
    for (const auto& ip : ips) {
        bool held = false;
        for (const auto& h : *found) {
            if (!(h.ip == ip)) continue;
            auto v = describe(env, h);
            if (!v) return apiError(env, "look up " + ip.str(), v.error());
            results.push(std::move(*v));
            held = true;
        }
        if (held) continue;
        missing = true;
        json::Value v = json::Value::object();
        v.set("ip", str(ip.str()));
        v.set("held", json::Value::boolean(false));
        results.push(std::move(v));
    }
    doc.set("results", std::move(results));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) { whoTable(o, doc); });
    return missing ? kExitNotFound : kExitOk;
}

int runPod(Env& env) {
    const std::string& ref = env.opts.args[0];
    const auto slash = ref.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == ref.size() ||
        ref.find('/', slash + 1) != std::string::npos) {
        env.err << "error: \"" << ref << "\" is not NAMESPACE/NAME\n";
        return kExitUsage;
    }
    auto found = findEntries(
        env.cluster, env.ns, [](const core::Cidr&) { return true; },
        [&](const core::IpAddress&, const core::Owner& o) { return o.podRef == ref; });
    if (!found) return apiError(env, "list pools of " + env.ns, found.error());
    std::optional<cluster::PodInfo> pod;
    auto state = podState(env.cluster, core::Owner{"", ref, "", "", "", ""}, &pod);
    if (!state) return apiError(env, "get pod " + ref, state.error());
    json::Value doc = json::Value::object(), addrs = json::Value::array();
    doc.set("namespace", str(env.ns));
    doc.set("pod", str(ref));
    doc.set("podUID", str(pod ? pod->uid : ""));
    doc.set("podState", str(*state));
    for (const auto& h : *found) {
        auto v = describe(env, h);
        if (!v) return apiError(env, "look up " + h.ip.str(), v.error());
        addrs.push(std::move(*v));
    }
    doc.set("addresses", std::move(addrs));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) {
        o << "pod " << ref << " (" << *state << ")\n";
        json::Value view = json::Value::object();
        view.set("results", *doc.find("addresses"));
        whoTable(o, view);
    });
    return found->empty() ? kExitNotFound : kExitOk;
}

}  // namespace allot::cli
