// kubectl allot lint FILE|-: the plugin's own parser over NAD manifests or CNI configs.
#include <map>

#include "cli/lookup.h"
#include "cli/output.h"
#include "cluster/nad.h"
#include "core/pool_targets.h"
#include "k8s/kubeconfig.h"

namespace allot::cli {

namespace {

struct ExistingPool {
    std::string name;
    core::Cidr cidr;
};

struct Linter {
    Env* env;
    std::string defaultNs;
    std::map<std::string, std::vector<ExistingPool>> poolsByNs;  // read once per namespace
    size_t errors = 0, warnings = 0;

    void problem(json::Value& problems, const std::string& severity, const std::string& msg) {
        json::Value p = json::Value::object();
        p.set("severity", str(severity));
        p.set("message", str(msg));
        problems.push(std::move(p));
        ++(severity == "error" ? errors : warnings);
    }

    const std::vector<ExistingPool>* existing(const std::string& ns, std::string& failure) {
        auto it = poolsByNs.find(ns);
        if (it != poolsByNs.end()) return &it->second;
        std::vector<ExistingPool> out;
        auto r = env->cluster.pools(ns).eachPool(
            [&](store::Pool& p) {
                if (auto c = core::Cidr::parse(p.range)) out.push_back({p.name, *c});
                return true;
            },
            [](const std::string&, const std::string&) {});
        if (!r) {
            failure = r.error().message;
            return nullptr;
        }
        return &(poolsByNs[ns] = std::move(out));
    }

    json::Value rangeJson(const cluster::NetworkIpam& n, size_t index, json::Value& problems);
    json::Value lintConfig(const std::string& config);
};

// Range `index` of the network: its pool (plain mode), and what it overlaps.
json::Value Linter::rangeJson(const cluster::NetworkIpam& n, size_t index, json::Value& problems) {
    const auto& cfg = n.config;
    const core::IpRange& r = cfg.ranges[index];
    const std::string ns = cfg.raw.poolNamespace.empty() ? defaultNs : cfg.raw.poolNamespace;
    // The range's own pool; for a sliced network, the one it would have without slices.
    core::ValidatedConfig plain = cfg;
    plain.sliceSize.reset();
    auto targets = core::poolTargets(plain, n.networkName, "", {});
    const std::string pool = targets ? (*targets)[index].pool : "";
    json::Value v = json::Value::object(), overlaps = json::Value::array();
    v.set("range", str(r.cidr().str()));
    v.set("namespace", str(ns));
    v.set("pool", str(cfg.sliceSize ? "" : pool));
    v.set("nodeSlice", json::Value::boolean(bool(cfg.sliceSize)));
    std::string failure;
    const auto* pools = env ? existing(ns, failure) : nullptr;
    if (env && !pools)
        problem(problems, "warning", "overlaps not checked: pools of " + ns + ": " + failure);
    for (const auto& p : pools ? *pools : std::vector<ExistingPool>{}) {
        if (p.name == pool && !(p.cidr == r.cidr()))
            problem(problems, "error",
                    "IPPool " + ns + "/" + pool + " exists with range " + p.cidr.str() + ", not " +
                        r.cidr().str());
        if (p.name == pool || !p.cidr.overlaps(r.cidr())) continue;
        json::Value o = json::Value::object();
        o.set("pool", str(p.name));
        o.set("range", str(p.cidr.str()));
        overlaps.push(std::move(o));
    }
    v.set("overlaps", std::move(overlaps));
    return v;
}

json::Value Linter::lintConfig(const std::string& config) {
    json::Value out = json::Value::object(), networks = json::Value::array(),
                problems = json::Value::array();
    const size_t errorsBefore = errors;
    std::vector<core::Error> found;
    auto nets = cluster::parseNadConfig(config, {"allot", "whereabouts"}, {}, &found);
    for (const auto& e : found) problem(problems, "error", e.message);
    if (!nets) {
        problem(problems, "error", nets.error().message);
    } else if (nets->empty()) {
        problem(problems, "error", "no plugin with an \"ipam\" of type allot or whereabouts");
    }
    for (const auto& n : nets ? *nets : std::vector<cluster::NetworkIpam>{}) {
        // Accepted for DEL, but every ADD fails with it (an unreadable exclude).
        if (n.config.addError) problem(problems, "error", n.config.addError->message);
        json::Value nv = json::Value::object(), ranges = json::Value::array();
        nv.set("name", str(n.networkName));
        nv.set("networkName", str(n.config.raw.networkName));
        for (const auto& w : n.config.warnings) problem(problems, "warning", w);
        for (size_t i = 0; i < n.config.ranges.size(); ++i) ranges.push(rangeJson(n, i, problems));
        nv.set("ranges", std::move(ranges));
        networks.push(std::move(nv));
    }
    out.set("valid", json::Value::boolean(errors == errorsBefore && nets.ok() && !nets->empty()));
    out.set("networks", std::move(networks));
    out.set("problems", std::move(problems));
    return out;
}

// The config text of one document: a NAD's spec.config, or the document itself.
Result<std::pair<std::string, std::string>> configOf(const json::Value& doc, std::string& name) {
    if (!doc.isObject()) return core::makeError(core::Errc::Decode, "not an object");
    const json::Value* kind = doc.find("kind");
    if (kind && kind->isString() && kind->asString() == "NetworkAttachmentDefinition") {
        const json::Value* md = doc.find("metadata");
        const std::string ns = md ? text(*md, "namespace") : "";
        name = (ns.empty() ? "" : ns + "/") + (md ? text(*md, "name") : "");
        auto cfg = cluster::nadSpecConfig(doc);
        if (!cfg) return cfg.error();
        return std::make_pair(std::string("NetworkAttachmentDefinition"), *cfg);
    }
    if (kind)
        return core::makeError(core::Errc::Decode,
                               "kind " + kind->dump() + " is not a NetworkAttachmentDefinition");
    name = text(doc, "name");
    return std::make_pair(std::string(doc.find("plugins") ? "CNI conflist" : "CNI config"),
                          doc.dump());
}

void lintTable(std::ostream& out, const json::Value& doc) {
    for (const auto& c : list(doc, "configs")) {
        out << text(c, "kind") << " " << text(c, "name") << " (document " << text(c, "document")
            << "): " << (flag(c, "valid") ? "valid" : "INVALID") << "\n";
        for (const auto& n : list(c, "networks"))
            for (const auto& r : list(n, "ranges")) {
                out << "  range " << text(r, "range") << " -> "
                    << (flag(r, "nodeSlice") ? "node-slice pools" : "IPPool " + text(r, "pool"))
                    << " in " << text(r, "namespace") << "\n";
                for (const auto& o : list(r, "overlaps"))
                    out << "    overlaps IPPool " << text(o, "pool") << " (" << text(o, "range")
                        << ")\n";
            }
        for (const auto& p : list(c, "problems"))
            out << "  " << text(p, "severity") << ": " << text(p, "message") << "\n";
    }
    out << text(doc, "errors") << " errors, " << text(doc, "warnings") << " warnings\n";
}

}  // namespace

int runLint(Env* env, const Options& opts, const std::string& source, const std::string& input,
            std::ostream& out, std::ostream& err) {
    auto docs = k8s::yamlDocuments(input);
    if (!docs) {
        err << "error: " << source << ": " << docs.error().message << "\n";
        return kExitError;
    }
    Linter l{env, env ? env->ns : poolNamespace(opts), {}, 0, 0};
    json::Value configs = json::Value::array();
    for (size_t i = 0; i < docs->size(); ++i) {
        std::string name;
        auto cfg = configOf((*docs)[i], name);
        json::Value c = cfg ? l.lintConfig(cfg->second) : json::Value::object();
        if (!cfg) {
            json::Value problems = json::Value::array();
            l.problem(problems, "error", cfg.error().message);
            c.set("valid", json::Value::boolean(false));
            c.set("networks", json::Value::array());
            c.set("problems", std::move(problems));
        }
        json::Value head = json::Value::object();
        head.set("document", num(i + 1));
        head.set("kind", str(cfg ? cfg->first : ""));
        head.set("name", str(name));
        for (auto& [k, v] : c.members()) head.set(k, std::move(v));
        configs.push(std::move(head));
    }
    if (docs->empty()) err << "warning: " << source << " holds no document\n";
    json::Value doc = json::Value::object();
    doc.set("source", str(source));
    doc.set("configs", std::move(configs));
    doc.set("errors", num(l.errors));
    doc.set("warnings", num(l.warnings));
    emit(out, opts.output, doc, [&](std::ostream& o) { lintTable(o, doc); });
    return l.errors ? kExitFindings : kExitOk;
}

}  // namespace allot::cli
