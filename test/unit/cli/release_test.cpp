// kubectl-allot release, of one address and --from-report, over the in-memory Cluster
// (cli_fixture.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
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

namespace {

// "IP action" per result of the last release --from-report, sorted.
std::vector<std::string> releaseActions(Fixture& f) {
    std::vector<std::string> out;
    const auto d = f.doc();
    for (const auto& r : cli::list(d, "results"))
        out.push_back(cli::text(r, "ip") + " " + cli::text(r, "action"));
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE(
    "release refuses without --force, also for a gone pod (its sandbox may run on), and releases "
    "through the engine when forced") {
    Fixture f;
    f.fake.putPod("app", "web", "uid-web");
    f.allocate(5, own("c-web", "web", "uid-web"));
    CHECK(f.run({"release", "10.1.0.5"}) == cli::kExitRefused);
    CHECK(f.err.str().find("--force") != std::string::npos);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(5) == 1);
    CHECK(f.inv.events.empty());

    f.fake.removePod("app", "web");
    CHECK(f.run({"release", "10.1.0.5"}) == cli::kExitRefused);
    CHECK(f.err.str().find("may still run on") != std::string::npos);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(5) == 1);
    CHECK(f.inv.events.empty());
    CHECK(f.run({"release", "10.1.0.5", "--force"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(5) == 0);
    CHECK(!f.fake.pools(kNs).getReservation("10.1.0.5").ok());
    REQUIRE(f.inv.events.size() == 1);
    CHECK(f.inv.events[0].reason == "AddressReleased");
    CHECK(f.inv.events[0].object.kind == "Pod");
    CHECK(f.inv.events[0].message.find("10.1.0.5") != std::string::npos);
    CHECK(f.inv.events[0].message.find("user tester") != std::string::npos);
    CHECK(cli::flag(f.doc(), "released"));
    CHECK(f.run({"release", "10.1.0.5"}) == cli::kExitNotFound);
}

TEST_CASE("release --dry-run says what it would release and changes nothing") {
    Fixture f;
    f.allocate(5, own("c-gone", "gone", "uid-gone"));
    CHECK(f.run({"release", "10.1.0.5", "--dry-run"}) == cli::kExitOk);
    CHECK(cli::flag(f.doc(), "dryRun"));
    CHECK_FALSE(cli::flag(f.doc(), "released"));
    CHECK(cli::text(f.doc(), "message").find("would release 10.1.0.5") != std::string::npos);
    CHECK(cli::text(f.doc(), "message").find("--force") != std::string::npos);
    CHECK(f.run({"release", "10.1.0.5", "--dry-run", "--force"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(5) == 1);
    CHECK(f.fake.pools(kNs).getReservation("10.1.0.5").ok());
    CHECK(f.inv.events.empty());
}

TEST_CASE(
    "release --from-report frees exactly the report's leaks that are still leaks, --dry-run "
    "none, and without --force none (exit 5)") {
    Fixture f;
    f.fake.putPod("app", "live", "uid-live");
    f.allocate(2, own("c-live", "live", "uid-live"));
    f.allocate(3, own("c-gone", "gone", "uid-gone"));
    f.allocate(4, own("c-gone2", "gone2", "uid-gone2"));
    f.allocate(5, own("c-moved", "moved", "uid-moved"));
    f.allocate(6, own("c-back", "back", "uid-back"));
    f.allocate(9, own("c-nores", "nores", "uid-nores"), kPool, false);  // not a leak kind
    f.fake.putPod("app", "nores", "uid-nores");
    CHECK(f.run({"check"}) == cli::kExitOk);
    f.report = f.out.str();
    // Since the report: .5 was re-used by another container, the pod of .6 came back.
    f.allocate(5, own("c-new", "new", "uid-new"));
    f.fake.putPod("app", "back", "uid-back");

    CHECK(f.run({"release", "--from-report", "r.json", "--dry-run"}) == cli::kExitOk);
    auto actions = [&] { return releaseActions(f); };
    CHECK(actions() == std::vector<std::string>{"10.1.0.3 refused", "10.1.0.4 refused",
                                                "10.1.0.5 skipped", "10.1.0.6 skipped"});
    CHECK(f.run({"release", "--from-report", "r.json", "--dry-run", "--force"}) == cli::kExitOk);
    CHECK(actions() == std::vector<std::string>{"10.1.0.3 would_release", "10.1.0.4 would_release",
                                                "10.1.0.5 skipped", "10.1.0.6 skipped"});
    CHECK(f.out.str().find("not the report's c-moved") != std::string::npos);
    CHECK(f.out.str().find("its pod is running now") != std::string::npos);
    CHECK(f.fake.pool(kNs, kPool)->allocations.size() == 6);

    CHECK(f.run({"release", "--from-report", "r.json"}) == cli::kExitRefused);
    CHECK(f.err.str().find("--force") != std::string::npos);
    CHECK(f.fake.pool(kNs, kPool)->allocations.size() == 6);
    CHECK(f.inv.events.empty());

    CHECK(f.run({"release", "--from-report", "r.json", "--force"}) == cli::kExitOk);
    CHECK(actions() == std::vector<std::string>{"10.1.0.3 released", "10.1.0.4 released",
                                                "10.1.0.5 skipped", "10.1.0.6 skipped"});
    const auto left = f.fake.pool(kNs, kPool)->allocations;
    CHECK(left.size() == 4);
    CHECK(left.count(3) == 0);
    CHECK(left.count(4) == 0);
    CHECK(left.at(5).containerId == "c-new");
    CHECK_FALSE(f.fake.pools(kNs).getReservation("10.1.0.3").ok());
    CHECK(f.fake.pools(kNs).getReservation("10.1.0.2").ok());
    CHECK(f.inv.events.size() == 2);
    // Run again: each is gone now, nothing more is released.
    CHECK(f.run({"release", "--from-report", "r.json", "--force"}) == cli::kExitOk);
    CHECK(cli::text(*f.doc().find("counts"), "released") == "0");
    CHECK(f.fake.pool(kNs, kPool)->allocations.size() == 4);
}

TEST_CASE("release --from-report refuses what is not a check report, and reads its YAML form") {
    Fixture f;
    f.report = R"({"pools": []})";
    CHECK(f.run({"release", "--from-report", "x.json"}) == cli::kExitError);
    CHECK(f.err.str().find("not a kubectl allot check report") != std::string::npos);
    f.report = R"({"findings": [{"kind": "leaked", "pool": "p"}]})";
    CHECK(f.run({"release", "--from-report", "x.json"}) == cli::kExitError);
    CHECK(f.err.str().find("finding 1") != std::string::npos);
    f.allocate(3, own("c-gone", "gone", "uid-gone"));
    CHECK(f.runAs({"check", "-o", "yaml"}) == cli::kExitOk);
    f.report = f.out.str();
    CHECK(f.run({"release", "--from-report", "r.yaml", "--force"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(3) == 0);
}

TEST_CASE("release --force frees a running pod's address") {
    Fixture f;
    f.fake.putPod("app", "web", "uid-web");
    f.allocate(5, own("c-web", "web", "uid-web"));
    CHECK(f.run({"release", "10.1.0.5", "--force"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(5) == 0);
    CHECK(cli::flag(f.doc(), "forced"));
}

TEST_CASE(
    "release --from-report frees without --force the leaks whose Node is deleted, and only those") {
    Fixture f;
    f.allocate(3, core::Owner{"c-a", "app/gone-a", "net1", "node-a", "uid-a", "macnet"});
    f.allocate(4, core::Owner{"c-x", "app/gone-x", "net1", "node-x", "uid-x", "macnet"});
    // node-y was never a Node that anyone knows of (a host name the plugin fell back to).
    f.allocate(5, core::Owner{"c-y", "app/gone-y", "net1", "node-y", "uid-y", "macnet"});
    f.fake.putNode("node-x", false);
    // node-x's allot-gc found its Node: the proof, once it is gone, that the name was a Node.
    REQUIRE(f.fake
                .putNodeReport(
                    "kube-system",
                    {"node-x", std::chrono::system_clock::now(), true, {}, "", "", "uid-node-x"})
                .ok());
    CHECK(f.run({"check"}) == cli::kExitOk);
    f.report = f.out.str();
    f.fake.removeNode("node-x");  // the machine is gone for good
    auto actions = [&] { return releaseActions(f); };
    // Reports that cannot be read prove nothing: node-x needs --force then, with a warning.
    f.fake.failNext("nodeReports", 1, core::Errc::Forbidden);
    CHECK(f.run({"release", "--from-report", "r.json", "--dry-run"}) == cli::kExitOk);
    CHECK(actions() ==
          std::vector<std::string>{"10.1.0.3 refused", "10.1.0.4 refused", "10.1.0.5 refused"});
    CHECK(f.err.str().find("node reports") != std::string::npos);
    CHECK(f.run({"release", "--from-report", "r.json", "--dry-run"}) == cli::kExitOk);
    CHECK(actions() == std::vector<std::string>{"10.1.0.3 refused", "10.1.0.4 would_release",
                                                "10.1.0.5 refused"});
    CHECK(f.fake.pool(kNs, kPool)->allocations.size() == 3);
    CHECK(f.run({"release", "--from-report", "r.json"}) == cli::kExitRefused);
    CHECK(actions() ==
          std::vector<std::string>{"10.1.0.3 refused", "10.1.0.4 released", "10.1.0.5 refused"});
    const auto left = f.fake.pool(kNs, kPool)->allocations;
    CHECK(left.size() == 2);
    CHECK(left.count(3) == 1);
    CHECK(left.count(5) == 1);
    REQUIRE(f.inv.events.size() == 1);
    CHECK(f.inv.events[0].message.find("its Node's deletion") != std::string::npos);
    // A pod whose object still shows it running, and not on a deleted Node, keeps its address
    // whatever node its entry names.
    f.fake.putPod("app", "live-x", "uid-lx");
    f.allocate(6, core::Owner{"c-lx", "app/live-x", "net1", "node-x", "uid-lx", "macnet"});
    CHECK(f.run({"release", "10.1.0.6"}) == cli::kExitRefused);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(6) == 1);
    // Bound to the deleted node-x, it cannot be using it: the controller's NodeDeleted.
    f.fake.putPod("app", "live-x", "uid-lx", "Running", "", "node-x");
    CHECK(f.run({"release", "10.1.0.6"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(6) == 0);
    CHECK(cli::text(f.doc(), "proof") == "its Node's deletion");
}

TEST_CASE(
    "release frees without --force what the controller would: a gone pod's address on an "
    "out-of-service Node") {
    Fixture f;
    f.allocate(7, own("c-gone", "gone", "uid-gone"));  // on node-a; no such pod any more
    CHECK(f.run({"release", "10.1.0.7"}) == cli::kExitRefused);
    CHECK(f.err.str().find("its sandbox may still run on node node-a") != std::string::npos);
    f.fake.setOutOfService("node-a");
    CHECK(f.run({"release", "10.1.0.7"}) == cli::kExitOk);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(7) == 0);
    CHECK(cli::text(f.doc(), "proof") == "its Node's node.kubernetes.io/out-of-service taint");
    CHECK_FALSE(cli::flag(f.doc(), "forced"));
    // A pod that still runs there keeps its address: the taint says nothing until it is gone.
    f.fake.putPod("app", "web", "uid-web");
    f.allocate(8, own("c-web", "web", "uid-web"));
    CHECK(f.run({"release", "10.1.0.8"}) == cli::kExitRefused);
    CHECK(f.err.str().find("releasing it may give it to a second pod") != std::string::npos);
}
