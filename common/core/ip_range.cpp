#include "core/ip_range.h"

#include <algorithm>

namespace allot::core {

namespace {

Error cfgError(const std::string& key, const std::string& value, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\": \"" + value + "\" " + why);
}

void addWarning(std::vector<std::string>* warnings, std::string w) {
    if (warnings) warnings->push_back(std::move(w));
}

// The bounds as written: leniently at the top level (unreadable: dropped), strictly in ipRanges.
Result<std::optional<IpAddress>> readBound(const std::string& text, const std::string& name,
                                           BoundsSyntax syntax,
                                           std::vector<std::string>* warnings) {
    if (text.empty()) return std::optional<IpAddress>();
    if (syntax == BoundsSyntax::TopLevel) {
        auto ip = parseGoIp(text, IpSyntax::Sloppy);
        if (!ip) {
            addWarning(warnings, "\"" + name + "\": \"" + text +
                                     "\" is not an IP address: ignored, as Whereabouts does");
            return std::optional<IpAddress>();
        }
        return std::optional<IpAddress>(*ip);
    }
    auto ip = parseGoIp(text, IpSyntax::Strict);
    if (!ip) return cfgError(name, text, "is not an IP address");
    return std::optional<IpAddress>(*ip);
}

// The network of "range"; its A-B/prefix form also replaces the bounds in start and end.
Result<Cidr> readRangeNetwork(const RangeSpec& spec, const std::string& key,
                              const std::string& startKey, const std::string& endKey,
                              std::optional<IpAddress>& start, std::optional<IpAddress>& end,
                              std::vector<std::string>* warnings) {
    auto dash = spec.range.find('-');
    if (dash == std::string::npos) {
        auto c = parseGoCidr(spec.range, IpSyntax::Sloppy);
        if (!c)
            return cfgError(key, spec.range, "is not a CIDR or A-B/prefix: " + c.error().message);
        return c->net;
    }
    // "A-B/prefix": the network of B/prefix, from A to B. It replaces range_start/range_end.
    auto a = parseGoIp(spec.range.substr(0, dash), IpSyntax::Sloppy);
    if (!a) return cfgError(key, spec.range, "has an invalid start: " + a.error().message);
    auto b = parseGoCidr(spec.range.substr(dash + 1), IpSyntax::Sloppy);
    if (!b) return cfgError(key, spec.range, "is not A-B/prefix: " + b.error().message);
    if (!b->net.contains(*a))
        return cfgError(key, spec.range, "has a start outside " + b->net.str());
    if (!spec.rangeStart.empty() || !spec.rangeEnd.empty())
        addWarning(warnings, "\"" + startKey + "\"/\"" + endKey + "\" ignored: the A-B form of \"" +
                                 key + "\" (" + spec.range + ") sets both, as in Whereabouts");
    start = *a;
    end = b->ip;
    return b->net;
}

struct Bounds {
    IpAddress start, end;
};

// Usable addresses: network and broadcast never, except that /31, /32, /127 and /128 hand out
// every address (RFC 3021; Whereabouts refuses these ranges on ADD).
Bounds usableBounds(const Cidr& cidr) {
    const int bits = cidr.network().bits();
    const bool pointToPoint = cidr.length() >= bits - 1;
    IpAddress lo = cidr.first(), hi = cidr.last();
    if (!pointToPoint) {
        lo = IpAddress(lo.family(), lo.value() + 1);
        hi = IpAddress(hi.family(), hi.value() - 1);
    }
    return {lo, hi};
}

// As Whereabouts' GetIPRange: a start is used only inside the usable addresses, an end
// only between the start and the last usable address; otherwise each is ignored.
Bounds clampBounds(const Cidr& cidr, const std::optional<IpAddress>& start,
                   const std::optional<IpAddress>& end, const std::string& startKey,
                   const std::string& endKey, std::vector<std::string>* warnings) {
    const auto [lo, hi] = usableBounds(cidr);
    auto within = [](const IpAddress& ip, const IpAddress& a, const IpAddress& b) {
        return ip.family() == a.family() && !(ip < a) && !(b < ip);
    };
    const std::string usable = lo.str() + "-" + hi.str() + " of " + cidr.str();
    Bounds r{lo, hi};
    if (start) {
        if (within(*start, lo, hi)) {
            r.start = *start;
        } else {
            addWarning(warnings, "\"" + startKey + "\": " + start->str() +
                                     " is not inside the usable addresses " + usable +
                                     ": ignored, as Whereabouts does; allocating from " + lo.str());
        }
    }
    if (end) {
        if (within(*end, r.start, hi)) {
            r.end = *end;
        } else {
            addWarning(warnings,
                       "\"" + endKey + "\": " + end->str() + " is not between the range start " +
                           r.start.str() + " and the last usable address " + hi.str() +
                           ": ignored, as Whereabouts does; allocating up to " + hi.str());
        }
    }
    return r;
}

// The excludes of the family of cidr, sorted; an unreadable one sets addError (the first only).
std::vector<Cidr> readExcludes(const RangeSpec& spec, const std::string& base, const Cidr& cidr,
                               std::optional<Error>& addError, std::vector<std::string>* warnings) {
    std::vector<Cidr> excludes;
    for (size_t i = 0; i < spec.exclude.size(); ++i) {
        const std::string& ex = spec.exclude[i];
        std::string exKey = base + "exclude[" + std::to_string(i) + "]";
        // Whereabouts reads a CIDR, else an address to which it appends /32 or /128 (strictly).
        auto c = parseGoCidr(ex, IpSyntax::Strict);
        if (!c) {
            if (auto ip = parseGoIp(ex, IpSyntax::Strict))
                c = parseGoCidr(ex + (ip->isV4() ? "/32" : "/128"), IpSyntax::Strict);
        }
        if (!c) {
            if (!addError) addError = cfgError(exKey, ex, "is not a CIDR or an IP address");
            continue;
        }
        if (c->net.family() != cidr.family()) {
            addWarning(warnings, "\"" + exKey + "\": " + c->net.str() +
                                     " is not of the family of " + cidr.str() +
                                     ": it excludes nothing");
            continue;
        }
        excludes.push_back(c->net);
    }
    std::sort(excludes.begin(), excludes.end(),
              [](const Cidr& a, const Cidr& b) { return a.first().value() < b.first().value(); });
    return excludes;
}

}  // namespace

Result<IpRange> IpRange::fromSpec(const RangeSpec& spec, const std::string& key,
                                  BoundsSyntax syntax, std::vector<std::string>* warnings) {
    IpRange r;
    if (spec.range.empty()) return makeError(Errc::InvalidConfig, "\"" + key + "\" is required");
    const std::string base =
        key.size() > 5 && key.ends_with("range") ? key.substr(0, key.size() - 5) : "";
    const std::string startKey = base + "range_start", endKey = base + "range_end";

    auto s = readBound(spec.rangeStart, startKey, syntax, warnings);
    if (!s) return s.error();
    auto e = readBound(spec.rangeEnd, endKey, syntax, warnings);
    if (!e) return e.error();
    std::optional<IpAddress> start = *s, end = *e;

    auto cidr = readRangeNetwork(spec, key, startKey, endKey, start, end, warnings);
    if (!cidr) return cidr.error();
    r.cidr_ = *cidr;

    const Bounds bounds = clampBounds(r.cidr_, start, end, startKey, endKey, warnings);
    r.start_ = bounds.start;
    r.end_ = bounds.end;
    r.excludes_ = readExcludes(spec, base, r.cidr_, r.addError_, warnings);
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
