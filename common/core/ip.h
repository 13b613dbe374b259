#pragma once
// IPv4/IPv6 addresses and prefixes over 128-bit integers. Pure: no sockets, no libc parsing.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace allot::core {

__extension__ typedef unsigned __int128 u128;

enum class Family { V4, V6 };

// Decimal text of a 128-bit value, and back (rejecting signs, blanks, leading '+', overflow).
std::string u128ToString(u128 v);
std::optional<u128> u128FromString(std::string_view s);

class IpAddress {
  public:
    IpAddress() = default;
    IpAddress(Family family, u128 value) : family_(family), value_(value) {}
    static IpAddress v4(uint32_t v) { return IpAddress(Family::V4, v); }

    // Accepts dotted-quad IPv4 and RFC 4291 IPv6 text (including embedded IPv4 and "::").
    // IPv4-mapped IPv6 (::ffff:a.b.c.d) stays IPv6, as it is written.
    static Result<IpAddress> parse(std::string_view text);

    Family family() const { return family_; }
    bool isV4() const { return family_ == Family::V4; }
    int bits() const { return isV4() ? 32 : 128; }
    u128 value() const { return value_; }
    u128 maxValue() const { return isV4() ? u128(0xffffffffu) : ~u128(0); }

    // Canonical text: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run as "::").
    std::string str() const;

    friend bool operator==(const IpAddress&, const IpAddress&) = default;
    friend std::strong_ordering operator<=>(const IpAddress& a, const IpAddress& b) {
        if (a.family_ != b.family_) return a.family_ <=> b.family_;
        return a.value_ == b.value_  ? std::strong_ordering::equal
               : a.value_ < b.value_ ? std::strong_ordering::less
                                     : std::strong_ordering::greater;
    }

  private:
    Family family_ = Family::V4;
    u128 value_ = 0;
};

// A network prefix. Host bits are dropped on parse: "192.168.2.225/28" is 192.168.2.224/28.
class Cidr {
  public:
    Cidr() = default;
    Cidr(IpAddress network, int length);  // masks host bits of `network`

    // "addr/len". `what` names the configuration key in error messages.
    static Result<Cidr> parse(std::string_view text, std::string_view what = "CIDR");

    const IpAddress& network() const { return network_; }
    int length() const { return length_; }
    Family family() const { return network_.family(); }
    IpAddress first() const { return network_; }
    IpAddress last() const;
    bool contains(const IpAddress& ip) const;
    bool overlaps(const Cidr& other) const;
    // Offset of `ip` from the network address (ip must be contained).
    u128 offsetOf(const IpAddress& ip) const { return ip.value() - network_.value(); }
    IpAddress at(u128 offset) const { return IpAddress(family(), network_.value() + offset); }
    u128 hostMask() const;

    std::string str() const;  // canonical "network/len"

    friend bool operator==(const Cidr&, const Cidr&) = default;

  private:
    IpAddress network_;
    int length_ = 0;
};

// Whereabouts reads IP literals with Go: `Sloppy` is k8s.io/utils' ParseIPSloppy/ParseCIDRSloppy
// (any number of leading zeros in a decimal octet or a hex group), `Strict` is Go's net.ParseIP /
// net.ParseCIDR (no leading zeros, at most 4 hex digits a group). Unlike IpAddress::parse, both
// read an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address, as Go does.
enum class IpSyntax { Strict, Sloppy };

Result<IpAddress> parseGoIp(std::string_view text, IpSyntax syntax);

// Go's ParseCIDR: the address as written and its network. A prefix length may carry leading
// zeros ("/024"). An IPv4-mapped address with a prefix of 96 or more is the IPv4 network of
// prefix - 96 ("::ffff:10.0.0.0/120" is 10.0.0.0/24); with a shorter prefix the mapping is
// masked away and it is an IPv6 network, as in Go.
struct GoCidr {
    IpAddress ip;
    Cidr net;
};
Result<GoCidr> parseGoCidr(std::string_view text, IpSyntax syntax);

}  // namespace allot::core
