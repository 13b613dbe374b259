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
    std::string range;                 // "10.0.0.0/24" or "10.0.0.10-10.0.0.20/24"
    std::string rangeStart;            // optional
    std::string rangeEnd;              // optional
    std::vector<std::string> exclude;  // CIDRs or bare IPs
};

// How range_start/range_end are read. Whereabouts decodes the top-level keys leniently (Go's
// sloppy parse; an unreadable value is dropped) and the ipRanges ones strictly (an unreadable
// value fails the whole configuration).
enum class BoundsSyntax { TopLevel, IpRangesEntry };

class IpRange {
  public:
    // Reads a spec the way Whereabouts v0.9.4 does. Errors (a range that is no CIDR, an A-B
    // whose A lies outside, an unreadable ipRanges bound) name `key` ("range",
    // "ipRanges[1].range"). A value Whereabouts ignores is ignored here too and described in
    // `warnings`: range_start/range_end outside the usable addresses or of the other family,
    // an end before the start, bounds given next to an A-B range, an exclude of the other
    // family. An exclude that is no CIDR or IP fails Whereabouts' ADD but not its DEL: it is
    // returned in `addError`, the range itself stays usable for DEL.
    static Result<IpRange> fromSpec(const RangeSpec& spec, const std::string& key,
                                    BoundsSyntax syntax = BoundsSyntax::IpRangesEntry,
                                    std::vector<std::string>* warnings = nullptr);

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
    // Number of allocatable addresses, saturated at 2^64 for huge IPv6 ranges (0 when the
    // excludes cover everything: Whereabouts accepts that and fails each ADD).
    u128 capacity() const;
    // Set when an exclude entry cannot be read: ADD fails with it, DEL does not.
    const std::optional<Error>& addError() const { return addError_; }

  private:
    Cidr cidr_;
    IpAddress start_, end_;
    std::vector<Cidr> excludes_;
    std::optional<Error> addError_;
};

}  // namespace allot::core
