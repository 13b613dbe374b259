// kubectl-allot version: this program's build and each node's allot-gc, over the in-memory
// Cluster (cli_fixture.h).
#include "version/version.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli_fixture.h"

using namespace allot;
using test::Fixture;
using test::kNs;

TEST_CASE(
    "version shows this program's build and each node's allot-gc from its report, and the Nodes "
    "without one") {
    Fixture f;
    const auto now = std::chrono::system_clock::now();
    for (const char* n : {"node-a", "node-b", "node-c"}) f.fake.putNode(n, true);
    const std::string v(version()), rev(revision());
    REQUIRE(f.fake.putNodeReport("kube-system", {"node-a", now, true, {}, v, rev}).ok());
    // An allot-gc older than the version annotations; a deleted Node's last report.
    REQUIRE(f.fake.putNodeReport("kube-system", {"node-b", now, true, {}, "", ""}).ok());
    REQUIRE(
        f.fake.putNodeReport("kube-system", {"node-gone", now, true, {}, "0.0.9", "1234567"}).ok());
    CHECK(f.run({"version"}) == cli::kExitOk);
    auto d = f.doc();
    CHECK(cli::text(*d.find("client"), "version") == v);
    CHECK(cli::text(*d.find("client"), "revision") == rev);
    CHECK(cli::text(d, "leaseNamespace") == "kube-system");
    auto nodes = cli::list(d, "nodes");
    REQUIRE(nodes.size() == 4);
    CHECK(cli::text(nodes[0], "node") == "node-a");
    CHECK(cli::text(nodes[0], "version") == v);
    CHECK(cli::text(nodes[0], "revision") == rev);
    CHECK(cli::flag(nodes[0], "reported"));
    CHECK(!cli::text(nodes[0], "reportedAt").empty());
    CHECK(cli::text(nodes[1], "node") == "node-b");
    CHECK(cli::flag(nodes[1], "reported"));
    CHECK(cli::text(nodes[1], "version").empty());
    CHECK(cli::text(nodes[2], "node") == "node-c");
    CHECK_FALSE(cli::flag(nodes[2], "reported"));
    CHECK(cli::text(nodes[3], "node") == "node-gone");
    CHECK(cli::text(nodes[3], "version") == "0.0.9");
}

TEST_CASE("version's table names this program, then one row per node with its age") {
    Fixture f;
    f.fake.putNode("node-a", true);
    f.fake.putNode("node-c", true);
    REQUIRE(f.fake
                .putNodeReport("kube-system",
                               {"node-a",
                                std::chrono::system_clock::now() - std::chrono::minutes(3),
                                true,
                                {},
                                "0.1.0",
                                "abc1234"})
                .ok());
    auto opts = cli::parseArgs({"version"});
    REQUIRE(opts.ok());
    cli::Env env{f.fake, f.inv, *opts, kNs, f.out, f.err};
    CHECK(cli::runVersion(&env, *opts, f.out, f.err) == cli::kExitOk);
    const std::string t = f.out.str();
    CHECK(t.rfind("kubectl-allot " + std::string(version()) + " (revision " +
                      std::string(revision()) + ")\n\nNODE",
                  0) == 0);
    CHECK(t.find("node-a   0.1.0      abc1234    3m\n") != std::string::npos);
    CHECK(t.find("node-c   -          -          no report\n") != std::string::npos);
}

TEST_CASE(
    "version --client reads nothing from the cluster; a cluster it cannot read is exit 3 "
    "after the client's build") {
    Fixture f;
    f.fake.failNext("nodeReports", 1, core::Errc::Transient);
    CHECK(f.run({"version", "--client"}) == cli::kExitOk);
    CHECK(f.doc().find("nodes") == nullptr);
    CHECK(cli::text(*f.doc().find("client"), "version") == version());
    CHECK(f.run({"version", "--lease-namespace", "allot-system"}) == cli::kExitError);
    CHECK(cli::text(*f.doc().find("client"), "revision") == revision());
    CHECK(f.err.str().find("Leases in allot-system") != std::string::npos);
    CHECK(!cli::parseArgs({"version", "extra"}).ok());
    CHECK(cli::helpText("version").find("--lease-namespace") != std::string::npos);
    CHECK(cli::helpText("").find("version") != std::string::npos);
}
