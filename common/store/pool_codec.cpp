#include "store/pool_codec.h"

namespace allot::store {

using core::Errc;
using core::makeError;

namespace {

Result<std::string> str(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value* v = obj.find(key);
    if (!v || v->isNull()) return std::string();
    if (!v->isString())
        return makeError(Errc::Invalid, where + "." + key + " must be a string, got " + v->typeName());
    return v->asString();
}

json::Value metadata(const std::string& name, const std::string& ns, const std::string& rv,
                     const json::Value& keep = json::Value()) {
    json::Value m = keep.isObject() ? keep : json::Value::object();
    m.erase("managedFields");
    m.set("name", json::Value::string(name));
    if (!ns.empty()) m.set("namespace", json::Value::string(ns));
    if (!rv.empty()) m.set("resourceVersion", json::Value::string(rv));
    return m;
}

}  // namespace

Result<Pool> decodePool(const json::Value& obj) {
    if (!obj.isObject()) return makeError(Errc::Invalid, std::string("IPPool is a JSON ") + obj.typeName());
    Pool p;
    const json::Value* meta = obj.find("metadata");
    if (meta && meta->isObject()) {
        auto n = str(*meta, "name", "metadata");
        if (!n) return n.error();
        p.name = *n;
        auto rv = str(*meta, "resourceVersion", "metadata");
        if (!rv) return rv.error();
        p.resourceVersion = *rv;
        p.meta = *meta;
        for (const char* k : {"name", "namespace", "resourceVersion", "managedFields"}) p.meta.erase(k);
    }
    const std::string where = "IPPool " + p.name + " spec";
    const json::Value* spec = obj.find("spec");
    if (!spec || !spec->isObject()) return makeError(Errc::Invalid, where + " is missing");
    auto range = str(*spec, "range", where);
    if (!range) return range.error();
    if (range->empty()) return makeError(Errc::Invalid, where + ".range is missing");
    p.range = *range;
    const json::Value* allocs = spec->find("allocations");
    if (allocs && !allocs->isNull()) {
        if (!allocs->isObject())
            return makeError(Errc::Invalid, where + ".allocations must be an object, got " + allocs->typeName());
        for (const auto& [key, entry] : allocs->members()) {
            std::string at = where + ".allocations[\"" + key.substr(0, 64) + "\"]";
            auto offset = core::u128FromString(key);
            if (!offset) return makeError(Errc::Invalid, at + ": key is not a decimal offset");
            if (!entry.isObject()) return makeError(Errc::Invalid, at + " must be an object");
            // The shipped CRD has no per-entry schema (the cost of a large pool's write), so the
            // one field every writer sets is checked here.
            if (const json::Value* idv = entry.find("id"); !idv || idv->isNull())
                return makeError(Errc::Invalid, at + " has no id");
            core::Owner o;
            auto id = str(entry, "id", at);
            auto podref = str(entry, "podref", at);
            auto ifname = str(entry, "ifname", at);
            auto node = str(entry, "node", at);
            auto uid = str(entry, "poduid", at);
            auto network = str(entry, "network", at);
            for (auto* r : {&id, &podref, &ifname, &node, &uid, &network})
                if (!*r) return r->error();
            o.containerId = *id;
            o.podRef = *podref;
            o.ifName = *ifname;
            o.node = *node;
            o.podUid = *uid;
            o.network = *network;
            if (!p.allocations.emplace(*offset, std::move(o)).second)
                return makeError(Errc::Invalid, at + " appears twice");
        }
    }
    return p;
}

json::Value encodePool(const Pool& pool, const std::string& ns) {
    json::Value obj = json::Value::object();
    obj.set("apiVersion", json::Value::string(kGroupVersion));
    obj.set("kind", json::Value::string("IPPool"));
    obj.set("metadata", metadata(pool.name, ns, pool.resourceVersion, pool.meta));
    json::Value spec = json::Value::object();
    spec.set("range", json::Value::string(pool.range));
    json::Value allocs = json::Value::object();
    allocs.members().reserve(pool.allocations.size());
    for (const auto& [offset, o] : pool.allocations) {
        json::Value e = json::Value::object();
        e.members().reserve(6);
        e.members().emplace_back("id", json::Value::string(o.containerId));
        e.members().emplace_back("podref", json::Value::string(o.podRef));
        if (!o.ifName.empty()) e.members().emplace_back("ifname", json::Value::string(o.ifName));
        if (!o.node.empty()) e.members().emplace_back("node", json::Value::string(o.node));
        if (!o.podUid.empty()) e.members().emplace_back("poduid", json::Value::string(o.podUid));
        if (!o.network.empty()) e.members().emplace_back("network", json::Value::string(o.network));
        allocs.members().emplace_back(core::u128ToString(offset), std::move(e));
    }
    spec.set("allocations", std::move(allocs));
    obj.set("spec", std::move(spec));
    return obj;
}

Result<Reservation> decodeReservation(const json::Value& obj) {
    if (!obj.isObject())
        return makeError(Errc::Invalid, std::string("OverlappingRangeIPReservation is a JSON ") + obj.typeName());
    Reservation r;
    const json::Value* meta = obj.find("metadata");
    if (meta && meta->isObject()) {
        auto n = str(*meta, "name", "metadata");
        auto rv = str(*meta, "resourceVersion", "metadata");
        if (!n) return n.error();
        if (!rv) return rv.error();
        r.name = *n;
        r.resourceVersion = *rv;
    }
    const std::string where = "OverlappingRangeIPReservation " + r.name + " spec";
    const json::Value* spec = obj.find("spec");
    if (!spec || !spec->isObject()) return makeError(Errc::Invalid, where + " is missing");
    auto cid = str(*spec, "containerid", where);
    auto podref = str(*spec, "podref", where);
    auto ifname = str(*spec, "ifname", where);
    for (auto* x : {&cid, &podref, &ifname})
        if (!*x) return x->error();
    r.containerId = *cid;
    r.podRef = *podref;
    r.ifName = *ifname;
    return r;
}

json::Value encodeReservation(const Reservation& r, const std::string& ns) {
    json::Value obj = json::Value::object();
    obj.set("apiVersion", json::Value::string(kGroupVersion));
    obj.set("kind", json::Value::string("OverlappingRangeIPReservation"));
    obj.set("metadata", metadata(r.name, ns, r.resourceVersion));
    json::Value spec = json::Value::object();
    spec.set("containerid", json::Value::string(r.containerId));
    spec.set("podref", json::Value::string(r.podRef));
    if (!r.ifName.empty()) spec.set("ifname", json::Value::string(r.ifName));
    obj.set("spec", std::move(spec));
    return obj;
}

}  // namespace allot::store
