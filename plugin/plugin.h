#pragma once
// The CNI entry point as a function: environment + stdin in, stdout text + exit code out.
// main.cpp wires in the real store, locks and journal; tests wire in the in-memory ones.

#include <functional>
#include <memory>
#include <string>

#include "log/log.h"
#include "plugin/claims.h"
#include "plugin/cni_env.h"
#include "plugin/ipam.h"

namespace allot::plugin {

struct StoreHandle {
    std::unique_ptr<store::PoolStore> store;
    std::string poolNamespace;
    // IPAMClaims (allowPersistentIPs) on the store's connection; null: a network that asks for
    // them gets ordinary addresses, with a warning.
    std::unique_ptr<ClaimApi> claims = nullptr;
};

struct Deps {
    // Connects to the pool store for this configuration (kubeconfig, namespace).
    std::function<Result<StoreHandle>(const core::ValidatedConfig&, Clock::time_point deadline)>
        makeStore;
    std::function<std::unique_ptr<PoolLocker>(const core::ValidatedConfig&)> makeLocker;
    std::function<std::unique_ptr<ReleaseJournal>(const core::ValidatedConfig&)> makeJournal;
    std::function<std::unique_ptr<PoolCache>(const core::ValidatedConfig&)> makeCache;
    std::function<std::unique_ptr<ClaimQueue>(const core::ValidatedConfig&)> makeQueue;
    // CHECK inside the container: `ifName` in `netns` carries every address in `ips`.
    std::function<Result<void>(const std::string& netns, const std::string& ifName,
                               const std::vector<IpResult>& ips)>
        checkInterface;
    std::function<std::string(const core::ValidatedConfig&, const cni::NetConf&)> nodeName;
    std::vector<std::string> flatFiles = cni::defaultFlatFiles();
    std::function<void(std::chrono::milliseconds)> sleep;  // backoff (tests: no-op)
    logging::Logger* log = nullptr;
};

struct Outcome {
    int exitCode = 0;
    std::string stdoutText;
    // Engine counters for tests and benchmarks.
    int conflicts = 0;
    int served = 0;
};

Outcome run(const EnvMap& env, std::string_view stdinText, Deps& deps);

inline constexpr int kDelDeadlineMs = 10'000;  // DEL journals rather than block teardown
inline constexpr int kStatusTimeoutMs = 3'000;

}  // namespace allot::plugin
