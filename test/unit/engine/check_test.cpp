// The engine's reads (engine/check.h) over a MemoryStore: CHECK of one owner's allocation and
// STATUS of a config's ranges.
#include "engine/check.h"

#include <doctest/doctest.h>

#include "engine_fixture.h"

using namespace allot;
using core::Errc;
using test::config;
using test::kV4;
using test::owner;

namespace {

engine::IpResult listed(const std::string& ip) {
    return engine::IpResult{core::IpAddress::parse(ip).value(), 29, std::nullopt};
}

core::Result<std::vector<engine::IpResult>> check(test::Engine& e, const core::ValidatedConfig& cfg,
                                                  const core::Owner& o,
                                                  const std::vector<engine::IpResult>& prev) {
    auto ctx = e.context(cfg);
    return engine::check(ctx, cfg, "net", o, prev);
}

}  // namespace

TEST_CASE("CHECK passes for a live allocation its prevResult lists, answering its address") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(test::firstCidr(e.add(cfg, owner("ctr1"))) == "10.0.0.2/29");
    const std::string version = e.pool("10.0.0.0-29").resourceVersion;
    auto c = check(e, cfg, owner("ctr1"), {listed("10.0.0.2")});
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    REQUIRE(c->size() == 1);
    CHECK(test::cidr((*c)[0]) == "10.0.0.2/29");
    REQUIRE((*c)[0].gateway);
    CHECK((*c)[0].gateway->str() == "10.0.0.1");
    CHECK(e.pool("10.0.0.0-29").resourceVersion == version);  // nothing written
}

TEST_CASE("CHECK fails with NotFound when prevResult lacks the address or the container has none") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("ctr1")));
    auto wrong = check(e, cfg, owner("ctr1"), {listed("10.0.0.6")});
    REQUIRE_FALSE(wrong);
    CHECK(wrong.code() == Errc::NotFound);
    CHECK(wrong.error().message.find("prevResult does not list 10.0.0.2") != std::string::npos);
    auto nobody = check(e, cfg, owner("nobody"), {listed("10.0.0.2")});
    REQUIRE_FALSE(nobody);
    CHECK(nobody.code() == Errc::NotFound);
    CHECK(nobody.error().message.find("container nobody") != std::string::npos);
}

TEST_CASE("CHECK fails with NotFound when the allocation's reservation is gone") {
    test::Engine e;
    const auto cfg = config(kV4);
    REQUIRE(e.add(cfg, owner("ctr1")));
    auto r = e.mem->getReservation("10.0.0.2");
    REQUIRE(r);
    REQUIRE(e.mem->deleteReservation("10.0.0.2", r->resourceVersion));
    auto c = check(e, cfg, owner("ctr1"), {listed("10.0.0.2")});
    REQUIRE_FALSE(c);
    CHECK(c.code() == Errc::NotFound);
    CHECK(c.error().message.find("OverlappingRangeIPReservation") != std::string::npos);
}

TEST_CASE(
    "STATUS passes with room, is Exhausted when a range is full, Transient when unreachable") {
    test::Engine e;
    const auto tiny = config(R"("range":"10.0.0.0/30")");
    auto status = [&](const core::ValidatedConfig& cfg) {
        auto ctx = e.context(cfg);
        return engine::status(ctx, cfg);
    };
    CHECK(status(tiny));  // no pool yet: empty
    REQUIRE(e.add(tiny, owner("a", "a")));
    CHECK(status(tiny));
    REQUIRE(e.add(tiny, owner("b", "b")));
    auto full = status(tiny);
    REQUIRE_FALSE(full);
    CHECK(full.code() == Errc::Exhausted);
    CHECK(full.error().message.find("10.0.0.0/30") != std::string::npos);
    e.mem->setUnreachable(true);
    auto down = status(config(kV4));
    REQUIRE_FALSE(down);
    CHECK(down.code() == Errc::Transient);
}
