#pragma once
// The node relay's copy of this node's slices (k8s::relayNodeSlicePath): allot-gc lists and
// watches the NodeSlicePools and keeps the slice each gives its node, so that an ADD in slice
// mode reads no NodeSlicePool while the copy is current. The copy may lag the API server by a
// watch event; a plugin acting on a stale slice still cannot claim in a pool whose slice was
// taken from its node (the slice controller seals it first: engine::TxTarget::unseal). Only
// NodeSlicePools allot-gc's controller manages are kept: another controller (Whereabouts')
// seals nothing, so for its objects the plugin reads the NodeSlicePool on every ADD. Until
// the first list, and from a failed watch until the next list, the copy answers nothing and the
// plugin reads the NodeSlicePool itself.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "gc-sidecar/stop.h"
#include "json/json.h"
#include "k8s/client.h"
#include "k8s/relay.h"

namespace allot::gc {

class NodeSliceCopy {
  public:
    explicit NodeSliceCopy(std::string node) : node_(std::move(node)) {}

    // A full list: the copy is current from now on.
    void replace(const std::vector<json::Value>& nodeSlicePools);
    // One watch event on top of the last list.
    void apply(const k8s::WatchEvent& ev);
    // The watch failed: answer nothing until the next replace().
    void lost();
    bool synced() const;

    // The relay's answer to a local question (k8s::relayLocal), nullopt for one it does not
    // handle: this node's slice in NodeSlicePool ns/name (200, the CIDR), none (404), or
    // Refused while not synced or for another node.
    std::optional<k8s::RelayResponse> answer(const k8s::RelayRequest& r) const;

  private:
    void set(const json::Value& nodeSlicePool);

    std::string node_;
    mutable std::mutex mu_;
    bool synced_ = false;
    std::map<std::pair<std::string, std::string>, std::string> slices_;  // (ns, name) -> CIDR
};

// Keeps `copy` current: list, then watch from the list's resourceVersion, resuming after the
// server ends a watch and listing again after a failure (the engine's backoff between
// failures, waited on `stop`). Runs until stopped.
class NodeSliceWatch {
  public:
    NodeSliceWatch(k8s::Client client, NodeSliceCopy& copy, StopSignal& stop)
        : client_(std::move(client)), copy_(copy), stop_(stop) {}
    void run();

  private:
    bool relist(std::string& rv);
    bool watchFrom(std::string& rv);  // false: list again
    void pause();

    k8s::Client client_;
    NodeSliceCopy& copy_;
    StopSignal& stop_;
    int failures_ = 0;
};

}  // namespace allot::gc
