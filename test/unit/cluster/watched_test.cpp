#include "cluster/watched.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace allot;

namespace {

std::vector<std::string> names(const cluster::WatchedSet<cluster::NodeInfo>& set) {
    std::vector<std::string> out;
    auto r = set.each([&](const auto& key, cluster::NodeInfo&) {
        out.push_back(key.second);
        return true;
    });
    REQUIRE(r.ok());
    return out;
}

json::Value parsed(const char* text) {
    auto v = json::parse(text);
    REQUIRE(v.ok());
    return std::move(*v);
}

}  // namespace

TEST_CASE(
    "a watched set reads as Transient until its first list, and again once its watch is lost") {
    cluster::WatchedSet<cluster::NodeInfo> set("Nodes");
    auto before = set.each([](const auto&, cluster::NodeInfo&) { return true; });
    REQUIRE_FALSE(before.ok());
    CHECK(before.code() == core::Errc::Transient);
    CHECK(before.error().message.find("Nodes") != std::string::npos);
    set.replace({{{"", "a"}, {}}, {{"", "b"}, {}}});
    CHECK(names(set) == std::vector<std::string>{"a", "b"});
    set.set({"", "c"}, {});
    set.erase({"", "a"});
    CHECK(names(set) == std::vector<std::string>{"b", "c"});
    set.lost();
    CHECK_FALSE(set.synced());
    CHECK(set.each([](const auto&, cluster::NodeInfo&) { return true; }).code() ==
          core::Errc::Transient);
}

TEST_CASE("a Node is decoded once into what a pass needs: Ready, since when not, fenced, its OS") {
    auto n = cluster::nodeInfoOf(
        parsed(R"({"metadata":{"name":"w1","labels":{"kubernetes.io/os":"windows"}},
        "spec":{"taints":[{"key":"node.kubernetes.io/out-of-service","effect":"NoExecute"}]},
        "status":{"conditions":[{"type":"MemoryPressure","status":"False"},
          {"type":"Ready","status":"False","lastTransitionTime":"2026-01-02T03:04:05Z"}]}})"));
    CHECK_FALSE(n.ready);
    CHECK(n.outOfService);
    CHECK_FALSE(n.linux);
    CHECK(n.notReadySince.time_since_epoch().count() != 0);
    auto plain = cluster::nodeInfoOf(parsed(R"({"metadata":{"name":"w2"},
        "status":{"conditions":[{"type":"Ready","status":"True"}]}})"));
    CHECK(plain.ready);
    CHECK_FALSE(plain.outOfService);
    CHECK(plain.linux);
}

TEST_CASE("a NodeSlicePool is kept whole: what the slice controller writes back, its version") {
    auto p = cluster::nodeSlicePoolOf(parsed(R"({"metadata":{"namespace":"ns","name":"net",
        "resourceVersion":"42"},"spec":{"range":"10.0.0.0/16","sliceSize":"/24"},
        "status":{"allocations":[{"nodeName":"w1","sliceRange":"10.0.0.0/24"}]}})"));
    CHECK(p.ns == "ns");
    CHECK(p.name == "net");
    CHECK(p.resourceVersion == "42");
    CHECK(p.range == "10.0.0.0/16");
    REQUIRE(p.allocations.size() == 1);
    CHECK(p.allocations[0].nodeName == "w1");
}

TEST_CASE("a NAD is decoded into its namespace, name, UID and spec.config") {
    auto n = cluster::nadInfoOf(parsed(R"({"metadata":{"namespace":"ns","name":"net","uid":"u1"},
        "spec":{"config":"{\"ipam\":{\"type\":\"allot\"}}"}})"));
    CHECK(n.ns == "ns");
    CHECK(n.name == "net");
    CHECK(n.uid == "u1");
    CHECK(n.config.find("allot") != std::string::npos);
    CHECK(cluster::nadInfoOf(parsed(R"({"metadata":{"name":"bare"}})")).config.empty());
}
