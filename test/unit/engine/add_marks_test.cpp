// The engine's ADD and DEL and the node's marks of ADDs in flight (engine/add_marks.h).
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "engine/add.h"
#include "engine/release.h"
#include "store/memory_store.h"

using namespace allot;

namespace {

struct Recorder : engine::AddMarks {
    std::vector<std::string> calls;
    std::set<std::string> marked;
    bool fail = false;
    core::Result<void> mark(const std::string& id) override {
        calls.push_back("mark " + id);
        if (fail) return core::makeError(core::Errc::Internal, "create /run/allot/adds/x: EROFS");
        marked.insert(id);
        return {};
    }
    void unmark(const std::string& id) override {
        calls.push_back("unmark " + id);
        marked.erase(id);
    }
};

core::ValidatedConfig config() {
    core::IpamConfig c;
    c.type = "allot";
    c.ranges.push_back({"10.9.0.0/29", "", "", {}});
    c.topLevelRange = true;
    c.enableOverlappingRanges = false;
    return *core::validate(c);
}

}  // namespace

TEST_CASE("an ADD marks its container before it writes the pool, and the DEL unmarks it") {
    store::MemoryStore mem;
    Recorder marks;
    engine::Context ctx(mem);
    ctx.marks = &marks;
    const core::Owner owner{"c1", "ns/p", "net1", "node-a", "u1", "net"};
    auto cfg = config();
    auto added = engine::add(ctx, cfg, "net", owner, {});
    REQUIRE(added);
    CHECK(marks.calls == std::vector<std::string>{"mark c1"});
    CHECK(marks.marked.count("c1") == 1);
    REQUIRE(engine::del(ctx, cfg, owner));
    CHECK(marks.calls.back() == "unmark c1");
    CHECK(marks.marked.empty());
}

TEST_CASE("an ADD that cannot mark itself writes nothing and says why") {
    store::MemoryStore mem;
    Recorder marks;
    marks.fail = true;
    engine::Context ctx(mem);
    ctx.marks = &marks;
    auto cfg = config();
    auto added = engine::add(ctx, cfg, "net", {"c1", "ns/p", "net1", "node-a", "u1", "net"}, {});
    REQUIRE_FALSE(added);
    CHECK(added.error().message.find("cannot mark the ADD in flight") != std::string::npos);
    auto pools = mem.listPools();
    CHECK((!pools || pools->empty()));
}
