#include "core/ip_range.h"

#include <algorithm>

namespace allot::core {

namespace {

Error cfgError(const std::string& key, const std::string& value, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\": \"" + value + "\" " + why);
}

}  // namespace

Result<IpRange> IpRange::fromSpec(const RangeSpec& spec, const std::string& key) {
    IpRange r;
    if (spec.range.empty()) return makeError(Errc::InvalidConfig, "\"" + key + "\" is required");

    std::string cidrText = spec.range;
    std::optional<IpAddress> dashStart, dashEnd;
    // "A-B/prefix": a CIDR given by its first address, narrowed to A..B.
    if (auto dash = spec.range.find('-'); dash != std::string::npos) {
        auto slash = spec.range.find('/', dash);
        if (slash == std::string::npos) return cfgError(key, spec.range, "is not a CIDR or A-B/prefix");
        auto a = IpAddress::parse(spec.range.substr(0, dash));
        auto b = IpAddress::parse(spec.range.substr(dash + 1, slash - dash - 1));
        if (!a) return cfgError(key, spec.range, "has an invalid start: " + a.error().message);
        if (!b) return cfgError(key, spec.range, "has an invalid end: " + b.error().message);
        dashStart = *a;
        dashEnd = *b;
        cidrText = spec.range.substr(0, dash) + spec.range.substr(slash);
    }
    auto cidr = Cidr::parse(cidrText, "\"" + key + "\"");
    if (!cidr) return cidr.error();
    r.cidr_ = *cidr;

    const int bits = r.cidr_.network().bits();
    const bool pointToPoint = r.cidr_.length() >= bits - 1;  // /31,/32,/127,/128: RFC 3021
    IpAddress lo = r.cidr_.first(), hi = r.cidr_.last();
    if (!pointToPoint) {
        lo = IpAddress(lo.family(), lo.value() + 1);
        hi = IpAddress(hi.family(), hi.value() - 1);
    }

    auto bound = [&](const std::string& text, const std::string& name,
                     std::optional<IpAddress> fallback) -> Result<std::optional<IpAddress>> {
        if (text.empty()) return fallback;
        auto ip = IpAddress::parse(text);
        if (!ip) return cfgError(name, text, "is not an IP address");
        if (!r.cidr_.contains(*ip)) return cfgError(name, text, "is outside " + r.cidr_.str());
        return std::optional<IpAddress>(*ip);
    };
    std::string base = key.size() > 5 && key.ends_with("range") ? key.substr(0, key.size() - 5) : "";
    if (dashStart && !r.cidr_.contains(*dashStart))
        return cfgError(key, spec.range, "has a start outside " + r.cidr_.str());
    if (dashEnd && !r.cidr_.contains(*dashEnd))
        return cfgError(key, spec.range, "has an end outside " + r.cidr_.str());
    auto s = bound(spec.rangeStart, base + "range_start", dashStart);
    if (!s) return s.error();
    auto e = bound(spec.rangeEnd, base + "range_end", dashEnd);
    if (!e) return e.error();
    r.start_ = s->value_or(lo);
    r.end_ = e->value_or(hi);
    // Network and broadcast are never handed out, even when range_start/range_end name them.
    if (r.start_ < lo) r.start_ = lo;
    if (r.end_ > hi) r.end_ = hi;
    if (r.end_ < r.start_) {
        if (!spec.rangeEnd.empty() || dashEnd) {
            return cfgError(spec.rangeEnd.empty() ? key : base + "range_end",
                            spec.rangeEnd.empty() ? spec.range : spec.rangeEnd,
                            "ends before the range start " + r.start_.str());
        }
        return cfgError(key, spec.range, "has no usable address");
    }

    for (size_t i = 0; i < spec.exclude.size(); ++i) {
        const std::string& ex = spec.exclude[i];
        std::string exKey = base + "exclude[" + std::to_string(i) + "]";
        if (ex.find('/') == std::string::npos) {
            auto ip = IpAddress::parse(ex);
            if (!ip) return cfgError(exKey, ex, "is not an IP address or CIDR");
            r.excludes_.emplace_back(*ip, ip->bits());
        } else {
            auto c = Cidr::parse(ex, "\"" + exKey + "\"");
            if (!c) return c.error();
            r.excludes_.push_back(*c);
        }
        if (r.excludes_.back().family() != r.cidr_.family())
            return cfgError(exKey, ex, "is not of the same IP family as " + r.cidr_.str());
    }
    std::sort(r.excludes_.begin(), r.excludes_.end(), [](const Cidr& a, const Cidr& b) {
        return a.first().value() < b.first().value();
    });
    if (r.capacity() == 0) return cfgError(key, spec.range, "has no usable address after exclude");
    return r;
}

bool IpRange::excluded(const IpAddress& ip) const {
    return std::any_of(excludes_.begin(), excludes_.end(),
                       [&](const Cidr& c) { return c.contains(ip); });
}

bool IpRange::allocatable(const IpAddress& ip) const {
    return ip.family() == family() && !(ip < start_) && !(end_ < ip) && !excluded(ip);
}

bool IpRange::isNetworkOrBroadcast(const IpAddress& ip) const {
    if (cidr_.length() >= cidr_.network().bits() - 1) return false;
    return ip == cidr_.first() || ip == cidr_.last();
}

u128 IpRange::capacity() const {
    const u128 cap = u128(1) << 64;
    u128 total = end_.value() - start_.value();
    if (total >= cap) return cap;
    total += 1;
    // Subtract excluded addresses inside [start, end]; excludes may overlap each other.
    u128 cursor = start_.value();
    for (const Cidr& c : excludes_) {
        u128 a = std::max(c.first().value(), cursor);
        u128 b = std::min(c.last().value(), end_.value());
        if (a > b) continue;
        total -= (b - a + 1);
        if (b == end_.value()) break;
        cursor = b + 1;
    }
    return total;
}

}  // namespace allot::core
