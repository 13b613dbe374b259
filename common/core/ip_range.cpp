#include "core/ip_range.h"

#include <algorithm>

namespace allot::core {

namespace {

Error cfgError(const std::string& key, const std::string& value, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\": \"" + value + "\" " + why);
}

}  // namespace

Result<IpRange> IpRange::fromSpec(const RangeSpec& spec, const std::string& key, BoundsSyntax syntax,
                                  std::vector<std::string>* warnings) {
    auto warn = [&](std::string w) {
        if (warnings) warnings->push_back(std::move(w));
    };
    IpRange r;
    if (spec.range.empty()) return makeError(Errc::InvalidConfig, "\"" + key + "\" is required");
    const std::string base = key.size() > 5 && key.ends_with("range") ? key.substr(0, key.size() - 5) : "";
    const std::string startKey = base + "range_start", endKey = base + "range_end";

    // The bounds as written: leniently at the top level (unreadable: dropped), strictly in ipRanges.
    auto readBound = [&](const std::string& text, const std::string& name) -> Result<std::optional<IpAddress>> {
        if (text.empty()) return std::optional<IpAddress>();
        if (syntax == BoundsSyntax::TopLevel) {
            auto ip = parseGoIp(text, IpSyntax::Sloppy);
            if (!ip) {
                warn("\"" + name + "\": \"" + text + "\" is not an IP address: ignored, as Whereabouts does");
                return std::optional<IpAddress>();
            }
            return std::optional<IpAddress>(*ip);
        }
        auto ip = parseGoIp(text, IpSyntax::Strict);
        if (!ip) return cfgError(name, text, "is not an IP address");
        return std::optional<IpAddress>(*ip);
    };
    auto s = readBound(spec.rangeStart, startKey);
    if (!s) return s.error();
    auto e = readBound(spec.rangeEnd, endKey);
    if (!e) return e.error();
    std::optional<IpAddress> start = *s, end = *e;

    if (auto dash = spec.range.find('-'); dash != std::string::npos) {
        // "A-B/prefix": the network of B/prefix, from A to B. It replaces range_start/range_end.
        auto a = parseGoIp(spec.range.substr(0, dash), IpSyntax::Sloppy);
        if (!a) return cfgError(key, spec.range, "has an invalid start: " + a.error().message);
        auto b = parseGoCidr(spec.range.substr(dash + 1), IpSyntax::Sloppy);
        if (!b) return cfgError(key, spec.range, "is not A-B/prefix: " + b.error().message);
        if (!b->net.contains(*a)) return cfgError(key, spec.range, "has a start outside " + b->net.str());
        if (!spec.rangeStart.empty() || !spec.rangeEnd.empty())
            warn("\"" + startKey + "\"/\"" + endKey + "\" ignored: the A-B form of \"" + key + "\" (" +
                 spec.range + ") sets both, as in Whereabouts");
        r.cidr_ = b->net;
        start = *a;
        end = b->ip;
    } else {
        auto c = parseGoCidr(spec.range, IpSyntax::Sloppy);
        if (!c) return cfgError(key, spec.range, "is not a CIDR or A-B/prefix: " + c.error().message);
        r.cidr_ = c->net;
    }

    // Usable addresses: network and broadcast never, except that /31, /32, /127 and /128 hand out
    // every address (RFC 3021; Whereabouts refuses these ranges on ADD).
    const int bits = r.cidr_.network().bits();
    const bool pointToPoint = r.cidr_.length() >= bits - 1;
    IpAddress lo = r.cidr_.first(), hi = r.cidr_.last();
    if (!pointToPoint) {
        lo = IpAddress(lo.family(), lo.value() + 1);
        hi = IpAddress(hi.family(), hi.value() - 1);
    }
    auto within = [](const IpAddress& ip, const IpAddress& a, const IpAddress& b) {
        return ip.family() == a.family() && !(ip < a) && !(b < ip);
    };
    const std::string usable = lo.str() + "-" + hi.str() + " of " + r.cidr_.str();
    r.start_ = lo;
    r.end_ = hi;
    // As Whereabouts' GetIPRange: a start is used only inside the usable addresses, an end
    // only between the start and the last usable address; otherwise each is ignored.
    if (start) {
        if (within(*start, lo, hi)) {
            r.start_ = *start;
        } else {
            warn("\"" + startKey + "\": " + start->str() + " is not inside the usable addresses " + usable +
                 ": ignored, as Whereabouts does; allocating from " + lo.str());
        }
    }
    if (end) {
        if (within(*end, r.start_, hi)) {
            r.end_ = *end;
        } else {
            warn("\"" + endKey + "\": " + end->str() + " is not between the range start " + r.start_.str() +
                 " and the last usable address " + hi.str() + ": ignored, as Whereabouts does; allocating up to " +
                 hi.str());
        }
    }

    for (size_t i = 0; i < spec.exclude.size(); ++i) {
        const std::string& ex = spec.exclude[i];
        std::string exKey = base + "exclude[" + std::to_string(i) + "]";
        // Whereabouts reads a CIDR, else an address to which it appends /32 or /128 (strictly).
        auto c = parseGoCidr(ex, IpSyntax::Strict);
        if (!c) {
            if (auto ip = parseGoIp(ex, IpSyntax::Strict)) c = parseGoCidr(ex + (ip->isV4() ? "/32" : "/128"), IpSyntax::Strict);
        }
        if (!c) {
            if (!r.addError_) r.addError_ = cfgError(exKey, ex, "is not a CIDR or an IP address");
            continue;
        }
        if (c->net.family() != r.cidr_.family()) {
            warn("\"" + exKey + "\": " + c->net.str() + " is not of the family of " + r.cidr_.str() +
                 ": it excludes nothing");
            continue;
        }
        r.excludes_.push_back(c->net);
    }
    std::sort(r.excludes_.begin(), r.excludes_.end(), [](const Cidr& a, const Cidr& b) {
        return a.first().value() < b.first().value();
    });
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
