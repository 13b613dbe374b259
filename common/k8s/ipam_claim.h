#pragma once
// IPAMClaim objects (k8s.cni.cncf.io/v1alpha1, the CRD of github.com/k8snetworkplumbingwg/
// ipamclaims, deploy/optional/) as the plugin and allot-gc read and write them. Decisions on a
// claim are core's (core/ipam_claim.h); this is the object's JSON.

#include "core/ipam_claim.h"
#include "core/result.h"
#include "json/json.h"
#include "k8s_api/resources.h"
#include "k8s_api/timestamp.h"

namespace allot::k8s {

inline constexpr Resource kIPAMClaim{"k8s.cni.cncf.io", "v1alpha1", "ipamclaims", "IPAMClaim"};

// metadata.namespace/name, spec.network and status.ips. Invalid naming the field when one has
// the wrong type (status.ips not a list of strings, ...); at most 16 addresses are read (a
// claim holds one per range, and a network has at most 16).
core::Result<core::IpamClaimView> ipamClaimView(const json::Value& claim);

// `claim` (as read, with its resourceVersion) with status.ips, status.ownerPod.name and the
// IPsAllocated condition set as `st` says; other conditions are kept, and the condition's
// lastTransitionTime only moves when its status changes.
json::Value withClaimStatus(json::Value claim, const core::ClaimStatus& st, SystemTime now);

}  // namespace allot::k8s
