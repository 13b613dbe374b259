#pragma once
// Credentials from a kubeconfig's exec plugin, as kubectl gets them (client-go's credential
// plugins): the plugin is run with the kubeconfig's args and env plus KUBERNETES_EXEC_INFO, and
// prints an ExecCredential (client.authentication.k8s.io/v1 or v1beta1) holding a bearer token
// or a client certificate and key, valid until its expirationTimestamp. The credential is kept
// for the process's life until then, so a process runs the plugin once, not once per client.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "json/json.h"
#include "k8s_api/timestamp.h"

namespace allot::k8s {

inline constexpr std::string_view kExecApiV1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view kExecApiV1beta1 = "client.authentication.k8s.io/v1beta1";
// The cluster extension handed to the plugin as spec.cluster.config.
inline constexpr std::string_view kExecExtension = "client.authentication.k8s.io/exec";

// Whether the plugin may talk to the user: Always fails without a terminal on stdin; stdin is
// passed to the plugin only when it may, and is a terminal.
enum class InteractiveMode { Never, IfAvailable, Always };

// What the plugin is told of the cluster (spec.cluster) when provideClusterInfo is set.
struct ExecClusterInfo {
    std::string server;
    std::string tlsServerName;
    std::string caData;  // PEM: certificate-authority-data, or the certificate-authority file's
    bool insecureSkipTlsVerify = false;
    std::string proxyUrl;
    json::Value config;  // the cluster's extension kExecExtension; null when it has none
};

struct ExecConfig {
    std::string command;  // found on PATH unless it has a '/' (then resolved by the kubeconfig)
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;  // added to this process's
    std::string apiVersion;                                // kExecApiV1 or kExecApiV1beta1
    std::string installHint;                               // shown when the plugin fails
    InteractiveMode interactiveMode = InteractiveMode::IfAvailable;
    bool provideClusterInfo = false;
    ExecClusterInfo cluster;
};

struct ExecCredential {
    std::string token;                          // empty when the plugin gave a certificate only
    std::string clientCertData, clientKeyData;  // PEM; both or neither
    std::optional<SystemTime> expiry;           // none: valid for the process's life

    bool expiredAt(SystemTime now) const { return expiry && now >= *expiry; }
    friend bool operator==(const ExecCredential&, const ExecCredential&) = default;
};

// The plugin's stdout read as an ExecCredential of `apiVersion`. Errors: Decode saying what is
// wrong (not JSON, another apiVersion or kind, no status, neither a token nor a certificate and
// key, a certificate without its key, a malformed expirationTimestamp). Never quotes the output.
core::Result<ExecCredential> parseExecCredential(std::string_view text,
                                                 std::string_view apiVersion);

// KUBERNETES_EXEC_INFO's value: an ExecCredential with spec.interactive, and spec.cluster when
// the config provides cluster information.
std::string execInfo(const ExecConfig& cfg, bool interactive);

// The terminal the plugin may use: stdin (passed through when interactive) and where its
// stderr goes as it writes (prompts, a login URL), as kubectl lets it; -1: nowhere.
struct ExecTerminal {
    int stdinFd = 0;
    int stderrFd = 2;
};

// Runs the plugin once, for at most `timeout`. Errors, each naming the plugin's command and
// ending with its installHint when it has one: InvalidConfig when it is not found, cannot run,
// exits non-zero or is killed (with the tail of its stderr), prints what parseExecCredential
// refuses, or interactiveMode is Always without a terminal on stdin; Transient when it runs
// past the timeout (it is killed).
core::Result<ExecCredential> runExecPlugin(const ExecConfig& cfg, std::chrono::milliseconds timeout,
                                           const ExecTerminal& term = {});

// The credential for `cfg`: this process's copy while it has not expired, else the plugin's
// answer (runExecPlugin), which is kept. `rejected`: a credential the API server refused (401);
// when it is the copy kept, the plugin runs again. Thread-safe: one plugin run at a time.
core::Result<ExecCredential> execCredential(const ExecConfig& cfg,
                                            std::chrono::milliseconds timeout,
                                            const ExecCredential* rejected = nullptr,
                                            const ExecTerminal& term = {});

}  // namespace allot::k8s
