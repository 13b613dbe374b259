#include "store/node_slice_codec.h"

#include "k8s_api/resources.h"

namespace allot::store {

using json::Value;

namespace {

std::string str(const Value* v) {
    return v && v->isString() ? v->asString() : std::string();
}
std::string strAt(const Value& obj, const char* a, const char* b) {
    const Value* x = obj.find(a);
    return x && x->isObject() ? str(x->find(b)) : std::string();
}
bool boolOf(const Value* v) {
    return v && v->isBool() && v->asBool();
}

Value& member(Value& obj, const char* key) {
    Value* v = obj.find(key);
    if (v && v->isObject()) return *v;
    return obj.set(key, Value::object());
}

// Present but not a string: still refused (someone wrote it), with no reason to give.
std::string partsRefused(const Value& item) {
    const Value* md = item.find("metadata");
    const Value* ann = md && md->isObject() ? md->find("annotations") : nullptr;
    const Value* v = ann && ann->isObject() ? ann->find(kPartsRefusedAnnotation) : nullptr;
    if (!v) return "";
    return v->isString() && !v->asString().empty() ? v->asString() : "refused";
}

}  // namespace

NodeSlicePool decodeNodeSlicePool(Value item) {
    NodeSlicePool p;
    p.ns = strAt(item, "metadata", "namespace");
    p.name = strAt(item, "metadata", "name");
    p.resourceVersion = strAt(item, "metadata", "resourceVersion");
    p.range = strAt(item, "spec", "range");
    p.sliceSize = strAt(item, "spec", "sliceSize");
    const Value* md = item.find("metadata");
    const Value* labels = md && md->isObject() ? md->find("labels") : nullptr;
    p.managed =
        labels && labels->isObject() && str(labels->find(kSliceManagedByLabel)) == kSliceManager;
    p.partsRefused = partsRefused(item);
    const Value* owners = md && md->isObject() ? md->find("ownerReferences") : nullptr;
    if (owners && owners->isArray())
        for (const auto& o : owners->items())
            if (o.isObject())
                p.owners.push_back({str(o.find("apiVersion")), str(o.find("kind")),
                                    str(o.find("name")), str(o.find("uid")),
                                    boolOf(o.find("controller")),
                                    boolOf(o.find("blockOwnerDeletion"))});
    const Value* st = item.find("status");
    const Value* allocs = st && st->isObject() ? st->find("allocations") : nullptr;
    if (allocs && allocs->isArray())
        for (const auto& a : allocs->items())
            if (a.isObject())
                p.allocations.push_back({str(a.find("nodeName")), str(a.find("sliceRange"))});
    p.raw = std::move(item);
    return p;
}

namespace {

Value ownersJson(const std::vector<OwnerRef>& owners) {
    Value arr = Value::array();
    for (const auto& o : owners) {
        Value r = Value::object();
        r.set("apiVersion", Value::string(o.apiVersion));
        r.set("kind", Value::string(o.kind));
        r.set("name", Value::string(o.name));
        r.set("uid", Value::string(o.uid));
        if (o.controller) r.set("controller", Value::boolean(true));
        if (o.blockOwnerDeletion) r.set("blockOwnerDeletion", Value::boolean(true));
        arr.push(std::move(r));
    }
    return arr;
}

}  // namespace

Value encodeNodeSlicePool(const NodeSlicePool& p) {
    Value obj = p.raw.isObject() ? p.raw : Value::object();
    obj.set("apiVersion", Value::string(k8s::apiVersion(k8s::kNodeSlicePool)));
    obj.set("kind", Value::string("NodeSlicePool"));
    Value& md = member(obj, "metadata");
    md.set("name", Value::string(p.name));
    md.set("namespace", Value::string(p.ns));
    if (!p.resourceVersion.empty()) md.set("resourceVersion", Value::string(p.resourceVersion));
    if (p.managed) member(md, "labels").set(kSliceManagedByLabel, Value::string(kSliceManager));
    if (!p.partsRefused.empty())
        member(md, "annotations").set(kPartsRefusedAnnotation, Value::string(p.partsRefused));
    else if (Value* ann = md.find("annotations"); ann && ann->isObject())
        ann->erase(kPartsRefusedAnnotation);
    if (p.owners.empty())
        md.erase("ownerReferences");
    else
        md.set("ownerReferences", ownersJson(p.owners));
    Value& spec = member(obj, "spec");
    spec.set("range", Value::string(p.range));
    spec.set("sliceSize", Value::string(p.sliceSize));
    Value allocs = Value::array();
    for (const auto& a : p.allocations) {
        Value e = Value::object();
        e.set("nodeName", Value::string(a.nodeName));
        e.set("sliceRange", Value::string(a.sliceRange));
        allocs.push(std::move(e));
    }
    member(obj, "status").set("allocations", std::move(allocs));
    return obj;
}

std::optional<std::string> nodeSliceOf(const NodeSlicePool& p, const std::string& node) {
    for (const auto& a : p.allocations)
        if (a.nodeName == node && !a.sliceRange.empty()) return a.sliceRange;
    return std::nullopt;
}

}  // namespace allot::store
