#pragma once
// What the engine's owned ADD (engine/owned_add.h) asks of the Kubernetes API: the pod (its
// networks annotation and its StatefulSet), an IPAMClaim and the claim's status. The plugin
// wires it over its client (plugin/claim_api_k8s.h); tests over memory.

#include <optional>
#include <string>
#include <vector>

#include "core/ipam_claim.h"
#include "core/result.h"
#include "core/sticky.h"

namespace allot::engine {

// The parts of a pod an ADD reads.
struct PodFacts {
    std::string networks;  // k8s.v1.cni.cncf.io/networks; "" when it has none
    // Its controller, when that is a StatefulSet (sticky_statefulsets, core/sticky.h).
    std::optional<core::StatefulSetRef> statefulSet;
};

// The API calls an ADD with a claim or a sticky StatefulSet makes. Errors as k8s::Client's
// (NotFound, Forbidden, Transient, ...).
class IpamClaimApi {
  public:
    virtual ~IpamClaimApi() = default;
    virtual core::Result<PodFacts> pod(const std::string& ns, const std::string& name) = 0;
    virtual core::Result<core::IpamClaimView> claim(const std::string& ns,
                                                    const std::string& name) = 0;
    // Writes the claim's status through the status subresource, re-reading it on Conflict
    // (engine::RetryPolicy, until the call's deadline). Conflict when a re-read shows other
    // addresses written meanwhile: they are never overwritten.
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

// The pod and interface an owned ADD is for.
struct PodCall {
    std::string podNamespace, podName, ifName;
};

}  // namespace allot::engine
