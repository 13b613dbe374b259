#pragma once
// The per-node pod watch: list, then watch, this node's pods (field selector on
// spec.nodeName), resuming from the last resourceVersion seen, with bookmarks; relists on
// 410 Gone and reconnects with backoff on anything else. A relist also finds pods deleted
// while no watch was open. Only a PodRecord per pod is kept, never whole objects.

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/stop.h"
#include "gc-sidecar/relay/claim_pod_index.h"
#include "gc-sidecar/rules/pod_record.h"
#include "json/json.h"
#include "k8s/client.h"

namespace allot::gc {

// What is kept of a pod object; nullopt when it has no namespace, name or uid.
std::optional<PodRecord> podRecordOf(const json::Value& pod);

struct PodWatchOptions {
    std::string node;
    std::chrono::milliseconds watchTimeout{std::chrono::minutes(5)};
    std::chrono::milliseconds backoffMin{200};
    std::chrono::milliseconds backoffMax{std::chrono::seconds(5)};
};

class PodWatch {
  public:
    using OnDeleted = std::function<void(PodRecord)>;
    using OnSynced = std::function<void(std::vector<PodRecord>)>;  // after every full list

    PodWatch(PodWatchOptions opts, k8s::Client client, OnDeleted onDeleted, OnSynced onSynced,
             Metrics& metrics, StopSignal& stop)
        : opts_(std::move(opts)),
          client_(std::move(client)),
          onDeleted_(std::move(onDeleted)),
          onSynced_(std::move(onSynced)),
          metrics_(metrics),
          stop_(stop) {}

    // Runs until stopped (a watch in progress ends with its next event or its timeout).
    void run();
    // Kept up to date with every list and event from then on (set before run()).
    void setIndex(PodNetworksIndex* index) { index_ = index; }
    // Thread-safe. This node's pods now; nullopt before the first full list.
    std::optional<std::vector<PodRecord>> live() const;

  private:
    bool relist(std::string& rv);
    // Watches from rv; false when a relist is needed.
    bool watchFrom(std::string& rv);
    void pause();

    PodWatchOptions opts_;
    k8s::Client client_;
    OnDeleted onDeleted_;
    OnSynced onSynced_;
    Metrics& metrics_;
    StopSignal& stop_;
    mutable std::mutex mu_;                            // pods_ and synced_, for live()
    std::unordered_map<std::string, PodRecord> pods_;  // by uid
    PodNetworksIndex* index_ = nullptr;
    bool synced_ = false;
    int failures_ = 0;  // consecutive failed lists and watches: the backoff's attempt
};

}  // namespace allot::gc
