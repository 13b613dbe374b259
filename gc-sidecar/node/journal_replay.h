#pragma once
// Replaying the plugin's DEL journal (the releases a DEL could not finish): each entry's pools
// (named, or found by a scan), the release of the journaled container's entries, then its
// reservations; an entry is removed once all of that succeeded, and retried on the next replay
// otherwise.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/release.h"
#include "engine/release_journal.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/stop.h"
#include "node_state/journal.h"

namespace allot::gc {

class JournalReplayer {
  public:
    // `dir`: the plugin's journal_dir; `poolNamespace`: of entries that name none. Uses
    // `cluster` from the calling thread only.
    JournalReplayer(std::string dir, std::string poolNamespace, cluster::Cluster& cluster,
                    EventSink& events, Metrics& metrics, StopSignal& stop);

    // Every readable entry once (unreadable files are logged once each and left); sets the
    // backlog gauge to the entries left.
    void replayOnce();

  private:
    bool replayEntry(node_state::Journal& journal, const engine::JournalEntry& e);
    std::optional<std::string> poolsHeldBy(const std::string& ns, const core::Owner& caller,
                                           std::vector<std::string>& pools);
    std::optional<std::string> releaseJournaled(const std::string& ns,
                                                const engine::JournalEntry& e,
                                                const core::Owner& caller,
                                                const std::vector<std::string>& pools,
                                                std::vector<cluster::Released>& released);
    std::optional<std::string> dropJournaledReservations(
        const std::string& ns, const engine::JournalEntry& e, const core::Owner& caller,
        const std::vector<cluster::Released>& released);
    void report(const engine::JournalEntry& e, const std::vector<cluster::Released>& released);

    std::string dir_, poolNamespace_;
    cluster::Cluster& cluster_;
    EventSink& events_;
    Metrics& metrics_;
    StopSignal& stop_;
    std::set<std::string> reportedBad_;  // unreadable entries already logged
};

}  // namespace allot::gc
