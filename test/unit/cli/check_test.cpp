// kubectl-allot check over the in-memory Cluster (cli_fixture.h), and lint of NAD and CNI
// config files.
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

namespace {

std::vector<std::string> kinds(const json::Value& checkDoc) {
    std::vector<std::string> out;
    for (const auto& f : cli::list(checkDoc, "findings"))
        out.push_back(cli::text(f, "kind") +
                      (cli::text(f, "reason").empty() ? "" : "/" + cli::text(f, "reason")));
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("check finds nothing on a healthy pool and exits 0") {
    Fixture f;
    for (int i = 2; i < 40; ++i) {
        const std::string n = "p" + std::to_string(i);
        f.fake.putPod("app", n, "uid-" + n);
        f.allocate(i, own("c-" + n, n, "uid-" + n));
    }
    f.inv.nadList.push_back({"app", "good", R"({"cniVersion":"1.0.0","name":"macnet",
        "type":"macvlan","ipam":{"type":"allot","range":"10.1.0.0/24"}})"});
    CHECK(f.run({"check"}) == cli::kExitOk);
    auto d = f.doc();
    CHECK(cli::list(d, "findings").empty());
    CHECK(cli::text(d, "allocations") == "38");
}

TEST_CASE("check finds each seeded anomaly once, and nothing else") {
    Fixture f;
    f.fake.putPool(kNs, {"10.1.0.0-25", "10.1.0.0/25", {}, {}, {}});
    f.fake.putPool(kNs, {"10.9.0.0-30", "10.9.0.0/30", {}, {}, {}});
    f.fake.putPod("app", "ok", "uid-ok");
    f.allocate(2, own("c-ok", "ok", "uid-ok"));        // healthy
    f.allocate(3, own("c-gone", "gone", "uid-gone"));  // leaked/no_pod
    f.fake.putPod("app", "again", "uid-new");
    f.allocate(4, own("c-again", "again", "uid-old"));  // leaked/other_uid
    f.fake.putPod("app", "done", "uid-done", "Succeeded");
    f.allocate(5, own("c-done", "done", "uid-done"));  // leaked/terminal
    f.fake.putPod("app", "dup", "uid-dup");
    f.allocate(6, own("c-dup", "dup", "uid-dup"));
    f.allocate(6, own("c-dup2", "dup", "uid-dup"), "10.1.0.0-25", false);  // duplicate_ip
    f.fake.putPod("app", "far", "uid-far");
    f.allocate(9, own("c-far", "far", "uid-far"), "10.9.0.0-30", false);  // out_of_range
    f.fake.putPod("app", "nores", "uid-nores");
    f.allocate(7, own("c-nores", "nores", "uid-nores"), kPool, false);  // allocation_without_res.
    f.fake.putReservation(kNs, {"10.1.0.99", "c-orphan", "app/orphan", "net1", ""});  // orphan
    f.inv.nadList.push_back({"app", "broken", R"({"cniVersion":"1.0.0","name":"b",
        "type":"macvlan","ipam":{"type":"whereabouts","range":"10.5.0.0/33"}})"});
    CHECK(f.runAs({"check"}) == cli::kExitFindings);  // the table: found, exit 1
    CHECK(f.run({"check"}) == cli::kExitOk);          // a report: the document counts them
    auto d = f.doc();
    CHECK(kinds(d) == std::vector<std::string>{"allocation_without_reservation", "bad_nad_config",
                                               "duplicate_ip", "leaked/no_pod", "leaked/other_uid",
                                               "leaked/terminal", "out_of_range",
                                               "reservation_without_allocation"});
    for (const auto& x : cli::list(d, "findings"))
        if (cli::text(x, "kind") == "leaked" && cli::text(x, "reason") == "no_pod")
            CHECK(cli::text(x, "ip") == "10.1.0.3");
    CHECK(cli::text(*d.find("counts"), "leaked") == "3");
    // Read-only: every entry and reservation is still there.
    CHECK(f.fake.pool(kNs, kPool)->allocations.size() == 6);
}

TEST_CASE("check -o json reports each leak with its pool namespace, offset, pod, container, node") {
    Fixture f;
    f.allocate(3, own("c-gone", "gone", "uid-gone"));
    f.allocate(4, core::Owner{"c-o", "other/o", "net1", "node-b", "uid-o", "macnet"});
    CHECK(f.run({"check"}) == cli::kExitOk);
    auto d = f.doc();
    CHECK(cli::text(d, "report") == "kubectl-allot check");
    const auto& fs = cli::list(d, "findings");
    REQUIRE(fs.size() == 2);
    const json::Value& l = cli::text(fs[0], "ip") == "10.1.0.3" ? fs[0] : fs[1];
    CHECK(cli::text(l, "kind") == "leaked");
    CHECK(cli::text(l, "reason") == "no_pod");
    CHECK(cli::text(l, "poolNamespace") == kNs);
    CHECK(cli::text(l, "pool") == kPool);
    CHECK(cli::text(l, "offset") == "3");
    CHECK(cli::text(l, "podRef") == "app/gone");
    CHECK(cli::text(l, "podUID") == "uid-gone");
    CHECK(cli::text(l, "containerID") == "c-gone");
    CHECK(cli::text(l, "interface") == "net1");
    CHECK(cli::text(l, "node") == "node-a");
    // -n: only the findings about that namespace's pods.
    CHECK(f.run({"check", "-n", "other"}) == cli::kExitOk);
    REQUIRE(cli::list(f.doc(), "findings").size() == 1);
    CHECK(cli::text(cli::list(f.doc(), "findings")[0], "podRef") == "other/o");
    CHECK(f.run({"check", "-n", "clean"}) == cli::kExitOk);
    CHECK(f.run({"check", "-A"}) == cli::kExitOk);
    CHECK(cli::list(f.doc(), "findings").size() == 2);
}

TEST_CASE(
    "lint reports the parser's error, an unreadable exclude and ignored values, per document") {
    const std::string input = R"(kind: NetworkAttachmentDefinition
metadata: {name: good, namespace: n}
spec:
  config: '{"cniVersion":"1.0.0","name":"g","type":"macvlan","ipam":{"type":"allot","range":"10.1.0.0/24","range_start":"10.2.0.1"}}'
---
kind: NetworkAttachmentDefinition
metadata: {name: bad}
spec:
  config: '{"cniVersion":"1.0.0","name":"b","type":"macvlan","ipam":{"type":"allot","range":"10.1.0.0/33"}}'
---
{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge","ipam":{"type":"whereabouts","range":"10.3.0.0/24","exclude":["10.3.0.300"]}}]}
---
kind: ConfigMap
)";
    cli::Options opts;
    opts.output = cli::Format::Json;
    std::ostringstream out, err;
    CHECK(cli::runLint(nullptr, opts, "f.yaml", input, out, err) == cli::kExitFindings);
    auto d = json::parse(out.str());
    REQUIRE(d.ok());
    CHECK(cli::text(*d, "errors") == "3");
    CHECK(cli::text(*d, "warnings") == "1");
    const auto& c = cli::list(*d, "configs");
    REQUIRE(c.size() == 4);
    CHECK(cli::flag(c[0], "valid"));
    CHECK(cli::text(c[0], "name") == "n/good");
    CHECK(cli::text(cli::list(c[0], "problems")[0], "message").find("range_start") !=
          std::string::npos);
    CHECK(cli::text(cli::list(c[0], "networks")[0], "name") == "g");
    CHECK(!cli::flag(c[1], "valid"));
    CHECK(cli::text(cli::list(c[1], "problems")[0], "message").find("\"range\"") !=
          std::string::npos);
    CHECK(cli::text(c[2], "kind") == "CNI conflist");
    CHECK(!cli::flag(c[2], "valid"));
    CHECK(cli::text(cli::list(c[2], "problems")[0], "message").find("exclude") !=
          std::string::npos);
    CHECK(!cli::flag(c[3], "valid"));

    std::ostringstream out2;
    CHECK(cli::runLint(nullptr, opts, "-", "a: [\n", out2, err) == cli::kExitError);
}
