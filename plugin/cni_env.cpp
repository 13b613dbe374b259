#include "plugin/cni_env.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;

namespace {

core::Error badEnv(const std::string& what) {
    return makeError(Errc::BadEnvironment, what);
}

std::string get(const EnvMap& env, const char* key) {
    auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
}

bool truthy(const std::string& v) {
    return v == "1" || v == "true" || v == "True" || v == "TRUE";
}

constexpr size_t kMaxArgsLen = 64 * 1024;

}  // namespace

bool validContainerId(const std::string& id) {
    // The spec: alphanumerics plus '_', '.', '-', starting with an alphanumeric.
    if (id.empty() || id.size() > 1024) return false;
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (!alnum(id[0])) return false;
    for (char c : id)
        if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
    return true;
}

bool validIfName(const std::string& name) {
    // Linux limits (IFNAMSIZ - 1) and forbids '/', ':' and whitespace; "." and ".." are paths.
    if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
    for (char c : name) {
        unsigned char u = static_cast<unsigned char>(c);
        if (c == '/' || c == ':' || u <= 0x20 || u == 0x7f) return false;
    }
    return true;
}

Result<CniArgs> parseCniArgs(const std::string& text) {
    CniArgs out;
    if (text.size() > kMaxArgsLen) return badEnv("CNI_ARGS is longer than 64 KiB");
    bool ignoreUnknown = false;
    std::vector<std::pair<std::string, std::string>> pairs;
    size_t pos = 0;
    while (pos <= text.size() && !text.empty()) {
        size_t end = text.find(';', pos);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(pos, end - pos);
        pos = end + 1;
        if (!item.empty()) {
            auto eq = item.find('=');
            if (eq == std::string::npos || eq == 0)
                return badEnv("CNI_ARGS: \"" + item.substr(0, 64) + "\" is not KEY=VALUE");
            std::string key = item.substr(0, eq), value = item.substr(eq + 1);
            if (key == "IgnoreUnknown") ignoreUnknown = truthy(value);
            pairs.emplace_back(std::move(key), std::move(value));
        }
        if (end == text.size()) break;
    }
    for (auto& [key, value] : pairs) {
        if (key == "IgnoreUnknown") continue;
        if (key == "K8S_POD_NAME") {
            out.podName = value;
        } else if (key == "K8S_POD_NAMESPACE") {
            out.podNamespace = value;
        } else if (key == "K8S_POD_UID") {
            out.podUid = value;
        } else if (key == "K8S_POD_INFRA_CONTAINER_ID") {
            out.infraContainerId = value;
        } else if (key == "IP") {
            out.ipText = value;
        } else if (key == "GATEWAY") {
            out.gatewayText = value;
        } else if (!ignoreUnknown) {
            return badEnv("CNI_ARGS: unknown key \"" + key.substr(0, 64) +
                          "\" (set IgnoreUnknown=1 to ignore unknown keys)");
        }
    }
    return out;
}

namespace {

// The comma-separated items of a CNI_ARGS value, empty ones included (Go's strings.Split).
std::vector<std::string> commaItems(const std::string& text) {
    std::vector<std::string> out;
    size_t p = 0;
    for (size_t c; (c = text.find(',', p)) != std::string::npos; p = c + 1)
        out.push_back(text.substr(p, c - p));
    out.push_back(text.substr(p));
    return out;
}

}  // namespace

Result<std::vector<core::IpAddress>> parseArgIps(const std::string& text) {
    std::vector<core::IpAddress> out;
    for (const auto& one : commaItems(text)) {
        if (one.empty()) continue;
        auto ip = core::IpAddress::parse(one.substr(0, one.find('/')));
        if (!ip) return badEnv("CNI_ARGS IP=\"" + text.substr(0, 64) + "\": " + ip.error().message);
        out.push_back(*ip);
    }
    return out;
}

Result<std::vector<core::IpAddress>> parseArgGateways(const std::string& text) {
    std::vector<core::IpAddress> out;
    for (const auto& item : commaItems(text)) {
        // Blanks around an item are dropped, as Whereabouts does (strings.TrimSpace).
        const size_t b = item.find_first_not_of(" \t");
        const std::string one =
            b == std::string::npos ? "" : item.substr(b, item.find_last_not_of(" \t") - b + 1);
        auto ip = core::parseGoIp(one, core::IpSyntax::Sloppy);  // as Whereabouts reads it
        if (!ip)
            return badEnv("CNI_ARGS GATEWAY=\"" + text.substr(0, 64) + "\": \"" +
                          one.substr(0, 64) + "\" is not an IP address");
        out.push_back(*ip);
    }
    return out;
}

Result<CniEnv> parseEnv(const EnvMap& env) {
    CniEnv e;
    e.commandName = get(env, "CNI_COMMAND");
    if (e.commandName == "ADD")
        e.command = Command::Add;
    else if (e.commandName == "DEL")
        e.command = Command::Del;
    else if (e.commandName == "CHECK")
        e.command = Command::Check;
    else if (e.commandName == "GC")
        e.command = Command::Gc;
    else if (e.commandName == "STATUS")
        e.command = Command::Status;
    else if (e.commandName == "VERSION")
        e.command = Command::Version;
    else if (e.commandName.empty())
        return badEnv("CNI_COMMAND is not set");
    else
        return badEnv("CNI_COMMAND \"" + e.commandName.substr(0, 32) + "\" is not a CNI verb");

    e.containerId = get(env, "CNI_CONTAINERID");
    e.netns = get(env, "CNI_NETNS");
    e.ifName = get(env, "CNI_IFNAME");
    e.path = get(env, "CNI_PATH");

    const bool needsAttachment =
        e.command == Command::Add || e.command == Command::Del || e.command == Command::Check;
    if (needsAttachment) {
        if (e.containerId.empty())
            return badEnv("CNI_CONTAINERID is required for " + e.commandName);
        if (!validContainerId(e.containerId))
            return badEnv("CNI_CONTAINERID \"" + e.containerId.substr(0, 64) +
                          "\" has characters outside [A-Za-z0-9_.-] or does not start with one");
        if (e.ifName.empty()) return badEnv("CNI_IFNAME is required for " + e.commandName);
        if (!validIfName(e.ifName))
            return badEnv("CNI_IFNAME \"" + e.ifName.substr(0, 32) +
                          "\" is not a valid interface name");
    }
    if ((e.command == Command::Add || e.command == Command::Check) && e.netns.empty())
        return badEnv("CNI_NETNS is required for " + e.commandName);

    if (e.command != Command::Version) {
        auto args = parseCniArgs(get(env, "CNI_ARGS"));
        if (!args) return args.error();
        e.args = std::move(*args);
    }
    return e;
}

}  // namespace allot::plugin
