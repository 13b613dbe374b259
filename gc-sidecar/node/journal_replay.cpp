#include "gc-sidecar/node/journal_replay.h"

#include "engine/reservations.h"
#include "gc-sidecar/rules/match.h"
#include "gc-sidecar/rules/release.h"
#include "log/log.h"

namespace allot::gc {

using core::Result;

using cluster::podRef;

using cluster::Released;

JournalReplayer::JournalReplayer(std::string dir, std::string poolNamespace,
                                 cluster::Cluster& cluster, EventSink& events, Metrics& metrics,
                                 StopSignal& stop)
    : dir_(std::move(dir)),
      poolNamespace_(std::move(poolNamespace)),
      cluster_(cluster),
      events_(events),
      metrics_(metrics),
      stop_(stop) {}

void JournalReplayer::replayOnce() {
    node_state::Journal journal(dir_);
    std::vector<std::string> bad;
    auto entries = journal.entries(&bad);
    for (const auto& b : bad)
        if (reportedBad_.insert(b).second) logging::logWarn("journal entry skipped: " + b);
    if (!entries) {
        logging::logWarn("journal " + dir_ + ": " + entries.error().message);
        return;
    }
    uint64_t left = entries->size() + bad.size();
    for (const auto& e : *entries) {
        if (stop_.stopped()) break;
        if (replayEntry(journal, e)) --left;
    }
    metrics_.setJournalBacklog(left);
}

bool JournalReplayer::replayEntry(node_state::Journal& journal, const engine::JournalEntry& e) {
    const std::string ns = e.poolNamespace.empty() ? poolNamespace_ : e.poolNamespace;
    // The container the plugin's DEL was for: only its own records go (core::heldBy), never
    // those a newer sandbox of the same pod took over.
    const core::Owner caller{e.containerId, e.podRef, e.ifName, "", "", ""};
    std::vector<std::string> pools = e.pools;
    std::optional<std::string> failure;
    if (pools.empty()) failure = poolsHeldBy(ns, caller, pools);
    std::vector<Released> released;
    if (!failure) failure = releaseJournaled(ns, e, caller, pools, released);
    if (!failure) failure = dropJournaledReservations(ns, e, caller, released);
    report(e, released);
    if (failure) {
        metrics_.addJournalFailure();
        logging::logWarn("journal entry " + e.file + " not replayed yet: " + *failure,
                         {.network = e.networkName, .pod = e.podRef, .container = e.containerId});
        return false;
    }
    if (auto rm = journal.remove(e); !rm) {
        logging::logWarn("journal entry " + e.file + ": " + rm.error().message);
        return false;
    }
    return true;
}

// The pools of `ns` holding an entry of `caller` (a journal entry that names none).
std::optional<std::string> JournalReplayer::poolsHeldBy(const std::string& ns,
                                                        const core::Owner& caller,
                                                        std::vector<std::string>& pools) {
    auto r = cluster_.pools(ns).eachPool(
        [&](store::Pool& p) {
            for (const auto& [off, o] : p.allocations)
                if (core::heldBy(o, caller)) {
                    pools.push_back(p.name);
                    break;
                }
            return true;
        },
        nullptr);
    if (!r) return r.error().message;
    return std::nullopt;
}

// Apply (pools): the caller's entries of each pool, guarded writes. `released` gets what
// was released, even when a later pool fails.
std::optional<std::string> JournalReplayer::releaseJournaled(const std::string& ns,
                                                             const engine::JournalEntry& e,
                                                             const core::Owner& caller,
                                                             const std::vector<std::string>& pools,
                                                             std::vector<Released>& released) {
    for (const auto& pool : pools) {
        auto rel = cluster::releaseFromPool(
            cluster_, ns, pool, [&](const store::Pool& p) -> Result<std::vector<core::u128>> {
                std::vector<core::u128> out;
                for (const auto& [off, o] : p.allocations)
                    if (core::heldBy(o, caller)) out.push_back(off);
                return out;
            });
        if (!rel) return "IPPool " + ns + "/" + pool + ": " + rel.error().message;
        for (auto& r : *rel) {
            r.networkNames.insert(r.networkNames.begin(), e.networkName);
            released.push_back(std::move(r));
        }
    }
    return std::nullopt;
}

// Apply (reservations): those of what was released, then those the plugin named (the pool
// was released but their deletion did not finish), each only while it is still this
// container's.
std::optional<std::string> JournalReplayer::dropJournaledReservations(
    const std::string& ns, const engine::JournalEntry& e, const core::Owner& caller,
    const std::vector<Released>& released) {
    for (const auto& r : released) {
        auto d = cluster::dropReservation(cluster_, r);
        if (!d) return "reservation of " + r.ip.str() + ": " + d.error().message;
    }
    for (const auto& name : e.reservations)
        if (auto d = engine::unreserve(cluster_.pools(ns), {name}, caller); !d)
            return "reservation " + name + ": " + d.error().message;
    return std::nullopt;
}

void JournalReplayer::report(const engine::JournalEntry& e, const std::vector<Released>& released) {
    if (released.empty()) return;
    metrics_.addReleases("journal", released.size());
    std::string what;
    for (const auto& r : released) what += (what.empty() ? "" : ", ") + describe(r);
    for (const auto& r : released) {
        logging::Fields f = logFields(r);
        if (f.container.empty()) f.container = e.containerId;
        if (f.pod.empty()) f.pod = e.podRef;
        logging::logInfo("journal: released " + describe(r) + " of container " + e.containerId +
                             " (" + e.podRef + ")",
                         f);
    }
    auto [pns, pname] = splitPodRef(e.podRef);
    if (!pns.empty())
        events_.emit({false, "AddressReleased",
                      "released " + what + " of pod " + e.podRef +
                          " (a DEL the plugin journaled while the API server was unreachable)",
                      podRef(pns, pname, "")});
}

}  // namespace allot::gc
