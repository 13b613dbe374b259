#pragma once
// The controller's pods, as a watch keeps them (one LIST, then WATCH; gc-sidecar's ObjectWatch
// fills it) and a repair pass looks them up by namespace/name: only what a pass reads of a pod
// (cluster::PodInfo), packed. Per pod: a 64-bit hash of "ns/name", the UID as 16 bytes, the
// Node as an index into the names seen, the phase as a byte (about 60 bytes with the table's
// own). A large cluster's pods then cost the controller megabytes, not the hundreds they
// would as objects.
//
// A lookup only nominates: a pass frees nothing on it. Before an address goes, the pod is read
// again from the API server (RepairLoop::stillLeaked). So a hash shared by two pods (about one
// chance in 10^9 among 150,000 pods), a UID that is no UUID (kept aside whole) or a phase
// allot does not know (read as Unknown: not terminal) can at worst keep an address a pass
// longer, never free one.

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "core/result.h"

namespace allot::cluster {

class PodIndex {
  public:
    using Key = std::pair<std::string, std::string>;  // namespace, name

    // A list starts from nothing: lookups are Transient until listed() (and after lost()).
    // set and erase say whether what a pass reads of the pod changed.
    void beginList();
    bool set(const Key& key, const PodInfo& pod);
    bool erase(const Key& key);
    void listed();
    void lost();
    bool synced() const;
    size_t size() const;

    // The pod `ns`/`name` as last seen; nullopt when there is none. Transient while not synced.
    core::Result<std::optional<PodInfo>> find(const std::string& ns, const std::string& name) const;

  private:
    enum Flags : uint8_t { kUidAside = 1, kMirror = 2 };
    struct Packed {
        std::array<uint8_t, 16> uid{};
        uint32_t node = 0;  // into nodeNames_; 0: none
        uint8_t phase = 0;  // into kPhases
        uint8_t flags = 0;
    };
    static uint64_t hashOf(const std::string& ns, const std::string& name);
    uint32_t nodeId(const std::string& name);  // under mu_
    void dropAside(uint64_t h);                // under mu_
    PodInfo unpack(uint64_t h, const Packed& p) const;

    mutable std::mutex mu_;
    bool synced_ = false;
    std::unordered_map<uint64_t, Packed> pods_;
    // What does not pack: a UID that is no UUID, a mirror pod's config.mirror.
    std::unordered_map<uint64_t, std::string> uidAside_, mirrorOf_;
    std::vector<std::string> nodeNames_{std::string()};
    std::unordered_map<std::string, uint32_t> nodeIds_;
};

}  // namespace allot::cluster
