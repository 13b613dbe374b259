#include "core/config.h"

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

// When a top-level "range" exists it is entry 0 and errors name it as such.
Result<void> validateRanges(const IpamConfig& cfg, ValidatedConfig& out) {
    for (size_t i = 0; i < cfg.ranges.size(); ++i) {
        const bool top = cfg.topLevelRange && i == 0;
        size_t listIndex = cfg.topLevelRange ? i - 1 : i;
        std::string key =
            top ? std::string("range") : "ipRanges[" + std::to_string(listIndex) + "].range";
        auto r = IpRange::fromSpec(cfg.ranges[i], key,
                                   top ? BoundsSyntax::TopLevel : BoundsSyntax::IpRangesEntry,
                                   &out.warnings);
        if (!r) return r.error();
        if (r->addError() && !out.addError) out.addError = r->addError();
        // Two entries with one CIDR share one pool: Whereabouts returns the same address twice.
        for (size_t j = 0; j < out.ranges.size(); ++j) {
            if (out.ranges[j].cidr() == r->cidr()) {
                return bad(key, cfg.ranges[i].range,
                           "is the same network as range entry " + std::to_string(j) + " (" +
                               out.ranges[j].cidr().str() + "): both would get the same address");
            }
        }
        out.ranges.push_back(std::move(*r));
    }
    return success();
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

Result<void> validateStaticAddresses(const IpamConfig& cfg, ValidatedConfig& out) {
    for (size_t i = 0; i < cfg.addresses.size(); ++i) {
        std::string key = "addresses[" + std::to_string(i) + "]";
        const std::string& text = cfg.addresses[i].address;
        // A static address keeps its host part: it is used as written.
        auto c = parseGoCidr(text, IpSyntax::Sloppy);
        if (!c) return bad(key + ".address", text, "is not a CIDR");
        std::optional<IpAddress> gw;
        if (!cfg.addresses[i].gateway.empty()) {
            auto g = parseGoIp(cfg.addresses[i].gateway, IpSyntax::Strict);
            if (!g) return bad(key + ".gateway", cfg.addresses[i].gateway, "is not an IP address");
            gw = *g;
        }
        out.staticAddresses.push_back({StaticIp{c->ip, c->net.length()}, gw});
    }
    return success();
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

Result<void> validateSliceSize(const IpamConfig& cfg, ValidatedConfig& out) {
    if (cfg.nodeSliceSize.empty()) return success();
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
    return success();
}

}  // namespace

Result<ValidatedConfig> validate(const IpamConfig& cfg) {
    ValidatedConfig out;
    out.raw = cfg;
    if (cfg.type != "allot" && cfg.type != "whereabouts") {
        return bad("ipam.type", cfg.type, "is not \"allot\" or \"whereabouts\"");
    }
    if (cfg.ranges.empty() && cfg.addresses.empty()) {
        // Whereabouts starts the pod with no address from it; so does allot, and says so.
        out.warnings.push_back(
            "no \"range\", \"ipRanges\" or \"addresses\": the result carries no address");
    }
    if (cfg.ranges.size() > static_cast<size_t>(kMaxRanges)) {
        return bad("ipRanges", std::to_string(cfg.ranges.size()) + " entries",
                   "exceeds the limit of " + std::to_string(kMaxRanges));
    }
    if (auto r = validateRanges(cfg, out); !r) return r.error();
    if (auto r = validateGateway(cfg, out); !r) return r.error();
    if (auto r = validateStaticAddresses(cfg, out); !r) return r.error();
    if (!validNameFragment(cfg.networkName)) {
        return bad(
            "network_name", cfg.networkName,
            "must be lowercase letters, digits, '-' or '.' (it becomes part of object names)");
    }
    normalizeLogLevel(cfg, out);
    if (auto r = validateSliceSize(cfg, out); !r) return r.error();
    if (cfg.deadlineMs < 0 || cfg.deadlineMs > kMaxDeadlineMs) {
        return bad("deadline_ms", std::to_string(cfg.deadlineMs),
                   "must be between 1 and " + std::to_string(kMaxDeadlineMs));
    }
    if (!cfg.poolNamespace.empty() && !validNameFragment(cfg.poolNamespace)) {
        return bad("namespace", cfg.poolNamespace, "is not a valid namespace name");
    }
    return out;
}

}  // namespace allot::core
