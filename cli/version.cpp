// kubectl allot version: this client's build, and the build of each node's allot-gc as the
// node's report says (the Lease allot-node-<node> every allot-gc rewrites at each node sweep),
// so no node's port needs to be reachable from here.
#include "version/version.h"

#include <map>

#include "cli/output.h"
#include "k8s_api/timestamp.h"

namespace allot::cli {

namespace {

json::Value buildJson(std::string_view version, std::string_view revision) {
    json::Value v = json::Value::object();
    v.set("version", str(std::string(version)));
    v.set("revision", str(std::string(revision)));
    return v;
}

// One row per node report (a Node gone since keeps its last one), then one per Node without a
// report: no allot-gc runs there, or one with --node-sweep-interval=0, which reports nothing.
Result<json::Value> nodesJson(cluster::Cluster& c, const std::string& leaseNs) {
    auto reports = c.nodeReports(leaseNs);
    if (!reports) return reports.error();
    std::map<std::string, json::Value> rows;
    for (const auto& r : *reports) {
        json::Value v = buildJson(r.version, r.revision);
        v.set("node", str(r.node));
        v.set("reported", json::Value::boolean(true));
        v.set("reportedAt", str(k8s::formatTime(r.at)));
        rows.insert_or_assign(r.node, std::move(v));
    }
    auto nodes = c.eachNode([&](const std::string& name, cluster::NodeInfo&) {
        if (rows.count(name)) return true;
        json::Value v = buildJson("", "");
        v.set("node", str(name));
        v.set("reported", json::Value::boolean(false));
        v.set("reportedAt", str(""));
        rows.emplace(name, std::move(v));
        return true;
    });
    if (!nodes) return nodes.error();
    json::Value out = json::Value::array();
    for (auto& [name, v] : rows) out.push(std::move(v));
    return out;
}

// "42s", "5m", "3h", "2d" before now, as kubectl's AGE column.
std::string age(const std::string& at) {
    auto t = k8s::parseTime(at);
    if (!t) return "";
    using namespace std::chrono;
    const auto s = std::max<int64_t>(0, duration_cast<seconds>(system_clock::now() - *t).count());
    if (s < 120) return std::to_string(s) + "s";
    if (s < 2 * 3600) return std::to_string(s / 60) + "m";
    if (s < 2 * 86400) return std::to_string(s / 3600) + "h";
    return std::to_string(s / 86400) + "d";
}

void versionTable(std::ostream& out, const json::Value& doc, bool wide) {
    out << versionLine("kubectl-allot") << "\n";  // the document's client
    if (!doc.find("nodes")) return;
    Table t{{"NODE", "ALLOT-GC", "REVISION", "REPORTED"}, {}};
    if (wide) t.header.push_back("REPORTED AT");
    for (const auto& n : list(doc, "nodes")) {
        if (!flag(n, "reported")) {
            t.rows.push_back({text(n, "node"), "", "", "no report"});
            continue;
        }
        // A report without a version: an allot-gc from before reports carried one.
        const std::string v = text(n, "version").empty() ? "unknown" : text(n, "version");
        t.rows.push_back({text(n, "node"), v, text(n, "revision"), age(text(n, "reportedAt"))});
        if (wide) t.rows.back().push_back(text(n, "reportedAt"));
    }
    out << "\n";
    printTable(out, t);
}

}  // namespace

int runVersion(Env* env, const Options& opts, std::ostream& out, std::ostream& err) {
    json::Value doc = json::Value::object();
    doc.set("client", buildJson(version(), revision()));
    auto print = [&] {
        emit(out, opts.output, doc,
             [&](std::ostream& o) { versionTable(o, doc, opts.output == Format::Wide); });
    };
    if (!env || opts.client) {
        print();
        return kExitOk;
    }
    auto nodes = nodesJson(env->cluster, opts.leaseNamespace);
    if (!nodes) {
        print();  // the client's build, known without the cluster
        err << "error: read the node reports (Leases in " << opts.leaseNamespace
            << ") and Nodes: " << nodes.error().message << "\n";
        return kExitError;
    }
    doc.set("leaseNamespace", str(opts.leaseNamespace));
    doc.set("nodes", std::move(*nodes));
    print();
    return kExitOk;
}

}  // namespace allot::cli
