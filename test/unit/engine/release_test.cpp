// The engine's releases (engine/release.h) over a MemoryStore: DEL of one container's
// interface, its journal entry when the store cannot be reached, and GC of this node's entries.
#include "engine/release.h"

#include <doctest/doctest.h>

#include "core/allocator.h"
#include "engine/add.h"
#include "engine_fixture.h"

using namespace allot;
using core::Errc;
using test::config;
using test::kPool;
using test::kV4;
using test::owner;

TEST_CASE("a DEL frees the owner's pool entry and its reservation, and journals nothing") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(test::firstCidr(e.add(cfg, owner("ctr1"))) == "10.0.0.2/29");
    auto ctx = e.context(cfg);
    auto d = engine::del(ctx, cfg, owner("ctr1"));
    REQUIRE(d);
    CHECK_FALSE(*d);
    CHECK(e.allocations(kPool).empty());
    CHECK(test::notFound(e.mem->getReservation("10.0.0.2")));
    REQUIRE(ctx.report.pools.size() == 1);
    CHECK(ctx.report.pools[0].first.str() == "10.0.0.2");
    CHECK(ctx.report.pools[0].second == kPool);
    CHECK(e.journal.entries.empty());
}

TEST_CASE("a DEL of an owner that holds nothing succeeds, journals nothing and frees nothing") {
    test::Engine e;
    const auto cfg = config(kV4);
    auto none = e.del(cfg, owner("ctr1"));  // no pool yet
    REQUIRE(none);
    CHECK_FALSE(*none);
    REQUIRE(e.add(cfg, owner("other", "other")));
    auto d = e.del(cfg, owner("ctr1"));
    REQUIRE(d);
    CHECK_FALSE(*d);
    CHECK(e.allocations(kPool).size() == 1);
    CHECK(e.mem->getReservation("10.0.0.2").ok());
    CHECK(e.journal.entries.empty());
}

TEST_CASE("a DEL with a config whose exclude cannot be read still releases (only ADD refuses it)") {
    test::Engine e;
    REQUIRE(e.add(config(kV4), owner("ctr1")));
    const auto bad =
        config(R"("range":"10.0.0.0/29","gateway":"10.0.0.1","exclude":["10.0.0.300"])");
    REQUIRE(bad.addError);
    auto d = e.del(bad, owner("ctr1"));
    REQUIRE(d);
    CHECK_FALSE(*d);
    CHECK(e.allocations(kPool).empty());
}

TEST_CASE("a DEL journals the release when the store stays unreachable, and succeeds") {
    test::Engine e;
    REQUIRE(e.add(config(kV4), owner("ctr1")));
    e.mem->setUnreachable(true);
    const auto cfg = config(R"("range":"10.0.0.0/29","gateway":"10.0.0.1","deadline_ms":50)");
    auto ctx = e.context(cfg);
    auto d = engine::del(ctx, cfg, owner("ctr1"));
    REQUIRE(d);
    CHECK(*d);
    CHECK_FALSE(ctx.report.journalReason.empty());
    REQUIRE(e.journal.entries.size() == 1);
    const auto& j = e.journal.entries[0];
    CHECK(j.containerId == "ctr1");
    CHECK(j.ifName == "net1");
    CHECK(j.podRef == "ns/pod1");
    CHECK(j.node == "node-a");
    CHECK(j.poolNamespace == "kube-system");
    CHECK(j.pools == std::vector<std::string>{kPool});
    e.mem->setUnreachable(false);
    CHECK(e.allocations(kPool).size() == 1);  // left for allot-gc's replay
}

TEST_CASE("a DEL journals instead of failing on a 401, a 403 or a pool allot cannot decode") {
    for (auto code : {Errc::Forbidden, Errc::Unauthorized, Errc::Decode, Errc::Invalid}) {
        CAPTURE(core::errcName(code));
        test::Engine e;
        const auto cfg = config(kV4);
        REQUIRE(e.add(cfg, owner("ctr1")));
        e.mem->failNext(100, code);
        auto d = e.del(cfg, owner("ctr1"));
        REQUIRE_MESSAGE(d, (d ? "" : d.error().message));
        CHECK(*d);
        REQUIRE(e.journal.entries.size() == 1);
        CHECK(e.journal.entries[0].containerId == "ctr1");
    }
}

TEST_CASE("a DEL whose journal fails too is a Transient error naming both failures") {
    struct Refusing : engine::ReleaseJournal {
        core::Result<void> record(const engine::JournalEntry&) override {
            return core::makeError(Errc::Internal, "journal disk full");
        }
    } refusing;
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("ctr1")));
    e.mem->failNext(100, Errc::Forbidden);
    auto ctx = e.context(cfg);
    ctx.journal = &refusing;
    auto d = engine::del(ctx, cfg, owner("ctr1"));
    REQUIRE_FALSE(d);
    CHECK(d.code() == Errc::Transient);
    CHECK(d.error().message.find("journal disk full") != std::string::npos);
}

TEST_CASE("GC frees only this node's allocations of this network that are not valid") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("keep", "keep")));
    REQUIRE(e.add(cfg, owner("drop", "drop")));
    e.node = "node-b";
    REQUIRE(e.add(cfg, owner("other", "other", "", "node-b")));
    e.node = "node-a";
    // An entry without a node (written by Whereabouts) is never touched.
    auto p = e.pool(kPool);
    p.allocations[6] = core::Owner{"legacy", "ns/legacy", "net1", "", "", ""};
    REQUIRE(e.mem->updatePool(p).ok());
    auto ctx = e.context(cfg);
    auto gc = engine::gc(ctx, cfg, "net", {{"keep", "net1"}});
    REQUIRE(gc);
    CHECK(*gc == 1);
    auto after = e.allocations(kPool);
    CHECK(core::findHolder(after, "keep", "net1"));
    CHECK_FALSE(core::findHolder(after, "drop", "net1"));
    CHECK(core::findHolder(after, "other", "net1"));
    CHECK(core::findHolder(after, "legacy", "net1"));
    CHECK(test::notFound(e.mem->getReservation("10.0.0.3")));  // drop's
}

TEST_CASE("GC with no valid attachment frees every entry of this node on the network") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("c1")));
    REQUIRE(e.add(cfg, owner("c2", "p2")));
    e.node = "node-b";
    REQUIRE(e.add(cfg, owner("other", "p3", "", "node-b")));
    e.node = "node-a";
    auto ctx = e.context(cfg);
    auto gc = engine::gc(ctx, cfg, "net", {});
    REQUIRE(gc);
    CHECK(*gc == 2);
    auto after = e.allocations(kPool);
    REQUIRE(after.size() == 1);  // node-b's entry stays
    CHECK(after.begin()->second.containerId == "other");
    // Another network's GC on this node frees nothing of "net".
    REQUIRE(e.add(cfg, owner("c4", "p4")));
    auto ctx2 = e.context(cfg);
    auto none = engine::gc(ctx2, cfg, "blue", {});
    REQUIRE(none);
    CHECK(*none == 0);
    CHECK(e.allocations(kPool).size() == 2);
}
