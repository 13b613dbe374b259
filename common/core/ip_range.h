#pragma once
// One allocatable range: a CIDR narrowed by range_start/range_end and holes from exclude.

#include <optional>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/result.h"

namespace allot::core {

// A range entry as written in the configuration (top-level keys or one ipRanges item).
struct RangeSpec {
    std::string range;       // "10.0.0.0/24" or "10.0.0.10-10.0.0.20/24"
    std::string rangeStart;  // optional
    std::string rangeEnd;    // optional
    std::vector<std::string> exclude;  // CIDRs or bare IPs
};

class IpRange {
public:
    // Validates a spec. `key` is how the spec is named in errors ("range", "ipRanges[1].range").
    static Result<IpRange> fromSpec(const RangeSpec& spec, const std::string& key);

    const Cidr& cidr() const { return cidr_; }
    Family family() const { return cidr_.family(); }
    // First and last allocatable addresses (network and broadcast already removed).
    const IpAddress& start() const { return start_; }
    const IpAddress& end() const { return end_; }
    const std::vector<Cidr>& excludes() const { return excludes_; }

    bool excluded(const IpAddress& ip) const;
    // Inside [start, end] and not excluded. Does not know about the gateway.
    bool allocatable(const IpAddress& ip) const;
    bool isNetworkOrBroadcast(const IpAddress& ip) const;
    // Number of allocatable addresses, saturated at 2^64 for huge IPv6 ranges.
    u128 capacity() const;

private:
    Cidr cidr_;
    IpAddress start_, end_;
    std::vector<Cidr> excludes_;
};

}  // namespace allot::core
