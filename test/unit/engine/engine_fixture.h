#pragma once
// The engine's tests: a network config decoded and validated as the plugin does, one call's
// Context over a shared MemoryStore (each plugin run has its own), and in-memory node state
// (a DEL journal, a pool cache). Header only; the node layer's tests use it too.

#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/config.h"
#include "engine/add.h"
#include "engine/context.h"
#include "engine/release.h"
#include "store/memory_store.h"

namespace allot::test {

// The network config named "net" whose ipam object holds `ipam` (keys without the braces),
// decoded (no flat file) and validated as the plugin does before it calls the engine.
inline core::ValidatedConfig config(const std::string& ipam) {
    const std::string text =
        R"({"cniVersion":"1.1.0","name":"net","type":"macvlan","ipam":{"type":"allot",)" + ipam +
        "}}";
    auto net = cni::parseNetConf(text, {});
    REQUIRE_MESSAGE(net, (net ? "" : net.error().message));
    auto cfg = core::validate(net->ipam);
    REQUIRE_MESSAGE(cfg, (cfg ? "" : cfg.error().message));
    return *cfg;
}

// Container `cid`'s interface net1 in pod ns/`pod` on `node`, on network "net".
inline core::Owner owner(const std::string& cid, const std::string& pod = "pod1",
                         const std::string& uid = "", const std::string& node = "node-a") {
    return core::Owner{cid, "ns/" + pod, "net1", node, uid, "net"};
}

// Whether a read found nothing: false for an object found (where .code() would abort) or any
// other error.
template <typename T>
bool notFound(const core::Result<T>& r) {
    return !r && r.code() == core::Errc::NotFound;
}

// The IPv4 range most cases use, and its pool's name.
inline const std::string kV4 = R"("range":"10.0.0.0/29","gateway":"10.0.0.1")";
inline const std::string kPool = "10.0.0.0-29";

inline core::IpAddress ip(const std::string& text) {
    return core::IpAddress::parse(text).value();
}

// "10.0.0.2/29": an answered address with its range's prefix.
inline std::string cidr(const engine::IpResult& r) {
    return r.ip.str() + "/" + std::to_string(r.prefix);
}

// The first address of an ADD that must have succeeded.
inline std::string firstCidr(const core::Result<std::vector<engine::IpResult>>& r) {
    REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
    REQUIRE_FALSE(r->empty());
    return cidr(r->front());
}

struct MemJournal : engine::ReleaseJournal {
    std::vector<engine::JournalEntry> entries;
    core::Result<void> record(const engine::JournalEntry& e) override {
        entries.push_back(e);
        return {};
    }
};

// A pool cache in memory, keyed by namespace and pool as the node's files are.
class MapCache : public engine::PoolCache {
  public:
    std::optional<store::Pool> load(const std::string& ns, const std::string& p) override {
        auto it = pools.find(ns + "/" + p);
        if (it == pools.end()) return std::nullopt;
        ++hits;
        return it->second;
    }
    void save(const std::string& ns, const store::Pool& p) override {
        pools[ns + "/" + p.name] = p;
    }
    void drop(const std::string& ns, const std::string& p) override { pools.erase(ns + "/" + p); }
    std::map<std::string, store::Pool> pools;
    int hits = 0;
};

// One node over one store: each call gets a fresh Context, as each plugin run does.
struct Engine {
    std::shared_ptr<store::MemoryStore> mem = std::make_shared<store::MemoryStore>();
    MemJournal journal;
    engine::PoolCache* cache = nullptr;  // none unless a test sets one
    std::string node = "node-a";
    std::function<void(std::chrono::milliseconds)> sleep = [](std::chrono::milliseconds) {};

    // The call's deadline is the config's deadline_ms (the default budget when unset); its
    // store `mem` unless a test puts another in front of it.
    engine::Context context(const core::ValidatedConfig& cfg, store::PoolStore* store = nullptr) {
        engine::Context ctx(store ? *store : *mem);
        ctx.journal = &journal;
        ctx.cache = cache;
        ctx.node = node;
        ctx.poolNamespace = mem->poolNamespace();
        const int ms = cfg.raw.deadlineMs > 0 ? cfg.raw.deadlineMs : core::kDefaultDeadlineMs;
        ctx.deadline = engine::Clock::now() + std::chrono::milliseconds(ms);
        ctx.sleep = sleep;
        return ctx;
    }
    core::Result<std::vector<engine::IpResult>> add(
        const core::ValidatedConfig& cfg, const core::Owner& o,
        const std::vector<core::IpAddress>& requested = {}) {
        auto ctx = context(cfg);
        return engine::add(ctx, cfg, "net", o, requested);
    }
    core::Result<bool> del(const core::ValidatedConfig& cfg, const core::Owner& o) {
        auto ctx = context(cfg);
        return engine::del(ctx, cfg, o);
    }
    // Pool `name`, or reservation `name`, which must exist.
    store::Pool pool(const std::string& name) {
        auto p = mem->getPool(name);
        REQUIRE_MESSAGE(p, "IPPool " << name << ": " << (p ? "" : p.error().message));
        return *p;
    }
    store::Reservation reservation(const std::string& name) {
        auto r = mem->getReservation(name);
        REQUIRE_MESSAGE(r, "reservation " << name << ": " << (r ? "" : r.error().message));
        return *r;
    }
    core::AllocationMap allocations(const std::string& name) { return pool(name).allocations; }
};

}  // namespace allot::test
