#include "gc-sidecar/network_status.h"

#include "json/json.h"

namespace allot::gc {

using core::Errc;
using core::makeError;
using core::Result;

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
                if (!parsed) return makeError(Errc::Decode, ipAt + ": " + parsed.error().message);
                s.ips.push_back(*parsed);
            }
        }
        out.push_back(std::move(s));
    }
    return out;
}

Result<std::pair<std::string, std::string>> nadOf(const NetworkStatus& s,
                                                  const std::string& podNamespace) {
    auto slash = s.name.find('/');
    if (slash == std::string::npos) {
        if (podNamespace.empty())
            return makeError(Errc::Decode, "network \"" + s.name + "\" has no namespace");
        return std::pair<std::string, std::string>(podNamespace, s.name);
    }
    std::string ns = s.name.substr(0, slash), name = s.name.substr(slash + 1);
    if (ns.empty() || name.empty() || name.find('/') != std::string::npos)
        return makeError(Errc::Decode,
                         "network name \"" + s.name.substr(0, 256) + "\" is not namespace/name");
    return std::pair<std::string, std::string>(ns, name);
}

}  // namespace allot::gc
