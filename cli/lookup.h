#pragma once
// What the read commands share: the entries of a namespace's pools that hold given addresses
// or belong to a pod, the state of an entry's pod now, and its reservation.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "core/allocator.h"
#include "core/anomaly.h"
#include "json/json.h"

namespace allot::cli {

struct Holding {
    std::string pool, range;
    core::IpAddress ip;
    core::u128 offset = 0;
    core::Owner owner;
    std::vector<std::string> networkNames;  // the reservation's possible network_name prefixes
};

// Every decoded entry of the namespace's pools that `want` picks (pools whose range
// `poolWanted` rejects are not looked into).
Result<std::vector<Holding>> findEntries(
    cluster::Cluster& c, const std::string& ns,
    const std::function<bool(const core::Cidr&)>& poolWanted,
    const std::function<bool(const core::IpAddress&, const core::Owner&)>& want);

// The entry's pod now, as core's release rule reads it and as people read it.
struct PodSeen {
    std::optional<core::PodState> state;  // nullopt: no such pod, or the entry names none
    // running, pending, terminal, gone (no such pod), replaced (a pod of that name with
    // another UID), unknown (no pod recorded), or the pod's phase.
    std::string label;
    const core::PodState* get() const { return state ? &*state : nullptr; }
};
// `nodes`, when given, fills the state's Node fields (deleted, NotReady). `pod` gets the pod
// when it exists.
Result<PodSeen> seePod(cluster::Cluster& c, const core::Owner& owner,
                       const core::NodeIndex* nodes = nullptr,
                       std::optional<cluster::PodInfo>* pod = nullptr);

// {name, exists, agrees, podRef, containerID} of the entry's OverlappingRangeIPReservation.
Result<json::Value> reservationJson(cluster::Cluster& c, const std::string& ns, const Holding& h);

// The entry's fields as documented (ip, pool, offset, containerID, podRef, interface, node,
// podUID, network).
json::Value holdingJson(const Holding& h);

// An API error as the user sees it: the message on `err`, kExitError.
int apiError(Env& env, const std::string& what, const core::Error& e);

}  // namespace allot::cli
