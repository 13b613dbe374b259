#pragma once
// Object names derived exactly as Whereabouts derives them, so each tool finds the other's
// pools and reservations.

#include <string>
#include <utility>
#include <vector>

#include "core/ip.h"
#include "core/ip_range.h"

namespace allot::core {

// "10.0.0.0/24" -> "10.0.0.0-24"; "fd00::/64" -> "fd00---64": ':' and '/' become '-'.
std::string normalizeRange(const std::string& cidr);

// IPPool name: [network_name-]normalized range; in node-slice mode (nodeName set, range is the
// node's slice) [network_name-]node-normalized range.
std::string poolName(const Cidr& range, const std::string& networkName,
                     const std::string& nodeName);

// Node slices kept in several IPPools (node_slice_parts): part 0 is the slice's own pool
// (poolName, which Whereabouts' plugin reads), part k > 0 "<that name>-part-<k>". Every part's
// spec.range is the whole slice; part k holds the k-th of `parts` equal blocks of its addresses.
std::string slicePartPoolName(const std::string& slicePool, int part);
// The other way: the slice's own pool and the part a pool's name gives. "<x>-part-<k>" (k from 1
// to kMaxSliceParts - 1, as slicePartPoolName writes it) is {x, k}; any other name {name, 0}.
// Every part stands for its slice's pool wherever a pool name is read back: the network name
// in its reservations' names, the node whose slice it holds.
std::pair<std::string, int> slicePartOf(const std::string& pool);
// The other way from poolName: the network_name values a pool's name can stand for, so that
// the reservations of its addresses can be found by name. `pool` is [network_name-][node-]
// normalized range (or part k of that, slicePartOf); `range` its spec.range; `node` the node an
// entry names (a node-slice pool's name holds it). Every reading the name allows is listed,
// most specific first: "blue-worker-1-10.0.3.0-24" of worker-1 is {"blue", "blue-worker-1"}. A
// name that is not a pool name of this range, or a range that does not parse, stands for "".
std::vector<std::string> networkNamesOf(const std::string& pool, const std::string& range,
                                        const std::string& node);
// The addresses of part `part` (0-based) of `slice` cut in `parts` (a power of two, at most the
// slice's address count).
Result<IpRange> slicePartRange(const Cidr& slice, int parts, int part);

// OverlappingRangeIPReservation name for an IP: IPv6 ':' -> '-', with the network_name prefix.
std::string reservationName(const IpAddress& ip, const std::string& networkName);

}  // namespace allot::core
