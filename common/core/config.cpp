#include "core/config.h"

#include <algorithm>
#include <charconv>

#include "core/node_slices.h"

namespace allot::core {

namespace {

Error bad(const std::string& key, const std::string& value, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\": \"" + value + "\" " + why);
}

bool validLevel(const std::string& l) {
    return l.empty() || l == "debug" || l == "verbose" || l == "info" || l == "error" ||
           l == "panic" || l == "warning";
}

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

// Kubernetes object names are DNS-1123 subdomains; the network name becomes part of one.
bool validNameFragment(const std::string& s) {
    if (s.size() > 200) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

using Errors = std::vector<Error>;

// When a top-level "range" exists it is entry 0 and errors name it as such. A bad entry is
// reported and left out.
void validateRanges(const IpamConfig& cfg, ValidatedConfig& out, Errors& errors) {
    for (size_t i = 0; i < cfg.ranges.size(); ++i) {
        const bool top = cfg.topLevelRange && i == 0;
        size_t listIndex = cfg.topLevelRange ? i - 1 : i;
        std::string key =
            top ? std::string("range") : "ipRanges[" + std::to_string(listIndex) + "].range";
        auto r = IpRange::fromSpec(cfg.ranges[i], key,
                                   top ? BoundsSyntax::TopLevel : BoundsSyntax::IpRangesEntry,
                                   &out.warnings);
        if (!r) {
            errors.push_back(r.error());
            continue;
        }
        if (r->addError() && !out.addError) out.addError = r->addError();
        // Two entries with one CIDR share one pool: Whereabouts returns the same address twice.
        auto same = std::find_if(out.ranges.begin(), out.ranges.end(),
                                 [&](const IpRange& o) { return o.cidr() == r->cidr(); });
        if (same != out.ranges.end()) {
            errors.push_back(bad(key, cfg.ranges[i].range,
                                 "is the same network as range entry " +
                                     std::to_string(same - out.ranges.begin()) + " (" +
                                     same->cidr().str() + "): both would get the same address"));
            continue;
        }
        out.ranges.push_back(std::move(*r));
    }
}

Result<void> validateGateway(const IpamConfig& cfg, ValidatedConfig& out) {
    if (cfg.gateway.empty()) return success();
    auto gw = parseGoIp(cfg.gateway, IpSyntax::Sloppy);
    if (!gw) return bad("gateway", cfg.gateway, "is not an IP address");
    // Outside the ranges is fine (a pool that is a block of the subnet, the router elsewhere).
    bool family = false;
    for (const auto& r : out.ranges) family = family || r.family() == gw->family();
    if (!family && !out.ranges.empty())
        out.warnings.push_back("\"gateway\": " + gw->str() +
                               " is of neither range's family: not returned with any address");
    out.gateway = *gw;
    return success();
}

void validateStaticAddresses(const IpamConfig& cfg, ValidatedConfig& out, Errors& errors) {
    for (size_t i = 0; i < cfg.addresses.size(); ++i) {
        std::string key = "addresses[" + std::to_string(i) + "]";
        const std::string& text = cfg.addresses[i].address;
        // A static address keeps its host part: it is used as written.
        auto c = parseGoCidr(text, IpSyntax::Sloppy);
        if (!c) errors.push_back(bad(key + ".address", text, "is not a CIDR"));
        std::optional<IpAddress> gw;
        if (!cfg.addresses[i].gateway.empty()) {
            auto g = parseGoIp(cfg.addresses[i].gateway, IpSyntax::Strict);
            if (!g) {
                errors.push_back(
                    bad(key + ".gateway", cfg.addresses[i].gateway, "is not an IP address"));
                continue;
            }
            gw = *g;
        }
        if (c) out.staticAddresses.push_back({StaticIp{c->ip, c->net.length()}, gw});
    }
}

// Whereabouts reads the level case-insensitively and keeps its default for a name it does
// not know.
void normalizeLogLevel(const IpamConfig& cfg, ValidatedConfig& out) {
    out.raw.logLevel = lower(cfg.logLevel);
    if (!validLevel(out.raw.logLevel)) {
        out.warnings.push_back("\"log_level\": \"" + cfg.logLevel +
                               "\" is not one of debug, verbose, info, error, panic: ignored");
        out.raw.logLevel.clear();
    }
}

// The parts of a slice are kept apart from Whereabouts' plugin (which reads only the first)
// and from each other's stale copies by the OverlappingRangeIPReservations alone.
Result<void> validateSliceParts(const IpamConfig& cfg, ValidatedConfig& out) {
    const int n = cfg.sliceParts;
    if (n == 1) return success();
    const std::string v = std::to_string(n);
    if (n < 1 || n > kMaxSliceParts || (n & (n - 1)) != 0)
        return bad("node_slice_parts", v, "must be 1, 2, 4, 8 or 16");
    if (!cfg.enableOverlappingRanges)
        return bad("node_slice_parts", v,
                   "needs enable_overlapping_ranges: the reservations keep the parts apart");
    // Every range's slices (a dual-stack range is cut into as many as the first) must leave
    // each part 4 addresses or more.
    for (size_t i = 0; i < out.ranges.size(); ++i) {
        const Cidr& r = out.ranges[i].cidr();
        auto len = i == 0 ? Result<int>(*out.sliceSize)
                          : sliceLengthFor(out.ranges[0].cidr(), *out.sliceSize, r);
        if (!len) return success();  // validateSliceSize refused it
        const int hostBits = r.network().bits() - *len;
        if (hostBits < 62 && (u128(1) << hostBits) < u128(4) * static_cast<unsigned>(n))
            return bad("node_slice_parts", v,
                       "leaves fewer than 4 addresses to a part of a /" + std::to_string(*len) +
                           " slice of " + r.str());
    }
    out.sliceParts = n;
    return success();
}

Result<void> validateSliceSize(const IpamConfig& cfg, ValidatedConfig& out) {
    if (cfg.nodeSliceSize.empty()) {
        if (cfg.sliceParts != 1)
            return bad("node_slice_parts", std::to_string(cfg.sliceParts), "needs node_slice_size");
        return success();
    }
    std::string s = cfg.nodeSliceSize;
    if (s[0] == '/') s = s.substr(1);
    int len = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), len);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        return bad("node_slice_size", cfg.nodeSliceSize, "is not a prefix length like \"/28\"");
    // The size cuts the first range (spec.range of Whereabouts' NodeSlicePool); every further
    // range is cut into as many slices (core/node_slices.h).
    for (size_t i = 0; i < out.ranges.size(); ++i) {
        const Cidr& r = out.ranges[i].cidr();
        if (i == 0 && (len <= r.length() || len > r.network().bits()))
            return bad("node_slice_size", cfg.nodeSliceSize,
                       "must be longer than the range prefix of " + r.str());
        if (i > 0 && !sliceLengthFor(out.ranges[0].cidr(), len, r))
            return bad("node_slice_size", cfg.nodeSliceSize,
                       "cuts " + out.ranges[0].cidr().str() + " into more slices than " + r.str() +
                           " can hold");
    }
    out.sliceSize = len;
    return validateSliceParts(cfg, out);
}

// Every check, each problem appended to `errors` (in the order the plugin has always reported
// the first one).
ValidatedConfig validateEach(const IpamConfig& cfg, Errors& errors) {
    ValidatedConfig out;
    out.raw = cfg;
    auto note = [&](const Result<void>& r) {
        if (!r) errors.push_back(r.error());
    };
    if (cfg.type != "allot" && cfg.type != "whereabouts")
        errors.push_back(bad("ipam.type", cfg.type, "is not \"allot\" or \"whereabouts\""));
    // Whereabouts starts the pod with no address from it; so does allot, and says so.
    if (cfg.ranges.empty() && cfg.addresses.empty())
        out.warnings.push_back(
            "no \"range\", \"ipRanges\" or \"addresses\": the result carries no address");
    if (cfg.ranges.size() > static_cast<size_t>(kMaxRanges))
        errors.push_back(bad("ipRanges", std::to_string(cfg.ranges.size()) + " entries",
                             "exceeds the limit of " + std::to_string(kMaxRanges)));
    else
        validateRanges(cfg, out, errors);
    note(validateGateway(cfg, out));
    validateStaticAddresses(cfg, out, errors);
    if (!validNameFragment(cfg.networkName))
        errors.push_back(
            bad("network_name", cfg.networkName,
                "must be lowercase letters, digits, '-' or '.' (it becomes part of object names)"));
    normalizeLogLevel(cfg, out);
    note(validateSliceSize(cfg, out));
    if (cfg.deadlineMs < 0 || cfg.deadlineMs > kMaxDeadlineMs)
        errors.push_back(bad("deadline_ms", std::to_string(cfg.deadlineMs),
                             "must be between 1 and " + std::to_string(kMaxDeadlineMs)));
    if (!cfg.poolNamespace.empty() && !validNameFragment(cfg.poolNamespace))
        errors.push_back(bad("namespace", cfg.poolNamespace, "is not a valid namespace name"));
    return out;
}

}  // namespace

Result<ValidatedConfig> validate(const IpamConfig& cfg) {
    Errors errors;
    ValidatedConfig out = validateEach(cfg, errors);
    if (!errors.empty()) return errors.front();
    return out;
}

ValidatedConfig validateAll(const IpamConfig& cfg, std::vector<Error>& errors) {
    return validateEach(cfg, errors);
}

}  // namespace allot::core
