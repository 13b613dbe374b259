#pragma once
// The kubeconfig the plugin uses on the node, written by allot-gc from its own
// ServiceAccount (token, CA, API server address), as Whereabouts' installer does. Written
// atomically with mode 0600, and again whenever the projected token rotates (or the file
// was changed or removed by someone else).

#include <string>

#include "core/result.h"

namespace allot::gc {

// The kubeconfig text: one cluster (server, CA data), one user (token), one context whose
// namespace is the pool namespace.
std::string renderNodeKubeconfig(const std::string& server, const std::string& caPem,
                                 const std::string& token, const std::string& ns);

std::string base64Encode(const std::string& data);

class NodeKubeconfig {
  public:
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

  private:
    std::string path_, saDir_, server_, ns_;
};

}  // namespace allot::gc
