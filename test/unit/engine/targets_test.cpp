#include "engine/targets.h"

#include <doctest/doctest.h>

#include "store/memory_store.h"

using namespace allot;
using core::Errc;
using engine::MissingSlice;

namespace {

core::ValidatedConfig sliced(std::vector<std::string> ranges) {
    core::IpamConfig c;
    c.type = "allot";
    for (auto& r : ranges) c.ranges.push_back({r, "", "", {}});
    c.networkName = "big";
    c.nodeSliceSize = "/24";
    auto v = core::validate(c);
    REQUIRE_MESSAGE(v, (v ? "" : v.error().message));
    return *v;
}

}  // namespace

TEST_CASE("a node's slice names its pool, for an ADD and a release alike") {
    store::MemoryStore s;
    s.setNodeSlice("big", "node-a", "10.64.3.0/24");
    for (auto missing : {MissingSlice::Await, MissingSlice::Skip}) {
        auto ts = engine::resolveTargets(s, sliced({"10.64.0.0/16"}), "net", "node-a",
                                         "kube-system", true, missing);
        REQUIRE(ts);
        REQUIRE(ts->size() == 1);
        CHECK((*ts)[0].pool == "big-node-a-10.64.3.0-24");
        CHECK((*ts)[0].nodeSlicePool == "big");
    }
}

TEST_CASE("a node without a slice: an ADD waits for one, a release skips the range") {
    store::MemoryStore s;
    s.setNodeSlice("big", "node-b", "10.64.4.0/24");  // another node's
    const auto cfg = sliced({"10.64.0.0/16"});
    auto add =
        engine::resolveTargets(s, cfg, "net", "node-a", "kube-system", true, MissingSlice::Await);
    REQUIRE_FALSE(add);
    CHECK(add.code() == Errc::SliceAwaited);
    CHECK(add.error().message.find("node-a") != std::string::npos);
    auto release =
        engine::resolveTargets(s, cfg, "net", "node-a", "kube-system", true, MissingSlice::Skip);
    REQUIRE(release);
    CHECK(release->empty());
}

TEST_CASE("a store that fails fails the resolution, whatever the policy") {
    store::MemoryStore s;
    s.setNodeSlice("big", "node-a", "10.64.3.0/24");
    for (auto missing : {MissingSlice::Await, MissingSlice::Skip}) {
        s.failNext(1, Errc::Transient);
        auto ts = engine::resolveTargets(s, sliced({"10.64.0.0/16"}), "net", "node-a",
                                         "kube-system", true, missing);
        REQUIRE_FALSE(ts);
        CHECK(ts.code() == Errc::Transient);
    }
}
