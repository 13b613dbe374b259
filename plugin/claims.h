#pragma once
// IPAMClaim on ADD (issue 18): a network with "allowPersistentIPs": true gives a pod that
// references a claim the claim's addresses. The reference is args.cni's
// "ipam-claim-reference", else the one in the pod's network-selection element for this
// interface (Multus does not pass that key on). Releases need nothing here: an entry owned by
// a claim is kept by every pod-scoped release (core/ownership.h), and allot-gc frees it when
// the claim is deleted.

#include <memory>
#include <string>
#include <vector>

#include "core/ipam_claim.h"
#include "log/log.h"
#include "plugin/ipam.h"

namespace allot::k8s {
class Client;
}

namespace allot::plugin {

// The API calls an ADD with a claim makes. Errors as k8s::Client's (NotFound, Forbidden,
// Transient, ...).
class ClaimApi {
  public:
    virtual ~ClaimApi() = default;
    // The pod's k8s.v1.cni.cncf.io/networks annotation; "" when it has none.
    virtual core::Result<std::string> podNetworks(const std::string& ns,
                                                  const std::string& name) = 0;
    virtual core::Result<core::IpamClaimView> claim(const std::string& ns,
                                                    const std::string& name) = 0;
    // Writes the claim's status through the status subresource, re-reading it on Conflict
    // (engine::RetryPolicy, until `deadline`). Conflict when a re-read shows other addresses
    // written meanwhile: they are never overwritten.
    virtual core::Result<void> setStatus(const std::string& ns, const std::string& name,
                                         const core::ClaimStatus& st) = 0;
};

// Over the plugin's client (through allot-gc's node relay when it is up). `client` must
// outlive the result.
std::unique_ptr<ClaimApi> makeK8sClaimApi(k8s::Client& client, Clock::time_point deadline);

struct ClaimCall {
    std::string podNamespace, podName, ifName;
    logging::Logger* log = nullptr;
};

// ADD for a network with allowPersistentIPs. No claim referenced: an ordinary ADD. A claim
// that does not exist (yet): Transient (CNI 11, the runtime retries). A claim whose status
// lists addresses: exactly those (already held for the claim by another pod: shared). An
// empty one: allocated as usual, owned by the claim, then written to its status; Exhausted
// also writes IPsAllocated=False (SubnetExhausted). InvalidConfig for a malformed networks
// annotation, a bad reference, or a status address outside the network's ranges.
core::Result<CniResult> addWithClaim(EngineContext& ctx, const core::ValidatedConfig& cfg,
                                     const NetConf& net, core::Owner owner,
                                     std::vector<core::IpAddress> requested, ClaimApi& api,
                                     const ClaimCall& call);

}  // namespace allot::plugin
