#include "plugin/verbs.h"

#include "engine/add.h"
#include "engine/check.h"
#include "engine/owned_add.h"
#include "engine/release.h"

namespace allot::plugin {

using core::Errc;
using core::Result;
using engine::IpResult;

Outcome fail(const std::string& version, const CniError& e, logging::Logger* log) {
    if (log) log->error(e.msg);
    return Outcome{e.code, formatError(version, e) + "\n"};
}

Outcome failWith(const std::string& version, const core::Error& e, logging::Logger* log) {
    return fail(version, cniError(e), log);
}

namespace {

// The network, the address and its pool (when this call wrote it) of a log line.
logging::Fields addressFields(const engine::Context& ctx, const Request& q,
                              const core::IpAddress& ip) {
    logging::Fields f{.network = q.net.name, .ip = ip.str()};
    for (const auto& [at, pool] : ctx.report.pools)
        if (at == ip) f.pool = ctx.poolNamespace + "/" + pool;
    return f;
}

// CNI_ARGS GATEWAY=, as Whereabouts reads it: each gateway becomes the gateway of the static
// addresses (the config's `addresses`) whose network holds it.
Result<core::ValidatedConfig> withArgGateways(const core::ValidatedConfig& cfg,
                                              const std::string& text) {
    core::ValidatedConfig out = cfg;
    auto gws = parseArgGateways(text);
    if (!gws) return gws.error();
    for (const auto& gw : *gws)
        for (auto& [sip, gateway] : out.staticAddresses)
            if (core::Cidr(sip.ip, sip.prefix).contains(gw)) gateway = gw;
    return out;
}

Outcome runAdd(engine::Context& ctx, const Request& q) {
    // Requested addresses: runtimeConfig.ips, else args.cni.ips, else CNI_ARGS IP=
    // (CONVENTIONS.md: the CNI_ARGS key is ignored when the config carries addresses).
    // Whereabouts fails an ADD (not a DEL) on an exclude it cannot read.
    if (q.cfg.addError) return failWith(q.version, *q.cfg.addError, q.log);
    std::optional<core::ValidatedConfig> gatewayed;
    if (!q.env.args.gatewayText.empty()) {
        auto c = withArgGateways(q.cfg, q.env.args.gatewayText);
        if (!c) return failWith(q.version, c.error(), q.log);
        gatewayed = std::move(*c);
    }
    const core::ValidatedConfig* cfg = gatewayed ? &*gatewayed : &q.cfg;
    std::vector<core::IpAddress> requested = q.net.requestedIps;
    if (requested.empty() && !q.env.args.ipText.empty()) {
        auto ips = parseArgIps(q.env.args.ipText);
        if (!ips) return failWith(q.version, ips.error(), q.log);
        requested = std::move(*ips);
    }
    const bool owned = q.net.allowPersistentIps || cfg->raw.stickyStatefulSets;
    if (owned && !q.claims && q.log)
        q.log->warning(
            "allowPersistentIPs/sticky_statefulsets: no pod reader here; an ordinary address");
    auto r = owned && q.claims
                 ? engine::addOwned(ctx, *cfg, q.net, q.owner, std::move(requested), *q.claims,
                                    {q.env.args.podNamespace, q.env.args.podName, q.env.ifName})
                 : engine::add(ctx, *cfg, q.net.name, q.owner, requested);
    if (!r) return failWith(q.version, r.error(), q.log);
    if (q.log)
        for (const auto& ip : *r)
            q.log->info("ADD allocated " + ip.ip.str(), addressFields(ctx, q, ip.ip));
    return Outcome{0, formatResult({*r, q.net.routes, q.net.dns}, q.version) + "\n"};
}

Outcome runDel(engine::Context& ctx, const Request& q) {
    auto r = engine::del(ctx, q.cfg, q.owner);
    if (!r) return failWith(q.version, r.error(), q.log);
    if (!q.log) return Outcome{0, ""};
    if (*r)
        q.log->error("DEL not finished (" + ctx.report.journalReason +
                         "); release journaled for allot-gc to replay",
                     {.network = q.net.name});
    else if (ctx.report.pools.empty())
        q.log->info("DEL released (nothing was held)", {.network = q.net.name});
    for (const auto& [ip, pool] : ctx.report.pools)
        q.log->info("DEL released " + ip.str(), addressFields(ctx, q, ip));
    return Outcome{0, ""};
}

// CHECK: the container's own entry; on a network with allowPersistentIPs, else the entry of
// the IPAMClaim the pod references, which a migration target shares without owning it.
Result<std::vector<IpResult>> checkOwned(engine::Context& ctx, const Request& q) {
    if (!q.net.prevResult.isObject())
        return core::makeError(Errc::InvalidConfig, "\"prevResult\" is required for CHECK");
    const auto listed = prevResultIps(q.net.prevResult);
    auto r = engine::check(ctx, q.cfg, q.net.name, q.owner, listed);
    if (r || r.code() != Errc::NotFound || !q.net.allowPersistentIps || !q.claims) return r;
    auto claim = engine::claimOf(q.net, *q.claims,
                                 {q.env.args.podNamespace, q.env.args.podName, q.env.ifName});
    if (!claim || claim->empty()) return r;
    core::Owner sharing = q.owner;
    sharing.claim = *claim;
    return engine::check(ctx, q.cfg, q.net.name, sharing, listed);
}

Outcome runCheck(engine::Context& ctx, const Request& q, const Deps& deps) {
    auto r = checkOwned(ctx, q);
    if (!r) return fail(q.version, cniError(r.error(), Command::Check), q.log);
    if (deps.checkInterface) {
        // Whatever kept the interface from being checked, the check failed.
        auto c = deps.checkInterface(q.env.netns, q.env.ifName, *r);
        if (!c) return fail(q.version, CniError{kCheckFailed, c.error().message, {}}, q.log);
    }
    return Outcome{0, ""};
}

Outcome runGc(engine::Context& ctx, const Request& q) {
    // null (libcni with no attachments left) or no key at all (cnitool gc): nothing on
    // this network is valid, so everything this node holds on it goes.
    auto r = engine::gc(ctx, q.cfg, q.net.name, q.net.validAttachments);
    if (!r) return failWith(q.version, r.error(), q.log);
    if (q.log)
        q.log->info("GC released " + std::to_string(*r) + " allocation(s)",
                    {.network = q.net.name});
    return Outcome{0, ""};
}

Outcome runStatus(engine::Context& ctx, const Request& q) {
    auto r = engine::status(ctx, q.cfg);
    if (!r) return fail(q.version, cniError(r.error(), Command::Status), q.log);
    return Outcome{0, ""};
}

}  // namespace

Outcome dispatch(engine::Context& ctx, const Request& q, const Deps& deps) {
    switch (q.env.command) {
        case Command::Add:
            return runAdd(ctx, q);
        case Command::Del:
            return runDel(ctx, q);
        case Command::Check:
            return runCheck(ctx, q, deps);
        case Command::Gc:
            return runGc(ctx, q);
        case Command::Status:
            return runStatus(ctx, q);
        case Command::Version:
            break;
    }
    return Outcome{};
}

}  // namespace allot::plugin
