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

json::Value finding(const std::string& kind, const std::string& reason, const std::string& pool,
                    const std::string& reservation, const std::string& ip,
                    const std::string& message) {
    json::Value f = json::Value::object();
    f.set("kind", str(kind));
    f.set("reason", str(reason));
    f.set("pool", str(pool));
    f.set("reservation", str(reservation));
    f.set("ip", str(ip));
    f.set("message", str(message));
    return f;
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
        out.push(finding("leaked", std::string(core::name(c.reason)), c.pool, "", ip,
                         leakMessage(c, ns)));
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

void checkTable(std::ostream& out, const json::Value& doc) {
    Table t{{"KIND", "REASON", "POOL", "IP", "MESSAGE"}, {}};
    for (const auto& f : list(doc, "findings"))
        t.rows.push_back({text(f, "kind"), text(f, "reason"),
                          text(f, "pool").empty() ? text(f, "reservation") : text(f, "pool"),
                          text(f, "ip"), text(f, "message")});
    if (!t.rows.empty()) printTable(out, t);
    out << (t.rows.empty() ? "no anomalies" : std::to_string(t.rows.size()) + " findings")
        << " in namespace " << text(doc, "namespace") << ": " << text(doc, "pools") << " pools, "
        << text(doc, "allocations") << " allocations, " << text(doc, "reservations")
        << " reservations, " << text(doc, "pods") << " pods (" << text(doc, "seconds") << " s)\n";
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
    for (const auto& a : f.anomalies)
        findings.push(
            finding(std::string(core::name(a.kind)), "", a.pool, a.reservation, "", a.message));
    addNadFindings(*nads, findings);

    std::map<std::string, uint64_t> counts;
    for (const auto& x : findings.items()) ++counts[text(x, "kind")];
    json::Value countJson = json::Value::object();
    for (const auto& [k, n] : counts) countJson.set(k, num(n));
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

    json::Value doc = json::Value::object();
    doc.set("namespace", str(env.ns));
    doc.set("pools", num(scan.pools));
    doc.set("allocations", num(scan.allocations));
    doc.set("reservations", num(scan.reservations));
    doc.set("pods", num(scan.podsListed));
    doc.set("nads", num(nads->size()));
    doc.set("seconds", json::Value::numberText(secs));
    doc.set("counts", std::move(countJson));
    const bool any = !findings.items().empty();
    doc.set("findings", std::move(findings));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) { checkTable(o, doc); });
    return any ? kExitFindings : kExitOk;
}

}  // namespace allot::cli
