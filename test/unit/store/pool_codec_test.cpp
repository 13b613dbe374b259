#include <doctest/doctest.h>

#include "store/pool_codec.h"

using namespace allot;

TEST_CASE("a pool written by Whereabouts decodes, without allot's optional fields") {
    auto v = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":"10.0.0.0-24","namespace":"kube-system","resourceVersion":"42"},
      "spec":{"range":"10.0.0.0/24","allocations":{"5":{"id":"abc","podref":"ns/p","ifname":"net1"},
      "7":{"id":"def","podref":"ns/q"}}}})");
    REQUIRE(v.ok());
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    CHECK(p->name == "10.0.0.0-24");
    CHECK(p->resourceVersion == "42");
    CHECK(p->allocations.size() == 2);
    CHECK(p->allocations.at(5).ifName == "net1");
    CHECK(p->allocations.at(7).ifName.empty());
    CHECK(p->allocations.at(7).node.empty());
}

TEST_CASE("a pool decoded and re-encoded is stable") {
    store::Pool p{"n", "fd00::/64", {}, "9"};
    p.allocations[(core::u128(1) << 70)] = core::Owner{"c", "ns/p", "eth0", "node", "uid", "net"};
    p.allocations[3] = core::Owner{"d", "ns/q", "", "", "", ""};
    auto text = store::encodePool(p, "kube-system").dump();
    auto back = store::decodePool(*json::parse(text));
    REQUIRE(back.ok());
    CHECK(back->allocations == p.allocations);
    CHECK(store::encodePool(*back, "kube-system").dump() == text);
}

TEST_CASE("bad pool objects are Invalid and name the field") {
    auto bad = [](const char* text) {
        auto p = store::decodePool(*json::parse(text));
        REQUIRE(!p.ok());
        CHECK(p.code() == core::Errc::Invalid);
        return p.error().message;
    };
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"x1":{"id":"a"}}}})").find("x1") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"-1":{"id":"a"}}}})").find("-1") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"1":{"id":5}}}})").find("id") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":[]}})").find("allocations") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"7":{"podref":"a/b"}}}})").find("\"7\"] has no id") !=
          std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"7":"a"}}})").find("must be an object") != std::string::npos);
    CHECK(bad(R"({"spec":{}})").find("range") != std::string::npos);
    CHECK(bad(R"([])").find("array") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":{"999999999999999999999999999999999999999999":{"id":"a"}}}})")
              .find("offset") != std::string::npos);
}

TEST_CASE("reservations round-trip in Whereabouts' format") {
    store::Reservation r{"10.0.0.5", "ctr", "ns/p", "eth0", ""};
    auto v = store::encodeReservation(r, "kube-system");
    CHECK(v.find("spec")->find("podref")->asString() == "ns/p");
    auto back = store::decodeReservation(v);
    REQUIRE(back.ok());
    CHECK(back->containerId == "ctr");
    auto wb = store::decodeReservation(*json::parse(R"({"metadata":{"name":"fd00--1"},"spec":{"podref":"ns/x"}})"));
    REQUIRE(wb.ok());
    CHECK(wb->containerId.empty());
}
