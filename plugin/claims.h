#pragma once
// IPAMClaim on ADD (issue 18): a network with "allowPersistentIPs": true gives a pod that
// references a claim the claim's addresses. The reference is args.cni's
// "ipam-claim-reference", else the one in the pod's network-selection element for this
// interface (Multus does not pass that key on), read by cni::claimReference as allot-gc reads it.
// Releases need nothing here: an entry owned by a claim is kept by every pod-scoped release
// (core/ownership.h), and allot-gc frees it when the claim is deleted. Sticky StatefulSet addresses
// (sticky_statefulsets) ride on the same mechanism: the set owns its members' entries, and allot-gc
// frees them on a confirmed read of the set (gc-sidecar/leader/claim_gc.h).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/ipam_claim.h"
#include "core/sticky.h"
#include "engine/context.h"
#include "log/log.h"

namespace allot::k8s {
class Client;
}

namespace allot::plugin {

// The parts of a pod an ADD reads.
struct PodFacts {
    std::string networks;  // k8s.v1.cni.cncf.io/networks; "" when it has none
    // Its controller, when that is a StatefulSet (sticky_statefulsets, core/sticky.h).
    std::optional<core::StatefulSetRef> statefulSet;
};

// The API calls an ADD with a claim or a sticky StatefulSet makes. Errors as k8s::Client's
// (NotFound, Forbidden, Transient, ...).
class ClaimApi {
  public:
    virtual ~ClaimApi() = default;
    virtual core::Result<PodFacts> pod(const std::string& ns, const std::string& name) = 0;
    virtual core::Result<core::IpamClaimView> claim(const std::string& ns,
                                                    const std::string& name) = 0;
    // Writes the claim's status through the status subresource, re-reading it on Conflict
    // (engine::RetryPolicy, until `deadline`). Conflict when a re-read shows other addresses
    // written meanwhile: they are never overwritten.
    virtual core::Result<void> setStatus(const std::string& ns, const std::string& name,
                                         const core::ClaimStatus& st) = 0;
    // One write of `st` over the status claim() read, made alongside the caller on a
    // connection of its own: true when started, and then awaitStatus() is called before any
    // other call here. False when it cannot be (no node relay: a second direct connection
    // costs more than it saves), and nothing was started.
    virtual bool startStatus(const std::string& ns, const std::string& name,
                             const core::ClaimStatus& st) = 0;
    // The started write's result. A Conflict is not re-read here: setStatus does that. After
    // a success, setStatus and restoreStatus start from what it wrote.
    virtual core::Result<void> awaitStatus() = 0;
    // Writes back the status claim() read over one that startStatus wrote with `ips` (an ADD
    // that wrote it early, then failed; its answer may have been lost: the claim is then read
    // again). A status that no longer holds `ips` is left alone, as is one written meanwhile
    // by someone else (Conflict).
    virtual core::Result<void> restoreStatus(const std::string& ns, const std::string& name,
                                             const std::vector<std::string>& ips) = 0;
};

// Over the plugin's client (through allot-gc's node relay when it is up). `client` must
// outlive the result.
std::unique_ptr<ClaimApi> makeK8sClaimApi(k8s::Client& client, engine::Clock::time_point deadline);

struct ClaimCall {
    std::string podNamespace, podName, ifName;
    logging::Logger* log = nullptr;
};

// The IPAMClaim ("namespace/name") this call's pod references for this interface (args.cni
// first, then the pod's selection element); "" when none. Errors as addOwned's.
core::Result<std::string> claimOf(const cni::NetConf& net, ClaimApi& api, const ClaimCall& call);

// ADD for a network with allowPersistentIPs or sticky_statefulsets (else an ordinary ADD).
// The pod is read once (through the relay when it is up). A claim referenced (args.cni first,
// then the pod's selection element): a claim that does not exist (yet) is Transient (CNI 11,
// the runtime retries); one whose status lists addresses gets exactly those (already held for
// the claim by another pod: shared); an empty one is allocated as usual, owned by the claim,
// then written to its status; Exhausted also writes IPsAllocated=False (SubnetExhausted).
// No claim, sticky_statefulsets and a member of a StatefulSet (its controller, and a name
// "<set>-<ordinal>"): the address is owned by the set (core/sticky.h). A pod not found is
// Transient. InvalidConfig for a malformed networks annotation, a bad reference, or a status
// address outside the network's ranges.
core::Result<std::vector<engine::IpResult>> addOwned(engine::Context& ctx,
                                                     const core::ValidatedConfig& cfg,
                                                     const cni::NetConf& net, core::Owner owner,
                                                     std::vector<core::IpAddress> requested,
                                                     ClaimApi& api, const ClaimCall& call);

}  // namespace allot::plugin
