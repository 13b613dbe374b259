#include "gc-sidecar/node_kubeconfig.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "k8s/kubeconfig.h"
#include "node/files.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

std::string base64Encode(const std::string& in) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) |
                           uint8_t(in[i + 2]);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

namespace {

// YAML double-quoted scalar.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

std::string renderNodeKubeconfig(const std::string& server, const std::string& caPem,
                                 const std::string& token, const std::string& ns) {
    std::string s;
    s += "# Written by allot-gc from its ServiceAccount; rewritten when the token rotates.\n";
    s += "apiVersion: v1\nkind: Config\n";
    s += "clusters:\n- name: allot\n  cluster:\n    server: " + quoted(server) + "\n";
    s += "    certificate-authority-data: " + base64Encode(caPem) + "\n";
    s += "users:\n- name: allot\n  user:\n    token: " + quoted(token) + "\n";
    s += "contexts:\n- name: allot\n  context:\n    cluster: allot\n    user: allot\n    "
         "namespace: " +
         quoted(ns) + "\n";
    s += "current-context: allot\n";
    return s;
}

core::Result<bool> NodeKubeconfig::refresh() {
    auto token = tokenSource_ ? tokenSource_()
                              : k8s::readSmallFile(saDir_ + "/token", "ServiceAccount token");
    if (!token) return token.error();
    auto ca = k8s::readSmallFile(saDir_ + "/ca.crt", "ServiceAccount CA");
    if (!ca) return ca.error();
    std::string server = server_;
    if (server.empty()) {
        const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
        const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
        if (!host || !*host || !port || !*port)
            return makeError(
                Errc::InvalidConfig,
                "--node-kubeconfig needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT");
        std::string h = host;
        if (h.find(':') != std::string::npos) h = "[" + h + "]";
        server = "https://" + h + ":" + port;
    }
    const std::string t = trimmed(*token);
    if (t.empty())
        return makeError(Errc::InvalidConfig, "ServiceAccount token " + saDir_ + "/token is empty");
    const std::string want = renderNodeKubeconfig(server, *ca, t, ns_);
    {
        std::ifstream in(path_, std::ios::binary);
        if (in) {
            std::ostringstream have;
            have << in.rdbuf();
            if (have.str() == want) return false;
        }
    }
    auto slash = path_.rfind('/');
    if (slash != std::string::npos && slash > 0)
        if (auto d = node::makeDirs(path_.substr(0, slash), 0755); !d) return d.error();
    if (auto w = node::writeFileAtomic(path_, want, 0600); !w) return w.error();
    return true;
}

}  // namespace allot::gc
