#include "store/pool_codec.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

#include "k8s_api/timestamp.h"

namespace allot::store {

using core::Errc;
using core::makeError;

namespace {

Result<std::string> str(const json::Value& obj, const char* key, const std::string& where) {
    const json::Value* v = obj.find(key);
    if (!v || v->isNull()) return std::string();
    if (!v->isString())
        return makeError(Errc::Invalid,
                         where + "." + key + " must be a string, got " + v->typeName());
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

namespace {

constexpr const char* kKnownEntryFields[] = {"id",     "podref",  "ifname",   "node",
                                             "poduid", "network", "ipamclaim"};

bool knownEntryField(std::string_view k) {
    for (const char* f : kKnownEntryFields)
        if (k == f) return true;
    return false;
}

// Why an entry cannot be read, or "" when it can; fills `o` and `unknown` then.
std::string readEntry(const json::Value& entry, core::Owner& o, json::Value& unknown) {
    if (!entry.isObject())
        return std::string("the entry is a JSON ") + entry.typeName() + ", not an object";
    const json::Value* idv = entry.find("id");
    if (!idv || idv->isNull()) return "it has no id";
    std::string* into[] = {&o.containerId, &o.podRef,  &o.ifName, &o.node,
                           &o.podUid,      &o.network, &o.claim};
    for (size_t i = 0; i < std::size(kKnownEntryFields); ++i) {
        const json::Value* v = entry.find(kKnownEntryFields[i]);
        if (!v || v->isNull()) continue;
        if (!v->isString())
            return std::string(kKnownEntryFields[i]) + " is a JSON " + v->typeName() +
                   ", not a string";
        *into[i] = v->asString();
    }
    if (o.containerId.empty()) return "its id is empty";
    for (const auto& [k, v] : entry.members()) {
        if (knownEntryField(k)) continue;
        if (!unknown.isObject()) unknown = json::Value::object();
        unknown.members().emplace_back(k, v);
    }
    return {};
}

// The release log an annotation holds; an empty one, and `why`, when it cannot be read. An
// offset or time that is not a number is left out.
core::ReleaseLog decodeReleased(const json::Value& text, std::string& why) {
    core::ReleaseLog log;
    if (!text.isString()) {
        why = std::string("it is a JSON ") + text.typeName() + ", not a string";
        return log;
    }
    auto v = json::parse(text.asString());
    if (!v || !v->isObject()) {
        why = v ? "it is not a JSON object" : "it is not JSON: " + v.error().message;
        return log;
    }
    const json::Value* keep = v->find("keep");
    const json::Value* at = v->find("at");
    auto keepS = keep ? keep->asInt() : std::nullopt;
    if (!keepS || *keepS <= 0 || !at || !at->isObject()) {
        why = "it needs a positive integer \"keep\" and an object \"at\"";
        return log;
    }
    log.keepS = std::min(*keepS, core::kMaxCooldownS);
    for (const auto& [k, t] : at->members()) {
        auto off = core::u128FromString(k);
        auto when = t.asInt();
        if (off && when) log.at[*off] = *when;
    }
    return log;
}

// Moves the release log and the slice seal out of the kept metadata into Pool::released and
// Pool::sealed; a release log that cannot be read stays there verbatim, and
// Pool::releasedUnreadable says why.
void takeAllotAnnotations(Pool& p) {
    json::Value* ann = p.meta.find("annotations");
    if (!ann || !ann->isObject()) return;
    if (const json::Value* v = ann->find(kReleasedAnnotation)) {
        std::string why;
        p.released = decodeReleased(*v, why);
        if (!why.empty())
            p.releasedUnreadable = std::string("annotation ") + kReleasedAnnotation +
                                   " cannot be read (" + why +
                                   "): no released-address cooldown is applied from it";
        else
            ann->erase(kReleasedAnnotation);
    }
    if (const json::Value* v = ann->find(kSealedAnnotation)) {
        p.sealed = v->isString() && !v->asString().empty() ? v->asString() : "unreadable";
        ann->erase(kSealedAnnotation);
    }
    if (ann->members().empty()) p.meta.erase("annotations");
}

// Claim owners from kClaimsAnnotation onto the entries that hold the container ID it names
// (an entry whose own `ipamclaim` survived keeps it); the annotation leaves the kept metadata.
void takeClaimsAnnotation(Pool& p) {
    json::Value* ann = p.meta.find("annotations");
    const json::Value* v = ann && ann->isObject() ? ann->find(kClaimsAnnotation) : nullptr;
    if (!v) return;
    auto parsed = json::parse(v->isString() ? v->asString() : std::string());
    if (parsed && parsed->isObject()) {
        for (const auto& [k, note] : parsed->members()) {
            auto off = core::u128FromString(k);
            auto it = off ? p.allocations.find(*off) : p.allocations.end();
            const json::Value* id = note.isObject() ? note.find("id") : nullptr;
            const json::Value* claim = note.isObject() ? note.find("claim") : nullptr;
            if (it == p.allocations.end() || !id || !claim || !id->isString() ||
                !claim->isString() || id->asString() != it->second.containerId)
                continue;
            if (it->second.claim.empty()) it->second.claim = claim->asString();
        }
    }
    ann->erase(kClaimsAnnotation);
    if (ann->members().empty()) p.meta.erase("annotations");
}

json::Value encodeReleased(const core::ReleaseLog& log) {
    json::Value v = json::Value::object();
    v.set("keep", json::Value::number(log.keepS));
    json::Value at = json::Value::object();
    for (const auto& [off, when] : log.at)
        at.members().emplace_back(core::u128ToString(off), json::Value::number(when));
    v.set("at", std::move(at));
    return v;
}

// metadata: name, namespace and resourceVersion; the rest is kept (Pool::meta), except
// managedFields, whose size is all a write needs (`managedFieldsBytes`: measured while
// streaming; nullopt: measured here).
Result<void> decodeMeta(const json::Value& obj, Pool& p, std::string& ns,
                        std::optional<size_t> managedFieldsBytes = std::nullopt) {
    const json::Value* meta = obj.find("metadata");
    if (!meta || !meta->isObject()) return {};
    auto n = str(*meta, "name", "metadata");
    if (!n) return n.error();
    p.name = *n;
    auto rv = str(*meta, "resourceVersion", "metadata");
    if (!rv) return rv.error();
    p.resourceVersion = *rv;
    auto space = str(*meta, "namespace", "metadata");
    if (!space) return space.error();
    ns = *space;
    if (const json::Value* mf = meta->find("managedFields"); mf && !mf->isNull())
        managedFieldsBytes = mf->dump().size();
    if (managedFieldsBytes)
        p.stored.overhead = *managedFieldsBytes + std::string_view(",\"managedFields\":").size();
    // Copied without managedFields, which can be as large as the entries.
    p.meta = json::Value::object();
    for (const auto& [k, v] : meta->members())
        if (k != "name" && k != "namespace" && k != "resourceVersion" && k != "managedFields")
            p.meta.members().emplace_back(k, v);
    takeAllotAnnotations(p);
    return {};
}

// Members of the object and of spec allot does not know, kept for the write back.
void keepOther(const json::Value& obj, const json::Value& spec, Pool& p) {
    for (const auto& [k, v] : obj.members()) {
        if (k == "apiVersion" || k == "kind" || k == "metadata" || k == "spec") continue;
        if (!p.other.isObject()) p.other = json::Value::object();
        p.other.members().emplace_back(k, v);
    }
    for (const auto& [k, v] : spec.members()) {
        if (k == "range" || k == "allocations") continue;
        if (!p.other.isObject()) p.other = json::Value::object();
        json::Value* os = p.other.find("spec");
        if (!os) os = &p.other.set("spec", json::Value::object());
        os->members().emplace_back(k, v);
    }
}

using OffsetClaims = std::vector<std::pair<core::u128, std::string>>;

// One entry of spec.allocations, decoded, or kept verbatim in Pool::undecoded. `claims`: the
// undecoded entries with an offset, for decodedAll.
void decodeEntry(const std::string& key, const json::Value& entry, Pool& p, OffsetClaims& claims) {
    auto offset = core::u128FromString(key);
    const bool canonical = offset && core::u128ToString(*offset) == key;
    // A key seen twice keeps its last entry, as the API server's decoder does.
    if (canonical && !p.undecoded.erase(key)) {
        p.allocations.erase(*offset);
        p.unknownFields.erase(*offset);
    } else if (!canonical) {
        p.undecoded.erase(key);
    }
    std::string why;
    core::Owner o;
    json::Value unknown;
    if (!offset)
        why = "its key is not a decimal offset";
    else if (!canonical)
        why = "its key is not written the way allot writes offsets";
    else
        why = readEntry(entry, o, unknown);
    if (!why.empty()) {
        p.undecoded[key] = UndecodedEntry{entry, std::move(why)};
        if (offset) claims.emplace_back(*offset, key);
        return;
    }
    if (unknown.isObject())
        p.unknownFields[*offset] = UnknownFields{o.containerId, o.ifName, std::move(unknown)};
    p.allocations.emplace(*offset, std::move(o));
}

// Once every entry is read: undecoded entries whose offset is free get a placeholder.
void decodedAll(Pool& p, const OffsetClaims& claims) {
    for (const auto& [offset, key] : claims)
        if (p.undecoded.count(key)) p.allocations.emplace(offset, core::Owner{});
}

// decodePool, after the entries streamed into `p` (if any): those spec.allocations still
// holds are decoded here.
Result<Pool> decodeRest(const json::Value& obj, Pool p, OffsetClaims& claims,
                        std::optional<size_t> managedFieldsBytes) {
    if (!obj.isObject())
        return makeError(Errc::Invalid, std::string("IPPool is a JSON ") + obj.typeName());
    std::string ns;
    if (auto m = decodeMeta(obj, p, ns, managedFieldsBytes); !m) return m.error();
    const std::string where = "IPPool " + p.name + " spec";
    const json::Value* spec = obj.find("spec");
    if (!spec || !spec->isObject()) return makeError(Errc::Invalid, where + " is missing");
    auto range = str(*spec, "range", where);
    if (!range) return range.error();
    if (range->empty()) return makeError(Errc::Invalid, where + ".range is missing");
    p.range = *range;
    keepOther(obj, *spec, p);
    const json::Value* allocs = spec->find("allocations");
    if (allocs && !allocs->isNull()) {
        if (!allocs->isObject())
            return makeError(Errc::Invalid,
                             where + ".allocations must be an object, got " + allocs->typeName());
        for (const auto& [key, entry] : allocs->members()) decodeEntry(key, entry, p, claims);
    }
    decodedAll(p, claims);
    takeClaimsAnnotation(p);
    const PoolSize size = poolSize(p, ns);
    p.stored.bytes = size.bytes + p.stored.overhead;
    p.stored.entries = size.entries;
    return p;
}

}  // namespace

Result<Pool> decodePool(const json::Value& obj) {
    OffsetClaims claims;
    return decodeRest(obj, Pool{}, claims, std::nullopt);
}

namespace {

// metadata.managedFields measured, not built: its size goes to `into`.
json::Tap managedFieldsTap(std::optional<size_t>& into) {
    return {{"metadata", "managedFields"},
            [&into](const std::string&, json::Value& size) {
                into.reset();
                if (auto n = size.asInt()) into = static_cast<size_t>(*n);
                return true;
            },
            true};
}

}  // namespace

std::vector<json::Tap> PoolStreamDecoder::taps() {
    return {{{"spec", "allocations", "*"},
             [this](const std::string& key, json::Value& entry) {
                 decodeEntry(key, entry, pool_, claims_);
                 return true;
             }},
            managedFieldsTap(managedFieldsBytes_)};
}

Result<Pool> PoolStreamDecoder::finish(const json::Value& rest) {
    Pool p = std::exchange(pool_, Pool{});
    OffsetClaims claims = std::exchange(claims_, {});
    return decodeRest(rest, std::move(p), claims, std::exchange(managedFieldsBytes_, {}));
}

std::vector<json::Tap> PoolWriteDecoder::taps() {
    return {{{"spec"}, [](const std::string&, json::Value&) { return true; }, true},
            managedFieldsTap(managedFieldsBytes_)};
}

Result<Pool> PoolWriteDecoder::finish(Pool sent, std::string sentText, const PoolSize& size,
                                      const json::Value& answer) {
    if (!answer.isObject())
        return makeError(Errc::Invalid, std::string("IPPool is a JSON ") + answer.typeName());
    std::string ns;
    sent.resourceVersion.clear();  // only the answer's counts: an answer without one is Invalid
    if (auto m = decodeMeta(answer, sent, ns, std::exchange(managedFieldsBytes_, {})); !m)
        return m.error();
    takeClaimsAnnotation(sent);  // sent's entries hold the claims it says
    if (sent.resourceVersion.empty())
        return makeError(Errc::Invalid,
                         "IPPool " + sent.name + ": the answer has no resourceVersion");
    sent.stored.bytes = size.bytes + sent.stored.overhead;
    sent.stored.entries = size.entries;
    sent.written = std::move(sentText);
    return sent;
}

namespace {

void addMember(json::Value& obj, std::string key, json::Value v) {
    obj.members().emplace_back(std::move(key), std::move(v));
}

bool writesOwner(const Pool& pool, core::u128 offset, const core::Owner& o);

// kClaimsAnnotation's value: every claim-owned entry written.
json::Value encodeClaims(const Pool& pool) {
    json::Value out = json::Value::object();
    for (const auto& [offset, o] : pool.allocations) {
        if (o.claim.empty() || !writesOwner(pool, offset, o)) continue;
        json::Value note = json::Value::object();
        addMember(note, "id", json::Value::string(o.containerId));
        addMember(note, "claim", json::Value::string(o.claim));
        addMember(out, core::u128ToString(offset), std::move(note));
    }
    return out;
}

// The object with an empty allocations map, in encodePool's member order.
json::Value encodeShell(const Pool& pool, const std::string& ns) {
    json::Value obj = json::Value::object();
    addMember(obj, "apiVersion", json::Value::string(kGroupVersion));
    addMember(obj, "kind", json::Value::string("IPPool"));
    json::Value meta = metadata(pool.name, ns, pool.resourceVersion, pool.meta);
    if (pool.released.keepS > 0) {
        json::Value* ann = meta.find("annotations");
        if (!ann || !ann->isObject()) ann = &meta.set("annotations", json::Value::object());
        ann->set(kReleasedAnnotation, json::Value::string(encodeReleased(pool.released).dump()));
    }
    if (auto claims = encodeClaims(pool); !claims.members().empty()) {
        json::Value* ann = meta.find("annotations");
        if (!ann || !ann->isObject()) ann = &meta.set("annotations", json::Value::object());
        ann->set(kClaimsAnnotation, json::Value::string(claims.dump()));
    }
    if (!pool.sealed.empty()) {
        json::Value* ann = meta.find("annotations");
        if (!ann || !ann->isObject()) ann = &meta.set("annotations", json::Value::object());
        ann->set(kSealedAnnotation, json::Value::string(pool.sealed));
    }
    addMember(obj, "metadata", std::move(meta));
    json::Value spec = json::Value::object();
    const json::Value* otherSpec = pool.other.isObject() ? pool.other.find("spec") : nullptr;
    if (otherSpec && otherSpec->isObject()) spec = *otherSpec;
    spec.set("range", json::Value::string(pool.range));
    spec.set("allocations", json::Value::object());
    addMember(obj, "spec", std::move(spec));
    if (pool.other.isObject())
        for (const auto& [k, v] : pool.other.members())
            if (k != "spec") obj.set(k, v);
    return obj;
}

// Written for `offset`: not a placeholder whose verbatim entry is written instead.
bool writesOwner(const Pool& pool, core::u128 offset, const core::Owner& o) {
    return !(isPlaceholder(o) || pool.undecoded.count(core::u128ToString(offset)));
}

const json::Value* unknownFor(const Pool& pool, core::u128 offset, const core::Owner& o) {
    auto it = pool.unknownFields.find(offset);
    if (it == pool.unknownFields.end()) return nullptr;
    if (it->second.containerId != o.containerId || it->second.ifName != o.ifName) return nullptr;
    return &it->second.fields;
}

json::Value encodeEntry(const core::Owner& o, const json::Value* unknown) {
    json::Value e = json::Value::object();
    e.members().reserve(7 + (unknown ? unknown->members().size() : 0));
    addMember(e, "id", json::Value::string(o.containerId));
    addMember(e, "podref", json::Value::string(o.podRef));
    if (!o.ifName.empty()) addMember(e, "ifname", json::Value::string(o.ifName));
    if (!o.node.empty()) addMember(e, "node", json::Value::string(o.node));
    if (!o.podUid.empty()) addMember(e, "poduid", json::Value::string(o.podUid));
    if (!o.network.empty()) addMember(e, "network", json::Value::string(o.network));
    // Never dropped by the size policy: it is what keeps a claim's address from being freed.
    if (!o.claim.empty()) addMember(e, "ipamclaim", json::Value::string(o.claim));
    if (unknown)
        for (const auto& [k, v] : unknown->members()) addMember(e, k, v);
    return e;
}

// Bytes of `s` as a JSON string, quotes included, escaped as json::Value::dump escapes.
size_t quoted(std::string_view s) {
    size_t n = 2;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            n += 2;
        else if (u < 0x20)
            n += 6;
        else
            n += 1;
    }
    return n;
}

// ,"name":"value" for a field written only when not empty.
size_t optional(size_t nameLen, const std::string& v) {
    return v.empty() ? 0 : 1 + nameLen + 3 + quoted(v);
}

size_t extrasBytes(const core::Owner& o) {
    return optional(4, o.node) + optional(6, o.podUid) + optional(7, o.network);
}

// {"id":"..","podref":"..",...} without allot's optional fields.
size_t baseEntryBytes(const core::Owner& o, const json::Value* unknown) {
    size_t n = 2 + 5 + quoted(o.containerId) + 1 + 9 + quoted(o.podRef) + optional(6, o.ifName) +
               optional(9, o.claim);
    if (unknown)
        for (const auto& [k, v] : unknown->members()) n += 1 + quoted(k) + 1 + v.dump().size();
    return n;
}

}  // namespace

json::Value encodePool(const Pool& pool, const std::string& ns) {
    json::Value obj = encodeShell(pool, ns);
    json::Value& allocs = *obj.find("spec")->find("allocations");
    allocs.members().reserve(pool.allocations.size() + pool.undecoded.size());
    for (const auto& [offset, o] : pool.allocations) {
        if (!writesOwner(pool, offset, o)) continue;
        addMember(allocs, core::u128ToString(offset), encodeEntry(o, unknownFor(pool, offset, o)));
    }
    for (const auto& [key, u] : pool.undecoded) addMember(allocs, key, u.value);
    return obj;
}

PoolSize poolSize(const Pool& pool, const std::string& ns) {
    PoolSize s;
    s.bytes = encodeShell(pool, ns).dump().size();
    size_t extras = 0;
    for (const auto& [offset, o] : pool.allocations) {
        if (!writesOwner(pool, offset, o)) continue;
        s.bytes += quoted(core::u128ToString(offset)) + 1 +
                   baseEntryBytes(o, unknownFor(pool, offset, o)) + extrasBytes(o);
        extras += extrasBytes(o);
        ++s.entries;
    }
    for (const auto& [key, u] : pool.undecoded) {
        s.bytes += quoted(key) + 1 + u.value.dump().size();
        ++s.entries;
    }
    if (s.entries > 1) s.bytes += s.entries - 1;  // commas
    s.whereaboutsBytes = s.bytes - extras;
    return s;
}

Result<Fitted> fitPool(Pool& pool, const std::string& ns, const SizePolicy& policy) {
    for (const auto& [key, u] : pool.undecoded) {
        auto off = core::u128FromString(key);
        if (!off || core::u128ToString(*off) != key) continue;
        auto it = pool.allocations.find(*off);
        if (it != pool.allocations.end() && !isPlaceholder(it->second))
            return makeError(Errc::Internal,
                             "IPPool " + pool.name + ": offset " + key +
                                 " holds an entry allot cannot decode; refusing to write over it");
    }
    // Unknown fields of an entry whose owner changed left with that owner.
    for (auto it = pool.unknownFields.begin(); it != pool.unknownFields.end();) {
        auto a = pool.allocations.find(it->first);
        if (a == pool.allocations.end() || !unknownFor(pool, it->first, a->second))
            it = pool.unknownFields.erase(it);
        else
            ++it;
    }
    Fitted f;
    f.size = poolSize(pool, ns);
    // managedFields grow with the entries when the schema tracks them one by one.
    const StoredSize& was = pool.stored;
    size_t overhead = was.overhead;
    if (f.size.entries > was.entries)
        overhead +=
            was.overhead * (f.size.entries - was.entries) / std::max<size_t>(was.entries, 1);
    const size_t allowed =
        std::min(policy.maxBytes,
                 std::max(policy.freeBytes, f.size.whereaboutsBytes / 10 * policy.ratioTenths));
    auto total = [&] { return f.size.bytes + overhead; };
    for (auto it = pool.allocations.rbegin(); it != pool.allocations.rend() && total() > allowed;
         ++it) {
        core::Owner& o = it->second;
        const size_t cost = extrasBytes(o);
        if (cost == 0 || !writesOwner(pool, it->first, o)) continue;
        o.node.clear();
        o.podUid.clear();
        o.network.clear();
        f.size.bytes -= cost;
        ++f.stripped;
    }
    f.estimatedStored = total();
    if (f.estimatedStored > policy.maxBytes && !(was.bytes > 0 && f.estimatedStored <= was.bytes))
        return makeError(
            Errc::TooLarge,
            "IPPool " + (ns.empty() ? "" : ns + "/") + pool.name + " is full: its " +
                std::to_string(f.size.entries) + " entries would take " +
                std::to_string(f.estimatedStored) + " bytes in one object, over the " +
                std::to_string(policy.maxBytes) +
                "-byte limit allot keeps under etcd's request limit (1.5 MiB by default), "
                "with allot's optional fields already dropped");
    return f;
}

std::optional<std::string> cannotGrow(const Pool& pool, const std::string& ns,
                                      const SizePolicy& policy) {
    const PoolSize s = poolSize(pool, ns);
    const size_t shell = encodeShell(pool, ns).dump().size();
    // An entry like the pool's own (an empty pool: a 64-character ID and a short podref).
    const size_t entry = s.entries ? (s.whereaboutsBytes - shell) / s.entries + 1 : 120;
    const StoredSize& was = pool.stored;
    const size_t overhead =
        was.overhead + was.overhead / std::max<size_t>(was.entries, 1);  // one entry more
    const size_t need = s.whereaboutsBytes + entry + overhead;
    if (need <= policy.maxBytes) return std::nullopt;
    return "IPPool " + (ns.empty() ? "" : ns + "/") + pool.name +
           " cannot take another entry: " + std::to_string(s.entries) + " entries take " +
           std::to_string(s.whereaboutsBytes) +
           " bytes even without allot's optional fields, and one more would pass the " +
           std::to_string(policy.maxBytes) +
           "-byte limit allot keeps under etcd's request limit; ADDs into it fail with CNI "
           "code 11 until addresses are freed (split the network with node_slice_size or "
           "smaller ranges)";
}

Result<Reservation> decodeReservation(const json::Value& obj) {
    if (!obj.isObject())
        return makeError(Errc::Invalid,
                         std::string("OverlappingRangeIPReservation is a JSON ") + obj.typeName());
    Reservation r;
    const json::Value* meta = obj.find("metadata");
    if (meta && meta->isObject()) {
        auto n = str(*meta, "name", "metadata");
        auto rv = str(*meta, "resourceVersion", "metadata");
        if (!n) return n.error();
        if (!rv) return rv.error();
        r.name = *n;
        r.resourceVersion = *rv;
        const json::Value* created = meta->find("creationTimestamp");
        if (created && created->isString())
            if (auto t = k8s::parseTime(created->asString())) r.created = *t;
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

std::string resourceVersionOf(const json::Value& obj) {
    const json::Value* md = obj.find("metadata");
    const json::Value* rv = md && md->isObject() ? md->find("resourceVersion") : nullptr;
    return rv && rv->isString() ? rv->asString() : std::string();
}

}  // namespace allot::store
