// K8sCluster's node reports (common/cluster/node_report.cpp) over a loopback API server: what
// putNodeReport sends is the Lease nodeReports reads back.
#include <doctest/doctest.h>

#include "../k8s/fake_server.h"
#include "cluster/k8s_cluster.h"
#include "json/json.h"

using namespace allot;
using test::FakeServer;
using test::response;

namespace {

cluster::K8sCluster clusterAt(const FakeServer& server) {
    k8s::ClusterConfig cfg;
    cfg.server = server.url();
    cfg.token = "t";
    auto client = k8s::Client::fromConfig(cfg);
    REQUIRE(client.ok());
    return cluster::K8sCluster(std::move(*client), [](const core::Error&) {});
}

// The reports nodeReports finds in a LeaseList of `leases` (JSON texts).
std::vector<core::NodeReport> listed(const std::vector<std::string>& leases) {
    std::string items;
    for (const auto& l : leases) items += (items.empty() ? "" : ",") + l;
    FakeServer server({{response(200, R"({"kind":"LeaseList","metadata":{"resourceVersion":"7"},)"
                                      R"("items":[)" +
                                          items + "]}")}});
    auto c = clusterAt(server);
    auto r = c.nodeReports("kube-system");
    REQUIRE(r.ok());
    return *r;
}

}  // namespace

TEST_CASE("a node report reads back as written: node, time, probe, held addresses and the build") {
    core::NodeReport sent;
    sent.node = "node-a";
    sent.at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
    sent.complete = true;
    sent.held = {*core::IpAddress::parse("10.1.0.5"), *core::IpAddress::parse("fd00::7")};
    sent.version = "0.1.0";
    sent.revision = "f5cf6de-dirty";
    sent.nodeUid = "3f1c2b8e-node-a";
    FakeServer server({{response(200, "{}")}});
    {
        auto c = clusterAt(server);
        REQUIRE(c.putNodeReport("kube-system", sent).ok());
    }
    const std::string request = server.requests().at(0);
    CHECK(request.rfind(
              "PATCH /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/allot-node-node-a",
              0) == 0);
    const std::string lease = request.substr(request.find("\r\n\r\n") + 4);
    auto doc = json::parse(lease);
    REQUIRE(doc.ok());
    CHECK(json::stringAt(*doc, {"metadata", "annotations", "allot.cni.dev/version"}) == "0.1.0");
    CHECK(json::stringAt(*doc, {"metadata", "annotations", "allot.cni.dev/revision"}) ==
          "f5cf6de-dirty");

    auto back = listed({lease});
    REQUIRE(back.size() == 1);
    CHECK(back[0].node == "node-a");
    CHECK(back[0].at == sent.at);
    CHECK(back[0].complete);
    CHECK(back[0].held == sent.held);
    CHECK(back[0].version == "0.1.0");
    CHECK(back[0].revision == "f5cf6de-dirty");
    CHECK(back[0].nodeUid == "3f1c2b8e-node-a");
}

TEST_CASE("a report from an allot-gc older than the version annotations reads with no version") {
    auto back = listed({R"({"metadata":{"name":"allot-node-node-b","annotations":{)"
                        R"("allot.cni.dev/probe":"complete","allot.cni.dev/held":""}},)"
                        R"("spec":{"holderIdentity":"node-b",)"
                        R"("renewTime":"2027-01-15T08:00:00.000000Z"}})"});
    REQUIRE(back.size() == 1);
    CHECK(back[0].node == "node-b");
    CHECK(back[0].complete);
    CHECK(back[0].version.empty());
    CHECK(back[0].revision.empty());
    CHECK(back[0].nodeUid.empty());  // no proof that node-b is a Node's name
}

TEST_CASE(
    "a report under another node's Lease name is not read: one node cannot speak for another") {
    auto back = listed({R"({"metadata":{"name":"allot-node-node-a","annotations":{)"
                        R"("allot.cni.dev/probe":"complete","allot.cni.dev/held":""}},)"
                        R"("spec":{"holderIdentity":"node-b",)"
                        R"("renewTime":"2027-01-15T08:00:00.000000Z"}})"});
    CHECK(back.empty());
}
