#pragma once
// ADD of an address a pod does not own alone: an IPAMClaim's (a network with
// "allowPersistentIPs": true, issue 18) or a sticky StatefulSet member's (sticky_statefulsets).
// The claim reference is args.cni's "ipam-claim-reference", else the one in the pod's
// network-selection element for this interface (Multus does not pass that key on), read by
// cni::claimReference as allot-gc reads it. Releases need nothing here: an entry owned by a
// claim is kept by every pod-scoped release (core/ownership.h), and allot-gc frees it when the
// claim is deleted; the set owns its members' entries, and allot-gc frees them on a confirmed
// read of the set.

#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/config.h"
#include "engine/context.h"
#include "engine/ipam_claim_api.h"

namespace allot::engine {

// The IPAMClaim ("namespace/name") this call's pod references for this interface (args.cni
// first, then the pod's selection element); "" when none. Errors as addOwned's.
core::Result<std::string> claimOf(const cni::NetConf& net, IpamClaimApi& api, const PodCall& call);

// ADD for a network with allowPersistentIPs or sticky_statefulsets (else an ordinary ADD).
// The pod is read once (through the relay when it is up). A claim referenced (args.cni first,
// then the pod's selection element): a claim that does not exist (yet) is Transient (CNI 11,
// the runtime retries); one whose status lists addresses gets exactly those (already held for
// the claim by another pod: shared); an empty one is allocated as usual, owned by the claim,
// then written to its status; Exhausted also writes IPsAllocated=False (SubnetExhausted).
// No claim, sticky_statefulsets and a member of a StatefulSet (its controller, and a name
// "<set>-<ordinal>"): the address is owned by the set (core/sticky.h). A pod not found is
// Transient. InvalidConfig for a malformed networks annotation, a bad reference, or a status
// address outside the network's ranges. What the caller should log (the claim's warnings, a
// status left unwritten) is in ctx.report.warnings.
core::Result<std::vector<IpResult>> addOwned(Context& ctx, const core::ValidatedConfig& cfg,
                                             const cni::NetConf& net, core::Owner owner,
                                             std::vector<core::IpAddress> requested,
                                             IpamClaimApi& api, const PodCall& call);

}  // namespace allot::engine
