#include "k8s_api/resources.h"

namespace allot::k8s {

std::string urlEscape(std::string_view s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        const bool unreserved = (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') ||
                                (u >= '0' && u <= '9') || u == '-' || u == '.' || u == '_' ||
                                u == '~';
        if (unreserved) {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(kHex[u >> 4]);
            out.push_back(kHex[u & 0xf]);
        }
    }
    return out;
}

std::string apiVersion(const Resource& res) {
    if (res.group.empty()) return std::string(res.version);
    return std::string(res.group) + "/" + std::string(res.version);
}

std::string collectionPath(const Resource& res, const std::string& ns) {
    std::string p = res.group.empty() ? "/api/" : "/apis/" + std::string(res.group) + "/";
    p += res.version;
    if (res.namespaced && !ns.empty()) p += "/namespaces/" + urlEscape(ns);
    p += "/";
    p += res.plural;
    return p;
}

std::string objectPath(const Resource& res, const std::string& ns, const std::string& name) {
    return collectionPath(res, ns) + "/" + urlEscape(name);
}

}  // namespace allot::k8s
