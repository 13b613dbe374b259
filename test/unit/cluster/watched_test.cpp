#include "cluster/watched.h"

#include <doctest/doctest.h>
#include <malloc.h>

#include <cstdio>
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

TEST_CASE("a pod is decoded into what a pass reads of it") {
    auto p = cluster::podInfoOf(parsed(R"({"metadata":{"namespace":"apps","name":"web-0",
        "uid":"u1","annotations":{"kubernetes.io/config.mirror":"static-uid"}},
        "spec":{"nodeName":"w1","containers":[{"name":"c","image":"x"}]},
        "status":{"phase":"Running","podIP":"10.1.0.5"}})"));
    CHECK(p.uid == "u1");
    CHECK(p.phase == "Running");
    CHECK(p.nodeName == "w1");
    CHECK(p.mirrorOf == "static-uid");
}

TEST_CASE("the pod index gives back what it was given, packed, and nothing until listed") {
    cluster::PodIndex idx;
    CHECK(idx.find("apps", "web-0").code() == core::Errc::Transient);
    idx.beginList();
    const cluster::PodInfo web{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "Running", "", "w1"};
    idx.set({"apps", "web-0"}, web);
    // A UID that is no UUID, a mirror pod, a phase allot does not know, no node.
    idx.set({"apps", "odd"}, {"Not-A-UUID", "Succeeded", "", "w1"});
    idx.set({"kube-system", "etcd-w1"},
            {"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "Pending", "3f2a9c", "w2"});
    idx.set({"apps", "new"}, {"11111111-2222-3333-4444-555555555555", "Weird", "", ""});
    CHECK(idx.find("apps", "web-0").code() == core::Errc::Transient);  // the list is not whole
    idx.listed();
    auto got = [&](const char* ns, const char* name) {
        auto r = idx.find(ns, name);
        REQUIRE(r.ok());
        REQUIRE(r->has_value());
        return **r;
    };
    auto w = got("apps", "web-0");
    CHECK(w.uid == web.uid);
    CHECK(w.phase == "Running");
    CHECK(w.nodeName == "w1");
    CHECK(w.mirrorOf.empty());
    CHECK(got("apps", "odd").uid == "Not-A-UUID");
    CHECK(got("apps", "odd").terminal());
    CHECK(got("kube-system", "etcd-w1").mirrorOf == "3f2a9c");
    CHECK(got("kube-system", "etcd-w1").nodeName == "w2");
    CHECK(got("apps", "new").phase == "Unknown");  // not terminal: kept
    CHECK_FALSE(got("apps", "new").terminal());
    CHECK(got("apps", "new").nodeName.empty());
    CHECK_FALSE(idx.find("apps", "web-1")->has_value());
    CHECK_FALSE(idx.find("app", "s/web-0")->has_value());  // the slash is not shifted
    // An update replaces what was kept aside; a deletion removes the pod.
    idx.set({"apps", "odd"}, {"22222222-3333-4444-5555-666666666666", "Running", "", "w3"});
    CHECK(got("apps", "odd").uid == "22222222-3333-4444-5555-666666666666");
    idx.set({"kube-system", "etcd-w1"},
            {"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "Running", "", "w2"});
    CHECK(got("kube-system", "etcd-w1").mirrorOf.empty());
    idx.erase({"apps", "web-0"});
    CHECK_FALSE(idx.find("apps", "web-0")->has_value());
    CHECK(idx.size() == 3);
    idx.lost();
    CHECK(idx.find("apps", "odd").code() == core::Errc::Transient);
    CHECK(idx.size() == 0);
}

TEST_CASE("an uppercase UID is no packed UUID: kept aside, and given back as it was") {
    cluster::PodIndex idx;
    idx.beginList();
    idx.set({"a", "b"}, {"0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", "Running", "", ""});
    idx.set({"a", "c"}, {"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", "Running", "", ""});  // 35
    idx.listed();
    CHECK((*idx.find("a", "b"))->uid == "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0");
    CHECK((*idx.find("a", "c"))->uid == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f");
}

TEST_CASE("the controller's sets are synced only once every one of them is listed") {
    cluster::WatchedObjects w;
    w.nodes.replace({});
    w.nads.replace({});
    w.slicePools.replace({});
    CHECK_FALSE(w.synced());  // the pods are not listed yet
    w.pods.beginList();
    w.pods.listed();
    CHECK(w.synced());
    w.pods.lost();
    CHECK_FALSE(w.synced());
}

TEST_CASE("the pod index holds a pod in at most 80 bytes of heap") {
#if defined(__SANITIZE_ADDRESS__)
    MESSAGE("not measured under AddressSanitizer, whose allocator mallinfo2 does not see");
    return;
#endif
    auto heapInUse = [] {
        const struct mallinfo2 mi = ::mallinfo2();
        return mi.uordblks + mi.hblkhd;
    };
    constexpr int kPods = 100000;
    std::vector<std::pair<cluster::PodIndex::Key, cluster::PodInfo>> pods;
    pods.reserve(kPods);
    for (int i = 0; i < kPods; ++i) {
        char uid[37];
        std::snprintf(uid, sizeof uid, "%08x-4b5a-4978-8796-%012x", i * 2654435761u, i);
        pods.push_back(
            {{"team-" + std::to_string(i % 1500), "app-" + std::to_string(i) + "-7d9f8b6c5-x2k4q"},
             {uid, i % 10 ? "Running" : "Succeeded", "", "node-" + std::to_string(i % 500)}});
    }
    const size_t before = heapInUse();
    {
        cluster::PodIndex idx;
        idx.beginList();
        for (const auto& [key, pod] : pods) idx.set(key, pod);
        idx.listed();
        const size_t bytes = heapInUse() - before;
        MESSAGE("pod index: " << bytes / kPods << " bytes per pod (" << bytes / 1024 << " KiB for "
                              << kPods << ")");
        CHECK(bytes <= 80u * kPods);
        auto back = idx.find(pods[4242].first.first, pods[4242].first.second);
        REQUIRE(back.ok());
        REQUIRE(back->has_value());
        CHECK(**back == pods[4242].second);
    }
}
