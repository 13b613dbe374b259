// kubectl-allot's command line: global and per-command flags, help and shell completion.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "core/anomaly.h"

using namespace allot;

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
