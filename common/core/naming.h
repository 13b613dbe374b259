#pragma once
// Object names derived exactly as Whereabouts derives them, so each tool finds the other's
// pools and reservations.

#include <string>

#include "core/ip.h"

namespace allot::core {

// "10.0.0.0/24" -> "10.0.0.0-24"; "fd00::/64" -> "fd00---64": ':' and '/' become '-'.
std::string normalizeRange(const std::string& cidr);

// IPPool name: [network_name-]normalized range; in node-slice mode (nodeName set, range is the
// node's slice) [network_name-]node-normalized range.
std::string poolName(const Cidr& range, const std::string& networkName,
                     const std::string& nodeName);

// OverlappingRangeIPReservation name for an IP: IPv6 ':' -> '-', with the network_name prefix.
std::string reservationName(const IpAddress& ip, const std::string& networkName);

}  // namespace allot::core
