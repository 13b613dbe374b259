#pragma once
// CHECK inside the container: reads the interface's addresses through netlink (libnl-route).
// The only user of libnl.

#include <string>
#include <vector>

#include "plugin/cni_result.h"

namespace allot::plugin {

// Enters the network namespace at `netnsPath` (this thread) and confirms `ifName` exists and
// carries every address in `ips`. Errors name the missing interface or address.
core::Result<void> checkInterfaceAddresses(const std::string& netnsPath, const std::string& ifName,
                                           const std::vector<engine::IpResult>& ips);

}  // namespace allot::plugin
