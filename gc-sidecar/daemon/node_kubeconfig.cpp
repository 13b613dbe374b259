#include "gc-sidecar/daemon/node_kubeconfig.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "json/json.h"
#include "k8s/kubeconfig.h"
#include "node_state/files.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

namespace {

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

// {"name": name, key: body}: an entry of a kubeconfig's clusters, users or contexts.
json::Value named(const char* name, const char* key, json::Value body) {
    json::Value e = json::Value::object();
    e.set("name", json::Value::string(name));
    e.set(key, std::move(body));
    return e;
}

json::Value listOf(json::Value entry) {
    json::Value a = json::Value::array();
    a.push(std::move(entry));
    return a;
}

}  // namespace

std::string renderNodeKubeconfig(const std::string& server, const std::string& caPem,
                                 const std::string& token, const std::string& ns) {
    json::Value cluster = json::Value::object();
    cluster.set("server", json::Value::string(server));
    cluster.set("certificate-authority-data", json::Value::string(k8s::base64Encode(caPem)));
    json::Value user = json::Value::object();
    user.set("token", json::Value::string(token));
    json::Value context = json::Value::object();
    context.set("cluster", json::Value::string("allot"));
    context.set("user", json::Value::string("allot"));
    context.set("namespace", json::Value::string(ns));
    json::Value k = json::Value::object();
    k.set("apiVersion", json::Value::string("v1"));
    k.set("kind", json::Value::string("Config"));
    k.set("clusters", listOf(named("allot", "cluster", std::move(cluster))));
    k.set("users", listOf(named("allot", "user", std::move(user))));
    k.set("contexts", listOf(named("allot", "context", std::move(context))));
    k.set("current-context", json::Value::string("allot"));
    return k.dump() + "\n";
}

std::optional<int64_t> jwtExpiry(const std::string& token) {
    const auto a = token.find('.');
    const auto b = a == std::string::npos ? a : token.find('.', a + 1);
    if (b == std::string::npos) return std::nullopt;
    auto payload = k8s::base64Decode(std::string_view(token).substr(a + 1, b - a - 1), true);
    if (!payload) return std::nullopt;
    auto v = json::parse(*payload);
    const json::Value* exp = v && v->isObject() ? v->find("exp") : nullptr;
    if (!exp) return std::nullopt;
    auto n = exp->asInt();
    if (!n || *n <= 0) return std::nullopt;
    return *n;
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
            if (have.str() == want) {
                expiry_ = jwtExpiry(t);
                return false;
            }
        }
    }
    auto slash = path_.rfind('/');
    if (slash != std::string::npos && slash > 0)
        if (auto d = node_state::makeDirs(path_.substr(0, slash), 0755); !d) return d.error();
    if (auto w = node_state::writeFileAtomic(path_, want, 0600); !w) return w.error();
    expiry_ = jwtExpiry(t);
    return true;
}

}  // namespace allot::gc
