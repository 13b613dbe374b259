#include "core/naming.h"

#include "core/config.h"

namespace allot::core {

namespace {
void replaceAll(std::string& s, char from, char to) {
    for (char& c : s)
        if (c == from) c = to;
}
}  // namespace

std::string normalizeRange(const std::string& cidr) {
    std::string s = cidr;
    // Whereabouts appends "0" to a ':'-ending string (only reachable without a "/prefix").
    if (!s.empty() && s.back() == ':') s += "0";
    replaceAll(s, ':', '-');
    replaceAll(s, '/', '-');
    return s;
}

std::string poolName(const Cidr& range, const std::string& networkName,
                     const std::string& nodeName) {
    std::string r = normalizeRange(range.str());
    if (!nodeName.empty()) {
        if (networkName.empty()) return nodeName + "-" + r;
        return networkName + "-" + nodeName + "-" + r;
    }
    if (networkName.empty()) return r;
    return networkName + "-" + r;
}

std::string reservationName(const IpAddress& ip, const std::string& networkName) {
    // Go prints an IPv4-mapped IPv6 address as plain IPv4, so Whereabouts names it that way.
    const u128 mappedPrefix = u128(0xffff) << 32;
    bool mapped = !ip.isV4() && (ip.value() >> 32) == (mappedPrefix >> 32);
    std::string s = mapped ? IpAddress::v4(static_cast<uint32_t>(ip.value())).str() : ip.str();
    if (!ip.isV4() && !mapped) {
        if (!s.empty() && s.back() == ':') s += "0";
        replaceAll(s, ':', '-');
    }
    if (networkName.empty()) return s;
    return networkName + "-" + s;
}

std::string slicePartPoolName(const std::string& slicePool, int part) {
    return part == 0 ? slicePool : slicePool + "-part-" + std::to_string(part);
}

std::pair<std::string, int> slicePartOf(const std::string& pool) {
    const auto at = pool.rfind("-part-");
    if (at == std::string::npos || at == 0) return {pool, 0};
    const std::string k = pool.substr(at + 6);
    // Only the spelling slicePartPoolName writes: 1-15, no sign, no leading zero.
    if (k.empty() || k.size() > 2 || k[0] < '1' || k[0] > '9') return {pool, 0};
    int part = 0;
    for (char c : k) {
        if (c < '0' || c > '9') return {pool, 0};
        part = part * 10 + (c - '0');
    }
    if (part >= kMaxSliceParts) return {pool, 0};
    return {pool.substr(0, at), part};
}

Result<IpRange> slicePartRange(const Cidr& slice, int parts, int part) {
    const u128 block = (slice.hostMask() / static_cast<unsigned>(parts)) + 1;
    const u128 first = block * static_cast<unsigned>(part);
    return IpRange::fromSpec(
        {slice.str(), slice.at(first).str(), slice.at(first + block - 1).str(), {}},
        "node slice " + slice.str() + " part " + std::to_string(part));
}

std::vector<std::string> networkNamesOf(const std::string& pool, const std::string& range,
                                        const std::string& node) {
    auto cidr = Cidr::parse(range);
    if (!cidr) return {""};
    const std::string suffix = normalizeRange(cidr->str());
    const std::string name = slicePartOf(pool).first;  // part k is named after part 0
    const auto endsWith = [](const std::string& s, const std::string& tail) {
        return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (!endsWith(name, "-" + suffix)) return {""};
    const std::string prefix = name.substr(0, name.size() - suffix.size() - 1);
    std::vector<std::string> out;
    // Node-slice pools are [network_name-]node-range; the reservation carries only network_name.
    if (!node.empty()) {
        if (prefix == node) out.push_back("");
        if (endsWith(prefix, "-" + node))
            out.push_back(prefix.substr(0, prefix.size() - node.size() - 1));
    }
    out.push_back(prefix);
    return out;
}

}  // namespace allot::core
