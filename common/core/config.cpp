#include "core/config.h"

#include <charconv>

namespace allot::core {

namespace {

Error bad(const std::string& key, const std::string& value, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\": \"" + value + "\" " + why);
}

bool validLevel(const std::string& l) {
    return l.empty() || l == "debug" || l == "verbose" || l == "info" || l == "error" ||
           l == "panic" || l == "warning";
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

}  // namespace

Result<ValidatedConfig> validate(const IpamConfig& cfg) {
    ValidatedConfig out;
    out.raw = cfg;
    if (cfg.type != "allot" && cfg.type != "whereabouts") {
        return bad("ipam.type", cfg.type, "is not \"allot\" or \"whereabouts\"");
    }
    if (cfg.ranges.empty() && cfg.addresses.empty()) {
        return makeError(Errc::InvalidConfig,
                         "no address range configured: set \"range\" or \"ipRanges\"");
    }
    if (cfg.ranges.size() > static_cast<size_t>(kMaxRanges)) {
        return bad("ipRanges", std::to_string(cfg.ranges.size()) + " entries",
                   "exceeds the limit of " + std::to_string(kMaxRanges));
    }
    // When a top-level "range" exists it is entry 0 and errors name it as such.
    for (size_t i = 0; i < cfg.ranges.size(); ++i) {
        size_t listIndex = cfg.topLevelRange ? i - 1 : i;
        std::string key = (cfg.topLevelRange && i == 0)
                              ? std::string("range")
                              : "ipRanges[" + std::to_string(listIndex) + "].range";
        auto r = IpRange::fromSpec(cfg.ranges[i], key);
        if (!r) return r.error();
        for (size_t j = 0; j < out.ranges.size(); ++j) {
            if (out.ranges[j].cidr().overlaps(r->cidr())) {
                return bad(key, cfg.ranges[i].range,
                           "overlaps range entry " + std::to_string(j) + " (" +
                               out.ranges[j].cidr().str() + ")");
            }
        }
        out.ranges.push_back(std::move(*r));
    }
    if (!cfg.gateway.empty()) {
        auto gw = IpAddress::parse(cfg.gateway);
        if (!gw) return bad("gateway", cfg.gateway, "is not an IP address");
        bool inside = false;
        for (const auto& r : out.ranges) inside = inside || r.cidr().contains(*gw);
        if (!inside && !out.ranges.empty()) return bad("gateway", cfg.gateway, "is outside every range");
        out.gateway = *gw;
    }
    for (size_t i = 0; i < cfg.addresses.size(); ++i) {
        std::string key = "addresses[" + std::to_string(i) + "]";
        const std::string& text = cfg.addresses[i].address;
        auto c = Cidr::parse(text, "\"" + key + ".address\"");
        if (!c) return c.error();
        // A static address keeps its host part: it is used as written.
        auto ip = IpAddress::parse(text.substr(0, text.find('/')));
        if (!ip) return bad(key + ".address", text, "is not an IP address");
        std::optional<IpAddress> gw;
        if (!cfg.addresses[i].gateway.empty()) {
            auto g = IpAddress::parse(cfg.addresses[i].gateway);
            if (!g) return bad(key + ".gateway", cfg.addresses[i].gateway, "is not an IP address");
            gw = *g;
        }
        out.staticAddresses.push_back({StaticIp{*ip, c->length()}, gw});
    }
    if (!validNameFragment(cfg.networkName)) {
        return bad("network_name", cfg.networkName,
                   "must be lowercase letters, digits, '-' or '.' (it becomes part of object names)");
    }
    if (!validLevel(cfg.logLevel)) {
        return bad("log_level", cfg.logLevel, "is not one of debug, verbose, info, error, panic");
    }
    if (!cfg.nodeSliceSize.empty()) {
        std::string s = cfg.nodeSliceSize;
        if (s[0] == '/') s = s.substr(1);
        int len = -1;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), len);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size())
            return bad("node_slice_size", cfg.nodeSliceSize, "is not a prefix length like \"/28\"");
        for (const auto& r : out.ranges) {
            if (len <= r.cidr().length() || len > r.cidr().network().bits())
                return bad("node_slice_size", cfg.nodeSliceSize,
                           "must be longer than the range prefix of " + r.cidr().str());
        }
        out.sliceSize = len;
    }
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
