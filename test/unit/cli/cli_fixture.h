#pragma once
// kubectl-allot's commands over the in-memory Cluster (test/unit/cluster/fake_cluster.h): a
// Fixture that runs a command line as run.cpp does, with a fake Inventory of NADs, node slices
// and recorded Events. Shared by the cli layer's tests.

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../cluster/fake_cluster.h"
#include "cli/cli.h"
#include "cli/output.h"

namespace allot::test {

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

inline core::Owner own(const std::string& ctr, const std::string& pod, const std::string& uid) {
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

}  // namespace allot::test
