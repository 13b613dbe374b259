#include "cni/network_selection.h"

#include <doctest/doctest.h>

using namespace allot;
using namespace allot::cni;

TEST_CASE("the element for an interface is found by its name, or Multus' default net<N>") {
    const char* a = R"([{"name":"blue"},{"name":"vm-net","namespace":"vms","interface":"pod7",
        "ipam-claim-reference":"vm-a.pod7"},{"name":"red"}])";
    auto e = selectionFor(a, "pod7");
    REQUIRE(e.ok());
    REQUIRE(e->has_value());
    CHECK((*e)->name == "vm-net");
    CHECK((*e)->ns == "vms");
    CHECK((*e)->claimRef == "vm-a.pod7");
    auto third = selectionFor(a, "net3");
    REQUIRE(third.ok());
    REQUIRE(third->has_value());
    CHECK((*third)->name == "red");
    CHECK((*third)->claimRef.empty());
    // net2 is the second element's default name, but it named its interface: no match.
    CHECK_FALSE(selectionFor(a, "net2")->has_value());
    CHECK_FALSE(selectionFor("", "net1")->has_value());
}

TEST_CASE("an element references the claim in its cni-args, else its own ipam-claim-reference") {
    auto all = selections(R"([{"name":"a","ipam-claim-reference":"own"},
        {"name":"b","cni-args":{"ipam-claim-reference":"args","other":[1]}},
        {"name":"c","ipam-claim-reference":"own","cni-args":{"ipam-claim-reference":"args"}},
        {"name":"d","cni-args":{"other":true}}])");
    REQUIRE(all.ok());
    REQUIRE(all->size() == 4);
    CHECK(claimReference((*all)[0]) == "own");
    CHECK(claimReference((*all)[1]) == "args");
    CHECK(claimReference((*all)[2]) == "args");  // as the plugin reads args.cni first
    CHECK(claimReference((*all)[3]).empty());
}

TEST_CASE("Multus' short form is read; it carries no claim reference") {
    auto e = selectionFor("blue, other/red@eth7", "eth7");
    REQUIRE(e.ok());
    REQUIRE(e->has_value());
    CHECK((*e)->ns == "other");
    CHECK((*e)->name == "red");
    CHECK((*e)->claimRef.empty());
    CHECK(selectionFor("blue, other/red@eth7", "net1")->value().name == "blue");
}

TEST_CASE("a malformed annotation is InvalidConfig naming it") {
    for (const char* bad :
         {R"([{"name":"a"})", R"({"name":"a"})", R"([1])",
          R"([{"name":"a","ipam-claim-reference":5}])", R"([{"name":"a","cni-args":5}])",
          R"([{"name":"a","cni-args":{"ipam-claim-reference":5}}])", "a,,b", "a/b/c", "Blue",
          "a@b@c"}) {
        auto e = selectionFor(bad, "net1");
        REQUIRE_MESSAGE(!e.ok(), bad);
        CHECK(e.code() == core::Errc::InvalidConfig);
        CHECK(e.error().message.find("k8s.v1.cni.cncf.io/networks") != std::string::npos);
    }
}

TEST_CASE("an annotation over the size or element limit is refused, naming the limit") {
    std::string big =
        R"([{"name":"a","x":")" + std::string(kMaxNetworksAnnotationBytes, 'x') + R"("}])";
    auto e = selectionFor(big, "net1");
    REQUIRE(!e.ok());
    CHECK(e.code() == core::Errc::InvalidConfig);
    CHECK(e.error().message.find("over the limit of 65536") != std::string::npos);
    std::string many = "a";
    for (size_t i = 0; i < kMaxSelectionElements; ++i) many += ",a";
    auto m = selectionFor(many, "net1");
    REQUIRE(!m.ok());
    CHECK(m.error().message.find("more than the limit of 128") != std::string::npos);
    std::string enough = "a";
    for (size_t i = 1; i < kMaxSelectionElements; ++i) enough += ",a";
    CHECK(selectionFor(enough, "net128")->has_value());
}
