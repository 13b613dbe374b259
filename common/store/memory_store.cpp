#include "store/memory_store.h"

#include <algorithm>

#include "core/ownership.h"
#include "store/pool_codec.h"

namespace allot::store {

core::Owner reservationOwner(const Reservation& r) {
    return core::Owner{r.containerId, r.podRef, r.ifName, "", "", ""};
}

bool reservedFor(const Reservation& r, const core::Owner& owner) {
    return core::heldBy(reservationOwner(r), owner);
}

Result<std::vector<Pool>> PoolStore::listPools() {
    std::vector<Pool> out;
    std::optional<core::Error> bad;
    auto r = eachPool(
        [&](Pool& p) {
            out.push_back(std::move(p));
            return true;
        },
        [&](const std::string& name, const std::string& why) {
            if (!bad) bad = core::makeError(core::Errc::Invalid, "IPPool " + name + ": " + why);
        });
    if (!r) return r.error();
    if (bad) return *bad;
    return out;
}

Result<std::vector<Reservation>> PoolStore::listReservations() {
    std::vector<Reservation> out;
    auto r = eachReservation([&](Reservation& x) {
        out.push_back(std::move(x));
        return true;
    });
    if (!r) return r.error();
    return out;
}

using core::Errc;
using core::makeError;

namespace {

// The guard of a NodeSlicePool update or delete: Internal without a version, NotFound,
// Conflict when stale.
std::optional<core::Error> staleSlicePool(
    const std::map<std::pair<std::string, std::string>, json::Value>& stored, const std::string& ns,
    const std::string& name, const std::string& resourceVersion) {
    const std::string what = "NodeSlicePool " + ns + "/" + name;
    if (resourceVersion.empty())
        return makeError(Errc::Internal, what + ": a write without a resourceVersion");
    auto it = stored.find({ns, name});
    if (it == stored.end()) return makeError(Errc::NotFound, what + " not found");
    const std::string have = json::stringAt(it->second, {"metadata", "resourceVersion"});
    if (have != resourceVersion)
        return makeError(Errc::Conflict, what + " was modified (have version " + resourceVersion +
                                             ", stored " + have + ")");
    return std::nullopt;
}

}  // namespace

void MemoryStore::setSizePolicy(const SizePolicy& p) {
    std::lock_guard lock(mu_);
    sizePolicy_ = p;
}

std::optional<core::Error> MemoryStore::fitted(Pool& p) {
    auto f = fitPool(p, "", sizePolicy_);
    if (!f) return f.error();
    p.stored = StoredSize{f->estimatedStored, 0, f->size.entries};
    return std::nullopt;
}

std::optional<core::Error> MemoryStore::injected() {
    ++calls_;
    if (down_) return makeError(Errc::Transient, "store unreachable (injected)");
    if (failLeft_ > 0) {
        --failLeft_;
        return makeError(failCode_, "injected failure");
    }
    return std::nullopt;
}

Result<Pool> MemoryStore::getPool(const std::string& name) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    auto it = pools_.find(name);
    if (it == pools_.end()) return makeError(Errc::NotFound, "pool " + name + " not found");
    return it->second;
}

Result<Pool> MemoryStore::createPool(const Pool& pool) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    if (pools_.count(pool.name))
        return makeError(Errc::AlreadyExists, "pool " + pool.name + " already exists");
    Pool p = pool;
    if (auto e = fitted(p)) return *e;
    p.resourceVersion = std::to_string(++version_);
    pools_[p.name] = p;
    return p;
}

Result<Pool> MemoryStore::updatePool(Pool pool) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    auto it = pools_.find(pool.name);
    if (it == pools_.end()) return makeError(Errc::NotFound, "pool " + pool.name + " not found");
    if (conflictLeft_ > 0) {
        --conflictLeft_;
        it->second.resourceVersion = std::to_string(++version_);  // a concurrent writer
    }
    if (it->second.resourceVersion != pool.resourceVersion) {
        return makeError(Errc::Conflict, "pool " + pool.name + " was modified (have version " +
                                             pool.resourceVersion + ", stored " +
                                             it->second.resourceVersion + ")");
    }
    Pool p = pool;
    p.written.clear();  // this store sends no text: a caller's stale one must not be cached
    p.range = it->second.range;
    p.stored = it->second.stored;
    if (auto e = fitted(p)) return *e;
    p.resourceVersion = std::to_string(++version_);
    it->second = p;
    return p;
}

// The callbacks run on a copy, outside the lock: they may call the store.
Result<void> MemoryStore::eachPool(const std::function<bool(Pool&)>& fn, const BadPool&) {
    std::vector<Pool> all;
    {
        std::lock_guard lock(mu_);
        if (auto e = injected()) return *e;
        for (const auto& [name, p] : pools_) all.push_back(p);
    }
    for (auto& p : all)
        if (!fn(p)) break;
    return {};
}

Result<Reservation> MemoryStore::getReservation(const std::string& name) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    auto it = reservations_.find(name);
    if (it == reservations_.end())
        return makeError(Errc::NotFound, "reservation " + name + " not found");
    return it->second;
}

Result<Reservation> MemoryStore::createReservation(const Reservation& r) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    if (reservations_.count(r.name))
        return makeError(Errc::AlreadyExists, "reservation " + r.name + " already exists");
    Reservation s = r;
    s.resourceVersion = std::to_string(++version_);
    if (s.created == std::chrono::system_clock::time_point{})
        s.created = std::chrono::system_clock::now();
    reservations_[s.name] = s;
    return s;
}

Result<void> MemoryStore::deleteReservation(const std::string& name,
                                            const std::string& resourceVersion) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    auto it = reservations_.find(name);
    if (it == reservations_.end())
        return makeError(Errc::NotFound, "reservation " + name + " not found");
    if (!resourceVersion.empty() && it->second.resourceVersion != resourceVersion)
        return makeError(Errc::Conflict, "reservation " + name + " changed since it was read");
    reservations_.erase(it);
    return {};
}

Result<void> MemoryStore::eachReservation(const std::function<bool(Reservation&)>& fn) {
    std::vector<Reservation> all;
    {
        std::lock_guard lock(mu_);
        if (auto e = injected()) return *e;
        for (const auto& [name, r] : reservations_) all.push_back(r);
    }
    for (auto& r : all)
        if (!fn(r)) break;
    return {};
}

Result<NodeSlicePool> MemoryStore::readSlicePool(const std::string& ns,
                                                 const std::string& name) const {
    auto it = slicePools_.find({ns, name});
    if (it == slicePools_.end())
        return makeError(Errc::NotFound, "NodeSlicePool " + ns + "/" + name + " not found");
    return decodeNodeSlicePool(it->second);
}

NodeSlicePool MemoryStore::storeSlicePool(NodeSlicePool p) {
    p.resourceVersion = std::to_string(++version_);
    json::Value obj = encodeNodeSlicePool(p);
    slicePools_[{p.ns, p.name}] = obj;
    return decodeNodeSlicePool(std::move(obj));
}

Result<std::vector<NodeSlicePool>> MemoryStore::listNodeSlicePools(const std::string& ns) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    std::vector<NodeSlicePool> out;
    for (const auto& [key, obj] : slicePools_)
        if (ns.empty() || key.first == ns) out.push_back(decodeNodeSlicePool(obj));
    return out;
}

Result<NodeSlicePool> MemoryStore::getNodeSlicePool(const std::string& ns,
                                                    const std::string& name) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    return readSlicePool(ns, name);
}

Result<NodeSlicePool> MemoryStore::createNodeSlicePool(const NodeSlicePool& p) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    if (slicePools_.count({p.ns, p.name}))
        return makeError(Errc::AlreadyExists,
                         "NodeSlicePool " + p.ns + "/" + p.name + " already exists");
    return storeSlicePool(p);
}

Result<NodeSlicePool> MemoryStore::updateNodeSlicePool(const NodeSlicePool& p) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    if (auto e = staleSlicePool(slicePools_, p.ns, p.name, p.resourceVersion)) return *e;
    return storeSlicePool(p);
}

Result<void> MemoryStore::removeNodeSlicePool(const std::string& ns, const std::string& name,
                                              const std::string& resourceVersion) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    if (auto e = staleSlicePool(slicePools_, ns, name, resourceVersion)) return *e;
    slicePools_.erase({ns, name});
    return {};
}

Result<NodeSlice> MemoryStore::nodeSlice(const std::string& sliceName, const std::string& node,
                                         bool fresh) {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    auto read = readSlicePool(ns_, sliceName);
    const bool refused = read && !read->partsRefused.empty();
    if (!fresh && !refused)
        if (auto c = cachedSlices_.find({sliceName, node}); c != cachedSlices_.end()) {
            if (c->second.empty()) return makeError(Errc::NotFound, "no cached node slice");
            return NodeSlice{c->second, ""};
        }
    if (fresh) ++freshSliceReads_;
    return nodeSliceIn(std::move(read), node);
}

NodeSlicePool MemoryStore::ownSlicePool(const std::string& sliceName) const {
    if (auto p = readSlicePool(ns_, sliceName)) return std::move(*p);
    NodeSlicePool p;
    p.ns = ns_;
    p.name = sliceName;
    return p;
}

void MemoryStore::setNodeSlicePartsRefused(const std::string& sliceName, const std::string& why) {
    std::lock_guard lock(mu_);
    NodeSlicePool p = ownSlicePool(sliceName);
    p.partsRefused = why;
    storeSlicePool(std::move(p));
}

void MemoryStore::setNodeSlice(const std::string& sliceName, const std::string& node,
                               const std::string& cidr) {
    std::lock_guard lock(mu_);
    NodeSlicePool p = ownSlicePool(sliceName);
    auto& a = p.allocations;
    auto mine = std::find_if(a.begin(), a.end(), [&](const auto& x) { return x.nodeName == node; });
    if (cidr.empty())
        std::erase_if(a, [&](const auto& x) { return x.nodeName == node; });
    else if (mine != a.end())
        mine->sliceRange = cidr;
    else
        a.push_back({node, cidr});
    storeSlicePool(std::move(p));
}

void MemoryStore::setCachedNodeSlice(const std::string& sliceName, const std::string& node,
                                     const std::string& cidr) {
    std::lock_guard lock(mu_);
    cachedSlices_[{sliceName, node}] = cidr;
}

int MemoryStore::freshSliceReads() const {
    std::lock_guard lock(mu_);
    return freshSliceReads_;
}

Result<void> MemoryStore::ping() {
    std::lock_guard lock(mu_);
    if (auto e = injected()) return *e;
    return {};
}

void MemoryStore::failNext(int n, core::Errc code) {
    std::lock_guard lock(mu_);
    failLeft_ = n;
    failCode_ = code;
}

void MemoryStore::conflictNext(int n) {
    std::lock_guard lock(mu_);
    conflictLeft_ = n;
}

void MemoryStore::setUnreachable(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
}

int MemoryStore::calls() const {
    std::lock_guard lock(mu_);
    return calls_;
}

}  // namespace allot::store
