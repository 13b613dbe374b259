// kubectl allot release IP [--force] [--pool NAME]: allot-gc's release path, by hand.
#include "cluster/release.h"

#include "cli/lookup.h"
#include "cli/output.h"
#include "core/anomaly.h"

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
Result<bool> releaseHolding(Env& env, const Holding& h, bool& reservationKept) {
    auto rel = cluster::releaseFromPool(env.cluster, env.ns, h.pool, [&](const store::Pool& p) {
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
    auto state = podState(env.cluster, h.owner);
    if (!state) return apiError(env, "get pod " + h.owner.podRef, state.error());
    // core/release_rule.h: an operator's release is one of the proofs, and only when forced. A
    // pod that is gone or re-created says nothing about its sandbox, which may run on.
    const bool alive = *state != "gone" && *state != "terminal" && *state != "replaced";
    if (!env.opts.force) {
        const std::string node = h.owner.node.empty() ? "its node" : "node " + h.owner.node;
        env.err << "refused: " << ip->str() << " is held by " << core::whoHolds(h.owner)
                << ", which is " << *state << "; "
                << (alive ? "releasing it may give it to a second pod. "
                          : "its sandbox may still run on " + node +
                                ": that node's allot-gc "
                                "frees it once no network namespace holds it, or the Node's "
                                "deletion does. ")
                << "Use --force if you know it is unused.\n";
        return kExitRefused;
    }
    bool reservationKept = false;
    auto done = releaseHolding(env, h, reservationKept);
    if (!done) return apiError(env, "release " + ip->str(), done.error());
    if (!*done) {
        env.err << "error: " << ip->str() << " changed hands while releasing; nothing released\n";
        return kExitNotFound;
    }
    const std::string msg = "released " + ip->str() + " (pool " + env.ns + "/" + h.pool + ", " +
                            core::whoHolds(h.owner) + ", pod " + *state +
                            (env.opts.force ? ", forced" : "") + ") by kubectl-allot, " +
                            env.inventory.identity();
    auto ev = env.inventory.recordEvent({false, "AddressReleased", msg, eventObject(env.ns, h)});
    if (!ev) env.err << "warning: Event not recorded: " << ev.error().message << "\n";
    json::Value doc = holdingJson(h);
    doc.set("podState", str(*state));
    doc.set("released", json::Value::boolean(true));
    doc.set("forced", json::Value::boolean(env.opts.force));
    doc.set("reservationCleared", json::Value::boolean(!reservationKept));
    doc.set("eventRecorded", json::Value::boolean(bool(ev)));
    doc.set("message", str(msg));
    emit(env.out, env.opts.output, doc, [&](std::ostream& o) { o << msg << "\n"; });
    return kExitOk;
}

}  // namespace allot::cli
