// The node's copies of pool objects (node/pool_cache.h): what a copy keeps, and how the
// engine's writes use it to skip a read.
#include "node_state/pool_cache.h"

#include <doctest/doctest.h>

#include <fstream>

#include "engine/add.h"
#include "node_state/files.h"
#include "node_state_fixture.h"
#include "store/pool_codec.h"

using namespace allot;
using test::config;
using test::kBig;
using test::kBigPool;
using test::owner;

TEST_CASE("the pool cache keeps the same pool name in two namespaces apart") {
    test::TempDir dir;
    auto cache = node_state::makeFileCache(dir.path.string());
    store::Pool p{kBigPool, "10.1.0.0/24", {}, "7"};
    p.allocations[5] = core::Owner{"c1", "ns/p", "net1", "node-a", "", "net"};
    cache->save("team-a", p);
    CHECK_FALSE(cache->load("team-b", kBigPool).has_value());
    auto back = cache->load("team-a", kBigPool);
    REQUIRE(back.has_value());
    CHECK(back->allocations.size() == 1);
    cache->drop("team-b", kBigPool);
    CHECK(cache->load("team-a", kBigPool).has_value());
    cache->drop("team-a", kBigPool);
    CHECK_FALSE(cache->load("team-a", kBigPool).has_value());
}

TEST_CASE("the pool cache keeps a write's text as sent, under the resourceVersion it got") {
    test::TempDir dir;
    auto cache = node_state::makeFileCache(dir.path.string());
    store::Pool p{kBigPool, "10.1.0.0/24", {}, "7"};
    p.allocations[5] = core::Owner{"c1", "ns/p", "net1", "node-a", "", "net"};
    p.written = store::encodePool(p, "kube-system").dump();  // sent over version 7
    p.allocations[6] = core::Owner{"not-sent", "ns/q", "net1", "node-a", "", "net"};
    p.resourceVersion = "8";  // the answer's
    p.stored.overhead = 120;
    cache->save("kube-system", p);
    auto back = cache->load("kube-system", kBigPool);
    REQUIRE(back.has_value());
    CHECK(back->resourceVersion == "8");
    CHECK(back->allocations.size() == 1);  // the text is what is kept
    CHECK(back->allocations.at(5).containerId == "c1");
    CHECK(back->stored.overhead == 120);
    CHECK(back->written.empty());
    // A file in another form (an older allot's, or damaged) is a miss, never an error.
    const std::string file =
        dir.path.string() + "/" + node_state::poolFileName("kube-system." + kBigPool) + ".cache";
    for (std::string bad : {p.written, std::string("allot-pool-cache 2 8\n") + p.written,
                            std::string("allot-pool-cache 2 8 x\n") + p.written,
                            std::string("allot-pool-cache 2 8 0\n{")}) {
        std::ofstream(file, std::ios::trunc) << bad;
        CHECK_FALSE(cache->load("kube-system", kBigPool).has_value());
    }
}

TEST_CASE("with the node's pool cache an ADD writes without reading the pool it wrote last") {
    test::Node cached, uncached;
    auto cache = node_state::makeFileCache(cached.path());
    cached.cache = cache.get();
    const auto cfg = config(kBig);
    for (test::Node* n : {&cached, &uncached}) REQUIRE(n->add(cfg, owner("c1", "p1")));
    int calls[2] = {};
    for (int i = 0; i < 2; ++i) {
        test::Node& n = i == 0 ? cached : uncached;
        const int before = n.mem->calls();
        CHECK(test::firstCidr(n.add(cfg, owner("c2", "p2"))) == "10.1.0.2/24");
        calls[i] = n.mem->calls() - before;
    }
    CHECK(calls[0] == calls[1] - 1);  // the read of the pool, skipped
    auto copy = cache->load("kube-system", kBigPool);
    REQUIRE(copy.has_value());
    CHECK(copy->allocations.size() == 2);
}

TEST_CASE("a stale copy in the pool cache costs one conflict, never a wrong address") {
    test::Node n;
    auto cache = node_state::makeFileCache(n.path());
    n.cache = cache.get();
    const auto cfg = config(kBig);
    REQUIRE(test::firstCidr(n.add(cfg, owner("c1", "p1"))) == "10.1.0.1/24");
    // Another node writes the pool: this node's copy is stale.
    n.cache = nullptr;
    n.node = "node-b";
    REQUIRE(test::firstCidr(n.add(cfg, owner("c2", "p2", "", "node-b"))) == "10.1.0.2/24");
    n.cache = cache.get();
    n.node = "node-a";
    auto ctx = n.context(cfg);
    auto a = engine::add(ctx, cfg, "net", owner("c3", "p3"), {});
    CHECK(test::firstCidr(a) == "10.1.0.3/24");
    CHECK(ctx.report.conflicts == 1);
    CHECK(n.allocations(kBigPool).size() == 3);
    auto copy = cache->load("kube-system", kBigPool);
    REQUIRE(copy.has_value());
    CHECK(copy->allocations.size() == 3);
}
