#include "k8s/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace allot::k8s {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

constexpr std::streamsize kMaxFileBytes = 16 << 20;

std::string trimmed(const std::string& s) {
    const char* ws = " \t\r\n";
    const auto b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}

std::string inQuotes(const std::string& s) {
    return "\"" + s + "\"";
}

int base64Value(unsigned char c, bool url) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == static_cast<unsigned char>(url ? '-' : '+')) return 62;
    if (c == static_cast<unsigned char>(url ? '_' : '/')) return 63;
    return -1;
}

}  // namespace

std::optional<std::string> base64Decode(std::string_view in, bool url) {
    std::string out;
    out.reserve(in.size() * 3 / 4);
    uint32_t acc = 0;
    int bits = 0;
    size_t padding = 0;
    for (unsigned char c : in) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            ++padding;
            continue;
        }
        if (padding > 0) return std::nullopt;  // data after padding
        const int v = base64Value(c, url);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    if (padding > 2 || bits >= 6) return std::nullopt;
    return out;
}

std::string base64Encode(std::string_view in) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (size_t i = 0; i < in.size(); i += 3) {
        const size_t n = std::min<size_t>(3, in.size() - i);  // bytes of this group
        uint32_t v = 0;
        for (size_t k = 0; k < 3; ++k)
            v = v << 8 | (k < n ? static_cast<unsigned char>(in[i + k]) : 0u);
        for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

namespace {

// Lookup helpers over one parsed kubeconfig; every error names the file and the key.
class Reader {
  public:
    explicit Reader(std::string path) : path_(std::move(path)) {
        dir_ = std::filesystem::path(path_).parent_path();
    }

    core::Error error(const std::string& what) const {
        return makeError(Errc::InvalidConfig, "kubeconfig " + path_ + ": " + what);
    }

    // A string value at map[key]; nullopt when absent or null. A number or a boolean is its
    // text, as a YAML scalar is.
    Result<std::optional<std::string>> scalar(const json::Value& map, const char* key,
                                              const std::string& where) const {
        const json::Value* v = map.isObject() ? map.find(key) : nullptr;
        if (!v || v->isNull()) return std::optional<std::string>();
        if (v->isBool()) return std::optional<std::string>(v->asBool() ? "true" : "false");
        if (!v->isString() && !v->isNumber())
            return error(where + ": " + key + " must be a string");
        return std::optional<std::string>(v->asString());
    }

    Result<bool> flag(const json::Value& map, const char* key, const std::string& where) const {
        auto s = scalar(map, key, where);
        if (!s) return s.error();
        if (!*s) return false;
        if (**s == "true" || **s == "True" || **s == "TRUE") return true;
        if (**s == "false" || **s == "False" || **s == "FALSE") return false;
        return error(where + ": " + key + " must be true or false, not " + inQuotes(**s));
    }

    // The inner map of the entry of `section` (clusters/users/contexts) named `name`; null
    // when there is none (an entry without one: a null value).
    Result<const json::Value*> named(const json::Value& root, const char* section,
                                     const char* inner, const std::string& name) const {
        static const json::Value kNone;
        const json::Value* list = root.find(section);
        if (!list || list->isNull()) return nullptr;
        if (!list->isArray()) return error(std::string(section) + " must be a list");
        for (const json::Value& entry : list->items()) {
            auto n = scalar(entry, "name", std::string(section) + " entry");
            if (!n) return n.error();
            if (!*n || **n != name) continue;
            const json::Value* body = entry.find(inner);
            if (!body || body->isNull()) return &kNone;
            if (!body->isObject())
                return error(std::string(section) + " entry " + inQuotes(name) + ": " + inner +
                             " must be a mapping");
            return body;
        }
        return nullptr;
    }

    // base64 *-data field, decoded.
    Result<std::string> data(const json::Value& map, const char* key,
                             const std::string& where) const {
        auto s = scalar(map, key, where);
        if (!s) return s.error();
        if (!*s) return std::string();
        auto decoded = base64Decode(**s);
        if (!decoded) return error(where + ": " + key + " is not valid base64");
        return std::move(*decoded);
    }

    // A file path field, resolved against the kubeconfig's directory and checked readable.
    Result<std::string> file(const json::Value& map, const char* key, const std::string& where,
                             bool mustExist = true) const {
        auto s = scalar(map, key, where);
        if (!s) return s.error();
        if (!*s || (*s)->empty()) return std::string();
        std::filesystem::path p(**s);
        if (p.is_relative()) p = dir_ / p;
        std::string resolved = p.lexically_normal().string();
        if (mustExist) {
            std::ifstream f(resolved);
            if (!f)
                return error(where + ": " + key + " " + resolved +
                             " cannot be read: " + std::strerror(errno));
        }
        return resolved;
    }

  private:
    std::string path_;
    std::filesystem::path dir_;
};

// The cluster named by the context: server, certificate authority, insecure-skip-tls-verify.
core::Result<void> readCluster(const Reader& rd, const json::Value& root,
                               const std::string& clusterName, const std::string& ctxWhere,
                               ClusterConfig& cfg) {
    auto cluster = rd.named(root, "clusters", "cluster", clusterName);
    if (!cluster) return cluster.error();
    if (!*cluster)
        return rd.error("cluster " + inQuotes(clusterName) + " (of " + ctxWhere +
                        ") not found under clusters");
    const std::string clWhere = "cluster " + inQuotes(clusterName);
    auto server = rd.scalar(**cluster, "server", clWhere);
    if (!server) return server.error();
    if (!*server || (*server)->empty()) return rd.error(clWhere + ": server is not set");
    cfg.server = **server;
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0)
        return rd.error(clWhere + ": server " + inQuotes(cfg.server) + " must start with https://");
    auto caData = rd.data(**cluster, "certificate-authority-data", clWhere);
    if (!caData) return caData.error();
    cfg.caData = std::move(*caData);
    auto caFile = rd.file(**cluster, "certificate-authority", clWhere);
    if (!caFile) return caFile.error();
    cfg.caFile = std::move(*caFile);
    auto insecure = rd.flag(**cluster, "insecure-skip-tls-verify", clWhere);
    if (!insecure) return insecure.error();
    cfg.insecureSkipTlsVerify = *insecure;
    if (cfg.insecureSkipTlsVerify && (!cfg.caData.empty() || !cfg.caFile.empty()))
        return rd.error(clWhere +
                        ": insecure-skip-tls-verify cannot be combined with a certificate "
                        "authority (as kubectl refuses it too)");
    return core::success();
}

// The user's certificate, key and token fields, each as written (files resolved and checked).
core::Result<void> readUserFields(const Reader& rd, const json::Value& u,
                                  const std::string& usWhere, ClusterConfig& cfg) {
    auto certData = rd.data(u, "client-certificate-data", usWhere);
    if (!certData) return certData.error();
    cfg.clientCertData = std::move(*certData);
    auto certFile = rd.file(u, "client-certificate", usWhere);
    if (!certFile) return certFile.error();
    cfg.clientCertFile = std::move(*certFile);
    auto keyData = rd.data(u, "client-key-data", usWhere);
    if (!keyData) return keyData.error();
    cfg.clientKeyData = std::move(*keyData);
    auto keyFile = rd.file(u, "client-key", usWhere);
    if (!keyFile) return keyFile.error();
    cfg.clientKeyFile = std::move(*keyFile);
    auto token = rd.scalar(u, "token", usWhere);
    if (!token) return token.error();
    if (*token) cfg.token = trimmed(**token);
    auto tokenFile = rd.file(u, "tokenFile", usWhere);
    if (!tokenFile) return tokenFile.error();
    cfg.tokenFile = std::move(*tokenFile);
    return core::success();
}

// A member that is set (present and not null).
const json::Value* present(const json::Value& map, const char* key) {
    const json::Value* n = map.isObject() ? map.find(key) : nullptr;
    return n && !n->isNull() ? n : nullptr;
}

// A list of scalars (an exec plugin's args), each as its text.
Result<std::vector<std::string>> scalarList(const Reader& rd, const json::Value& map,
                                            const char* key, const std::string& where) {
    std::vector<std::string> out;
    const json::Value* list = present(map, key);
    if (!list) return out;
    if (!list->isArray()) return rd.error(where + ": " + key + " must be a list");
    for (const json::Value& item : list->items()) {
        if (item.isBool()) {
            out.emplace_back(item.asBool() ? "true" : "false");
            continue;
        }
        if (!item.isString() && !item.isNumber())
            return rd.error(where + ": " + key + "[" + std::to_string(out.size()) +
                            "] must be a string");
        out.push_back(item.asString());
    }
    return out;
}

// An exec plugin's env: a list of {name, value}.
Result<std::vector<std::pair<std::string, std::string>>> execEnv(const Reader& rd,
                                                                 const json::Value& exec,
                                                                 const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    const json::Value* list = present(exec, "env");
    if (!list) return out;
    if (!list->isArray()) return rd.error(where + ": env must be a list");
    for (const json::Value& item : list->items()) {
        const std::string at = where + ": env[" + std::to_string(out.size()) + "]";
        auto name = rd.scalar(item, "name", at);
        if (!name) return name.error();
        if (!*name || (*name)->empty() || (*name)->find('=') != std::string::npos)
            return rd.error(at + ": name must be set (and hold no '=')");
        auto value = rd.scalar(item, "value", at);
        if (!value) return value.error();
        out.emplace_back(**name, value->value_or(""));
    }
    return out;
}

// apiVersion and interactiveMode: v1 must name its mode; v1beta1's default is IfAvailable.
Result<void> readExecVersion(const Reader& rd, const json::Value& exec, const std::string& where,
                             ExecConfig& x) {
    auto api = rd.scalar(exec, "apiVersion", where);
    if (!api) return api.error();
    x.apiVersion = api->value_or("");
    if (x.apiVersion != kExecApiV1 && x.apiVersion != kExecApiV1beta1)
        return rd.error(where + ": apiVersion " + inQuotes(x.apiVersion) + " is not " +
                        std::string(kExecApiV1) + " or " + std::string(kExecApiV1beta1) +
                        " (v1alpha1 was removed in Kubernetes 1.24)");
    auto mode = rd.scalar(exec, "interactiveMode", where);
    if (!mode) return mode.error();
    const std::string m = mode->value_or("");
    if (m == "Never") {
        x.interactiveMode = InteractiveMode::Never;
    } else if (m == "Always") {
        x.interactiveMode = InteractiveMode::Always;
    } else if (m == "IfAvailable" || (m.empty() && x.apiVersion == kExecApiV1beta1)) {
        x.interactiveMode = InteractiveMode::IfAvailable;
    } else {
        return rd.error(
            where + ": interactiveMode " +
            (m.empty() ? "must be set for " + x.apiVersion : inQuotes(m) + " is not one of") +
            " Never, IfAvailable or Always");
    }
    return core::success();
}

Result<ExecConfig> readExec(const Reader& rd, const json::Value& exec, const std::string& where) {
    if (!exec.isObject()) return rd.error(where + " must be a mapping");
    ExecConfig x;
    auto command = rd.scalar(exec, "command", where);
    if (!command) return command.error();
    if (!*command || (*command)->empty()) return rd.error(where + ": command is not set");
    x.command = **command;
    if (x.command.find('/') != std::string::npos) {  // a path: as a file path, as kubectl does
        auto resolved = rd.file(exec, "command", where, false);
        if (!resolved) return resolved.error();
        // Absolute: "./login" next to a kubeconfig named by a relative path keeps its '/'.
        std::error_code ec;
        const auto absolute = std::filesystem::absolute(*resolved, ec);
        x.command = ec ? std::move(*resolved) : absolute.lexically_normal().string();
    }
    if (auto r = readExecVersion(rd, exec, where, x); !r) return r.error();
    auto args = scalarList(rd, exec, "args", where);
    if (!args) return args.error();
    x.args = std::move(*args);
    auto env = execEnv(rd, exec, where);
    if (!env) return env.error();
    x.env = std::move(*env);
    auto hint = rd.scalar(exec, "installHint", where);
    if (!hint) return hint.error();
    x.installHint = trimmed(hint->value_or(""));
    auto provide = rd.flag(exec, "provideClusterInfo", where);
    if (!provide) return provide.error();
    x.provideClusterInfo = *provide;
    return x;
}

// What an exec plugin that asks for it is told of the cluster (spec.cluster).
Result<ExecClusterInfo> readExecCluster(const Reader& rd, const json::Value& root,
                                        const std::string& clusterName, const ClusterConfig& cfg) {
    ExecClusterInfo c;
    c.server = cfg.server;
    c.insecureSkipTlsVerify = cfg.insecureSkipTlsVerify;
    c.caData = cfg.caData;
    if (c.caData.empty() && !cfg.caFile.empty()) {
        auto ca = readSmallFile(cfg.caFile, "certificate authority");
        if (!ca) return ca.error();
        c.caData = std::move(*ca);
    }
    auto cluster = rd.named(root, "clusters", "cluster", clusterName);
    if (!cluster) return cluster.error();
    const std::string where = "cluster " + inQuotes(clusterName);
    auto serverName = rd.scalar(**cluster, "tls-server-name", where);
    if (!serverName) return serverName.error();
    c.tlsServerName = serverName->value_or("");
    auto proxy = rd.scalar(**cluster, "proxy-url", where);
    if (!proxy) return proxy.error();
    c.proxyUrl = proxy->value_or("");
    const json::Value* extensions = present(**cluster, "extensions");
    if (extensions && !extensions->isArray())
        return rd.error(where + ": extensions must be a list");
    if (!extensions) return c;
    for (const json::Value& ext : extensions->items())
        if (json::stringAt(ext, {"name"}) == kExecExtension) {
            const json::Value* body = ext.find("extension");
            c.config = body ? *body : json::Value();
        }
    return c;
}

// What to run instead of an auth-provider: kubectl removed its gcp and azure providers in 1.26,
// and each cloud ships an exec plugin.
std::string authProviderAdvice(const json::Value& provider) {
    const std::string name = json::stringAt(provider, {"name"});
    std::string how;
    if (name == "gcp")
        how =
            "gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin, then "
            "gcloud container clusters get-credentials CLUSTER writes the exec user)";
    else if (name == "azure")
        how = "kubelogin (kubelogin convert-kubeconfig -l azurecli rewrites the user)";
    else if (name == "oidc")
        how = "kubelogin (kubectl oidc-login setup prints the exec user to use)";
    else
        how = "the provider's exec plugin (gke-gcloud-auth-plugin, kubelogin, aws eks get-token)";
    return "auth-provider " + inQuotes(name) +
           " credentials are not supported: allot runs exec credential plugins only, as kubectl "
           "does for clouds since 1.26; move the user to an exec plugin, " +
           how;
}

// A certificate needs its key and the other way round. A token or certificate wins over an
// exec plugin (as in kubectl); without either, the exec plugin is read, and credential kinds
// allot cannot use are refused with a way forward.
core::Result<void> checkCredentials(const Reader& rd, const json::Value& root, const json::Value& u,
                                    const std::string& usWhere, const std::string& clusterName,
                                    ClusterConfig& cfg) {
    const bool hasCert = !cfg.clientCertData.empty() || !cfg.clientCertFile.empty();
    const bool hasKey = !cfg.clientKeyData.empty() || !cfg.clientKeyFile.empty();
    if (hasCert && !hasKey)
        return rd.error(usWhere + ": client-certificate is set but client-key(-data) is not");
    if (hasKey && !hasCert)
        return rd.error(usWhere + ": client-key is set but client-certificate(-data) is not");
    const json::Value* exec = present(u, "exec");
    const json::Value* provider = present(u, "auth-provider");
    if (exec && provider)
        return rd.error(usWhere +
                        ": exec and auth-provider cannot both be set (kubectl refuses "
                        "it too)");
    const bool hasToken = !cfg.token.empty() || !cfg.tokenFile.empty();
    if (hasCert || hasToken) return core::success();
    if (provider) return rd.error(usWhere + ": " + authProviderAdvice(*provider));
    if (exec) {
        auto x = readExec(rd, *exec, usWhere + ": exec");
        if (!x) return x.error();
        auto cluster = readExecCluster(rd, root, clusterName, cfg);
        if (!cluster) return cluster.error();
        x->cluster = std::move(*cluster);
        cfg.exec = std::move(*x);
        return core::success();
    }
    if (present(u, "username"))
        return rd.error(usWhere +
                        ": username (basic) credentials are not supported: Kubernetes 1.19 "
                        "removed basic authentication; use a token, tokenFile, client "
                        "certificate or exec plugin");
    return core::success();
}

// The user named by the context.
core::Result<void> readUser(const Reader& rd, const json::Value& root, const std::string& userName,
                            const std::string& ctxWhere, const std::string& clusterName,
                            ClusterConfig& cfg) {
    auto user = rd.named(root, "users", "user", userName);
    if (!user) return user.error();
    if (!*user)
        return rd.error("user " + inQuotes(userName) + " (of " + ctxWhere +
                        ") not found under users");
    const std::string usWhere = "user " + inQuotes(userName);
    const json::Value& u = **user;
    if (auto r = readUserFields(rd, u, usWhere, cfg); !r) return r.error();
    return checkCredentials(rd, root, u, usWhere, clusterName, cfg);
}

Result<ClusterConfig> parseKubeconfig(const Reader& rd, const json::Value& root,
                                      const std::string& requestedContext) {
    if (!root.isObject()) return rd.error("not a kubeconfig (expected a YAML mapping)");
    ClusterConfig cfg;

    std::string contextName = requestedContext;
    if (contextName.empty()) {
        auto cur = rd.scalar(root, "current-context", "top level");
        if (!cur) return cur.error();
        if (!*cur || (*cur)->empty())
            return rd.error("current-context is not set and no context was given");
        contextName = **cur;
    }
    auto ctx = rd.named(root, "contexts", "context", contextName);
    if (!ctx) return ctx.error();
    if (!*ctx) return rd.error("context " + inQuotes(contextName) + " not found under contexts");
    const std::string ctxWhere = "context " + inQuotes(contextName);

    auto clusterName = rd.scalar(**ctx, "cluster", ctxWhere);
    if (!clusterName) return clusterName.error();
    if (!*clusterName || (*clusterName)->empty())
        return rd.error(ctxWhere + ": cluster is not set");
    auto userName = rd.scalar(**ctx, "user", ctxWhere);
    if (!userName) return userName.error();
    auto ns = rd.scalar(**ctx, "namespace", ctxWhere);
    if (!ns) return ns.error();
    if (*ns) cfg.namespace_ = **ns;

    if (auto r = readCluster(rd, root, **clusterName, ctxWhere, cfg); !r) return r.error();

    // User (a context without one is anonymous).
    if (!*userName || (*userName)->empty()) {
        cfg.identity = "anonymous user of context " + inQuotes(contextName);
        return cfg;
    }
    cfg.identity = "user " + inQuotes(**userName) + " of context " + inQuotes(contextName);
    if (auto r = readUser(rd, root, **userName, ctxWhere, **clusterName, cfg); !r) return r.error();
    return cfg;
}

}  // namespace

Result<std::string> readSmallFile(const std::string& path, const std::string& what) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        return makeError(Errc::InvalidConfig,
                         "cannot read " + what + " " + path + ": " + std::strerror(errno));
    std::string out;
    char buf[8192];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
        out.append(buf, static_cast<size_t>(f.gcount()));
        if (static_cast<std::streamsize>(out.size()) > kMaxFileBytes)
            return makeError(Errc::InvalidConfig, what + " " + path + " is larger than " +
                                                      std::to_string(kMaxFileBytes >> 20) + " MiB");
    }
    if (f.bad()) return makeError(Errc::InvalidConfig, "error reading " + what + " " + path);
    return out;
}

namespace {

bool plainNumber(const std::string& s) {
    static const std::regex kNumber(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
    return std::regex_match(s, kNumber);
}

// A document's values, at most kMaxYamlValues of them: YAML aliases repeat a node wherever they
// name it, so a small document can stand for an exponential number of values.
constexpr size_t kMaxYamlValues = 1'000'000;

json::Value jsonOf(const YAML::Node& n, int depth, size_t& left) {
    using json::Value;
    if (depth > 64) throw YAML::Exception(n.Mark(), "nested deeper than 64");
    if (left-- == 0)
        throw YAML::Exception(
            n.Mark(), "more than " + std::to_string(kMaxYamlValues) + " values (aliases included)");
    switch (n.Type()) {
        case YAML::NodeType::Map: {
            Value o = Value::object();
            for (const auto& kv : n)
                o.set(kv.first.as<std::string>(), jsonOf(kv.second, depth + 1, left));
            return o;
        }
        case YAML::NodeType::Sequence: {
            Value a = Value::array();
            for (const auto& item : n) a.push(jsonOf(item, depth + 1, left));
            return a;
        }
        case YAML::NodeType::Scalar: {
            const std::string& s = n.Scalar();
            if (n.Tag() == "!") return Value::string(s);  // quoted
            if (s == "null" || s == "~" || s == "Null" || s == "NULL") return Value::null();
            if (s == "true" || s == "True" || s == "TRUE") return Value::boolean(true);
            if (s == "false" || s == "False" || s == "FALSE") return Value::boolean(false);
            if (plainNumber(s)) return Value::numberText(s);
            return Value::string(s);
        }
        default:
            return Value::null();
    }
}

// A JSON document's tree as RapidJSON reads it, or YAML::Load's turned into one: text that is
// not strict JSON (YAML flow style, a comment, a syntax error) goes to yaml-cpp, which reads it
// or says where it is wrong. yaml-cpp scans JSON a character at a time and builds a node tree
// of shared pointers: the node kubeconfig (a base64 CA and a token), which allot-gc writes as
// JSON, is read without it (callgrind: 0.56M of an empty-pool ADD's 1.65M instructions went to
// reading it through a YAML tree).
json::Value loadTree(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
        if (auto v = json::parse(text); v && v->isObject()) return std::move(*v);
    }
    size_t left = kMaxYamlValues;
    return jsonOf(YAML::Load(text), 0, left);
}

}  // namespace

Result<ClusterConfig> loadKubeconfig(const std::string& path, const std::string& context) {
    if (path.empty()) return makeError(Errc::InvalidConfig, "kubeconfig path is empty");
    auto text = readSmallFile(path, "kubeconfig");
    if (!text) return text.error();
    Reader rd(path);
    try {
        const json::Value root = loadTree(*text);
        return parseKubeconfig(rd, root, context);
    } catch (const YAML::Exception& e) {
        // e.what() carries line/column and the parser's complaint, not the document's values.
        return rd.error(std::string("invalid YAML: ") + e.what());
    } catch (const std::exception& e) {
        return rd.error(std::string("cannot parse: ") + e.what());
    }
}

Result<ClusterConfig> inClusterConfig(const std::string& serviceAccountDir) {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host)
        return makeError(Errc::InvalidConfig,
                         "not running in a cluster: KUBERNETES_SERVICE_HOST is not set (give "
                         "kubernetes.kubeconfig instead)");
    if (!port || !*port)
        return makeError(Errc::InvalidConfig,
                         "not running in a cluster: KUBERNETES_SERVICE_PORT is not set");
    const std::string portStr = port;
    if (portStr.find_first_not_of("0123456789") != std::string::npos)
        return makeError(Errc::InvalidConfig,
                         "KUBERNETES_SERVICE_PORT " + inQuotes(portStr) + " is not a port number");
    std::string h = host;
    if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";

    ClusterConfig cfg;
    cfg.server = "https://" + h + ":" + portStr;
    const std::filesystem::path dir(serviceAccountDir);
    cfg.tokenFile = (dir / "token").string();
    auto token = readSmallFile(cfg.tokenFile, "serviceaccount token");
    if (!token) return token.error();
    cfg.token = trimmed(*token);
    if (cfg.token.empty())
        return makeError(Errc::InvalidConfig,
                         "serviceaccount token " + cfg.tokenFile + " is empty");
    const std::string ca = (dir / "ca.crt").string();
    if (std::ifstream(ca)) cfg.caFile = ca;  // else the system bundle, as client-go does
    if (auto ns = readSmallFile((dir / "namespace").string(), "serviceaccount namespace"))
        cfg.namespace_ = trimmed(*ns);
    cfg.identity = "serviceaccount token from " + cfg.tokenFile;
    return cfg;
}

Result<std::vector<json::Value>> yamlDocuments(std::string_view text, size_t maxBytes) {
    if (text.size() > maxBytes)
        return makeError(Errc::Decode,
                         "input is larger than " + std::to_string(maxBytes) + " bytes");
    try {
        std::vector<json::Value> out;
        for (const YAML::Node& doc : YAML::LoadAll(std::string(text)))
            if (size_t left = kMaxYamlValues; doc.IsDefined() && !doc.IsNull())
                out.push_back(jsonOf(doc, 0, left));
        return out;
    } catch (const YAML::Exception& e) {
        return makeError(Errc::Decode, "line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
}

}  // namespace allot::k8s
