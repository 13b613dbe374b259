// kubectl-allot's commands over the in-memory Cluster (test/unit/cluster/fake_cluster.h).
#include "cli/cli.h"

#include <doctest/doctest.h>

#include <sstream>

#include "../cluster/fake_cluster.h"
#include "cli/output.h"
#include "version/version.h"

using allot::core::Result;
using namespace allot;

namespace {

constexpr const char* kNs = "pools";
constexpr const char* kPool = "10.1.0.0-24";

class FakeInventory : public cli::Inventory {
  public:
    std::vector<cli::NadConfig> nadList;
    std::vector<cli::SlicePool> slices;
    std::vector<cluster::EventSpec> events;

    core::Result<std::vector<cli::NadConfig>> nads() override { return nadList; }
    core::Result<std::vector<cli::SlicePool>> slicePools(const std::string&) override {
        return slices;
    }
    core::Result<void> recordEvent(const cluster::EventSpec& e) override {
        events.push_back(e);
        return {};
    }
    std::string identity() const override { return "user tester"; }
};

core::Owner own(const std::string& ctr, const std::string& pod, const std::string& uid) {
    return core::Owner{ctr, std::string("app/") + pod, "net1", "node-a", uid, "macnet"};
}

struct Fixture {
    test::FakeCluster fake;
    FakeInventory inv;
    std::ostringstream out, err;

    // The entries' nodes exist: a deleted Node is a proof of its own (release_rule.h).
    Fixture() {
        fake.putPool(kNs, {kPool, "10.1.0.0/24", {}, {}, {}});
        for (const char* n : {"node-a", "node-b"}) fake.putNode(n, true);
    }

    // An entry at `off` of `pool` for `o`, with its reservation unless told otherwise.
    void allocate(core::u128 off, const core::Owner& o, const char* pool = kPool,
                  bool reserve = true) {
        auto p = *fake.pool(kNs, pool);
        p.allocations[off] = o;
        fake.putPool(kNs, p);
        if (reserve) {
            auto ip = core::Cidr::parse(p.range)->at(off);
            fake.putReservation(kNs, {ip.str(), o.containerId, o.podRef, o.ifName, ""});
        }
    }

    std::string report;  // what release --from-report reads

    int run(std::vector<std::string> argv) {
        argv.insert(argv.end(), {"-o", "json"});
        return runAs(argv);
    }
    // As run.cpp does, with "app" as the kubeconfig context's namespace.
    int runAs(const std::vector<std::string>& argv) {
        out.str("");
        err.str("");
        auto opts = cli::parseArgs(argv);
        REQUIRE(opts.ok());
        cli::Env env{fake,
                     inv,
                     *opts,
                     kNs,
                     out,
                     err,
                     opts->podNamespace.empty() ? "app" : opts->podNamespace};
        const std::string& c = opts->command;
        if (!opts->fromReport.empty()) return cli::runReleaseReport(env, report);
        if (c == "pools") return cli::runPools(env);
        if (c == "who") return cli::runWho(env);
        if (c == "pod") return cli::runPod(env);
        if (c == "check") return cli::runCheck(env);
        if (c == "version") return cli::runVersion(&env, *opts, out, err);
        return cli::runRelease(env);
    }
    json::Value doc() {
        auto d = json::parse(out.str());
        REQUIRE_MESSAGE(d.ok(), out.str());
        return *d;
    }
};

// "IP action" per result of the last release --from-report, sorted.
std::vector<std::string> releaseActions(Fixture& f) {
    std::vector<std::string> out;
    const auto d = f.doc();
    for (const auto& r : cli::list(d, "results"))
        out.push_back(cli::text(r, "ip") + " " + cli::text(r, "action"));
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> kinds(const json::Value& checkDoc) {
    std::vector<std::string> out;
    for (const auto& f : cli::list(checkDoc, "findings"))
        out.push_back(cli::text(f, "kind") +
                      (cli::text(f, "reason").empty() ? "" : "/" + cli::text(f, "reason")));
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("kubectl-allot reads global flags before and after the command and refuses bad ones") {
    auto o = cli::parseArgs(
        {"--pool-namespace", "x", "who", "10.0.0.1", "--output=yaml", "--context", "c"});
    REQUIRE(o.ok());
    CHECK(o->command == "who");
    CHECK(o->args == std::vector<std::string>{"10.0.0.1"});
    CHECK(o->poolNamespace == "x");
    CHECK(cli::poolNamespace(*o) == "x");
    CHECK(o->context == "c");
    CHECK(o->output == cli::Format::Yaml);
    CHECK(!cli::parseArgs({"who"}).ok());
    CHECK(!cli::parseArgs({"pools", "extra"}).ok());
    CHECK(!cli::parseArgs({"pools", "-o", "xml"}).ok());
    CHECK(!cli::parseArgs({"pools", "--bogus"}).ok());
    CHECK(!cli::parseArgs({"frobnicate"}).ok());
    CHECK(!cli::parseArgs({"check", "--leak-grace", "soon"}).ok());
    auto g = cli::parseArgs({"check", "--leak-grace", "2m"});
    REQUIRE(g.ok());
    CHECK(g->leakGrace == std::chrono::minutes(2));
    // allot-gc's grammar (core/duration.h): compounds, and a unit is required.
    CHECK(cli::parseArgs({"check", "--leak-grace", "1m30s"})->leakGrace ==
          std::chrono::seconds(90));
    CHECK(!cli::parseArgs({"check", "--leak-grace", "30"}).ok());
    auto h = cli::parseArgs({"release", "--help"});
    REQUIRE(h.ok());
    CHECK(h->help);
    CHECK(cli::helpText("release").find("--force") != std::string::npos);
}

TEST_CASE("-n names the pods' namespace, --pool-namespace the pools', -A every namespace") {
    auto o = cli::parseArgs({"-n", "app", "pod", "web-0"});
    REQUIRE(o.ok());
    CHECK(o->podNamespace == "app");
    CHECK(o->poolNamespace.empty());
    CHECK_FALSE(o->allNamespaces);
    auto a = cli::parseArgs({"check", "-A", "--pool-namespace=allot"});
    REQUIRE(a.ok());
    CHECK(a->allNamespaces);
    CHECK(a->podNamespace.empty());
    CHECK(cli::poolNamespace(*a) == "allot");
    REQUIRE(cli::parseArgs({"pod", "--all-namespaces"}).ok());
    CHECK(cli::parseArgs({"pod", "--all-namespaces"})->args.empty());
    auto both = cli::parseArgs({"pod", "-n", "app", "-A"});
    REQUIRE_FALSE(both.ok());
    CHECK(both.error().message.find("together") != std::string::npos);
    CHECK_FALSE(cli::parseArgs({"pod", "a", "b"}).ok());
}

TEST_CASE("a command that names no pod refuses -n and -A, pointing at --pool-namespace") {
    for (const char* c : {"pools", "who", "release", "lint", "version"}) {
        std::vector<std::string> argv = {c, "-n", "kube-system"};
        if (std::string(c) == "who" || std::string(c) == "release") argv.push_back("10.0.0.1");
        if (std::string(c) == "lint") argv.push_back("-");
        auto r = cli::parseArgs(argv);
        REQUIRE_FALSE_MESSAGE(r.ok(), c);
        CHECK(r.error().message.find("--pool-namespace") != std::string::npos);
        argv[1] = "-A";
        argv.erase(argv.begin() + 2);
        auto all = cli::parseArgs(argv);
        REQUIRE_FALSE_MESSAGE(all.ok(), c);
        CHECK(all.error().message.find("-A/--all-namespaces") != std::string::npos);
    }
}

TEST_CASE("an unknown -o format is an error naming it and every allowed one; wide is a format") {
    auto x = cli::parseArgs({"pools", "-o", "xml"});
    REQUIRE_FALSE(x.ok());
    CHECK(x.error().message.find("\"xml\"") != std::string::npos);
    CHECK(x.error().message.find("table, wide, json or yaml") != std::string::npos);
    auto w = cli::parseArgs({"pools", "-o", "wide"});
    REQUIRE(w.ok());
    CHECK(w->output == cli::Format::Wide);
}

TEST_CASE("release flags: --from-report takes no IP nor --pool; --dry-run is release's alone") {
    auto r = cli::parseArgs({"release", "--from-report", "r.json", "--dry-run"});
    REQUIRE(r.ok());
    CHECK(r->fromReport == "r.json");
    CHECK(r->dryRun);
    CHECK_FALSE(cli::parseArgs({"release", "10.0.0.1", "--from-report", "r.json"}).ok());
    CHECK_FALSE(cli::parseArgs({"release", "--from-report", "r.json", "--pool", "p"}).ok());
    CHECK_FALSE(cli::parseArgs({"release"}).ok());
    CHECK_FALSE(cli::parseArgs({"check", "--dry-run"}).ok());
    CHECK_FALSE(cli::parseArgs({"pools", "--from-report", "r.json"}).ok());
}

TEST_CASE("check --help names every finding kind the analysis can report") {
    const std::string help = cli::helpText("check");
    for (auto kind : allot::core::kAnomalyKinds) {
        std::string k(allot::core::name(kind));
        if (k == "undecodable_pool" || k == "undecodable_entry")
            k = "undecodable_pool/undecodable_entry";
        CHECK_MESSAGE(help.find(k) != std::string::npos, "check --help omits " << k);
    }
}

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

TEST_CASE("completion offers commands, each command's flags, output formats and files for lint") {
    CHECK(cli::completions({""}) == "pools\nwho\npod\ncheck\nrelease\nlint\nversion\n:4\n");
    CHECK(cli::completions({"p"}) == "pools\npod\n:4\n");
    CHECK(cli::completions({"release", "--f"}) == "--force\n--from-report\n:4\n");
    CHECK(cli::completions({"check", "--"}).find("--leak-grace\n") != std::string::npos);
    CHECK(cli::completions({"pools", "--"}).find("--force") == std::string::npos);
    CHECK(cli::completions({"-o", "j"}) == "json\n:4\n");
    CHECK(cli::completions({"-n", "kube-system", ""}) ==
          "pools\nwho\npod\ncheck\nrelease\nlint\nversion\n:4\n");
    CHECK(cli::completions({"version", "--"}).find("--client\n--lease-namespace\n") !=
          std::string::npos);
    CHECK(cli::completions({"version", "--lease-namespace", ""}) == ":4\n");
    CHECK(cli::completions({"lint", ""}) == ":0\n");
    CHECK(cli::completions({"--kubeconfig", ""}) == ":0\n");
    CHECK(cli::completionScript("bash").find("complete -F _kubectl_allot kubectl-allot") !=
          std::string::npos);
    CHECK(cli::completionScript("tcsh").empty());
}

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
    CHECK(f.inv.events[0].message.find("Node deleted") != std::string::npos);
    // A pod whose object still shows it running keeps its address, whatever its Node.
    f.fake.putPod("app", "live-x", "uid-lx");
    f.allocate(6, core::Owner{"c-lx", "app/live-x", "net1", "node-x", "uid-lx", "macnet"});
    CHECK(f.run({"release", "10.1.0.6"}) == cli::kExitRefused);
    CHECK(f.fake.pool(kNs, kPool)->allocations.count(6) == 1);
}
