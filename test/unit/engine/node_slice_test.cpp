// The engine's verbs in node-slice mode (node_slice_size): each node allocates from its own
// slice of the range, in node-named pools, kept in parts with node_slice_parts; allot-gc's
// slice controller seals a slice's pool before it takes the slice away.
#include <doctest/doctest.h>

#include "engine/add.h"
#include "engine/check.h"
#include "engine/release.h"
#include "engine_fixture.h"

using namespace allot;
using core::Errc;
using test::config;
using test::owner;

namespace {

const std::string kBlue = R"("range":"10.5.0.0/16","node_slice_size":"/28","network_name":"blue")";
const std::string kSlicePool = "blue-node-a-10.5.1.0-28";

// What allot-gc's slice controller does before it takes a slice from a node: seals its pool
// with the NodeSlicePool's resourceVersion then.
void seal(store::MemoryStore& m, const std::string& pool, const std::string& token) {
    auto p = m.getPool(pool);
    REQUIRE(p.ok());
    p->sealed = token;
    REQUIRE(m.updatePool(*p).ok());
}

// node-a held 10.5.1.1 in its slice 10.5.1.0/28 and gave it back; the controller sealed the
// emptied pool (its NodeSlicePool not rewritten yet). Returns the seal's token.
std::string emptiedAndSealed(test::Engine& e) {
    const auto cfg = config(kBlue);
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    REQUIRE(test::firstCidr(e.add(cfg, owner("c1"))) == "10.5.1.1/28");
    REQUIRE(e.del(cfg, owner("c1")));
    auto slices = e.mem->getNodeSlicePool(e.mem->poolNamespace(), "blue");
    REQUIRE(slices.ok());
    seal(*e.mem, kSlicePool, slices->resourceVersion);
    return slices->resourceVersion;
}

engine::IpResult listed(const std::string& ip) {
    return engine::IpResult{core::IpAddress::parse(ip).value(), 28, std::nullopt};
}

}  // namespace

TEST_CASE("node-slice mode allocates from this node's slice in a node-named pool") {
    test::Engine e;
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    CHECK(test::firstCidr(e.add(config(kBlue), owner("c1"))) == "10.5.1.1/28");
    auto pool = e.mem->getPool(kSlicePool);
    REQUIRE(pool.ok());
    CHECK(pool->range == "10.5.1.0/28");
    CHECK(pool->allocations.count(1) == 1);
}

TEST_CASE("node-slice mode: a node without a slice waits for one until its deadline") {
    test::Engine e;
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    e.node = "node-z";
    auto none = e.add(config(kBlue + R"(,"deadline_ms":20)"), owner("c2", "pod1", "", "node-z"));
    REQUIRE_FALSE(none);
    CHECK(none.code() == Errc::SliceAwaited);
    CHECK(none.error().message.find("NodeSlicePool blue") != std::string::npos);
    CHECK(none.error().message.find("node-z") != std::string::npos);
    CHECK(e.mem->listPools()->empty());  // nothing written while it waited
}

TEST_CASE(
    "node-slice mode: an ADD on a node without a slice yet gets one the leader assigns while it "
    "waits") {
    test::Engine e;
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    e.node = "node-z";
    int waits = 0;
    // allot-gc's leader assigns node-z its slice while the ADD waits (its third pause).
    e.sleep = [&](std::chrono::milliseconds d) {
        CHECK(d <= std::chrono::seconds(1));
        if (++waits == 3) e.mem->setNodeSlice("blue", "node-z", "10.5.2.0/28");
    };
    auto a = e.add(config(kBlue + R"(,"deadline_ms":5000)"), owner("c1", "pod1", "", "node-z"));
    CHECK(waits == 3);
    CHECK(test::firstCidr(a) == "10.5.2.1/28");
    CHECK(e.mem->getPool("blue-node-z-10.5.2.0-28").ok());
}

TEST_CASE(
    "node-slice mode: an ADD takes its slice from the relay's copy, reading no NodeSlicePool") {
    test::Engine e;
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    const auto cfg = config(kBlue);
    CHECK(test::firstCidr(e.add(cfg, owner("c1"))) == "10.5.1.1/28");
    CHECK(test::firstCidr(e.add(cfg, owner("c2", "pod2"))) == "10.5.1.2/28");
    CHECK(e.mem->freshSliceReads() == 0);
}

TEST_CASE("node-slice mode: a stale copy of a taken slice finds its pool sealed and moves on") {
    test::Engine e;
    const std::string token = emptiedAndSealed(e);
    // The controller then gives node-a another slice; the relay's copy still says the old one.
    e.mem->setNodeSlice("blue", "node-a", "10.5.2.0/28");
    e.mem->setCachedNodeSlice("blue", "node-a", "10.5.1.0/28");
    const auto cfg = config(kBlue);
    auto ctx = e.context(cfg);
    auto a = engine::add(ctx, cfg, "net", owner("c2"), {});
    CHECK(test::firstCidr(a) == "10.5.2.1/28");
    auto old = e.mem->getPool(kSlicePool);
    REQUIRE(old.ok());
    CHECK(old->allocations.empty());
    CHECK(old->sealed == token);
    CHECK(e.mem->freshSliceReads() >= 1);
    // The call reports only the address it kept, not the attempt it rolled back.
    REQUIRE(ctx.report.pools.size() == 1);
    CHECK(ctx.report.pools[0].second == "blue-node-a-10.5.2.0-28");
}

TEST_CASE(
    "node-slice mode: a sealed pool whose NodeSlicePool is not rewritten yet is SliceSealed") {
    test::Engine e;
    emptiedAndSealed(e);
    auto r = e.add(config(kBlue), owner("c2"));
    REQUIRE_FALSE(r);
    CHECK(r.code() == Errc::SliceSealed);
    CHECK(r.error().message.find("sealed") != std::string::npos);
    CHECK(e.allocations(kSlicePool).empty());
}

TEST_CASE("node-slice mode: a slice sealed and then left with its node is claimed in again") {
    test::Engine e;
    emptiedAndSealed(e);
    // The controller's write lost a race: the NodeSlicePool moved on, the slice stayed node-a's.
    e.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    CHECK(test::firstCidr(e.add(config(kBlue), owner("c2"))) == "10.5.1.1/28");
    CHECK(e.pool(kSlicePool).sealed.empty());
}

TEST_CASE("node-slice mode, dual-stack: each range's slice comes from its own NodeSlicePool") {
    test::Engine e;
    e.mem->setNodeSlice("ds", "node-a", "10.6.3.0/24");
    e.mem->setNodeSlice("ds-fd00-6---64", "node-a", "fd00:6::/72");
    auto a = e.add(config(R"("ipRanges":[{"range":"10.6.0.0/16"},{"range":"fd00:6::/64"}],)"
                          R"("node_slice_size":"/24","network_name":"ds")"),
                   owner("c1"));
    REQUIRE(a);
    REQUIRE(a->size() == 2);
    CHECK(test::cidr((*a)[0]) == "10.6.3.1/24");
    CHECK(test::cidr((*a)[1]) == "fd00:6::1/72");
    CHECK(e.mem->getPool("ds-node-a-10.6.3.0-24").ok());
    CHECK(e.mem->getPool("ds-node-a-fd00-6---72").ok());
}

namespace {

// node_slice_parts 2 of a /28 slice: part 0 holds .1-.7 (the slice's own pool), part 1 .8-.14.
const std::string kParts = kBlue + R"(,"node_slice_parts":2)";
const std::string kPart0 = kSlicePool;
const std::string kPart1 = "blue-node-a-10.5.1.0-28-part-1";

// node-a with slice 10.5.1.0/28 of network blue, and this node's copies of the pools it wrote
// (which the ADD's choice of a part reads).
struct Parts : test::Engine {
    test::MapCache copies;
    core::ValidatedConfig cfg = config(kParts);
    Parts() {
        cache = &copies;
        mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    }
    std::string addN(int i) { return test::firstCidr(add(cfg, podN(i))); }
    static core::Owner podN(int i) {
        return owner("c" + std::to_string(i), "p" + std::to_string(i));
    }
    core::Result<std::vector<engine::IpResult>> check(const core::Owner& o, const char* ip) {
        auto ctx = context(cfg);
        return engine::check(ctx, cfg, "net", o, {listed(ip)});
    }
    core::Result<void> status() {
        auto ctx = context(cfg);
        return engine::status(ctx, cfg);
    }
};

}  // namespace

TEST_CASE("node_slice_parts: a slice fills its parts in address order, each part one pool") {
    Parts s;
    for (int i = 1; i <= 7; ++i) REQUIRE(s.addN(i) == "10.5.1." + std::to_string(i) + "/28");
    CHECK(s.allocations(kPart0).size() == 7);
    CHECK(test::notFound(s.mem->getPool(kPart1)));  // created when first used
    // Part 0 is full: the next address is part 1's first, in part 1's pool (whose range is the
    // whole slice, so offsets mean the same in every part).
    CHECK(s.addN(8) == "10.5.1.8/28");
    auto p1 = s.mem->getPool(kPart1);
    REQUIRE(p1.ok());
    CHECK(p1->range == "10.5.1.0/28");
    CHECK(p1->allocations.count(8) == 1);
    // The same ADD again finds its address in part 1 and writes nothing.
    CHECK(s.addN(8) == "10.5.1.8/28");
    CHECK(s.allocations(kPart1).size() == 1);
    CHECK(s.pool(kPart1).resourceVersion == p1->resourceVersion);
    // CHECK finds it in its part; DEL frees it there; the lowest free address comes back first.
    CHECK(s.check(Parts::podN(8), "10.5.1.8"));
    REQUIRE(s.del(s.cfg, Parts::podN(8)));
    CHECK(s.allocations(kPart1).empty());
    REQUIRE(s.del(s.cfg, Parts::podN(3)));
    CHECK(s.addN(9) == "10.5.1.3/28");
}

TEST_CASE("node_slice_parts: a requested address is taken in its part; the slice exhausts whole") {
    Parts s;
    const auto want = core::IpAddress::parse("10.5.1.12").value();
    CHECK(test::firstCidr(s.add(s.cfg, owner("r1"), {want})) == "10.5.1.12/28");
    CHECK(s.allocations(kPart1).count(12) == 1);
    CHECK(s.status());
    for (int i = 1; i <= 13; ++i)
        REQUIRE(s.add(s.cfg, owner("f" + std::to_string(i), "p" + std::to_string(i))));
    auto full = s.add(s.cfg, owner("f14", "p14"));
    REQUIRE_FALSE(full);
    CHECK(full.code() == Errc::Exhausted);
    auto st = s.status();
    REQUIRE_FALSE(st);
    CHECK(st.code() == Errc::Exhausted);
    CHECK(st.error().message.find("and its parts") != std::string::npos);
}

TEST_CASE("node_slice_parts: an ADD again finds its address in its part; DEL frees every copy") {
    Parts s;
    for (int i = 1; i <= 8; ++i) REQUIRE(s.add(s.cfg, Parts::podN(i)));
    REQUIRE(s.del(s.cfg, Parts::podN(3)));
    // Part 0 has room again; c8's address is in part 1, which this node's copy shows.
    CHECK(s.addN(8) == "10.5.1.8/28");
    CHECK(s.allocations(kPart0).size() == 6);
    // Part 1's copy gone (its last write here failed): the same ADD again takes a second
    // address, in part 0, and the DEL of the container frees both.
    REQUIRE(s.copies.pools.erase(s.mem->poolNamespace() + "/" + kPart1) == 1);
    CHECK(s.addN(8) == "10.5.1.3/28");
    CHECK(s.allocations(kPart0).size() == 7);
    REQUIRE(s.del(s.cfg, Parts::podN(8)));
    CHECK(s.allocations(kPart1).empty());
    CHECK(s.allocations(kPart0).size() == 6);
}

TEST_CASE(
    "node_slice_parts: on a network the slice controller refuses parts on, ADD fails naming the "
    "network and the NADs; CHECK, DEL and one-pool ADDs go on") {
    Parts s;
    for (int i = 1; i <= 8; ++i) REQUIRE(s.add(s.cfg, Parts::podN(i)));
    REQUIRE(s.allocations(kPart1).count(8) == 1);
    s.mem->setNodeSlicePartsRefused(
        "blue",
        "every NAD of the network must ask for node_slice_parts 2 and keep "
        "enable_overlapping_ranges: NetworkAttachmentDefinition apps/wa (whereabouts) asks for "
        "node_slice_parts 1 (Whereabouts reads only part 0)");
    REQUIRE(s.del(s.cfg, Parts::podN(3)));
    auto refused = s.add(s.cfg, Parts::podN(9));
    REQUIRE_FALSE(refused);
    CHECK(refused.code() == Errc::InvalidConfig);
    const std::string msg = refused.error().message;
    CHECK_MESSAGE(msg.find("network blue") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("apps/wa (whereabouts)") != std::string::npos, msg);
    CHECK(s.allocations(kPart0).size() == 6);  // nothing written
    // The same ADD again of a pod that holds an address is refused too.
    auto again = s.add(s.cfg, Parts::podN(8));
    REQUIRE_FALSE(again);
    CHECK(again.code() == Errc::InvalidConfig);
    // What the parts hold stays reachable: CHECK finds c8 in part 1, DEL frees it there.
    CHECK(s.check(Parts::podN(8), "10.5.1.8"));
    REQUIRE(s.del(s.cfg, Parts::podN(8)));
    CHECK(s.allocations(kPart1).empty());
    // A config of the network without parts reads only part 0, as Whereabouts: it works.
    CHECK(test::firstCidr(s.add(config(kBlue), Parts::podN(10))) == "10.5.1.3/28");
}

TEST_CASE("node_slice_parts: an ADD goes past a part the slice controller sealed") {
    Parts s;
    REQUIRE(s.addN(1) == "10.5.1.1/28");
    REQUIRE(s.del(s.cfg, Parts::podN(1)));
    seal(*s.mem, kPart0, "1");  // the NodeSlicePool not rewritten since
    CHECK(s.addN(2) == "10.5.1.8/28");
    CHECK(s.allocations(kPart0).empty());
}
