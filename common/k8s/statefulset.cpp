#include "k8s/statefulset.h"

namespace allot::k8s {

using core::Errc;
using core::makeError;

namespace {

std::string stringAt(const json::Value& obj, std::string_view key) {
    const json::Value* v = obj.find(key);
    return v && v->isString() ? v->asString() : std::string();
}

// An integer at `key` of `obj` (absent or null: `dflt`); Invalid naming `field` otherwise.
core::Result<int64_t> intAt(const json::Value* obj, std::string_view key, int64_t dflt,
                            const std::string& field) {
    const json::Value* v = obj && obj->isObject() ? obj->find(key) : nullptr;
    if (!v || v->isNull()) return dflt;
    auto n = v->isNumber() ? v->asInt() : std::nullopt;
    if (!n || *n < 0) return makeError(Errc::Invalid, field + " must be a whole number >= 0");
    return *n;
}

}  // namespace

std::optional<core::StatefulSetRef> controllingStatefulSet(const json::Value& pod) {
    const json::Value* md = pod.find("metadata");
    if (!md || !md->isObject()) return std::nullopt;
    const json::Value* refs = md->find("ownerReferences");
    if (!refs || !refs->isArray()) return std::nullopt;
    for (const auto& r : refs->items()) {
        if (!r.isObject()) continue;
        const json::Value* ctl = r.find("controller");
        if (!ctl || !ctl->isBool() || !ctl->asBool()) continue;
        if (stringAt(r, "kind") != kStatefulSet.kind || stringAt(r, "apiVersion") != "apps/v1")
            return std::nullopt;
        core::StatefulSetRef set{stringAt(*md, "namespace"), stringAt(r, "name"),
                                 stringAt(r, "uid")};
        if (set.ns.empty() || set.name.empty() || set.uid.empty() ||
            set.uid.find('/') != std::string::npos)
            return std::nullopt;
        return set;
    }
    return std::nullopt;
}

json::Value statefulSetOwnerReference(const core::StatefulSetRef& set) {
    auto r = json::Value::object();
    r.set("apiVersion", json::Value::string("apps/v1"));
    r.set("kind", json::Value::string(std::string(kStatefulSet.kind)));
    r.set("name", json::Value::string(set.name));
    r.set("uid", json::Value::string(set.uid));
    r.set("controller", json::Value::boolean(true));
    return r;
}

core::Result<core::StatefulSetView> statefulSetView(const json::Value& set) {
    const json::Value* md = set.find("metadata");
    if (!md || !md->isObject()) return makeError(Errc::Invalid, "StatefulSet without metadata");
    core::StatefulSetView v;
    v.uid = stringAt(*md, "uid");
    if (v.uid.empty()) return makeError(Errc::Invalid, "StatefulSet without metadata.uid");
    const json::Value* del = md->find("deletionTimestamp");
    v.deleting = del && !del->isNull();
    const json::Value* spec = set.find("spec");
    auto replicas = intAt(spec, "replicas", 1, "spec.replicas");
    if (!replicas) return replicas.error();
    v.replicas = *replicas;
    const json::Value* ordinals = spec && spec->isObject() ? spec->find("ordinals") : nullptr;
    auto start = intAt(ordinals, "start", 0, "spec.ordinals.start");
    if (!start) return start.error();
    v.ordinalsStart = *start;
    return v;
}

}  // namespace allot::k8s
