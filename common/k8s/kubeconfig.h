#pragma once
// Where the API server is and who we are: from a kubeconfig file or from the in-cluster
// ServiceAccount. kubeconfig.cpp is the only user of yaml-cpp (hence yamlDocuments here too).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "json/json.h"
#include "k8s/exec_credential.h"

namespace allot::k8s {

// Base64 with optional padding, whitespace skipped; `url`: the URL-safe alphabet ('-', '_') of
// JWTs. nullopt on any other character or a malformed end.
std::optional<std::string> base64Decode(std::string_view in, bool url = false);
// Standard base64 with padding.
std::string base64Encode(std::string_view in);

struct ClusterConfig {
    std::string server;  // https://host:port[/prefix], no trailing slash
    std::string caData;  // PEM (already base64-decoded from *-data fields)
    std::string caFile;  // absolute path
    bool insecureSkipTlsVerify = false;
    std::string clientCertData, clientCertFile;
    std::string clientKeyData, clientKeyFile;
    std::string token;
    std::string tokenFile;   // read (again) by every Client construction; wins over token
    std::string namespace_;  // the context's namespace; empty when it names none
    // The user's exec plugin (exec_credential.h), when it has no token nor certificate: the
    // client asks it for the token or certificate before its first request.
    std::optional<ExecConfig> exec;
    // Who we are, for error messages only: "user <name> of context <ctx>" or
    // "serviceaccount token from <file>". Never contains secrets.
    std::string identity;
};

// Loads `context` (default: current-context) from the kubeconfig at `path`. *-data fields are
// base64-decoded; relative file paths are resolved against the kubeconfig's directory.
// A user's exec plugin is read, not run (a token or certificate beside it wins, as in kubectl).
// Errors: InvalidConfig naming the path and the missing or malformed key (unreadable file, bad
// YAML, unknown context/cluster/user, no server, bad base64, an exec plugin without command or
// with an apiVersion other than client.authentication.k8s.io/v1 or v1beta1, auth-provider and
// username users: the message says how to move to an exec plugin).
core::Result<ClusterConfig> loadKubeconfig(const std::string& path,
                                           const std::string& context = "");

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount files
// (token, ca.crt, namespace) in `serviceAccountDir`. Errors: InvalidConfig when the
// environment variables or the token file are missing.
core::Result<ClusterConfig> inClusterConfig(
    const std::string& serviceAccountDir = kServiceAccountDir);

// Reads a whole small file (tokens, certificates). Errors: InvalidConfig naming the file.
core::Result<std::string> readSmallFile(const std::string& path, const std::string& what);

// Every document of a YAML (or JSON) text, as JSON values: kubectl-allot lint reads
// NetworkAttachmentDefinition manifests with it. Quoted scalars are strings; plain ones are
// null, booleans, numbers or strings as YAML 1.2's core schema reads them. At most
// `maxBytes` of input. Errors: Decode with the line and what is wrong.
core::Result<std::vector<json::Value>> yamlDocuments(std::string_view text,
                                                     size_t maxBytes = 4u << 20);

}  // namespace allot::k8s
