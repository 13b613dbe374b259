#include "core/ip.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace allot::core {

std::string u128ToString(u128 v) {
    if (v == 0) return "0";
    std::string out;
    while (v != 0) {
        out.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
        v /= 10;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::optional<u128> u128FromString(std::string_view s) {
    if (s.empty() || s.size() > 39) return std::nullopt;
    u128 v = 0;
    const u128 max = ~u128(0);
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        unsigned d = static_cast<unsigned>(c - '0');
        if (v > (max - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

namespace {

Error badIp(std::string_view text, const char* why) {
    return makeError(Errc::InvalidConfig,
                     "invalid IP address \"" + std::string(text) + "\": " + why);
}

// Strict: no empty octet, no leading zero (ambiguous octal), at most 3 digits. Sloppy (Go before
// 1.17, kept by Kubernetes): any number of digits, leading zeros read as decimal.
std::optional<uint32_t> parseV4(std::string_view s, bool sloppy = false) {
    uint32_t out = 0;
    int parts = 0;
    size_t i = 0;
    while (parts < 4) {
        size_t j = i;
        unsigned octet = 0;
        while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
            octet = octet * 10 + static_cast<unsigned>(s[j] - '0');
            if (octet > 255) return std::nullopt;
            ++j;
        }
        size_t len = j - i;
        if (len == 0) return std::nullopt;
        if (!sloppy && (len > 3 || (len > 1 && s[i] == '0'))) return std::nullopt;
        out = (out << 8) | octet;
        ++parts;
        if (parts < 4) {
            if (j >= s.size() || s[j] != '.') return std::nullopt;
            i = j + 1;
        } else if (j != s.size()) {
            return std::nullopt;
        }
    }
    return out;
}

std::optional<u128> parseV6(std::string_view s, bool sloppy = false) {
    std::array<uint16_t, 8> groups{};
    int count = 0;
    int gap = -1;  // index where "::" sits
    size_t i = 0;
    if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
        gap = 0;
        i = 2;
        if (i == s.size()) return u128(0);
    } else if (!s.empty() && s[0] == ':') {
        return std::nullopt;
    }
    while (i < s.size()) {
        if (count >= 8) return std::nullopt;
        size_t j = i;
        while (j < s.size() && std::isxdigit(static_cast<unsigned char>(s[j]))) ++j;
        if (j < s.size() && s[j] == '.') {
            // Embedded IPv4 in the last 32 bits.
            if (count > 6) return std::nullopt;
            auto v4 = parseV4(s.substr(i), sloppy);
            if (!v4) return std::nullopt;
            groups[count++] = static_cast<uint16_t>(*v4 >> 16);
            groups[count++] = static_cast<uint16_t>(*v4 & 0xffff);
            i = s.size();
            break;
        }
        size_t len = j - i;
        // Leading zeros up to 4 digits are fine; sloppy takes any number while the value fits.
        if (len == 0 || (len > 4 && !sloppy)) return std::nullopt;
        unsigned g = 0;
        for (size_t k = i; k < j; ++k) {
            char c = s[k];
            unsigned d = c <= '9' ? unsigned(c - '0') : unsigned((c | 0x20) - 'a' + 10);
            g = g * 16 + d;
            if (g > 0xffff) return std::nullopt;
        }
        groups[count++] = static_cast<uint16_t>(g);
        if (j == s.size()) {
            i = j;
            break;
        }
        if (s[j] != ':') return std::nullopt;
        if (j + 1 < s.size() && s[j + 1] == ':') {
            if (gap >= 0) return std::nullopt;  // two "::"
            gap = count;
            i = j + 2;
            if (i == s.size()) break;  // "::"-ending form
        } else {
            i = j + 1;
            if (i == s.size()) return std::nullopt;  // trailing single ':'
        }
    }
    if (gap < 0 && count != 8) return std::nullopt;
    if (gap >= 0 && count > 7) return std::nullopt;
    std::array<uint16_t, 8> full{};
    if (gap >= 0) {
        int tail = count - gap;
        for (int k = 0; k < gap; ++k) full[k] = groups[k];
        for (int k = 0; k < tail; ++k) full[8 - tail + k] = groups[gap + k];
    } else {
        full = groups;
    }
    u128 v = 0;
    for (uint16_t g : full) v = (v << 16) | g;
    return v;
}

}  // namespace

Result<IpAddress> IpAddress::parse(std::string_view text) {
    if (text.empty()) return badIp(text, "empty");
    if (text.size() > 45) return badIp(text.substr(0, 45), "too long");
    if (text.find(':') != std::string_view::npos) {
        auto v = parseV6(text);
        if (!v) return badIp(text, "not an IPv6 address");
        return IpAddress(Family::V6, *v);
    }
    auto v = parseV4(text);
    if (!v) return badIp(text, "not an IPv4 address");
    return IpAddress(Family::V4, *v);
}

namespace {

// Go keeps an IPv4 address as its IPv4-mapped IPv6 form and calls both IPv4.
IpAddress unmapped(Family f, u128 v) {
    if (f == Family::V6 && (v >> 32) == 0xffff)
        return IpAddress::v4(static_cast<uint32_t>(v & 0xffffffffu));
    return IpAddress(f, v);
}

}  // namespace

Result<IpAddress> parseGoIp(std::string_view text, IpSyntax syntax) {
    const bool sloppy = syntax == IpSyntax::Sloppy;
    // Go picks the grammar by the first '.' or ':' it meets.
    size_t sep = text.find_first_of(".:");
    if (text.empty()) return badIp(text, "empty");
    if (text.size() > 64) return badIp(text.substr(0, 64), "too long");
    if (sep != std::string_view::npos && text[sep] == ':') {
        auto v = parseV6(text, sloppy);
        if (!v) return badIp(text, "not an IPv6 address");
        return unmapped(Family::V6, *v);
    }
    auto v = parseV4(text, sloppy);
    if (!v) return badIp(text, "not an IPv4 address");
    return IpAddress::v4(*v);
}

Result<GoCidr> parseGoCidr(std::string_view text, IpSyntax syntax) {
    const bool sloppy = syntax == IpSyntax::Sloppy;
    auto fail = [&](const char* why) {
        return makeError(Errc::InvalidConfig, "\"" + std::string(text.substr(0, 64)) + "\" " + why);
    };
    if (text.size() > 80) return fail("is too long");
    size_t slash = text.find('/');
    if (slash == std::string_view::npos) return fail("is not a CIDR (missing /prefix)");
    std::string_view addr = text.substr(0, slash), lenText = text.substr(slash + 1);
    // Go tries IPv4 first, then IPv6; an IPv4-mapped IPv6 address keeps 128-bit prefixes.
    Family f = Family::V4;
    u128 value = 0;
    if (auto v4 = parseV4(addr, sloppy)) {
        value = *v4;
    } else if (auto v6 = addr.find(':') != std::string_view::npos ? parseV6(addr, sloppy)
                                                                  : std::nullopt) {
        f = Family::V6;
        value = *v6;
    } else {
        return fail("has an invalid address");
    }
    int bits = f == Family::V4 ? 32 : 128;
    int len = 0;
    if (lenText.empty()) return fail("has an invalid prefix length");
    for (char c : lenText) {
        if (c < '0' || c > '9') return fail("has an invalid prefix length");
        len = len * 10 + (c - '0');
        if (len > bits) return fail("has an invalid prefix length");
    }
    Cidr net(IpAddress(f, value), len);
    if (f == Family::V6 && len >= 96 && (net.network().value() >> 32) == 0xffff)
        net = Cidr(IpAddress::v4(static_cast<uint32_t>(net.network().value() & 0xffffffffu)),
                   len - 96);
    return GoCidr{unmapped(f, value), net};
}

std::string IpAddress::str() const {
    if (isV4()) {
        uint32_t v = static_cast<uint32_t>(value_);
        return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xff) + "." +
               std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
    }
    std::array<uint16_t, 8> g{};
    for (int k = 0; k < 8; ++k) g[k] = static_cast<uint16_t>(value_ >> (112 - 16 * k));
    // RFC 5952: compress the longest run (>= 2) of zero groups, the first if tied.
    int bestStart = -1, bestLen = 0;
    for (int k = 0; k < 8;) {
        if (g[k] != 0) {
            ++k;
            continue;
        }
        int start = k;
        while (k < 8 && g[k] == 0) ++k;
        if (k - start > bestLen) {
            bestLen = k - start;
            bestStart = start;
        }
    }
    if (bestLen < 2) bestStart = -1;
    // IPv4-mapped addresses are written with a dotted tail, as Go and inet_ntop do.
    bool mapped = g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 0 && g[4] == 0 && g[5] == 0xffff;
    std::string out;
    char buf[8];
    int limit = mapped ? 6 : 8;
    for (int k = 0; k < limit;) {
        if (k == bestStart) {
            out += "::";
            k += bestLen;
            continue;
        }
        if (!out.empty() && out.back() != ':') out += ':';
        auto [p, ec] = std::to_chars(buf, buf + sizeof buf, g[k], 16);
        out.append(buf, p);
        ++k;
    }
    if (mapped) {
        if (out.back() != ':') out += ':';
        out += IpAddress::v4(static_cast<uint32_t>(value_ & 0xffffffffu)).str();
    }
    return out;
}

Cidr::Cidr(IpAddress network, int length) : length_(length) {
    int bits = network.bits();
    u128 mask = length == 0 ? 0 : (network.maxValue() << (bits - length)) & network.maxValue();
    if (length >= bits) mask = network.maxValue();
    network_ = IpAddress(network.family(), network.value() & mask);
}

u128 Cidr::hostMask() const {
    int bits = network_.bits();
    if (length_ >= bits) return 0;
    if (length_ == 0) return network_.maxValue();
    return network_.maxValue() >> length_;
}

IpAddress Cidr::last() const {
    return IpAddress(family(), network_.value() | hostMask());
}

bool Cidr::contains(const IpAddress& ip) const {
    return ip.family() == family() && (ip.value() & ~hostMask()) == network_.value();
}

bool Cidr::overlaps(const Cidr& other) const {
    return other.family() == family() && (contains(other.network_) || other.contains(network_));
}

std::string Cidr::str() const {
    return network_.str() + "/" + std::to_string(length_);
}

Result<Cidr> Cidr::parse(std::string_view text, std::string_view what) {
    auto slash = text.find('/');
    if (slash == std::string_view::npos) {
        return makeError(Errc::InvalidConfig, std::string(what) + ": \"" + std::string(text) +
                                                  "\" is not a CIDR (missing /prefix)");
    }
    auto ip = IpAddress::parse(text.substr(0, slash));
    if (!ip) {
        return makeError(Errc::InvalidConfig, std::string(what) + ": \"" + std::string(text) +
                                                  "\": " + ip.error().message);
    }
    std::string_view lenText = text.substr(slash + 1);
    int len = -1;
    auto [p, ec] = std::from_chars(lenText.data(), lenText.data() + lenText.size(), len);
    if (lenText.empty() || lenText.size() > 3 || ec != std::errc() ||
        p != lenText.data() + lenText.size() || len < 0 || len > ip->bits()) {
        return makeError(Errc::InvalidConfig, std::string(what) + ": \"" + std::string(text) +
                                                  "\" has an invalid prefix length");
    }
    return Cidr(*ip, len);
}

}  // namespace allot::core
