#pragma once
// The store conformance suite: every PoolStore implementation must pass it, and every
// NodeSliceStore the NodeSlicePool cases. Object names are prefixed with `prefix` so runs against
// a shared server do not collide.

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "core/naming.h"
#include "json/json.h"
#include "store/node_slice_store.h"
#include "store/pool_store.h"

namespace allot::test {

// Makes NodeSlicePool `sliceName` in the store's namespace assign `range` to `node` (the
// store reads slices; the slice controller, not the store, writes them).
using SeedSlice = std::function<void(const std::string& sliceName, const std::string& node,
                                     const std::string& range)>;

// `prunes`: the store drops allot's optional entry fields (an API server with Whereabouts' own
// IPPool CRD), and refuses an entry without an id.
inline void storeConformance(store::PoolStore& s, const std::string& prefix,
                             const SeedSlice& seedSlice, bool prunes = false) {
    using core::Errc;
    const std::string name = prefix + "10.50.0.0-24";

    SUBCASE("a node's slice comes from its NodeSlicePool; no slice or no pool is NotFound") {
        seedSlice(prefix + "slicenet", "node-a", "10.60.0.16/28");
        auto got = s.nodeSlice(prefix + "slicenet", "node-a", true);
        REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message));
        CHECK(got->slice == "10.60.0.16/28");
        CHECK(!got->resourceVersion.empty());
        auto other = s.nodeSlice(prefix + "slicenet", "node-b", true);
        REQUIRE(!other.ok());
        CHECK(other.code() == Errc::NotFound);
        CHECK(other.error().message.find("node-b") != std::string::npos);
        CHECK(s.nodeSlice(prefix + "absent-slicenet", "node-a", true).code() == Errc::NotFound);
    }

    SUBCASE("a missing pool is NotFound") {
        auto p = s.getPool(prefix + "absent");
        REQUIRE(!p.ok());
        CHECK(p.code() == Errc::NotFound);
    }
    SUBCASE("created pools read back with a version; a second create is AlreadyExists") {
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        CHECK(!made->resourceVersion.empty());
        auto again = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(!again.ok());
        CHECK(again.code() == Errc::AlreadyExists);
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        CHECK(got->range == "10.50.0.0/24");
        CHECK(got->allocations.empty());
    }
    SUBCASE("an update with the current version succeeds and a stale one is Conflict") {
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        p.allocations[5] = core::Owner{"ctr-a", "ns/a", "eth0", "node-1", "uid-1", "net"};
        auto up = s.updatePool(p);
        REQUIRE(up.ok());
        CHECK(up->resourceVersion != made->resourceVersion);
        auto stale = *made;
        stale.allocations[6] = core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""};
        auto c = s.updatePool(stale);
        REQUIRE(!c.ok());
        CHECK(c.code() == Errc::Conflict);
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        REQUIRE(got->allocations.size() == 1);
        const auto& o = got->allocations.at(5);
        CHECK(o.containerId == "ctr-a");
        CHECK(o.podRef == "ns/a");
        CHECK(o.ifName == "eth0");
        CHECK(o.node == (prunes ? "" : "node-1"));
        CHECK(o.podUid == (prunes ? "" : "uid-1"));
    }
    SUBCASE("a pool's release log (cooldown) is stored and read back, and can be emptied") {
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        p.released = core::ReleaseLog{30, {{7, 1700000000}, {9, 1700000005}}};
        auto up = s.updatePool(p);
        REQUIRE_MESSAGE(up.ok(), (up.ok() ? "" : up.error().message));
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        CHECK(got->released == p.released);
        store::Pool cleared = *got;
        cleared.released = {};
        REQUIRE(s.updatePool(cleared).ok());
        CHECK(s.getPool(name)->released == core::ReleaseLog{});
    }
    SUBCASE("an update of a missing pool is NotFound") {
        auto r = s.updatePool({prefix + "gone", "10.50.0.0/24", {}, "1"});
        REQUIRE(!r.ok());
        CHECK((r.code() == Errc::NotFound || r.code() == Errc::Conflict));
    }
    SUBCASE("IPv6 offsets beyond 64 bits survive a round trip") {
        std::string n6 = prefix + "fd00---32";
        auto made = s.createPool({n6, "fd00::/32", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        core::u128 big = (core::u128(1) << 80) + 7;
        p.allocations[big] = core::Owner{"c6", "ns/six", "net1", "", "", ""};
        REQUIRE(s.updatePool(p).ok());
        auto got = s.getPool(n6);
        REQUIRE(got.ok());
        CHECK(got->allocations.count(big) == 1);
    }
    SUBCASE("reservations are exclusive and deletable with a version precondition") {
        std::string rn = prefix + "10.50.0.9";
        auto a = s.createReservation({rn, "ctr-a", "ns/a", "eth0", {}});
        REQUIRE(a.ok());
        auto b = s.createReservation({rn, "ctr-b", "ns/b", "eth0", {}});
        REQUIRE(!b.ok());
        CHECK(b.code() == Errc::AlreadyExists);
        auto got = s.getReservation(rn);
        REQUIRE(got.ok());
        CHECK(got->containerId == "ctr-a");
        CHECK(got->podRef == "ns/a");
        CHECK(store::reservedFor(*got, core::Owner{"ctr-a", "ns/a", "eth0", "", "", ""}));
        CHECK(!store::reservedFor(*got, core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""}));
        auto list = s.listReservations();
        REQUIRE(list.ok());
        bool listed = false;
        for (const auto& r : *list) listed = listed || r.name == rn;
        CHECK(listed);
        auto wrong = s.deleteReservation(rn, "999999999");
        REQUIRE(!wrong.ok());
        CHECK(wrong.code() == Errc::Conflict);
        REQUIRE(s.deleteReservation(rn, got->resourceVersion).ok());
        CHECK(s.getReservation(rn).code() == Errc::NotFound);
        CHECK(s.deleteReservation(rn, "").code() == Errc::NotFound);
    }
    SUBCASE("pools are listed") {
        REQUIRE(s.createPool({name, "10.50.0.0/24", {}, {}}).ok());
        auto list = s.listPools();
        REQUIRE(list.ok());
        bool found = false;
        for (const auto& p : *list) found = found || p.name == name;
        CHECK(found);
    }
    SUBCASE("the store answers ping") {
        CHECK(s.ping().ok());
    }
    SUBCASE("an entry allot cannot decode is kept verbatim and its offset stays taken") {
        store::Pool p{name, "10.50.0.0/24", {}, {}};
        // Keys in sorted order, as the API server stores them.
        auto bad = json::parse(R"({"ifname":"net1","note":{"n":1},"podref":"other/writer"})");
        REQUIRE(bad.ok());
        p.undecoded["7"] = store::UndecodedEntry{*bad, "it has no id"};
        p.allocations[7] = core::Owner{};
        p.allocations[5] = core::Owner{"ctr-a", "ns/a", "eth0", "", "", ""};
        auto made = s.createPool(p);
        if (prunes) {  // the schema requires an id: such an entry cannot be stored
            CHECK(!made.ok());
            return;
        }
        REQUIRE(made.ok());
        store::Pool next = *made;
        next.allocations[6] = core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""};
        REQUIRE(s.updatePool(next).ok());
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        REQUIRE(got->undecoded.count("7") == 1);
        CHECK(got->undecoded.at("7").value.dump() == bad->dump());
        CHECK(!got->undecoded.at("7").reason.empty());
        REQUIRE(got->allocations.count(7) == 1);
        CHECK(got->allocations.at(7) == core::Owner{});
        CHECK(got->allocations.size() == 3);
    }
    SUBCASE("fields allot does not know survive updates while their owner holds the entry") {
        store::Pool p{name, "10.50.0.0/24", {}, {}};
        p.allocations[5] = core::Owner{"ctr-a", "ns/a", "eth0", "", "", ""};
        p.allocations[6] = core::Owner{"ctr-b", "ns/b", "eth0", "", "", ""};
        auto f = json::parse(R"({"ipamclaimref":"ns/claim-a","future":{"x":[1,2]}})");
        REQUIRE(f.ok());
        p.unknownFields[5] = store::UnknownFields{"ctr-a", "eth0", *f};
        p.unknownFields[6] =
            store::UnknownFields{"ctr-b", "eth0", *json::parse(R"({"ipamclaimref":"ns/claim-b"})")};
        auto made = s.createPool(p);
        REQUIRE(made.ok());
        store::Pool next = *made;
        next.allocations[9] = core::Owner{"ctr-c", "ns/c", "eth0", "", "", ""};
        next.allocations[6] = core::Owner{"ctr-d", "ns/d", "eth0", "", "", ""};  // a new owner
        REQUIRE(s.updatePool(next).ok());
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        REQUIRE(got->unknownFields.count(5) == 1);
        // Unchanged, member by member (the API server stores members sorted by key).
        const json::Value& kept = got->unknownFields.at(5).fields;
        CHECK(kept.members().size() == 2);
        REQUIRE(kept.find("ipamclaimref") != nullptr);
        CHECK(kept.find("ipamclaimref")->dump() == R"("ns/claim-a")");
        REQUIRE(kept.find("future") != nullptr);
        CHECK(kept.find("future")->dump() == R"({"x":[1,2]})");
        CHECK(got->unknownFields.count(6) == 0);
        CHECK(got->unknownFields.count(9) == 0);
    }
    SUBCASE("a pool grows to its size limit, dropping optional fields first, and is then full") {
        store::SizePolicy small;
        small.maxBytes = 6000;
        small.freeBytes = 2000;
        s.setSizePolicy(small);
        auto made = s.createPool({name, "10.50.0.0/24", {}, {}});
        REQUIRE(made.ok());
        store::Pool p = *made;
        size_t added = 0;
        core::Error full{Errc::Internal, ""};
        for (core::u128 off = 1; off < 255; ++off) {
            store::Pool next = p;
            const std::string n = std::to_string(static_cast<unsigned>(off));
            next.allocations[off] = core::Owner{"ctr-" + n,
                                                "ns/pod-" + n,
                                                "eth0",
                                                "node-1",
                                                "0b5d3c1e-7f6a-4b2c-9d8e-1f2a3b4c5d" + n,
                                                "net"};
            auto up = s.updatePool(next);
            if (!up) {
                full = up.error();
                break;
            }
            p = *up;
            ++added;
            if (added == 20) {
                // Past freeBytes: the oldest entries keep their fields, the newest do not.
                auto mid = s.getPool(name);
                REQUIRE(mid.ok());
                CHECK(mid->allocations.at(1).node == "node-1");
                CHECK(mid->allocations.at(1).podUid == "0b5d3c1e-7f6a-4b2c-9d8e-1f2a3b4c5d1");
                CHECK(mid->allocations.at(1).network == "net");
                CHECK(mid->allocations.at(20).node.empty());
            }
        }
        s.setSizePolicy({});
        MESSAGE("entries that fit in 6000 bytes: " << added);
        CHECK(full.code == Errc::TooLarge);
        CHECK(full.message.find("is full") != std::string::npos);
        CHECK(full.message.find("6000") != std::string::npos);
        // Every entry is stored; the lowest offsets kept their optional fields.
        auto got = s.getPool(name);
        REQUIRE(got.ok());
        CHECK(got->allocations.size() == added);
        CHECK(got->resourceVersion == p.resourceVersion);
        CHECK(added > 60);
        bool dropped = false, prefix = true;
        for (const auto& [off, o] : got->allocations) {
            dropped = dropped || o.node.empty();
            prefix = prefix && (o.node.empty() == dropped);
        }
        CHECK(prefix);  // fields are dropped highest offset first
        CHECK(got->allocations.rbegin()->second.node.empty());
        CHECK(got->allocations.rbegin()->second.containerId == "ctr-" + std::to_string(added));
        // A release from a full pool always goes through.
        s.setSizePolicy(small);
        store::Pool less = *got;
        less.allocations.erase(less.allocations.begin());
        CHECK(s.updatePool(less).ok());
        s.setSizePolicy({});
    }
}

// A NodeSlicePool as a slice controller writes it: /26 slices of 10.61.0.0/24, two of them
// given, owned by a NAD.
inline store::NodeSlicePool slicePoolFor(const std::string& ns, const std::string& name) {
    store::NodeSlicePool p;
    p.ns = ns;
    p.name = name;
    p.range = "10.61.0.0/24";
    p.sliceSize = "/26";
    p.allocations = {{"node-a", "10.61.0.0/26"},
                     {"node-b", "10.61.0.64/26"},
                     {"", "10.61.0.128/26"},
                     {"", "10.61.0.192/26"}};
    p.owners = {
        {"k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "blue", "uid-blue", true, true},
        {"k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "green", "uid-green", false, false}};
    p.managed = true;
    return p;
}

// The names of the NodeSlicePools in `list` that start with `prefix`, as "ns/name".
inline std::set<std::string> sliceKeys(const std::vector<store::NodeSlicePool>& list,
                                       const std::string& prefix) {
    std::set<std::string> out;
    for (const auto& p : list)
        if (p.name.rfind(prefix, 0) == 0) out.insert(p.ns + "/" + p.name);
    return out;
}

// The NodeSlicePool cases: `slices` is the NodeSliceStore, `pools` a PoolStore of namespace
// `poolNs` over the same objects (its nodeSlice reads them), `otherNs` a second namespace.
inline void nodeSliceConformance(store::NodeSliceStore& slices, store::PoolStore& pools,
                                 const std::string& prefix, const std::string& poolNs,
                                 const std::string& otherNs) {
    using core::Errc;
    const std::string name = prefix + "slices-blue";
    const store::NodeSlicePool want = slicePoolFor(poolNs, name);

    SUBCASE("a created NodeSlicePool reads back with its range, slice size, slices and owners") {
        auto made = slices.createNodeSlicePool(want);
        REQUIRE_MESSAGE(made.ok(), (made.ok() ? "" : made.error().message));
        CHECK(!made->resourceVersion.empty());
        auto got = slices.getNodeSlicePool(poolNs, name);
        REQUIRE(got.ok());
        CHECK(got->ns == poolNs);
        CHECK(got->name == name);
        CHECK(got->resourceVersion == made->resourceVersion);
        CHECK(got->range == want.range);
        CHECK(got->sliceSize == want.sliceSize);
        CHECK(got->allocations == want.allocations);
        CHECK(got->owners == want.owners);
        CHECK(got->managed);
        CHECK(got->partsRefused.empty());
    }
    SUBCASE("a second create of a NodeSlicePool is AlreadyExists and keeps the first") {
        REQUIRE(slices.createNodeSlicePool(want).ok());
        auto other = want;
        other.range = "10.62.0.0/24";
        auto again = slices.createNodeSlicePool(other);
        REQUIRE(!again.ok());
        CHECK(again.code() == Errc::AlreadyExists);
        CHECK(slices.getNodeSlicePool(poolNs, name)->range == want.range);
    }
    SUBCASE("a missing NodeSlicePool is NotFound") {
        CHECK(slices.getNodeSlicePool(poolNs, prefix + "slices-absent").code() == Errc::NotFound);
    }
    SUBCASE("a NodeSlicePool update with a stale resourceVersion is Conflict and writes nothing") {
        auto made = slices.createNodeSlicePool(want);
        REQUIRE(made.ok());
        auto next = *made;
        next.allocations[2].nodeName = "node-c";
        next.partsRefused = "NAD apps/wa asks for node_slice_parts 1";
        auto up = slices.updateNodeSlicePool(next);
        REQUIRE_MESSAGE(up.ok(), (up.ok() ? "" : up.error().message));
        CHECK(up->resourceVersion != made->resourceVersion);
        CHECK(up->allocations == next.allocations);
        auto stale = *made;
        stale.allocations[3].nodeName = "node-d";
        auto c = slices.updateNodeSlicePool(stale);
        REQUIRE(!c.ok());
        CHECK(c.code() == Errc::Conflict);
        auto got = slices.getNodeSlicePool(poolNs, name);
        REQUIRE(got.ok());
        CHECK(got->resourceVersion == up->resourceVersion);
        CHECK(got->allocations == next.allocations);
        CHECK(got->partsRefused == next.partsRefused);
    }
    SUBCASE("a NodeSlicePool update after it was removed is NotFound") {
        auto made = slices.createNodeSlicePool(want);
        REQUIRE(made.ok());
        REQUIRE(slices.removeNodeSlicePool(poolNs, name, made->resourceVersion).ok());
        auto up = slices.updateNodeSlicePool(*made);
        REQUIRE(!up.ok());
        CHECK(up.code() == Errc::NotFound);
        CHECK(slices.getNodeSlicePool(poolNs, name).code() == Errc::NotFound);
    }
    SUBCASE("a NodeSlicePool remove with a stale resourceVersion is Conflict and keeps it") {
        auto made = slices.createNodeSlicePool(want);
        REQUIRE(made.ok());
        auto next = *made;
        next.allocations[2].nodeName = "node-c";
        auto up = slices.updateNodeSlicePool(next);
        REQUIRE(up.ok());
        auto stale = slices.removeNodeSlicePool(poolNs, name, made->resourceVersion);
        REQUIRE(!stale.ok());
        CHECK(stale.code() == Errc::Conflict);
        CHECK(slices.getNodeSlicePool(poolNs, name).ok());
        REQUIRE(slices.removeNodeSlicePool(poolNs, name, up->resourceVersion).ok());
        CHECK(slices.getNodeSlicePool(poolNs, name).code() == Errc::NotFound);
        CHECK(slices.removeNodeSlicePool(poolNs, name, up->resourceVersion).code() ==
              Errc::NotFound);
    }
    SUBCASE("NodeSlicePools list by namespace, and across every namespace") {
        REQUIRE(slices.createNodeSlicePool(want).ok());
        auto elsewhere = slicePoolFor(otherNs, prefix + "slices-green");
        REQUIRE(slices.createNodeSlicePool(elsewhere).ok());
        auto here = slices.listNodeSlicePools(poolNs);
        REQUIRE_MESSAGE(here.ok(), (here.ok() ? "" : here.error().message));
        CHECK(sliceKeys(*here, prefix) == std::set<std::string>{poolNs + "/" + name});
        auto all = slices.listNodeSlicePools("");
        REQUIRE(all.ok());
        CHECK(sliceKeys(*all, prefix) ==
              std::set<std::string>{poolNs + "/" + name, otherNs + "/" + prefix + "slices-green"});
        for (const auto& p : *all)
            if (p.name == name) CHECK(p.allocations == want.allocations);
    }
    SUBCASE("a node's slice read fresh follows an update of its NodeSlicePool") {
        auto made = slices.createNodeSlicePool(want);
        REQUIRE(made.ok());
        auto before = pools.nodeSlice(name, "node-a", true);
        REQUIRE_MESSAGE(before.ok(), (before.ok() ? "" : before.error().message));
        CHECK(before->slice == "10.61.0.0/26");
        CHECK(before->resourceVersion == made->resourceVersion);
        CHECK(before->partsRefused.empty());
        auto next = *made;
        next.allocations[0].nodeName = "";
        next.allocations[2].nodeName = "node-a";
        next.partsRefused = "NAD apps/wa asks for node_slice_parts 1";
        auto up = slices.updateNodeSlicePool(next);
        REQUIRE(up.ok());
        auto after = pools.nodeSlice(name, "node-a", true);
        REQUIRE(after.ok());
        CHECK(after->slice == "10.61.0.128/26");
        CHECK(after->resourceVersion == up->resourceVersion);
        CHECK(after->partsRefused == next.partsRefused);
        CHECK(pools.nodeSlice(name, "node-c", true).code() == Errc::NotFound);
    }
}

// Concurrent writers with read-modify-write retry: every success is distinct and stored.
inline void storeConcurrency(const std::function<std::unique_ptr<store::PoolStore>()>& open,
                             const std::string& prefix, int writers) {
    const std::string name = prefix + "10.60.0.0-24";
    auto s0 = open();
    REQUIRE(s0->createPool({name, "10.60.0.0/24", {}, {}}).ok());
    std::atomic<int> conflicts{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            auto s = open();
            for (;;) {
                auto p = s->getPool(name);
                if (!p) continue;
                core::u128 off = 1;
                while (p->allocations.count(off)) ++off;
                p->allocations[off] = core::Owner{"w" + std::to_string(w), "", "eth0", "", "", ""};
                auto up = s->updatePool(*p);
                if (up) return;
                if (up.code() == core::Errc::Conflict) ++conflicts;
            }
        });
    }
    for (auto& t : threads) t.join();
    auto final = s0->getPool(name);
    REQUIRE(final.ok());
    CHECK(final->allocations.size() == static_cast<size_t>(writers));
    std::set<std::string> owners;
    for (const auto& [off, o] : final->allocations) owners.insert(o.containerId);
    CHECK(owners.size() == static_cast<size_t>(writers));
    MESSAGE("conflicts survived: " << conflicts.load());
}

}  // namespace allot::test
