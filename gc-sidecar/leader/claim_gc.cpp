#include "gc-sidecar/leader/claim_gc.h"

#include <map>
#include <vector>

#include "core/anomaly.h"
#include "core/ownership.h"
#include "gc-sidecar/rules/release.h"
#include "log/log.h"

namespace allot::gc {

using cluster::poolRef;

using cluster::Released;

using core::Result;

using cluster::Cluster;

namespace {

// (namespace, pool) -> the owned entries this pass may release, as read, and the owners to
// confirm.
using PoolKey = std::pair<std::string, std::string>;
struct Suspects {
    std::map<PoolKey, std::map<core::u128, core::Owner>> owners;
    std::set<std::string> claims;  // IPAMClaims ("namespace/name") not in the live list
    std::set<std::string> sets;    // sticky owner keys (core/sticky.h)
    size_t owned = 0;
};

// `live`: every IPAMClaim; null when they could not be listed (their entries wait). A
// namespace whose pools cannot be listed is left for the next pass.
Suspects findSuspects(Cluster& cl, const std::set<std::string>& namespaces,
                      const std::set<std::string>* live) {
    Suspects s;
    for (const auto& ns : namespaces) {
        auto r = cl.pools(ns).eachPool(
            [&](store::Pool& p) {
                for (const auto& [off, o] : p.allocations) {
                    if (!core::claimOwned(o)) continue;
                    ++s.owned;
                    if (core::isStickyKey(o.claim)) {
                        s.sets.insert(o.claim);
                    } else {
                        if (!live || live->count(o.claim)) continue;
                        s.claims.insert(o.claim);
                    }
                    s.owners[{ns, p.name}][off] = o;
                }
                return true;
            },
            [](const std::string&, const std::string&) {});
        if (!r)
            logging::logWarn("owned-address pass: list IPPools in " + ns + ": " +
                             r.error().message);
    }
    return s;
}

// What confirmed reads showed this pass: a failed read decides nothing.
struct Verdicts {
    std::set<std::string> goneClaims;
    std::map<std::string, std::optional<core::StatefulSetView>> sets;  // by owner key

    // Why `o`'s address is released; "" when it is kept.
    std::string why(const core::Owner& o) const {
        if (!core::isStickyKey(o.claim))
            return goneClaims.count(o.claim) ? "its IPAMClaim " + o.claim + " was deleted" : "";
        auto ref = core::parseStickyKey(o.claim);
        auto it = sets.find(o.claim);
        if (!ref || it == sets.end()) return "";
        const auto slash = o.podRef.find('/');
        auto d = core::decideSticky(
            *ref, slash == std::string::npos ? o.podRef : o.podRef.substr(slash + 1), it->second);
        return d.release ? d.why : "";
    }
};

Verdicts confirm(ClaimSource& src, const Suspects& s) {
    Verdicts v;
    for (const auto& ref : s.claims) {
        auto slash = ref.find('/');
        if (slash == std::string::npos) continue;
        const std::string ns = ref.substr(0, slash), name = ref.substr(slash + 1);
        // Kept while the claim exists, or a live pod still names it (a migration target).
        Result<bool> keep = src.exists(ns, name);
        if (keep && !*keep) keep = src.referencedByLivePod(ns, name);
        if (!keep)
            logging::logWarn("IPAMClaim " + ref + ": " + keep.error().message +
                             "; its addresses are kept");
        else if (!*keep)
            v.goneClaims.insert(ref);
    }
    for (const auto& key : s.sets) {
        auto ref = core::parseStickyKey(key);
        if (!ref) continue;  // malformed: kept
        auto set = src.statefulSet(ref->ns, ref->name);
        if (!set)
            logging::logWarn("StatefulSet " + ref->ns + "/" + ref->name + ": " +
                             set.error().message + "; its members' addresses are kept");
        else
            v.sets.emplace(key, *set);
    }
    return v;
}

// Of the suspects to release, the pods (namespace/name) the API still shows running under the
// entry's UID: their sandboxes may hold the address, so it waits for them to go (their DEL
// leaves an owned entry alone; a later pass frees it). A failed read keeps it.
std::set<std::string> stillRunning(Cluster& cl, const Suspects& s, const Verdicts& v) {
    std::set<std::string> running;
    for (const auto& [where, owners] : s.owners)
        for (const auto& [off, o] : owners) {
            if (v.why(o).empty() || running.count(o.podRef)) continue;
            const auto slash = o.podRef.find('/');
            if (slash == std::string::npos) continue;
            auto pod = cl.getPod(o.podRef.substr(0, slash), o.podRef.substr(slash + 1));
            if (!pod) {
                logging::logWarn(o.claim + ": get pod " + o.podRef + ": " + pod.error().message +
                                     "; its address in " + where.first + "/" + where.second +
                                     " is kept",
                                 {.pool = where.first + "/" + where.second,
                                  .network = o.network,
                                  .pod = o.podRef,
                                  .container = o.containerId});
                running.insert(o.podRef);
            } else if (*pod && !(*pod)->terminal() &&
                       (o.podUid.empty() || (*pod)->uid == o.podUid ||
                        (*pod)->mirrorOf == o.podUid)) {
                running.insert(o.podRef);
            }
        }
    return running;
}

void report(const Released& r, const std::string& why, EventSink& events) {
    std::string msg = "released " + r.ip.str() + " (pool " + r.ns + "/" + r.pool + ", " +
                      core::whoHolds(r.owner) + "): " + why;
    logging::logInfo(msg, logFields(r));
    events.emit({false, "AddressReleased", msg, poolRef(r.ns, r.pool)});
}

}  // namespace

Result<ClaimPassReport> releaseDeletedClaims(Cluster& cl, ClaimSource& claims,
                                             const std::set<std::string>& poolNamespaces,
                                             EventSink& events, Metrics& metrics) {
    ClaimPassReport rep;
    auto live = claims.listClaims();
    if (!live) rep.claimsUnlisted = live.error();
    const Suspects suspects = findSuspects(cl, poolNamespaces, live ? &*live : nullptr);
    rep.owned = suspects.owned;
    const Verdicts verdicts = confirm(claims, suspects);
    const std::set<std::string> running = stillRunning(cl, suspects, verdicts);
    std::map<std::string, size_t> byReason;
    for (const auto& entry : suspects.owners) {
        // Not a structured binding: a lambda below captures it (clang before 16 cannot).
        const auto& owners = entry.second;
        const auto& [ns, pool] = entry.first;
        // On a fresh read: only an entry unchanged since the scan (not handed over meanwhile).
        auto rel = releaseFromPool(
            cl, ns, pool,
            [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                std::vector<core::u128> out;
                for (const auto& [off, o] : owners)
                    if (auto it = p.allocations.find(off);
                        it != p.allocations.end() && it->second == o && !verdicts.why(o).empty() &&
                        !running.count(o.podRef))
                        out.push_back(off);
                return out;
            },
            10, true);
        if (!rel) {
            logging::logWarn(
                "owned-address release in IPPool " + ns + "/" + pool + ": " + rel.error().message,
                {.pool = ns + "/" + pool});
            continue;
        }
        for (const auto& r : *rel) {
            if (auto d = dropReservation(cl, r); !d)
                logging::logWarn("reservation of released " + r.ip.str() + ": " + d.error().message,
                                 logFields(r));
            report(r, verdicts.why(r.owner), events);
            ++byReason[core::isStickyKey(r.owner.claim) ? "statefulset_gone" : "claim_deleted"];
            ++rep.released;
        }
    }
    rep.gone = verdicts.goneClaims.size();
    for (const auto& [reason, n] : byReason) metrics.addReleases(reason, n);
    return rep;
}

}  // namespace allot::gc
