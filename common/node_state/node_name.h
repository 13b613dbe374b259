#pragma once
// Which node the plugin runs on.

#include <string>

namespace allot::node_state {

// NODENAME, then a "nodename" file beside the flat config / configuration_path, then
// /etc/cni/net.d/{allot.d,whereabouts.d}/nodename, then the host name.
std::string lookupNodeName(const std::string& envNodeName, const std::string& flatFile,
                           const std::string& configurationPath);

}  // namespace allot::node_state
