// kubectl allot who IP... / pod [NAME]
#include <set>

#include "cli/lookup.h"
#include "cli/output.h"

namespace allot::cli {

namespace {

// One holding with its pod's state and reservation, as documented.
Result<json::Value> describe(Env& env, const Holding& h) {
    auto state = seePod(env.cluster, h.owner);
    if (!state) return state.error();
    auto res = reservationJson(env.cluster, env.ns, h);
    if (!res) return res.error();
    json::Value v = holdingJson(h);
    v.set("held", json::Value::boolean(true));
    v.set("podState", str(state->label));
    v.set("reservation", std::move(*res));
    return v;
}

void whoTable(std::ostream& out, const json::Value& doc, bool wide) {
    Table t{
        {"IP", "POOL", "POD", "STATE", "INTERFACE", "NODE", "CONTAINER", "POD UID", "RESERVATION"},
        {}};
    if (wide) t.header.insert(t.header.end(), {"NETWORK", "OFFSET"});
    for (const auto& r : list(doc, "results")) {
        if (!flag(r, "held")) {
            t.rows.push_back({text(r, "ip"), "(free)", "", "", "", "", "", "", ""});
            continue;
        }
        const json::Value* res = r.find("reservation");
        std::string rs = !flag(*res, "exists")  ? "missing"
                         : flag(*res, "agrees") ? "ok"
                                                : "other holder";
        const std::string ctr = text(r, "containerID");
        t.rows.push_back({text(r, "ip"), text(r, "pool"), text(r, "podRef"), text(r, "podState"),
                          text(r, "interface"), text(r, "node"), wide ? ctr : ctr.substr(0, 12),
                          text(r, "podUID"), rs});
        if (wide)
            t.rows.back().insert(t.rows.back().end(), {text(r, "network"), text(r, "offset")});
    }
    printTable(out, t);
}

bool wide(const Env& env) {
    return env.opts.output == Format::Wide;
}

// The pod the argument names: NAME in the pods' namespace (with -A: "*/NAME", in any), or
// NAMESPACE/NAME (not another than -n's). "" when it is none of these.
std::string podRefOf(const Env& env, const std::string& arg) {
    const auto slash = arg.find('/');
    if (slash == std::string::npos) return (env.opts.allNamespaces ? "*" : env.podNs) + "/" + arg;
    if (slash == 0 || slash + 1 == arg.size() || arg.find('/', slash + 1) != std::string::npos)
        return "";
    if (!env.opts.podNamespace.empty() && arg.substr(0, slash) != env.podNs) return "";
    return arg;
}

// Whether an entry's podRef is one `pattern` names: "ns/name", "*/name", "ns/*" or "*/*".
bool podMatches(const std::string& pattern, const std::string& podRef) {
    const auto p = pattern.find('/'), r = podRef.find('/');
    if (r == std::string::npos) return false;
    const std::string pns = pattern.substr(0, p), pname = pattern.substr(p + 1);
    return (pns == "*" || pns == podRef.substr(0, r)) &&
           (pname == "*" || pname == podRef.substr(r + 1));
}

// pod without a name (or with -A): every matching pod's addresses, one table.
int listPods(Env& env, const std::string& pattern, const std::vector<Holding>& found) {
    json::Value doc = json::Value::object(), addrs = json::Value::array();
    doc.set("namespace", str(env.ns));
    doc.set("pods", str(pattern));
    for (const auto& h : found) {
        auto v = describe(env, h);
        if (!v) return apiError(env, "look up " + h.ip.str(), v.error());
        addrs.push(std::move(*v));
    }
    doc.set("addresses", std::move(addrs));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) {
        json::Value view = json::Value::object();
        view.set("results", *doc.find("addresses"));
        whoTable(o, view, wide(env));
    });
    return found.empty() ? kExitNotFound : kExitOk;
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
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) { whoTable(o, doc, wide(env)); });
    return missing ? kExitNotFound : kExitOk;
}

int runPod(Env& env) {
    const std::string arg = env.opts.args.empty() ? "*" : env.opts.args[0];
    const std::string ref = podRefOf(env, arg);
    if (ref.empty()) {
        env.err << "error: \"" << arg << "\" is not a pod NAME (or NAMESPACE/NAME"
                << (env.opts.podNamespace.empty() ? "" : " in namespace " + env.podNs)
                << "; with -A, a NAME)\n";
        return kExitUsage;
    }
    auto found = findEntries(
        env.cluster, env.ns, [](const core::Cidr&) { return true; },
        [&](const core::IpAddress&, const core::Owner& o) { return podMatches(ref, o.podRef); });
    if (!found) return apiError(env, "list pools of " + env.ns, found.error());
    if (ref.find('*') != std::string::npos) return listPods(env, ref, *found);
    std::optional<cluster::PodInfo> pod;
    auto state = seePod(env.cluster, core::Owner{"", ref, "", "", "", ""}, nullptr, &pod);
    if (!state) return apiError(env, "get pod " + ref, state.error());
    json::Value doc = json::Value::object(), addrs = json::Value::array();
    doc.set("namespace", str(env.ns));
    doc.set("pod", str(ref));
    doc.set("podUID", str(pod ? pod->uid : ""));
    doc.set("podState", str(state->label));
    for (const auto& h : *found) {
        auto v = describe(env, h);
        if (!v) return apiError(env, "look up " + h.ip.str(), v.error());
        addrs.push(std::move(*v));
    }
    doc.set("addresses", std::move(addrs));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) {
        o << "pod " << ref << " (" << state->label << ")\n";
        json::Value view = json::Value::object();
        view.set("results", *doc.find("addresses"));
        whoTable(o, view, wide(env));
    });
    return found->empty() ? kExitNotFound : kExitOk;
}

}  // namespace allot::cli
