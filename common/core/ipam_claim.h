#pragma once
// IPAMClaim (k8s.cni.cncf.io/v1alpha1, issue 18) as an ADD decides on it: given the claim a pod
// references, which addresses the ADD must hold. Reading the claim and writing its status are
// the plugin's; this layer only decides.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ip.h"
#include "core/ip_range.h"
#include "core/result.h"

namespace allot::core {

// The parts of an IPAMClaim an ADD reads.
struct IpamClaimView {
    std::string ref;               // "namespace/name", for messages
    std::string network;           // spec.network
    std::vector<std::string> ips;  // status.ips, CIDR form ("10.0.0.5/24"); a bare IP is read too
};

struct ClaimPlan {
    // status.ips empty: allocate as usual, then record the addresses in the claim's status.
    bool allocate = false;
    // Otherwise the address each range (in config order) must hold, exactly; nullopt for a
    // range the claim has no address in (allocated as usual, then added to the status).
    std::vector<std::optional<IpAddress>> perRange;
    std::vector<std::string> warnings;  // spec.network naming another network
};

// What allot writes to an IPAMClaim's status (through the status subresource): the addresses
// in CIDR form, the pod that allocated them, and the condition IPsAllocated.
struct ClaimStatus {
    std::vector<std::string> ips;
    std::string ownerPod;  // status.ownerPod.name; empty: left as it is
    bool allocated = true;
    std::string reason;  // the condition's reason (CamelCase, required by the CRD)
    std::string message;
};
inline constexpr std::string_view kIpsAllocated = "IPsAllocated";
inline constexpr std::string_view kReasonAllocated = "SuccessfulAllocation";
inline constexpr std::string_view kReasonExhausted = "SubnetExhausted";

// The claim a pod's reference names: an object name (DNS-1123 subdomain) in the pod's
// namespace. InvalidConfig naming `source` (where the reference came from) otherwise.
Result<std::string> claimName(std::string_view ref, std::string_view source);

// InvalidConfig (naming the claim and the value) when a status address cannot be read, lies
// outside every range of the network (or is not allocatable in it), or two fall in one range.
// A claim whose spec.network is not `network` is used, with a warning (KubeVirt names the
// NetworkAttachmentDefinition, which need not be the CNI network name).
Result<ClaimPlan> planClaim(const IpamClaimView& claim, std::string_view network,
                            const std::vector<IpRange>& ranges);

}  // namespace allot::core
