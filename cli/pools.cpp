// kubectl allot pools
#include <cstdio>
#include <map>
#include <set>

#include "cli/lookup.h"
#include "cli/output.h"
#include "cluster/nad.h"
#include "cluster/scan.h"
#include "cni/net_config.h"
#include "core/naming.h"
#include "core/pool_targets.h"

namespace allot::cli {

namespace {

const std::vector<std::string> kOwnedTypes = {"allot", "whereabouts"};

struct PoolRow {
    cluster::PoolUse use;
    std::set<std::string> networks;
};

std::string percent(uint64_t used, uint64_t size) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", size ? 100.0 * double(used) / double(size) : 0.0);
    return buf;
}

// Which pools (by name) and NodeSlicePools each NAD's IPAM config maps to in namespace `ns`.
void mapNetworks(Env& env, const std::vector<NadConfig>& nads,
                 std::map<std::string, PoolRow>& pools,
                 std::map<std::string, std::set<std::string>>& sliceNets) {
    for (const auto& nad : nads) {
        auto nets = cluster::parseNadConfig(nad.config, kOwnedTypes, {});
        if (!nets) continue;  // check reports these
        for (const auto& n : *nets) {
            const auto& cfg = n.config;
            if (!cfg.raw.poolNamespace.empty() && cfg.raw.poolNamespace != env.ns) continue;
            const std::string who = nad.ns + "/" + nad.name;
            if (cfg.sliceSize) {
                sliceNets[cfg.raw.networkName.empty() ? n.networkName : cfg.raw.networkName].insert(
                    who);
                continue;
            }
            auto targets = core::poolTargets(cfg, n.networkName, "", {});
            for (const auto& t : targets ? *targets : std::vector<core::PoolTarget>{}) {
                auto p = pools.find(t.pool);
                if (p != pools.end()) p->second.networks.insert(who);
            }
        }
    }
}

json::Value setJson(const std::set<std::string>& s) {
    json::Value a = json::Value::array();
    for (const auto& x : s) a.push(str(x));
    return a;
}

json::Value poolJson(const PoolRow& r, const std::string& node) {
    json::Value v = json::Value::object();
    v.set("name", str(r.use.pool));
    v.set("range", str(r.use.range));
    v.set("size", num(r.use.size));
    v.set("used", num(r.use.used));
    v.set("free", num(r.use.size > r.use.used ? r.use.size - r.use.used : 0));
    v.set("percentUsed", json::Value::numberText(percent(r.use.used, r.use.size)));
    v.set("node", str(node));
    v.set("networks", setJson(r.networks));
    return v;
}

// A slice's IPPool: [network_name-]node-slice; network_name is the NodeSlicePool's name or
// absent.
const PoolRow* slicePool(const std::map<std::string, PoolRow>& pools, const SlicePool& sp,
                         const SliceAssignment& a) {
    auto cidr = core::Cidr::parse(a.slice);
    if (!cidr) return nullptr;
    for (const std::string& net : {sp.name, std::string()}) {
        auto p = pools.find(core::poolName(*cidr, net, a.node));
        if (p != pools.end()) return &p->second;
    }
    return nullptr;
}

json::Value slicePoolJson(const SlicePool& sp, const std::map<std::string, PoolRow>& pools,
                          const std::set<std::string>& nets,
                          std::map<std::string, std::string>& nodeOf) {
    json::Value v = json::Value::object(), slices = json::Value::array();
    v.set("name", str(sp.name));
    v.set("range", str(sp.range));
    v.set("sliceSize", str(sp.sliceSize));
    v.set("networks", setJson(nets));
    for (const auto& a : sp.slices) {
        json::Value s = json::Value::object();
        s.set("node", str(a.node));
        s.set("range", str(a.slice));
        const PoolRow* p = slicePool(pools, sp, a);
        s.set("pool", str(p ? p->use.pool : ""));
        s.set("size", num(p ? p->use.size : 0));
        auto used = p ? p->use.used : 0;
        if (p) nodeOf[p->use.pool] = a.node;
        // node_slice_parts: the slice's other IPPools count too.
        for (int k = 1; p && k < core::kMaxSliceParts; ++k) {
            auto part = pools.find(core::slicePartPoolName(p->use.pool, k));
            if (part == pools.end()) continue;
            used += part->second.use.used;
            nodeOf[part->first] = a.node;
        }
        s.set("used", num(used));
        slices.push(std::move(s));
    }
    v.set("slices", std::move(slices));
    return v;
}

void poolsTable(std::ostream& out, const json::Value& doc, bool wide) {
    Table t{{"POOL", "RANGE", "SIZE", "USED", "FREE", "USED%", "NODE", "NETWORKS"}, {}};
    if (wide) t.header.insert(t.header.begin(), "NAMESPACE");
    for (const auto& p : list(doc, "pools")) {
        std::string nets;
        for (const auto& n : list(p, "networks")) nets += (nets.empty() ? "" : ",") + n.asString();
        t.rows.push_back({text(p, "name"), text(p, "range"), text(p, "size"), text(p, "used"),
                          text(p, "free"), text(p, "percentUsed"), text(p, "node"), nets});
        if (wide) t.rows.back().insert(t.rows.back().begin(), text(doc, "namespace"));
    }
    printTable(out, t);
    for (const auto& sp : list(doc, "nodeSlicePools")) {
        out << "\nNodeSlicePool " << text(sp, "name") << " " << text(sp, "range") << " slices "
            << text(sp, "sliceSize") << "\n";
        Table s{{"NODE", "SLICE", "POOL", "SIZE", "USED"}, {}};
        for (const auto& a : list(sp, "slices"))
            s.rows.push_back({text(a, "node"), text(a, "range"), text(a, "pool"), text(a, "size"),
                              text(a, "used")});
        printTable(out, s);
    }
}

}  // namespace

int runPools(Env& env) {
    std::map<std::string, PoolRow> pools;
    core::PassAnalysis usage(env.ns, {});
    auto r = env.cluster.pools(env.ns).eachPool(
        [&](store::Pool& p) {
            if (auto u = usage.addPool(cluster::poolEntries(p)))
                pools[p.name].use = {p.name, p.range, u->size, u->used};
            return true;
        },
        [&](const std::string& name, const std::string& why) {
            env.err << "warning: IPPool " << env.ns << "/" << name << " cannot be read: " << why
                    << "\n";
        });
    if (!r) return apiError(env, "list pools of " + env.ns, r.error());
    auto nads = env.inventory.nads();
    if (!nads) return apiError(env, "list NetworkAttachmentDefinitions", nads.error());
    auto slices = env.inventory.slicePools(env.ns);
    if (!slices) return apiError(env, "list NodeSlicePools of " + env.ns, slices.error());
    std::map<std::string, std::set<std::string>> sliceNets;
    mapNetworks(env, *nads, pools, sliceNets);

    json::Value doc = json::Value::object(), poolList = json::Value::array(),
                sliceList = json::Value::array();
    std::map<std::string, std::string> nodeOf;
    for (const auto& sp : *slices)
        sliceList.push(slicePoolJson(sp, pools, sliceNets[sp.name], nodeOf));
    for (const auto& sp : *slices)  // a slice's pool serves its NodeSlicePool's networks
        for (const auto& a : sp.slices)
            if (const PoolRow* p = slicePool(pools, sp, a))
                pools[p->use.pool].networks.insert(sliceNets[sp.name].begin(),
                                                   sliceNets[sp.name].end());
    for (const auto& [name, row] : pools) poolList.push(poolJson(row, nodeOf[name]));
    doc.set("namespace", str(env.ns));
    doc.set("pools", std::move(poolList));
    doc.set("nodeSlicePools", std::move(sliceList));
    emit(env.out, env.opts.output, doc,
         [&](std::ostream& o) { poolsTable(o, doc, env.opts.output == Format::Wide); });
    return kExitOk;
}

}  // namespace allot::cli
