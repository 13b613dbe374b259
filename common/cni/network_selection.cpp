#include "cni/network_selection.h"

#include <vector>

#include "json/json.h"

namespace allot::cni {

using core::Errc;
using core::makeError;
using core::Result;

namespace {

Result<std::string> member(const json::Value& obj, std::string_view key, size_t i) {
    auto v = obj.getString(key);
    if (!v)
        return makeError(Errc::InvalidConfig, std::string(kNetworksAnnotation) + " element " +
                                                  std::to_string(i) + ": " + v.error().message);
    return v->value_or("");
}

// cni-args' ipam-claim-reference: a cni-args that is not an object, or a reference that is not a
// string, is refused as the plugin refuses it in args.cni.
Result<std::string> cniArgsClaimRef(const json::Value& element, size_t i) {
    const json::Value* args = element.find("cni-args");
    if (!args || args->isNull()) return std::string();
    if (!args->isObject())
        return makeError(Errc::InvalidConfig, std::string(kNetworksAnnotation) + " element " +
                                                  std::to_string(i) +
                                                  ": cni-args is not an object");
    auto ref = member(*args, "ipam-claim-reference", i);
    if (!ref) return makeError(Errc::InvalidConfig, ref.error().message + " (in cni-args)");
    return ref;
}

Result<std::vector<SelectionElement>> fromJson(std::string_view text) {
    auto v = json::parse(text);
    const std::string what(kNetworksAnnotation);
    if (!v) return makeError(Errc::InvalidConfig, what + " annotation: " + v.error().message);
    if (!v->isArray()) return makeError(Errc::InvalidConfig, what + " annotation is not a list");
    std::vector<SelectionElement> out;
    for (size_t i = 0; i < v->items().size(); ++i) {
        const json::Value& e = v->items()[i];
        if (!e.isObject())
            return makeError(Errc::InvalidConfig,
                             what + " element " + std::to_string(i) + " is not an object");
        SelectionElement s{i, {}, {}, {}, {}, {}};
        for (auto [key, into] : {std::pair{"name", &s.name}, std::pair{"namespace", &s.ns},
                                 std::pair{"interface", &s.interface},
                                 std::pair{"ipam-claim-reference", &s.claimRef}}) {
            auto m = member(e, key, i);
            if (!m) return m.error();
            *into = *m;
        }
        auto ref = cniArgsClaimRef(e, i);
        if (!ref) return ref.error();
        s.cniArgsClaimRef = *ref;
        out.push_back(std::move(s));
    }
    return out;
}

// A Kubernetes object name as the short form may hold one: lowercase letters, digits, '-', '.'.
bool objectName(const std::string& s) {
    if (s.empty() || s.size() > 253) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    return true;
}

// Multus' short form: "name", "ns/name", "name@if", comma-separated.
Result<std::vector<SelectionElement>> fromShortForm(std::string_view text) {
    std::vector<SelectionElement> out;
    size_t i = 0;
    for (size_t pos = 0; pos <= text.size(); ++i) {
        size_t comma = text.find(',', pos);
        if (comma == std::string_view::npos) comma = text.size();
        std::string item(text.substr(pos, comma - pos));
        pos = comma + 1;
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        SelectionElement s{i, {}, {}, {}, {}, {}};
        if (auto at = item.find('@'); at != std::string::npos) {
            s.interface = item.substr(at + 1);
            item.resize(at);
        }
        if (auto slash = item.find('/'); slash != std::string::npos) {
            s.ns = item.substr(0, slash);
            item.erase(0, slash + 1);
        }
        s.name = item;
        if (!objectName(s.name) || (!s.ns.empty() && !objectName(s.ns)) ||
            s.interface.find_first_of("/@\"{}[], ") != std::string::npos)
            return makeError(Errc::InvalidConfig, std::string(kNetworksAnnotation) + " element " +
                                                      std::to_string(s.index) + " (\"" +
                                                      std::string(text.substr(0, 80)) +
                                                      "\") is not [namespace/]name[@interface]");
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace

Result<std::vector<SelectionElement>> selections(std::string_view annotation) {
    const std::string what(kNetworksAnnotation);
    if (annotation.size() > kMaxNetworksAnnotationBytes)
        return makeError(Errc::InvalidConfig, what + " annotation of " +
                                                  std::to_string(annotation.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(kMaxNetworksAnnotationBytes));
    size_t first = annotation.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return std::vector<SelectionElement>();
    auto elements = annotation[first] == '[' ? fromJson(annotation) : fromShortForm(annotation);
    if (!elements) return elements.error();
    if (elements->size() > kMaxSelectionElements)
        return makeError(Errc::InvalidConfig, what + " annotation has " +
                                                  std::to_string(elements->size()) +
                                                  " elements, more than the limit of " +
                                                  std::to_string(kMaxSelectionElements));
    return elements;
}

const std::string& claimReference(const SelectionElement& e) {
    return e.cniArgsClaimRef.empty() ? e.claimRef : e.cniArgsClaimRef;
}

Result<std::optional<SelectionElement>> selectionFor(std::string_view annotation,
                                                     std::string_view ifName) {
    auto elements = selections(annotation);
    if (!elements) return elements.error();
    for (auto& e : *elements) {
        std::string name = e.interface.empty() ? "net" + std::to_string(e.index + 1) : e.interface;
        if (name == ifName) return std::optional<SelectionElement>(std::move(e));
    }
    return std::optional<SelectionElement>();
}

}  // namespace allot::cni
