#include "gc-sidecar/claim_gc.h"

#include <map>
#include <vector>

#include "core/anomaly.h"
#include "core/ownership.h"
#include "gc-sidecar/release.h"
#include "log/log.h"

namespace allot::gc {

namespace {

// pool -> offsets of entries whose claim is not in `live`, and those claims.
struct Suspects {
    std::map<std::string, std::vector<core::u128>> byPool;
    std::map<std::string, std::map<core::u128, core::Owner>> owners;  // the suspects, as read
    std::set<std::string> claims;
    size_t owned = 0;
};

Result<Suspects> findSuspects(Cluster& cl, const std::string& ns,
                              const std::set<std::string>& live) {
    Suspects s;
    auto r = cl.pools(ns).eachPool(
        [&](store::Pool& p) {
            for (const auto& [off, o] : p.allocations) {
                if (!core::claimOwned(o)) continue;
                ++s.owned;
                if (live.count(o.claim)) continue;
                s.byPool[p.name].push_back(off);
                s.owners[p.name][off] = o;
                s.claims.insert(o.claim);
            }
            return true;
        },
        [](const std::string&, const std::string&) {});
    if (!r) return r.error();
    return s;
}

// Of `claims`, those a GET confirms deleted; a failed GET decides nothing.
std::set<std::string> confirmGone(ClaimSource& src, const std::set<std::string>& claims) {
    std::set<std::string> gone;
    for (const auto& ref : claims) {
        auto slash = ref.find('/');
        if (slash == std::string::npos) continue;
        auto e = src.exists(ref.substr(0, slash), ref.substr(slash + 1));
        if (!e) {
            logging::logWarn("IPAMClaim " + ref + ": " + e.error().message +
                             "; its addresses are kept");
            continue;
        }
        if (!*e) gone.insert(ref);
    }
    return gone;
}

// Of the suspects whose claim is gone, the pods (namespace/name) the API still shows running
// under the entry's UID: their sandboxes may hold the address, so it waits for them to go
// (their DEL leaves a claim-owned entry alone; a later pass frees it). A failed read keeps it.
std::set<std::string> stillRunning(Cluster& cl, const std::string& ns, const Suspects& s,
                                   const std::set<std::string>& gone) {
    std::set<std::string> running;
    for (const auto& [pool, offsets] : s.byPool)
        for (const auto& [off, o] : s.owners.at(pool)) {
            if (!gone.count(o.claim) || running.count(o.podRef)) continue;
            const auto slash = o.podRef.find('/');
            if (slash == std::string::npos) continue;
            auto pod = cl.getPod(o.podRef.substr(0, slash), o.podRef.substr(slash + 1));
            if (!pod) {
                logging::logWarn("IPAMClaim " + o.claim + ": get pod " + o.podRef + ": " +
                                 pod.error().message + "; its address in " + ns + "/" + pool +
                                 " is kept");
                running.insert(o.podRef);
            } else if (*pod && !(*pod)->terminal() &&
                       (o.podUid.empty() || (*pod)->uid == o.podUid ||
                        (*pod)->mirrorOf == o.podUid)) {
                running.insert(o.podRef);
            }
        }
    return running;
}

void report(const Released& r, EventSink& events) {
    std::string msg = "released " + r.ip.str() + " (pool " + r.ns + "/" + r.pool + ", " +
                      core::whoHolds(r.owner) + "): its IPAMClaim " + r.owner.claim +
                      " was deleted";
    logging::logInfo(msg);
    events.emit({false, "AddressReleased", msg, poolRef(r.ns, r.pool)});
}

}  // namespace

Result<ClaimPassReport> releaseDeletedClaims(Cluster& cl, ClaimSource& claims,
                                             const std::string& poolNamespace, EventSink& events,
                                             Metrics& metrics) {
    auto live = claims.listClaims();
    if (!live) return live.error();
    auto suspects = findSuspects(cl, poolNamespace, *live);
    if (!suspects) return suspects.error();
    ClaimPassReport rep;
    rep.owned = suspects->owned;
    const std::set<std::string> gone = confirmGone(claims, suspects->claims);
    const std::set<std::string> running = stillRunning(cl, poolNamespace, *suspects, gone);
    for (const auto& [pool, offsets] : suspects->byPool) {
        auto rel = releaseFromPool(
            cl, poolNamespace, pool,
            [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                std::vector<core::u128> out;
                for (core::u128 off : offsets)
                    if (auto it = p.allocations.find(off); it != p.allocations.end() &&
                                                           gone.count(it->second.claim) &&
                                                           !running.count(it->second.podRef))
                        out.push_back(off);
                return out;
            },
            10, true);
        if (!rel) {
            logging::logWarn("IPAMClaim release in IPPool " + poolNamespace + "/" + pool + ": " +
                             rel.error().message);
            continue;
        }
        for (const auto& r : *rel) {
            if (auto d = dropReservation(cl, r); !d)
                logging::logWarn("reservation of released " + r.ip.str() + ": " +
                                 d.error().message);
            report(r, events);
            ++rep.released;
        }
    }
    rep.gone = gone.size();
    if (rep.released) metrics.addReleases("claim_deleted", rep.released);
    return rep;
}

}  // namespace allot::gc
