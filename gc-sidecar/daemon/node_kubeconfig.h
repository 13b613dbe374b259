#pragma once
// The kubeconfig the plugin uses on the node, written by allot-gc from its own
// ServiceAccount (token, CA, API server address), as Whereabouts' installer does. Written
// atomically with mode 0600, and again whenever the projected token rotates (or the file
// was changed or removed by someone else).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.h"

namespace allot::gc {

// The kubeconfig text, in JSON (which kubectl and client-go read, and the plugin parses far
// faster than YAML: k8s/kubeconfig.cpp): one cluster (server, CA data), one user (token), one
// context whose namespace is the pool namespace.
std::string renderNodeKubeconfig(const std::string& server, const std::string& caPem,
                                 const std::string& token, const std::string& ns);

// The `exp` claim (Unix seconds) of a JWT such as a ServiceAccount token; nullopt when the
// token is not a JWT or has none. Read, not verified: only to say when the plugin's fails.
std::optional<int64_t> jwtExpiry(const std::string& token);

// The plugin's tokens (TokenRequest): valid this long, renewed once half of it has passed.
// In seconds: std::chrono::hours(1) / 2 is hours(0) (an integer count), which renewed the
// token on every check (every 30 s, seen on real nodes).
constexpr std::chrono::seconds kPluginTokenLifetime{3600};

// Whether a plugin token fetched `age` ago is due for renewal.
inline bool pluginTokenDue(std::chrono::steady_clock::duration age) {
    return age >= kPluginTokenLifetime / 2;
}

class NodeKubeconfig {
  public:
    // Where the plugin's token comes from when it is not allot-gc's own (a TokenRequest for
    // the plugin's ServiceAccount). Called on every refresh: it caches and renews itself.
    using TokenSource = std::function<core::Result<std::string>()>;

    // `server` empty: from KUBERNETES_SERVICE_HOST/PORT (as in-cluster clients do).
    NodeKubeconfig(std::string path, std::string serviceAccountDir, std::string server,
                   std::string ns)
        : path_(std::move(path)),
          saDir_(std::move(serviceAccountDir)),
          server_(std::move(server)),
          ns_(std::move(ns)) {}

    // Rewrites the file when what it should hold differs from what it holds; true when it
    // wrote. Errors: InvalidConfig (missing token/CA/server), Internal (I/O).
    core::Result<bool> refresh();

    void setTokenSource(TokenSource s) { tokenSource_ = std::move(s); }
    // The expiry (jwtExpiry) of the token the last successful refresh put in the file.
    std::optional<int64_t> expiry() const { return expiry_; }

  private:
    std::string path_, saDir_, server_, ns_;
    TokenSource tokenSource_;
    std::optional<int64_t> expiry_;
};

}  // namespace allot::gc
