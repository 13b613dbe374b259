#include "store/memory_store.h"

#include <doctest/doctest.h>

#include "store_conformance.h"
#include "store_ref.h"

using namespace allot;

TEST_CASE("the in-memory store passes the store conformance suite") {
    store::MemoryStore s;
    test::storeConformance(
        s, "", [&](const std::string& slice, const std::string& node, const std::string& range) {
            s.setNodeSlice(slice, node, range);
        });
}

TEST_CASE("the in-memory store passes the NodeSlicePool conformance cases") {
    store::MemoryStore s;
    test::nodeSliceConformance(s, s, "", s.poolNamespace(), "apps");
}

TEST_CASE("the in-memory store's slice helpers write a NodeSlicePool that nodeSlice reads") {
    store::MemoryStore s("pools");
    s.setNodeSlice("blue", "node-a", "10.5.1.0/28");
    s.setNodeSlice("blue", "node-b", "10.5.2.0/28");
    auto first = s.getNodeSlicePool("pools", "blue");
    REQUIRE(first.ok());
    CHECK(first->allocations ==
          std::vector<core::SliceAllocation>{{"node-a", "10.5.1.0/28"}, {"node-b", "10.5.2.0/28"}});
    CHECK(s.nodeSlice("blue", "node-a", true)->resourceVersion == first->resourceVersion);
    s.setNodeSlice("blue", "node-a", "");
    s.setNodeSlicePartsRefused("blue", "parts refused");
    auto now = s.getNodeSlicePool("pools", "blue");
    REQUIRE(now.ok());
    CHECK(now->resourceVersion != first->resourceVersion);
    CHECK(now->allocations == std::vector<core::SliceAllocation>{{"node-b", "10.5.2.0/28"}});
    CHECK(s.nodeSlice("blue", "node-a", true).code() == core::Errc::NotFound);
    CHECK(s.nodeSlice("blue", "node-b", true)->partsRefused == "parts refused");
    CHECK(s.listNodeSlicePools("kube-system")->empty());
}

TEST_CASE("the in-memory store keeps concurrent writers consistent") {
    auto shared = std::make_shared<store::MemoryStore>();
    test::storeConcurrency(
        [&] { return std::make_unique<test::StoreRef<store::MemoryStore>>(shared); }, "", 8);
}

TEST_CASE("injected faults surface as their codes") {
    store::MemoryStore s;
    s.failNext(1, core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::NotFound);
    s.setUnreachable(true);
    CHECK(s.ping().code() == core::Errc::Transient);
}

TEST_CASE("a reservation belongs to its owner only, strict about container IDs") {
    core::Owner o{"c1", "ns/p", "net1", "n", "u", ""};
    auto res = [](std::string ctr, std::string pod, std::string ifn) {
        return store::Reservation{"x", std::move(ctr), std::move(pod), std::move(ifn), "", {}};
    };
    CHECK(store::reservedFor(res("c1", "ns/p", "net1"), o));
    CHECK(store::reservedFor(res("", "ns/p", "net1"), o));  // Whereabouts writes no container
    CHECK_FALSE(store::reservedFor(res("c2", "ns/p", "net1"), o));  // the re-created pod's
    CHECK_FALSE(store::reservedFor(res("c1", "ns/p", "net2"), o));
    CHECK_FALSE(store::reservedFor(res("", "ns/q", "net1"), o));
}
