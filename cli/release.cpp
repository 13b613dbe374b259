// kubectl allot release IP [--force] [--pool NAME] [--dry-run], and release --from-report FILE:
// allot-gc's release path, by hand.
#include "cluster/release.h"

#include <map>

#include "cli/lookup.h"
#include "cli/output.h"
#include "cluster/scan.h"
#include "core/anomaly.h"
#include "core/naming.h"
#include "core/release_rule.h"
#include "k8s/kubeconfig.h"

namespace allot::cli {

namespace {

// The one holding to release: by --pool when overlapping pools hold the address.
Result<std::optional<Holding>> pickHolding(Env& env, const core::IpAddress& ip) {
    auto found = findEntries(
        env.cluster, env.ns, [&](const core::Cidr& c) { return c.contains(ip); },
        [&](const core::IpAddress& at, const core::Owner&) { return at == ip; });
    if (!found) return found.error();
    std::vector<Holding> hs;
    for (auto& h : *found)
        if (env.opts.pool.empty() || h.pool == env.opts.pool) hs.push_back(std::move(h));
    if (hs.size() > 1) {
        std::string pools;
        for (const auto& h : hs) pools += " " + h.pool;
        return core::makeError(
            core::Errc::Conflict,
            ip.str() + " is held in several pools (" + pools.substr(1) + "): pick one with --pool");
    }
    if (hs.empty()) return std::optional<Holding>();
    return std::optional<Holding>(std::move(hs[0]));
}

cluster::ObjectRef eventObject(const std::string& ns, const Holding& h) {
    const auto slash = h.owner.podRef.find('/');
    if (slash != std::string::npos && slash > 0 && slash + 1 < h.owner.podRef.size())
        return cluster::podRef(h.owner.podRef.substr(0, slash), h.owner.podRef.substr(slash + 1),
                               h.owner.podUid);
    return cluster::poolRef(ns, h.pool);
}

// The write: ReleaseIfHeld through the engine, then the reservation (engine::unreserve).
Result<bool> releaseHolding(Env& env, const std::string& ns, const Holding& h,
                            bool& reservationKept) {
    auto rel = cluster::releaseFromPool(env.cluster, ns, h.pool, [&](const store::Pool& p) {
        std::vector<core::u128> out;
        auto e = p.allocations.find(h.offset);
        if (e != p.allocations.end() && e->second == h.owner) out.push_back(h.offset);
        return Result<std::vector<core::u128>>(std::move(out));
    });
    if (!rel) return rel.error();
    for (const auto& r : *rel) {
        auto d = cluster::dropReservation(env.cluster, r);
        if (!d) {
            reservationKept = true;
            env.err << "warning: reservation of " << r.ip.str()
                    << " not deleted: " << d.error().message
                    << " (allot-gc's repair loop deletes it)\n";
        }
    }
    return !rel->empty();
}

// The release and its Event; the document of what was done. NotFound: the entry changed hands
// before the write.
Result<json::Value> releaseAndRecord(Env& env, const std::string& ns, const Holding& h,
                                     const std::string& state, const std::string& why) {
    bool reservationKept = false;
    auto done = releaseHolding(env, ns, h, reservationKept);
    if (!done) return done.error();
    if (!*done)
        return core::makeError(core::Errc::NotFound,
                               h.ip.str() + " changed hands while releasing; nothing released");
    const std::string msg = "released " + h.ip.str() + " (pool " + ns + "/" + h.pool + ", " +
                            core::whoHolds(h.owner) + ", pod " + state + ", " + why +
                            ") by kubectl-allot, " + env.inventory.identity();
    auto ev = env.inventory.recordEvent({false, "AddressReleased", msg, eventObject(ns, h)});
    if (!ev) env.err << "warning: Event not recorded: " << ev.error().message << "\n";
    json::Value doc = holdingJson(h);
    doc.set("podState", str(state));
    doc.set("released", json::Value::boolean(true));
    doc.set("forced", json::Value::boolean(env.opts.force));
    doc.set("proof", str(why));
    doc.set("reservationCleared", json::Value::boolean(!reservationKept));
    doc.set("eventRecorded", json::Value::boolean(bool(ev)));
    doc.set("message", str(msg));
    return doc;
}

// The Nodes as the controller's repair loop reads them (core::NodeIndex), for the release's
// proof: a Node is deleted when it is not a Node now and is known to have been one (a
// NodeSlicePool gave it a slice, or its allot-gc reported its Node's UID). A name no Node is
// known to have had (a host name the plugin fell back to, a typo) proves nothing. Read once
// per run.
class Nodes {
  public:
    explicit Nodes(Env& env) : env_(env) {}
    Result<const core::NodeIndex*> get() {
        if (!index_) {
            auto built = build();
            if (!built) return built.error();
            index_ = std::move(*built);
        }
        return &*index_;
    }

  private:
    Result<core::NodeIndex> build() {
        core::NodeIndex idx;
        cluster::ScanOptions o;
        o.poolNamespace = env_.ns;
        if (auto r = cluster::scanNodes(env_.cluster, o, idx); !r) return r.error();
        // Unread reports prove nothing: fewer names count as deleted Nodes, never more.
        if (auto reports = env_.cluster.nodeReports(env_.opts.leaseNamespace); !reports)
            env_.err << "warning: the node reports (Leases in " << env_.opts.leaseNamespace
                     << ") not read: " << reports.error().message
                     << "; a Node they alone show deleted needs --force\n";
        else
            for (const auto& r : *reports)
                if (!r.nodeUid.empty()) idx.reported.insert(r.node);
        auto slices = env_.cluster.nodeSlicePools(env_.ns);
        if (!slices) return slices.error();
        for (const auto& nsp : *slices)
            for (const auto& a : nsp.allocations)
                if (!a.nodeName.empty()) idx.sliced.insert(a.nodeName);
        return idx;
    }

    Env& env_;
    std::optional<core::NodeIndex> index_;
};

// What proves the release (core::operatorProof), in the words of the log and the Event; ""
// when nothing does: refused.
std::string proof(const Env& env, const Holding& h, const PodSeen& pod,
                  const core::NodeIndex& nodes) {
    auto by = core::operatorProof(h.owner, pod.get(), nodes, env.opts.force);
    return by ? std::string(core::name(*by)) : std::string();
}

int refuse(Env& env, const Holding& h, const PodSeen& pod) {
    const std::string node = h.owner.node.empty() ? "its node" : "node " + h.owner.node;
    env.err << "refused: " << h.ip.str() << " is held by " << core::whoHolds(h.owner)
            << ", which is " << pod.label << "; "
            << (core::podMayUse(h.owner, pod.get())
                    ? "releasing it may give it to a second pod. "
                    : "its sandbox may still run on " + node +
                          ": that node's allot-gc frees it once it proves the sandbox gone "
                          "(the container runtime's word, or no network namespace holding "
                          "it), or the Node's deletion does. ")
            << "Use --force if you know it is unused.\n";
    return kExitRefused;
}

int dryRunOne(Env& env, const Holding& h, const std::string& state, const std::string& why) {
    const std::string msg =
        "would release " + h.ip.str() + " (pool " + env.ns + "/" + h.pool + ", " +
        core::whoHolds(h.owner) + ", pod " + state +
        (why.empty() ? "); without --force a release is refused" : ", " + why + ")");
    json::Value doc = holdingJson(h);
    doc.set("podState", str(state));
    doc.set("released", json::Value::boolean(false));
    doc.set("dryRun", json::Value::boolean(true));
    doc.set("forced", json::Value::boolean(env.opts.force));
    doc.set("message", str(msg));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) { o << msg << "\n"; });
    return kExitOk;
}

}  // namespace

int runRelease(Env& env) {
    auto ip = core::IpAddress::parse(env.opts.args[0]);
    if (!ip) {
        env.err << "error: \"" << env.opts.args[0] << "\" is not an IP address\n";
        return kExitUsage;
    }
    auto picked = pickHolding(env, *ip);
    if (!picked) return apiError(env, "find " + ip->str(), picked.error());
    if (!*picked) {
        env.err << "error: no IPPool in namespace " << env.ns << " holds " << ip->str()
                << (env.opts.pool.empty() ? "" : " (pool " + env.opts.pool + ")") << "\n";
        return kExitNotFound;
    }
    const Holding& h = **picked;
    Nodes nodes(env);
    auto idx = nodes.get();
    if (!idx) return apiError(env, "list Nodes", idx.error());
    auto pod = seePod(env.cluster, h.owner, *idx);
    if (!pod) return apiError(env, "get pod " + h.owner.podRef, pod.error());
    const std::string why = proof(env, h, *pod, **idx);
    if (env.opts.dryRun) return dryRunOne(env, h, pod->label, why);
    if (why.empty()) return refuse(env, h, *pod);
    auto doc = releaseAndRecord(env, env.ns, h, pod->label, why);
    if (!doc && doc.code() == core::Errc::NotFound) {
        env.err << "error: " << doc.error().message << "\n";
        return kExitNotFound;
    }
    if (!doc) return apiError(env, "release " + ip->str(), doc.error());
    emit(env.out, env.opts.output, *doc,
         [&](std::ostream& o) { o << text(*doc, "message") << "\n"; });
    return kExitOk;
}

// ------------------------------------------------------------------ --from-report --

namespace {

// A leaked finding of a check report: what the report saw.
struct ReportedLeak {
    std::string ns, pool, ip, containerId;
    core::u128 offset = 0;
};

Result<std::vector<ReportedLeak>> parseReport(const std::string& input) {
    auto docs = k8s::yamlDocuments(input);
    if (!docs) return docs.error();
    auto bad = [](const std::string& why) {
        return core::makeError(core::Errc::Decode, "not a kubectl allot check report: " + why);
    };
    if (docs->size() != 1 || !(*docs)[0].isObject()) return bad("want one JSON or YAML object");
    const json::Value& doc = (*docs)[0];
    const json::Value* findings = doc.find("findings");
    if (!findings || !findings->isArray()) return bad("no findings list");
    if (doc.find("report") && text(doc, "report") != "kubectl-allot check")
        return bad("report is \"" + text(doc, "report") + "\"");
    std::vector<ReportedLeak> out;
    for (size_t i = 0; i < findings->items().size(); ++i) {
        const json::Value& f = findings->items()[i];
        if (text(f, "kind") != "leaked") continue;
        ReportedLeak l{text(f, "poolNamespace"), text(f, "pool"), text(f, "ip"),
                       text(f, "containerID")};
        if (l.ns.empty()) l.ns = text(doc, "namespace");
        auto off = core::u128FromString(text(f, "offset"));
        if (l.ns.empty() || l.pool.empty() || !off)
            return bad("finding " + std::to_string(i + 1) +
                       " (leaked) lacks its poolNamespace, pool or offset");
        l.offset = *off;
        out.push_back(std::move(l));
    }
    return out;
}

struct Outcome {
    std::string action, why;  // released, would_release, refused, skipped, failed
};

// Whether the entry is still the leak the report saw: the same container holds the same offset,
// and its pod cannot be using it (core::podMayUse). `h` and `pod` get the entry now.
Result<std::string> stillLeaked(Env& env, const ReportedLeak& l, const core::NodeIndex& nodes,
                                Holding& h, PodSeen& pod) {
    auto p = env.cluster.pools(l.ns).getPool(l.pool);
    if (!p && p.code() == core::Errc::NotFound) return std::string("its IPPool is gone");
    if (!p) return p.error();
    auto e = p->allocations.find(l.offset);
    auto cidr = core::Cidr::parse(p->range);
    if (e == p->allocations.end() || !cidr) return std::string("no longer held");
    if (e->second.containerId != l.containerId)
        return "now held by container " + e->second.containerId + ", not the report's " +
               l.containerId;
    h = {p->name,  p->range,  cidr->at(l.offset),
         l.offset, e->second, core::networkNamesOf(p->name, p->range, e->second.node)};
    auto s = seePod(env.cluster, h.owner, &nodes);
    if (!s) return s.error();
    pod = std::move(*s);
    if (core::podMayUse(h.owner, pod.get())) return "its pod is " + pod.label + " now";
    return std::string();
}

Result<Outcome> settle(Env& env, Nodes& nodes, const ReportedLeak& l, Holding& h) {
    auto idx = nodes.get();
    if (!idx) return idx.error();
    PodSeen pod;
    auto why = stillLeaked(env, l, **idx, h, pod);
    if (!why) return why.error();
    if (!why->empty()) return Outcome{"skipped", *why};
    const std::string by = proof(env, h, pod, **idx);
    const std::string seen = core::whoHolds(h.owner) + ", pod " + pod.label;
    if (by.empty()) return Outcome{"refused", seen + ": needs --force"};
    if (env.opts.dryRun) return Outcome{"would_release", seen + ", " + by};
    auto doc = releaseAndRecord(env, l.ns, h, pod.label, by);
    if (!doc && doc.code() == core::Errc::NotFound) return Outcome{"skipped", "changed hands"};
    if (!doc) return doc.error();
    return Outcome{"released", seen + ", " + by};
}

void reportTable(std::ostream& out, const json::Value& doc, bool wide) {
    Table t{{"ACTION", "IP", "POOL", "CONTAINER", "WHY"}, {}};
    if (wide) t.header.insert(t.header.begin() + 2, "NAMESPACE");
    for (const auto& r : list(doc, "results")) {
        const std::string ctr = text(r, "containerID");
        t.rows.push_back({text(r, "action"), text(r, "ip"), text(r, "pool"),
                          wide ? ctr : ctr.substr(0, 12), text(r, "why")});
        if (wide) t.rows.back().insert(t.rows.back().begin() + 2, text(r, "poolNamespace"));
    }
    if (!t.rows.empty()) printTable(out, t);
    out << list(doc, "results").size() << " leaks in the report";
    for (const char* k : {"released", "would_release", "refused", "skipped"})
        out << ", " << text(*doc.find("counts"), k) << " " << k;
    out << (flag(doc, "dryRun") ? " (dry run: nothing changed)" : "") << "\n";
}

}  // namespace

int runReleaseReport(Env& env, const std::string& input) {
    auto leaks = parseReport(input);
    if (!leaks) {
        env.err << "error: " << env.opts.fromReport << ": " << leaks.error().message << "\n";
        return kExitError;
    }
    json::Value results = json::Value::array();
    std::map<std::string, uint64_t> counts = {
        {"released", 0}, {"would_release", 0}, {"refused", 0}, {"skipped", 0}};
    Nodes nodes(env);
    for (const auto& l : *leaks) {
        Holding h;
        auto o = settle(env, nodes, l, h);
        if (!o)
            return apiError(env, "release " + l.ip + " (" + l.ns + "/" + l.pool + ")", o.error());
        ++counts[o->action];
        json::Value r = json::Value::object();
        r.set("action", str(o->action));
        r.set("ip", str(l.ip));
        r.set("poolNamespace", str(l.ns));
        r.set("pool", str(l.pool));
        r.set("offset", json::Value::numberText(core::u128ToString(l.offset)));
        r.set("containerID", str(l.containerId));
        r.set("podRef", str(h.owner.podRef));
        r.set("why", str(o->why));
        results.push(std::move(r));
    }
    json::Value doc = json::Value::object(), countJson = json::Value::object();
    for (const auto& [k, n] : counts) countJson.set(k, num(n));
    doc.set("dryRun", json::Value::boolean(env.opts.dryRun));
    doc.set("forced", json::Value::boolean(env.opts.force));
    doc.set("counts", std::move(countJson));
    doc.set("results", std::move(results));
    emit(env.out, env.opts.output, doc,
         [&](std::ostream& o) { reportTable(o, doc, env.opts.output == Format::Wide); });
    if (counts["refused"]) {
        env.err << (env.opts.dryRun ? "would be refused: " : "refused: ") << counts["refused"]
                << " leaks not released: their sandboxes may still run on their nodes (allot-gc "
                   "frees them once a node's probe or the Node's deletion proves them unused). "
                   "Use --force if you know they are unused.\n";
        if (!env.opts.dryRun) return kExitRefused;
    }
    return kExitOk;
}

}  // namespace allot::cli
