#pragma once
// The engine's IpamClaimApi (engine/ipam_claim_api.h) over the plugin's Kubernetes client:
// what an ADD on a network with allowPersistentIPs or sticky_statefulsets reads and writes.

#include <memory>

#include "engine/context.h"
#include "engine/ipam_claim_api.h"

namespace allot::k8s {
class Client;
}

namespace allot::plugin {

// Over the plugin's client (through allot-gc's node relay when it is up). `client` must
// outlive the result.
std::unique_ptr<engine::IpamClaimApi> makeK8sClaimApi(k8s::Client& client,
                                                      engine::Clock::time_point deadline);

}  // namespace allot::plugin
