// kubectl-allot who, pod and pools over the in-memory Cluster (cli_fixture.h), and the table
// and YAML printers they share.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli_fixture.h"

using namespace allot;
using test::Fixture;
using test::kNs;
using test::kPool;
using test::own;

TEST_CASE(
    "who names the pool, pod, state and reservation of an address, and exits 4 for a free one") {
    Fixture f;
    f.fake.putPod("app", "web", "uid-web");
    f.allocate(5, own("c-web", "web", "uid-web"));
    CHECK(f.run({"who", "10.1.0.5"}) == cli::kExitOk);
    auto r = cli::list(f.doc(), "results");
    REQUIRE(r.size() == 1);
    CHECK(cli::text(r[0], "pool") == kPool);
    CHECK(cli::text(r[0], "podRef") == "app/web");
    CHECK(cli::text(r[0], "containerID") == "c-web");
    CHECK(cli::text(r[0], "interface") == "net1");
    CHECK(cli::text(r[0], "node") == "node-a");
    CHECK(cli::text(r[0], "podUID") == "uid-web");
    CHECK(cli::text(r[0], "podState") == "running");
    CHECK(cli::flag(*r[0].find("reservation"), "agrees"));

    f.fake.removePod("app", "web");
    CHECK(f.run({"who", "10.1.0.5", "10.1.0.6"}) == cli::kExitNotFound);
    r = cli::list(f.doc(), "results");
    REQUIRE(r.size() == 2);
    CHECK(cli::text(r[0], "podState") == "gone");
    CHECK(!cli::flag(r[1], "held"));
    CHECK(f.run({"who", "not-an-ip"}) == cli::kExitUsage);
}

TEST_CASE("who names a slice part's reservation as part 0's: network_name and the address") {
    Fixture f;
    const std::string part1 = "macnet-node-a-10.5.0.0-28-part-1";
    f.fake.putPool(kNs, {part1, "10.5.0.0/28", {}, {}, {}});
    f.fake.putPod("app", "p9", "uid-p9");
    f.allocate(9, own("c-p9", "p9", "uid-p9"), part1.c_str(), false);
    f.fake.putReservation(kNs, {"macnet-10.5.0.9", "c-p9", "app/p9", "net1", ""});
    CHECK(f.run({"who", "10.5.0.9"}) == cli::kExitOk);
    auto r = cli::list(f.doc(), "results");
    REQUIRE(r.size() == 1);
    CHECK(cli::text(r[0], "pool") == part1);
    const json::Value& res = *r[0].find("reservation");
    CHECK(cli::text(res, "name") == "macnet-10.5.0.9");
    CHECK(cli::flag(res, "exists"));
    CHECK(cli::flag(res, "agrees"));
}

TEST_CASE("pod lists every address a pod holds across pools") {
    Fixture f;
    f.fake.putPool(kNs, {"10.2.0.0-24", "10.2.0.0/24", {}, {}, {}});
    f.fake.putPod("app", "db", "uid-db");
    f.allocate(7, own("c-db", "db", "uid-db"));
    f.allocate(9, own("c-db", "db", "uid-db"), "10.2.0.0-24");
    f.allocate(8, own("c-x", "other", "uid-x"));
    CHECK(f.run({"pod", "app/db"}) == cli::kExitOk);
    auto d = f.doc();
    CHECK(cli::text(d, "podState") == "running");
    std::vector<std::string> ips;
    for (const auto& a : cli::list(d, "addresses")) ips.push_back(cli::text(a, "ip"));
    std::sort(ips.begin(), ips.end());
    CHECK(ips == std::vector<std::string>{"10.1.0.7", "10.2.0.9"});
    CHECK(f.run({"pod", "app/nobody"}) == cli::kExitNotFound);
    CHECK(f.run({"pod", "a/b/c"}) == cli::kExitUsage);
}

TEST_CASE("pod NAME is looked up in -n's namespace, else the context's; -A in every one") {
    Fixture f;
    f.fake.putPod("app", "db", "uid-db");
    f.allocate(7, own("c-db", "db", "uid-db"));
    f.allocate(8, core::Owner{"c-db2", "other/db", "net1", "node-a", "uid-db2", "macnet"});
    f.allocate(9, own("c-web", "web", "uid-web"));
    CHECK(f.run({"pod", "db"}) == cli::kExitOk);  // the context's namespace: app
    CHECK(cli::text(f.doc(), "pod") == "app/db");
    REQUIRE(cli::list(f.doc(), "addresses").size() == 1);
    CHECK(cli::text(cli::list(f.doc(), "addresses")[0], "ip") == "10.1.0.7");
    CHECK(f.run({"pod", "-n", "other", "db"}) == cli::kExitOk);
    CHECK(cli::text(cli::list(f.doc(), "addresses")[0], "ip") == "10.1.0.8");
    CHECK(f.run({"pod", "-n", "nowhere", "db"}) == cli::kExitNotFound);
    CHECK(f.run({"pod", "-n", "other", "app/db"}) == cli::kExitUsage);  // two namespaces
    CHECK(f.run({"pod", "-A", "db"}) == cli::kExitOk);
    std::vector<std::string> refs;
    const auto d = f.doc();
    for (const auto& a : cli::list(d, "addresses")) refs.push_back(cli::text(a, "podRef"));
    std::sort(refs.begin(), refs.end());
    CHECK(refs == std::vector<std::string>{"app/db", "other/db"});
}

TEST_CASE("pod without a name lists the namespace's pods that hold addresses; -A every one") {
    Fixture f;
    f.allocate(7, own("c-db", "db", "uid-db"));
    f.allocate(9, own("c-web", "web", "uid-web"));
    f.allocate(8, core::Owner{"c-x", "other/x", "net1", "node-a", "uid-x", "macnet"});
    CHECK(f.run({"pod"}) == cli::kExitOk);
    CHECK(cli::list(f.doc(), "addresses").size() == 2);
    CHECK(f.run({"pod", "-A"}) == cli::kExitOk);
    CHECK(cli::list(f.doc(), "addresses").size() == 3);
    CHECK(f.run({"pod", "-n", "empty"}) == cli::kExitNotFound);
}

TEST_CASE("-o wide adds the network, offset and the whole container ID to the table") {
    Fixture f;
    const std::string ctr = "0123456789abcdef0123";
    f.fake.putPod("app", "web", "uid-web");
    f.allocate(5, own(ctr, "web", "uid-web"));
    CHECK(f.runAs({"who", "10.1.0.5"}) == cli::kExitOk);
    CHECK(f.out.str().find(ctr) == std::string::npos);
    CHECK(f.out.str().find("NETWORK") == std::string::npos);
    CHECK(f.runAs({"who", "10.1.0.5", "-o", "wide"}) == cli::kExitOk);
    const std::string t = f.out.str();
    CHECK(t.find("RESERVATION   NETWORK   OFFSET\n") != std::string::npos);
    CHECK(t.find(ctr + "   uid-web   ok            macnet    5\n") != std::string::npos);
    CHECK(f.runAs({"pools", "-o", "wide"}) == cli::kExitOk);
    CHECK(f.out.str().rfind("NAMESPACE   POOL", 0) == 0);
    CHECK(f.runAs({"check", "-o", "wide"}) == cli::kExitOk);
    CHECK(f.runAs({"pod", "-n", "app", "web", "-o", "wide"}) == cli::kExitOk);
    CHECK(f.out.str().find(ctr) != std::string::npos);
}

TEST_CASE("pools shows size, use and the networks that map to each pool") {
    Fixture f;
    f.fake.putPod("app", "a", "uid-a");
    f.allocate(2, own("c-a", "a", "uid-a"));
    f.allocate(3, own("c-b", "b", "uid-b"));
    f.inv.nadList.push_back({"app", "mac", R"({"cniVersion":"1.0.0","name":"macnet",
        "type":"macvlan","ipam":{"type":"allot","range":"10.1.0.0/24"}})"});
    CHECK(f.run({"pools"}) == cli::kExitOk);
    auto pools = cli::list(f.doc(), "pools");
    REQUIRE(pools.size() == 1);
    CHECK(cli::text(pools[0], "name") == kPool);
    CHECK(cli::text(pools[0], "size") == "254");
    CHECK(cli::text(pools[0], "used") == "2");
    CHECK(cli::text(pools[0], "free") == "252");
    CHECK(cli::text(pools[0], "percentUsed") == "0.8");
    REQUIRE(cli::list(pools[0], "networks").size() == 1);
    CHECK(cli::list(pools[0], "networks")[0].asString() == "app/mac");
}

TEST_CASE("the YAML and table printers quote every string and fill empty cells") {
    auto v = json::parse(R"({"a":"x: y","b":[1,{"c":"-"}],"d":{},"e":[]})");
    REQUIRE(v.ok());
    std::ostringstream y;
    cli::printYaml(y, *v);
    CHECK(y.str() == "\"a\": \"x: y\"\n\"b\":\n  - 1\n  - \"c\": \"-\"\n\"d\": {}\n\"e\": []\n");
    std::ostringstream t;
    cli::printTable(t, {{"A", "BB"}, {{"1", ""}}});
    CHECK(t.str() == "A   BB\n1   -\n");
}

TEST_CASE("pools shows each NodeSlicePool's slices with the use of their node's pool") {
    Fixture f;
    const std::string slicePool = "macnet-node-a-10.5.0.0-28";
    f.fake.putPool(kNs, {slicePool, "10.5.0.0/28", {}, {}, {}});
    f.allocate(1, own("c-a", "a", "uid-a"), slicePool.c_str());
    f.inv.slices.push_back(
        {"macnet", "10.5.0.0/24", "/28", {{"node-a", "10.5.0.0/28"}, {"node-b", "10.5.0.16/28"}}});
    f.inv.nadList.push_back({"app", "sliced", R"({"cniVersion":"1.0.0","name":"macnet",
        "type":"macvlan","ipam":{"type":"allot","range":"10.5.0.0/24","node_slice_size":"/28"}})"});
    CHECK(f.run({"pools"}) == cli::kExitOk);
    auto d = f.doc();
    const auto& sps = cli::list(d, "nodeSlicePools");
    REQUIRE(sps.size() == 1);
    CHECK(cli::list(sps[0], "networks")[0].asString() == "app/sliced");
    const auto& slices = cli::list(sps[0], "slices");
    REQUIRE(slices.size() == 2);
    CHECK(cli::text(slices[0], "pool") == slicePool);
    CHECK(cli::text(slices[0], "size") == "14");
    CHECK(cli::text(slices[0], "used") == "1");
    CHECK(cli::text(slices[1], "pool") == "");
    bool found = false;
    for (const auto& p : cli::list(d, "pools"))
        if (cli::text(p, "name") == slicePool) found = cli::text(p, "node") == "node-a";
    CHECK(found);
    for (const auto& p : cli::list(d, "pools"))
        if (cli::text(p, "name") == slicePool)
            CHECK(cli::list(p, "networks")[0].asString() == "app/sliced");
}
