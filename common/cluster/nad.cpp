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

core::Error located(const core::Error& e, const std::string& where) {
    return makeError(e.code, where + ": " + printable(e.message, kMaxMessageBytes));
}

// With `all`, every problem of the section goes there (located) and the config is returned
// as far as it could be read; without, the first problem is the error.
Result<NetworkIpam> decodeOne(const json::Value& plugin, const std::string& name,
                              const std::string& cniVersion,
                              const std::vector<std::string>& flatFiles, const std::string& where,
                              std::vector<core::Error>* all) {
    // Hand the plugin's own decoder a single network config, as a runtime would.
    json::Value single = json::Value::object();
    single.set("cniVersion", json::Value::string(cniVersion.empty() ? "1.1.0" : cniVersion));
    single.set("name", json::Value::string(name));
    single.set("ipam", *plugin.find("ipam"));
    std::vector<core::Error> errors;
    auto net = cni::parseNetConfAll(single.dump(), flatFiles, errors);
    if (!net) return located(net.error(), where);
    core::ValidatedConfig cfg = core::validateAll(net->ipam, errors);
    if (!all && !errors.empty()) return located(errors.front(), where);
    for (const auto& e : errors) all->push_back(located(e, where));
    cfg.warnings.insert(cfg.warnings.begin(), net->warnings.begin(), net->warnings.end());
    return NetworkIpam{name, std::move(cfg)};
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
                                                const std::vector<std::string>& flatFiles,
                                                std::vector<core::Error>* all) {
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
        // The whole list's shape first: a malformed document is a Decode error whatever IPAM
        // an earlier entry holds, as it is for a reader that owns no type.
        for (size_t i = 0; i < plugins->items().size(); ++i)
            if (!plugins->items()[i].isObject())
                return makeError(Errc::Decode, "spec.config.plugins[" + std::to_string(i) +
                                                   "] must be an object");
        for (size_t i = 0; i < plugins->items().size(); ++i) {
            const json::Value& p = plugins->items()[i];
            if (!owned(p, ownedTypes)) continue;
            auto one = decodeOne(p, netName, cniVersion, flatFiles,
                                 "plugins[" + std::to_string(i) + "]", all);
            if (!one) return one.error();
            out.push_back(std::move(*one));
        }
        return out;
    }
    if (owned(*doc, ownedTypes)) {
        auto one = decodeOne(*doc, netName, cniVersion, flatFiles, "spec.config", all);
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
