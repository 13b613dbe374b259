#pragma once
// allot-gc's configuration: command-line flags, each with an environment fallback
// (flag > environment > default). Pure: the environment is passed in.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "core/result.h"

namespace allot::gc {

using Millis = std::chrono::milliseconds;

// What one allot-gc process does. The node agent (the DaemonSet): its node's pod watch,
// releases, sweep and report, the relay, the journal, the plugin's token and files. The
// controller (a Deployment of a few replicas, one leading): the cluster-wide repair loop, the
// slice controller, the claim collector and the pool gauges. Only controllers are candidates
// for the Lease; an agent never reads it.
enum class Role { Agent, Controller };

struct Config {
    Role role = Role::Agent;
    std::string nodeName;  // required
    std::string identity;  // Lease holder identity; default the node name (+ a unique suffix)
    bool identityDefaulted = false;
    bool sandboxProbe = true;  // read the node's namespaces before an unproven release
    // The container runtime's CRI socket, asked first whether a sandbox is gone. Empty: the
    // first of kCriSockets that exists at start; "none": no runtime is asked.
    std::string criSocket;
    // The longest a runtime's ADD may run after allot's answer (core::addInFlight).
    Millis addInFlightBound{std::chrono::seconds(150)};
    Millis nodeSweepInterval{std::chrono::seconds(60)};  // 0: no node sweep, no report
    std::string poolNamespace = "kube-system";
    std::string kubeconfig;  // empty: in-cluster ServiceAccount
    std::vector<std::string> ipamTypes{"allot", "whereabouts"};
    Millis repairInterval{std::chrono::seconds(60)};
    Millis leakGrace{std::chrono::minutes(5)};
    int leakPasses = 3;
    int repairBatch = 500;   // releases per pass at most
    bool nodeSlices = true;  // the leader runs the slice controller
    Millis sliceInterval{std::chrono::seconds(5)};
    Millis resyncInterval{std::chrono::minutes(5)};
    std::string listenHost = "127.0.0.1";               // metrics and health
    int listenPort = 9847;                              // 0: no HTTP server
    std::string journalDir = "/var/lib/allot/journal";  // empty: no journal replay
    Millis journalInterval{std::chrono::seconds(30)};
    std::string nodeKubeconfig;        // empty: not maintained
    std::string pluginServiceAccount;  // "ns/name": the plugin's own identity; empty: allot-gc's
    std::string relaySocket;    // the plugin's node relay (deploy: /run/allot/api.sock); empty: off
    std::string uninstallWith;  // "ns/name" of the DaemonSet; empty: never remove node files
    std::string podUid;  // this pod's; node files go only if install-cni stamped them with it
    std::string cniBinDir = "/host/opt/cni/bin";  // where the plugin was installed (uninstall)
    std::vector<std::string> pluginAliases;       // further names of the plugin there
    std::string serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
    Millis tokenCheckInterval{std::chrono::seconds(30)};
    std::string leaseName = "allot-gc";
    std::string leaseNamespace = cluster::kDefaultLeaseNamespace;  // and the node reports
    Millis leaseDuration{std::chrono::seconds(15)};
    Millis leaseRenewInterval{std::chrono::seconds(5)};
    Millis watchTimeout{std::chrono::minutes(5)};
    Millis healthThreshold{std::chrono::minutes(5)};
    int apiParallelism = 4;
    Millis requestTimeout{std::chrono::seconds(10)};
    int releaseRetries = 8;
    std::string logLevel = "info";
    std::string logFormat = "text";  // or "json"
};

// Where containerd and CRI-O listen by default.
inline constexpr const char* kCriSockets[] = {"/run/containerd/containerd.sock",
                                              "/var/run/crio/crio.sock"};

struct ParsedArgs {
    Config config;
    bool help = false;
    bool version = false;  // --version: print allot::versionLine("allot-gc") and exit
};

using GetEnv = std::function<std::optional<std::string>(const std::string& name)>;

// Parses argv (without argv[0]): "--flag=value" or "--flag value". Errors (InvalidConfig)
// name the flag or variable and the bad value.
core::Result<ParsedArgs> parseArgs(const std::vector<std::string>& args, const GetEnv& env);

// The --help text: every flag, its variable and default.
std::string usage();

// "host:port", "[v6]:port" or ":port" (all interfaces).
core::Result<std::pair<std::string, int>> parseListen(std::string_view text, std::string_view what);

}  // namespace allot::gc
