#include "core/sticky.h"

#include <doctest/doctest.h>

#include "core/allocator.h"
#include "core/ownership.h"

using namespace allot::core;

namespace {

const StatefulSetRef kWeb{"shop", "web", "uid-1"};

StatefulSetView live(int64_t replicas, int64_t start = 0) {
    return StatefulSetView{"uid-1", false, replicas, start};
}

}  // namespace

TEST_CASE("a sticky owner key names the StatefulSet and reads back; other values are no key") {
    CHECK(stickyKey(kWeb) == "statefulset:shop/web/uid-1");
    CHECK(parseStickyKey(stickyKey(kWeb)) == kWeb);
    CHECK_FALSE(parseStickyKey("shop/vm-claim"));  // an IPAMClaim
    CHECK_FALSE(parseStickyKey("statefulset:shop/web"));
    CHECK_FALSE(parseStickyKey("statefulset:shop//uid"));
    CHECK_FALSE(parseStickyKey("statefulset:shop/web/u/x"));
    CHECK(isStickyKey("statefulset:a/b/c"));
    CHECK_FALSE(isStickyKey("ns/statefulset:x"));
}

TEST_CASE("a pod's ordinal is read only from its StatefulSet's name pattern") {
    CHECK(podOrdinal("web", "web-0") == 0);
    CHECK(podOrdinal("web", "web-12") == 12);
    CHECK_FALSE(podOrdinal("web", "web-"));
    CHECK_FALSE(podOrdinal("web", "web-01"));
    CHECK_FALSE(podOrdinal("web", "web-1a"));
    CHECK_FALSE(podOrdinal("web", "webx-1"));
    CHECK_FALSE(podOrdinal("web", "db-1"));
    CHECK(podOrdinal("web-a", "web-a-3") == 3);
}

TEST_CASE("a StatefulSet member's address is kept while the set lives and holds its ordinal") {
    CHECK_FALSE(decideSticky(kWeb, "web-0", live(3)).release);
    CHECK_FALSE(decideSticky(kWeb, "web-2", live(3)).release);
    CHECK_FALSE(decideSticky(kWeb, "web-5", live(2, 5)).release);
    // A name the set's pattern does not give: kept while the set lives.
    CHECK_FALSE(decideSticky(kWeb, "other", live(1)).release);
}

TEST_CASE("a sticky address is released when the set is gone, deleted, re-created or scaled down") {
    auto gone = decideSticky(kWeb, "web-0", std::nullopt);
    CHECK(gone.release);
    CHECK(gone.why == "StatefulSet shop/web is gone");
    CHECK(decideSticky(kWeb, "web-0", StatefulSetView{"uid-2", false, 3, 0}).release);
    CHECK(decideSticky(kWeb, "web-0", StatefulSetView{"uid-1", true, 3, 0}).release);
    auto down = decideSticky(kWeb, "web-2", live(2));
    CHECK(down.release);
    CHECK(down.why == "StatefulSet shop/web no longer has ordinal 2 (replicas 2, ordinals from 0)");
    CHECK(decideSticky(kWeb, "web-4", live(2, 5)).release);  // below ordinals.start
    CHECK(decideSticky(kWeb, "web-0", live(0)).release);
}

TEST_CASE("two members of one StatefulSet never share an address") {
    auto r = IpRange::fromSpec({"10.0.0.0/29", "", "", {}}, "range");
    REQUIRE(r.ok());
    AllocationMap m;
    Owner a{"c0", "shop/web-0", "net1", "node-a", "u0", "net", stickyKey(kWeb)};
    Owner b{"c1", "shop/web-1", "net1", "node-a", "u1", "net", stickyKey(kWeb)};
    auto pa = pick(*r, m, {a});
    auto pb = pick(*r, m, {b});
    REQUIRE(pa.ok());
    REQUIRE(pb.ok());
    CHECK(pa->ip != pb->ip);
    CHECK(pb->kind == PickKind::New);
    CHECK_FALSE(sharesClaim(a, b));
    // The member re-created under its name (another sandbox, another UID) takes its entry over.
    Owner a2{"c9", "shop/web-0", "net1", "node-b", "u9", "net", stickyKey(kWeb)};
    auto again = pick(*r, m, {a2});
    REQUIRE(again.ok());
    CHECK(again->ip == pa->ip);
    CHECK(again->kind == PickKind::HandedOver);
    CHECK(claimOwned(m.at(again->offset)));
    CHECK_FALSE(mayRelease(m.at(again->offset), false));
}
