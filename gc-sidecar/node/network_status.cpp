#include "gc-sidecar/node/network_status.h"

#include "json/json.h"

namespace allot::gc {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

// Kubernetes names: a namespace is a DNS-1123 label, a NetworkAttachmentDefinition's name a
// DNS-1123 subdomain. Nothing else can name an object, and these go into a request path
// (where "..", "?" or "%2F" would address something else).
bool dnsLabel(std::string_view s) {
    if (s.empty() || s.size() > kMaxNamespaceBytes) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return s.front() != '-' && s.back() != '-';
}

bool dnsSubdomain(std::string_view s) {
    if (s.empty() || s.size() > kMaxNadNameBytes) return false;
    while (true) {
        const size_t dot = s.find('.');
        if (!dnsLabel(s.substr(0, dot))) return false;
        if (dot == std::string_view::npos) return true;
        s.remove_prefix(dot + 1);
    }
}

}  // namespace

Result<std::vector<NetworkStatus>> parseNetworkStatus(std::string_view text) {
    if (text.size() > kMaxNetworkStatusBytes)
        return makeError(Errc::Decode, "network-status is larger than " +
                                           std::to_string(kMaxNetworkStatusBytes) + " bytes");
    auto doc = json::parse(text, {kMaxNetworkStatusBytes, 8});
    if (!doc) return makeError(Errc::Decode, "network-status: " + doc.error().message);
    if (!doc->isArray())
        return makeError(Errc::Decode,
                         std::string("network-status must be a list, got ") + doc->typeName());
    if (doc->items().size() > kMaxNetworkStatusEntries)
        return makeError(Errc::Decode, "network-status has more than " +
                                           std::to_string(kMaxNetworkStatusEntries) + " entries");
    std::vector<NetworkStatus> out;
    out.reserve(doc->items().size());
    for (size_t i = 0; i < doc->items().size(); ++i) {
        const json::Value& e = doc->items()[i];
        const std::string at = "network-status[" + std::to_string(i) + "]";
        if (!e.isObject())
            return makeError(Errc::Decode, at + " must be an object, got " + e.typeName());
        NetworkStatus s;
        auto name = e.getString("name");
        if (!name || !*name || (*name)->empty())
            return makeError(Errc::Decode, at + ".name must be a non-empty string");
        s.name = **name;
        auto itf = e.getString("interface");
        if (!itf) return makeError(Errc::Decode, at + ".interface must be a string");
        if (*itf) s.interface = **itf;
        auto def = e.getBool("default");
        if (!def) return makeError(Errc::Decode, at + ".default must be true or false");
        s.isDefault = def->value_or(false);
        if (const json::Value* ips = e.find("ips"); ips && !ips->isNull()) {
            if (!ips->isArray()) return makeError(Errc::Decode, at + ".ips must be a list");
            for (size_t j = 0; j < ips->items().size(); ++j) {
                const json::Value& ip = ips->items()[j];
                const std::string ipAt = at + ".ips[" + std::to_string(j) + "]";
                if (!ip.isString()) return makeError(Errc::Decode, ipAt + " must be a string");
                const std::string& t = ip.asString();
                auto parsed = core::IpAddress::parse(std::string_view(t).substr(0, t.find('/')));
                if (!parsed)
                    return makeError(Errc::Decode,
                                     ipAt + ": \"" + printable(t, 64) + "\" is not an IP address");
                s.ips.push_back(*parsed);
            }
        }
        out.push_back(std::move(s));
    }
    return out;
}

Result<std::pair<std::string, std::string>> nadOf(const NetworkStatus& s,
                                                  const std::string& podNamespace) {
    const std::string quoted = "network name \"" + printable(s.name, 128) + "\"";
    auto slash = s.name.find('/');
    std::string ns = podNamespace, name = s.name;
    if (slash == std::string::npos) {
        if (podNamespace.empty()) return makeError(Errc::Decode, quoted + " has no namespace");
    } else {
        ns = s.name.substr(0, slash);
        name = s.name.substr(slash + 1);
    }
    if (!dnsLabel(ns) || !dnsSubdomain(name))
        return makeError(Errc::Decode, quoted +
                                           " is not namespace/name (a namespace and an object "
                                           "name: lowercase letters, digits, '-', '.')");
    return std::pair<std::string, std::string>(std::move(ns), std::move(name));
}

}  // namespace allot::gc
