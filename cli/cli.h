#pragma once
// kubectl-allot: an operator's view of allot's pools. Every command reads through
// common/cluster (the same Cluster, scan and release code as allot-gc) and builds one JSON
// document (the stable, documented field names), which output.h prints as a table, JSON or
// YAML. Commands never print to stdout except their document; errors go to `err`.

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/event.h"
#include "core/result.h"

namespace allot::cli {

using core::Result;

// Exit codes (README, kubectl allot --help).
enum ExitCode : int {
    kExitOk = 0,
    kExitFindings = 1,  // check: anomalies found; lint: problems found
    kExitUsage = 2,     // bad command line
    kExitError = 3,     // kubeconfig, API server, unreadable input
    kExitNotFound = 4,  // who: an address no pool holds; pod: holds none; release: not held
    kExitRefused = 5,   // release: the holding pod is alive (use --force)
};

// Wide: the table with more columns (container IDs in full, pod UID, network, ...).
enum class Format { Table, Wide, Json, Yaml };

struct Options {
    std::string command;
    std::vector<std::string> args;
    std::string kubeconfig, context;
    // -n: the pods' namespace, as in kubectl ("": the context's, else "default").
    std::string podNamespace;
    // --pool-namespace: the pools' ("": $ALLOT_POOL_NAMESPACE, else kube-system). Not the
    // context's: that is the operator's app namespace, not where the pools live.
    std::string poolNamespace;
    bool allNamespaces = false;  // -A: pods of every namespace
    Format output = Format::Table;
    bool help = false;
    bool force = false;      // release
    bool dryRun = false;     // release: say what would go, change nothing
    std::string fromReport;  // release: the `check -o json` report whose leaks to release
    std::string pool;        // release: which pool, when an IP is held in several
    bool offline = false;    // lint: no API server (no overlap check)
    bool client = false;     // version: this program's only, no cluster
    // version, release: the node reports (release: a deleted Node is proven by its report)
    std::string leaseNamespace = cluster::kDefaultLeaseNamespace;
    std::chrono::milliseconds leakGrace{std::chrono::minutes(5)};  // check
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// Parses argv (global flags may come before or after the command). Errors: a message for
// stderr, exit code kExitUsage.
Result<Options> parseArgs(const std::vector<std::string>& argv);
// The help text: the overview (empty command) or one command's.
std::string helpText(const std::string& command);

// What the commands read beyond Cluster: NetworkAttachmentDefinitions, NodeSlicePools, and
// where manual releases are recorded.
struct NadConfig {
    std::string ns, name, config;  // config: spec.config
};
struct SliceAssignment {
    std::string node, slice;
};
struct SlicePool {
    std::string name, range, sliceSize;
    std::vector<SliceAssignment> slices;
};

class Inventory {
  public:
    virtual ~Inventory() = default;
    // Every NAD of the cluster (NotFound-free: none is an empty list).
    virtual Result<std::vector<NadConfig>> nads() = 0;
    virtual Result<std::vector<SlicePool>> slicePools(const std::string& ns) = 0;
    virtual Result<void> recordEvent(const cluster::EventSpec& e) = 0;
    // Who runs the command, for the release Event ("user admin of context kind-x").
    virtual std::string identity() const = 0;
};

struct Env {
    cluster::Cluster& cluster;
    Inventory& inventory;
    const Options& opts;
    std::string ns;  // the pools' namespace (resolved)
    std::ostream& out;
    std::ostream& err;
    std::string podNs = "default";  // the pods' namespace (resolved; unused with -A)
};

int runPools(Env& env);
int runWho(Env& env);
int runPod(Env& env);
int runCheck(Env& env);
int runRelease(Env& env);
// release --from-report: `report` is the text of the file (or stdin) it names.
int runReleaseReport(Env& env, const std::string& report);
// `input` is the text of the file (or stdin) named by the argument; `env` may be null
// (--offline, or no API server): no overlap check then.
int runLint(Env* env, const Options& opts, const std::string& source, const std::string& input,
            std::ostream& out, std::ostream& err);

// This program's version and revision, and each node's allot-gc's from its node report (and
// the Nodes that have none); `env` null (or --client): this program's alone.
int runVersion(Env* env, const Options& opts, std::ostream& out, std::ostream& err);

// Shell completion (complete.cpp): the candidates for the words typed so far (the last one
// being completed), one per line, then cobra's directive line as kubectl expects of
// kubectl_complete-allot; and the bash script for `kubectl-allot completion bash` ("" for a
// shell it does not know).
std::string completions(const std::vector<std::string>& words);
std::string completionScript(const std::string& shell);

// The pools' namespace: --pool-namespace, else $ALLOT_POOL_NAMESPACE, else kube-system.
std::string poolNamespace(const Options& opts);

// The whole program after argument parsing (main.cpp): connects, runs the command.
int run(const Options& opts, std::ostream& out, std::ostream& err);

}  // namespace allot::cli
