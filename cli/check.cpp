// kubectl allot check: allot-gc's repair analysis, once, read-only.
#include <chrono>
#include <cstdio>
#include <map>

#include "cli/lookup.h"
#include "cli/output.h"
#include "cluster/nad.h"
#include "cluster/scan.h"

namespace allot::cli {

namespace {

// One finding with every field of the report, "" (offset: null) where it does not apply.
json::Value finding(const std::string& kind, const std::string& reason, const std::string& ns,
                    const std::string& pool, const std::string& reservation,
                    const std::string& message) {
    json::Value f = json::Value::object();
    f.set("kind", str(kind));
    f.set("reason", str(reason));
    f.set("poolNamespace", str(ns));
    f.set("pool", str(pool));
    f.set("reservation", str(reservation));
    f.set("ip", str(""));
    f.set("offset", json::Value::null());
    for (const char* k : {"podRef", "podUID", "containerID", "interface", "node", "network"})
        f.set(k, str(""));
    f.set("message", str(message));
    return f;
}

void setEntry(json::Value& f, const std::string& ip, const core::u128* offset,
              const core::Owner& o) {
    f.set("ip", str(ip));
    if (offset) f.set("offset", json::Value::numberText(core::u128ToString(*offset)));
    f.set("podRef", str(o.podRef));
    f.set("podUID", str(o.podUid));
    f.set("containerID", str(o.containerId));
    f.set("interface", str(o.ifName));
    f.set("node", str(o.node));
    f.set("network", str(o.network));
}

std::string leakMessage(const core::LeakCandidate& c, const std::string& ns) {
    return "IPPool " + ns + "/" + c.pool + " entry held by " + core::whoHolds(c.owner) + ": " +
           std::string(core::describe(c.reason));
}

void addLeaks(const core::Findings& f, const std::map<std::string, std::string>& ranges,
              const std::string& ns, json::Value& out) {
    for (const auto& c : f.candidates) {
        std::string ip;
        auto r = ranges.find(c.pool);
        if (r != ranges.end())
            if (auto cidr = core::Cidr::parse(r->second)) ip = cidr->at(c.offset).str();
        json::Value v = finding("leaked", std::string(core::name(c.reason)), ns, c.pool, "",
                                leakMessage(c, ns));
        setEntry(v, ip, &c.offset, c.owner);
        out.push(std::move(v));
    }
}

// The anomalies; an entry without its reservation names the entry's holder too.
void addAnomalies(const core::Findings& f, const std::string& ns, json::Value& out) {
    std::map<std::string, const core::MissingReservation*> missing;
    for (const auto& m : f.missing) missing[core::missingKey(m)] = &m;
    for (const auto& a : f.anomalies) {
        json::Value v =
            finding(std::string(core::name(a.kind)), "", ns, a.pool, a.reservation, a.message);
        if (auto m = missing.find(a.key); m != missing.end()) {
            setEntry(v, m->second->ip.str(), nullptr, m->second->owner);
            v.set("reservation", str(m->second->reservation));
        }
        out.push(std::move(v));
    }
}

void addNadFindings(const std::vector<NadConfig>& nads, json::Value& out) {
    for (const auto& nad : nads) {
        auto parsed = cluster::parseNadConfig(nad.config, {"allot", "whereabouts"}, {});
        std::string why = parsed ? "" : parsed.error().message;
        for (const auto& n : parsed ? *parsed : std::vector<cluster::NetworkIpam>{})
            if (n.config.addError) why = n.config.addError->message;  // every ADD fails
        if (why.empty()) continue;
        out.push(finding("bad_nad_config", "", "", "", "",
                         "NetworkAttachmentDefinition " + nad.ns + "/" + nad.name + ": " + why));
    }
}

void checkTable(std::ostream& out, const json::Value& doc, bool wide) {
    Table t{{"KIND", "REASON", "POOL", "IP", "MESSAGE"}, {}};
    if (wide)
        t.header = {"KIND", "REASON",    "POOL",      "IP",      "OFFSET", "POD",
                    "NODE", "CONTAINER", "INTERFACE", "POD UID", "MESSAGE"};
    for (const auto& f : list(doc, "findings")) {
        const std::string pool = text(f, "pool").empty() ? text(f, "reservation") : text(f, "pool");
        if (wide)
            t.rows.push_back({text(f, "kind"), text(f, "reason"), pool, text(f, "ip"),
                              text(f, "offset"), text(f, "podRef"), text(f, "node"),
                              text(f, "containerID"), text(f, "interface"), text(f, "podUID"),
                              text(f, "message")});
        else
            t.rows.push_back(
                {text(f, "kind"), text(f, "reason"), pool, text(f, "ip"), text(f, "message")});
    }
    if (!t.rows.empty()) printTable(out, t);
    out << (t.rows.empty() ? "no anomalies" : std::to_string(t.rows.size()) + " findings")
        << " in namespace " << text(doc, "namespace") << ": " << text(doc, "pools") << " pools, "
        << text(doc, "allocations") << " allocations, " << text(doc, "reservations")
        << " reservations, " << text(doc, "pods") << " pods (" << text(doc, "seconds") << " s)\n";
}

// -n: only the findings about that namespace's pods.
json::Value onlyPodsOf(const std::string& podNs, json::Value findings) {
    json::Value out = json::Value::array();
    for (auto& f : findings.items())
        if (text(f, "podRef").rfind(podNs + "/", 0) == 0) out.push(std::move(f));
    return out;
}

}  // namespace

int runCheck(Env& env) {
    const auto t0 = std::chrono::steady_clock::now();
    cluster::Scan scan;
    cluster::ScanOptions so{env.ns, env.opts.leakGrace, nullptr, {}};
    if (auto r = cluster::scan(env.cluster, so, scan); !r) return apiError(env, "scan", r.error());
    const core::Findings f = scan.analysis->finish(scan.pods);
    auto nads = env.inventory.nads();
    if (!nads) return apiError(env, "list NetworkAttachmentDefinitions", nads.error());

    std::map<std::string, std::string> ranges;
    for (const auto& u : scan.usage) ranges[u.pool] = u.range;
    json::Value findings = json::Value::array();
    addLeaks(f, ranges, env.ns, findings);
    addAnomalies(f, env.ns, findings);
    addNadFindings(*nads, findings);
    if (!env.opts.podNamespace.empty()) findings = onlyPodsOf(env.podNs, std::move(findings));

    std::map<std::string, uint64_t> counts;
    for (const auto& x : findings.items()) ++counts[text(x, "kind")];
    json::Value countJson = json::Value::object();
    for (const auto& [k, n] : counts) countJson.set(k, num(n));
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

    json::Value doc = json::Value::object();
    doc.set("report", str("kubectl-allot check"));  // what release --from-report reads
    doc.set("namespace", str(env.ns));
    doc.set("podNamespace", str(env.opts.podNamespace.empty() ? "" : env.podNs));
    doc.set("pools", num(scan.pools));
    doc.set("allocations", num(scan.allocations));
    doc.set("reservations", num(scan.reservations));
    doc.set("pods", num(scan.podsListed));
    doc.set("nads", num(nads->size()));
    doc.set("seconds", json::Value::numberText(secs));
    doc.set("counts", std::move(countJson));
    const bool any = !findings.items().empty();
    doc.set("findings", std::move(findings));
    emit(env.out, env.opts.output, doc,
         [&](std::ostream& o) { checkTable(o, doc, env.opts.output == Format::Wide); });
    const bool report = env.opts.output == Format::Json || env.opts.output == Format::Yaml;
    return any && !report ? kExitFindings : kExitOk;
}

}  // namespace allot::cli
