#pragma once
// The CNI entry point as a function: environment + stdin in, stdout text + exit code out.
// main.cpp wires in the real store, locks and journal; tests wire in the in-memory ones.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/config.h"
#include "engine/context.h"
#include "engine/ipam_claim_api.h"
#include "log/log.h"
#include "plugin/cni_env.h"
#include "plugin/cni_result.h"
#include "store/pool_store.h"

namespace allot::plugin {

// How one ADD or DEL ended, for the node's metrics (allot-gc's relay keeps them).
struct CallReport {
    std::string command;  // "ADD", "DEL"
    std::string outcome;  // "ok", or "cni_<code>"
    std::string network;  // the network config's name
    std::chrono::microseconds took{0};
};

struct StoreHandle {
    std::unique_ptr<store::PoolStore> store;
    std::string poolNamespace;
    // IPAMClaims (allowPersistentIPs) on the store's connection; null: a network that asks for
    // them gets ordinary addresses, with a warning.
    std::unique_ptr<engine::IpamClaimApi> claims = nullptr;
    // Told how the call ended (best effort, never fails the call); null: nobody to tell.
    std::function<void(const CallReport&)> report = nullptr;
};

struct Deps {
    // Connects to the pool store for this configuration (kubeconfig, namespace).
    std::function<core::Result<StoreHandle>(const core::ValidatedConfig&,
                                            engine::Clock::time_point deadline)>
        makeStore;
    std::function<std::unique_ptr<engine::PoolLocker>(const core::ValidatedConfig&)> makeLocker;
    std::function<std::unique_ptr<engine::ReleaseJournal>(const core::ValidatedConfig&)>
        makeJournal;
    std::function<std::unique_ptr<engine::PoolCache>(const core::ValidatedConfig&)> makeCache;
    std::function<std::unique_ptr<engine::CommitQueue>(const core::ValidatedConfig&)> makeQueue;
    // Where ADDs leave their in-flight mark for allot-gc (node/add_marks.h); null: none.
    std::function<std::unique_ptr<engine::AddMarks>()> makeAddMarks;
    // CHECK inside the container: `ifName` in `netns` carries every address in `ips`.
    std::function<Result<void>(const std::string& netns, const std::string& ifName,
                               const std::vector<engine::IpResult>& ips)>
        checkInterface;
    std::function<std::string(const core::ValidatedConfig&, const cni::NetConf&)> nodeName;
    std::vector<std::string> flatFiles = cni::defaultFlatFiles();
    std::function<void(std::chrono::milliseconds)> sleep;  // backoff (tests: no-op)
    logging::Logger* log = nullptr;
};

struct Outcome {
    int exitCode = 0;
    std::string stdoutText;
    std::string stderrText;  // for a person at a terminal (answerWithoutStdin); never a log
    // Engine counters for tests and benchmarks.
    int conflicts = 0;
    int served = 0;
};

Outcome run(const EnvMap& env, std::string_view stdinText, Deps& deps);

// What the plugin answers before it reads stdin, for a person rather than a runtime (which
// passes no arguments and always sets CNI_COMMAND): `allot --version` (argv[1], checked before
// anything else) prints "allot <version> (revision <rev>)" on stdout; a call without
// CNI_COMMAND prints, as the reference plugins do (libcni's skel), "CNI allot plugin <version>
// (revision <rev>)" and the CNI versions it supports on stderr. Both exit 0. nullopt: a CNI
// call, for run(). The VERSION command's stdout stays its JSON alone.
std::optional<Outcome> answerWithoutStdin(const std::vector<std::string>& args, const EnvMap& env);

inline constexpr int kDelDeadlineMs = 10'000;  // DEL journals rather than block teardown
inline constexpr int kStatusTimeoutMs = 3'000;

}  // namespace allot::plugin
