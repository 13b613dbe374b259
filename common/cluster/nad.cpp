#include "cluster/nad.h"

#include <algorithm>

#include "cni/net_config.h"

namespace allot::cluster {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

// The decoders quote the offending value, which a NAD's author chose: keep what is logged one
// printable line of bounded length.
constexpr size_t kMaxMessageBytes = 512;

bool owned(const json::Value& plugin, const std::vector<std::string>& types) {
    const json::Value* ipam = plugin.find("ipam");
    if (!ipam || !ipam->isObject()) return false;
    const json::Value* t = ipam->find("type");
    if (!t || !t->isString()) return false;
    return std::find(types.begin(), types.end(), t->asString()) != types.end();
}

Result<NetworkIpam> decodeOne(const json::Value& plugin, const std::string& name,
                              const std::string& cniVersion,
                              const std::vector<std::string>& flatFiles, const std::string& where) {
    // Hand the plugin's own decoder a single network config, as a runtime would.
    json::Value single = json::Value::object();
    single.set("cniVersion", json::Value::string(cniVersion.empty() ? "1.1.0" : cniVersion));
    single.set("name", json::Value::string(name));
    single.set("ipam", *plugin.find("ipam"));
    auto net = cni::parseNetConf(single.dump(), flatFiles);
    if (!net)
        return makeError(net.code(),
                         where + ": " + printable(net.error().message, kMaxMessageBytes));
    auto cfg = core::validate(net->ipam);
    if (!cfg)
        return makeError(cfg.code(),
                         where + ": " + printable(cfg.error().message, kMaxMessageBytes));
    return NetworkIpam{name, std::move(*cfg)};
}

}  // namespace

std::string printable(std::string_view s, size_t max) {
    std::string out;
    for (unsigned char c : s) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

Result<std::vector<NetworkIpam>> parseNadConfig(std::string_view specConfig,
                                                const std::vector<std::string>& ownedTypes,
                                                const std::vector<std::string>& flatFiles) {
    if (specConfig.size() > kMaxNadConfigBytes)
        return makeError(Errc::Decode, "spec.config is larger than 1 MiB");
    auto doc = json::parse(specConfig, {kMaxNadConfigBytes, 32});
    if (!doc) return makeError(Errc::Decode, "spec.config: " + doc.error().message);
    if (!doc->isObject())
        return makeError(Errc::Decode,
                         std::string("spec.config must be a JSON object, got ") + doc->typeName());
    auto name = doc->getString("name");
    auto version = doc->getString("cniVersion");
    if (!name) return makeError(Errc::Decode, "spec.config: " + name.error().message);
    if (!version) return makeError(Errc::Decode, "spec.config: " + version.error().message);
    const std::string netName = name->value_or(""), cniVersion = version->value_or("");

    std::vector<NetworkIpam> out;
    if (const json::Value* plugins = doc->find("plugins"); plugins && !plugins->isNull()) {
        if (!plugins->isArray())
            return makeError(Errc::Decode, "spec.config.plugins must be a list");
        for (size_t i = 0; i < plugins->items().size(); ++i) {
            const json::Value& p = plugins->items()[i];
            if (!p.isObject())
                return makeError(Errc::Decode, "spec.config.plugins[" + std::to_string(i) +
                                                   "] must be an object");
            if (!owned(p, ownedTypes)) continue;
            auto one =
                decodeOne(p, netName, cniVersion, flatFiles, "plugins[" + std::to_string(i) + "]");
            if (!one) return one.error();
            out.push_back(std::move(*one));
        }
        return out;
    }
    if (owned(*doc, ownedTypes)) {
        auto one = decodeOne(*doc, netName, cniVersion, flatFiles, "spec.config");
        if (!one) return one.error();
        out.push_back(std::move(*one));
    }
    return out;
}

Result<std::string> nadSpecConfig(const json::Value& nad) {
    const json::Value* spec = nad.find("spec");
    const json::Value* cfg = spec && spec->isObject() ? spec->find("config") : nullptr;
    if (!cfg || !cfg->isString() || cfg->asString().empty())
        return makeError(Errc::NotFound, "NetworkAttachmentDefinition has no spec.config");
    return cfg->asString();
}

}  // namespace allot::cluster
