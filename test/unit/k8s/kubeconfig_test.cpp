#include "k8s/kubeconfig.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../temp_dir.h"
#include "k8s/client.h"

namespace fs = std::filesystem;
using allot::core::Errc;
using allot::k8s::ClusterConfig;
using allot::k8s::inClusterConfig;
using allot::k8s::loadKubeconfig;

namespace {

using allot::test::TempDir;

// Sets an environment variable for the scope of a test and restores it afterwards.
struct EnvVar {
    std::string name;
    std::optional<std::string> old;
    EnvVar(std::string n, const char* value) : name(std::move(n)) {
        if (const char* v = getenv(name.c_str())) old = v;
        if (value)
            setenv(name.c_str(), value, 1);
        else
            unsetenv(name.c_str());
    }
    ~EnvVar() {
        if (old)
            setenv(name.c_str(), old->c_str(), 1);
        else
            unsetenv(name.c_str());
    }
};

// base64 of "-----CA-----", "-----CERT-----" and "-----KEY-----".
constexpr const char* kCaB64 = "LS0tLS1DQS0tLS0t";
constexpr const char* kCertB64 = "LS0tLS1DRVJULS0tLS0=";
constexpr const char* kKeyB64 = "LS0tLS1LRVktLS0tLQ==";

std::string inlineKubeconfig() {
    return std::string(R"(apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )") +
           kCaB64 + R"(
- name: staging
  cluster:
    server: https://staging.example:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    client-certificate-data: )" +
           kCertB64 + R"(
    client-key-data: )" +
           kKeyB64 + R"(
- name: robot
  user:
    token: abc.def.ghi
contexts:
- name: admin@prod
  context:
    cluster: prod
    user: admin
    namespace: networking
- name: robot@staging
  context:
    cluster: staging
    user: robot
current-context: admin@prod
)";
}

}  // namespace

TEST_CASE("a kubeconfig with inline data yields decoded PEM and the current context's namespace") {
    TempDir dir;
    auto cfg = loadKubeconfig(dir.write("config", inlineKubeconfig()));
    REQUIRE(cfg.ok());
    CHECK(cfg->server == "https://10.0.0.1:6443");
    CHECK(cfg->caData == "-----CA-----");
    CHECK(cfg->clientCertData == "-----CERT-----");
    CHECK(cfg->clientKeyData == "-----KEY-----");
    CHECK(cfg->namespace_ == "networking");
    CHECK_FALSE(cfg->insecureSkipTlsVerify);
    CHECK(cfg->identity == "user \"admin\" of context \"admin@prod\"");
}

TEST_CASE(
    "a JSON kubeconfig loads exactly as its YAML form; JSON that is not strict goes to YAML") {
    TempDir dir;
    const std::string json = std::string(R"({"apiVersion": "v1", "kind": "Config",
 "clusters": [{"name": "prod", "cluster": {"server": "https://10.0.0.1:6443/",
   "certificate-authority-data": ")") +
                             kCaB64 + R"("}},
  {"name": "staging", "cluster": {"server": "https://staging.example:6443", "insecure-skip-tls-verify": true}}],
 "users": [{"name": "admin", "user": {"client-certificate-data": ")" +
                             kCertB64 + R"(", "client-key-data": ")" + kKeyB64 + R"("}},
  {"name": "robot", "user": {"token": "abc.def.ghi"}}],
 "contexts": [{"name": "admin@prod", "context": {"cluster": "prod", "user": "admin", "namespace": "networking"}},
  {"name": "robot@staging", "context": {"cluster": "staging", "user": "robot", "namespace": null}}],
 "current-context": "admin@prod", "preferences": {}, "extensions": [1, 2.5, false]})";
    const auto viaJson = dir.write("config.json", json);
    const auto viaYaml = dir.write("config.yaml", inlineKubeconfig());
    for (const char* ctx : {"", "robot@staging"}) {
        auto a = loadKubeconfig(viaJson, ctx);
        auto b = loadKubeconfig(viaYaml, ctx);
        REQUIRE(a.ok());
        REQUIRE(b.ok());
        CHECK(a->server == b->server);
        CHECK(a->caData == b->caData);
        CHECK(a->clientCertData == b->clientCertData);
        CHECK(a->clientKeyData == b->clientKeyData);
        CHECK(a->token == b->token);
        CHECK(a->insecureSkipTlsVerify == b->insecureSkipTlsVerify);
        CHECK(a->namespace_ == b->namespace_);
        CHECK(a->identity == b->identity);
    }
    // YAML flow style (unquoted keys) is not JSON: yaml-cpp reads it.
    auto flow = loadKubeconfig(
        dir.write("flow", R"({clusters: [{name: c, cluster: {server: "https://f:1"}}],
 users: [{name: u, user: {token: t}}], contexts: [{name: x, context: {cluster: c, user: u}}],
 current-context: x})"));
    REQUIRE(flow.ok());
    CHECK(flow->server == "https://f:1");
    // A JSON kubeconfig with a wrong type is still an error naming the key.
    auto bad = loadKubeconfig(
        dir.write("bad.json", R"({"clusters": [{"name": "c", "cluster": {"server": ["x"]}}],
 "users": [], "contexts": [{"name": "x", "context": {"cluster": "c"}}], "current-context": "x"})"));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("server") != std::string::npos);
}

TEST_CASE("an explicit context overrides current-context and picks its cluster and token") {
    TempDir dir;
    auto cfg = loadKubeconfig(dir.write("config", inlineKubeconfig()), "robot@staging");
    REQUIRE(cfg.ok());
    CHECK(cfg->server == "https://staging.example:6443");
    CHECK(cfg->insecureSkipTlsVerify);
    CHECK(cfg->token == "abc.def.ghi");
    CHECK(cfg->clientCertData.empty());
    CHECK(cfg->namespace_.empty());
}

TEST_CASE("relative certificate and token file paths resolve against the kubeconfig directory") {
    TempDir dir;
    dir.write("pki/ca.crt", "ca");
    dir.write("pki/client.crt", "cert");
    dir.write("pki/client.key", "key");
    dir.write("token", "file-token\n");
    const auto path = dir.write("kube/config", R"(
clusters:
- name: c
  cluster:
    server: https://k8s:443
    certificate-authority: ../pki/ca.crt
users:
- name: u
  user:
    client-certificate: ../pki/client.crt
    client-key: /PLACEHOLDER/pki/client.key
    tokenFile: ../token
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
    // An absolute path stays as it is.
    std::string text;
    {
        std::ifstream in(path);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto at = text.find("/PLACEHOLDER");
    text.replace(at, 12, dir.path.string());
    dir.write("kube/config", text);

    auto cfg = loadKubeconfig(path);
    REQUIRE(cfg.ok());
    CHECK(cfg->caFile == (dir.path / "pki/ca.crt").string());
    CHECK(cfg->clientCertFile == (dir.path / "pki/client.crt").string());
    CHECK(cfg->clientKeyFile == (dir.path / "pki/client.key").string());
    CHECK(cfg->tokenFile == (dir.path / "token").string());
}

TEST_CASE("a referenced file that does not exist is an error naming the key and the path") {
    TempDir dir;
    const auto path = dir.write("config", R"(
clusters: [{name: c, cluster: {server: "https://k:1", certificate-authority: missing-ca.crt}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
    auto cfg = loadKubeconfig(path);
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.code() == Errc::InvalidConfig);
    CHECK(cfg.error().message.find("certificate-authority") != std::string::npos);
    CHECK(cfg.error().message.find("missing-ca.crt") != std::string::npos);
    CHECK(cfg.error().message.find(path) != std::string::npos);
}

TEST_CASE("missing pieces of a kubeconfig are errors naming the missing key") {
    TempDir dir;
    struct Case {
        const char* yaml;
        const char* context;
        const char* mentions;
    };
    const Case cases[] = {
        {"clusters: []\n", "", "current-context"},
        {"current-context: nope\ncontexts: []\n", "", "context \"nope\" not found"},
        {"contexts: [{name: x, context: {user: u}}]\n", "x", "cluster is not set"},
        {"contexts: [{name: x, context: {cluster: c}}]\n", "x", "cluster \"c\""},
        {"clusters: [{name: c, cluster: {}}]\ncontexts: [{name: x, context: {cluster: c}}]\n", "x",
         "server is not set"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: ghost}}]\n",
         "x", "user \"ghost\""},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {client-certificate-data: LS0t}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "client-key"},
        {"clusters: [{name: c, cluster: {server: 'https://k', certificate-authority-data: "
         "'%%%'}}]\n"
         "contexts: [{name: x, context: {cluster: c}}]\n",
         "x", "certificate-authority-data is not valid base64"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {command: aws}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "user \"u\": exec: apiVersion \"\" is not client.authentication.k8s.io/v1 or"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
         "command: aws}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "v1alpha1 was removed"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
         "command: aws}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "exec: interactiveMode must be set for client.authentication.k8s.io/v1"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
         "command: aws, interactiveMode: Sometimes}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "interactiveMode \"Sometimes\" is not one of Never, IfAvailable or Always"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "exec: command is not set"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
         "command: aws, env: [{value: x}]}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "exec: env[0]: name must be set"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
         "command: aws}, auth-provider: {name: oidc}}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "exec and auth-provider cannot both be set"},
        {"clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
         "users: [{name: u, user: {username: admin, password: s3cret}}]\n"
         "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "x", "username (basic) credentials are not supported"},
        {"clusters: [{name: c, cluster: {server: 'https://k', insecure-skip-tls-verify: maybe}}]\n"
         "contexts: [{name: x, context: {cluster: c}}]\n",
         "x", "insecure-skip-tls-verify must be true or false"},
        {"clusters: [{name: c, cluster: {server: {nested: 1}}}]\n"
         "contexts: [{name: x, context: {cluster: c}}]\n",
         "x", "server must be a string"},
        {"clusters: {c: 1}\ncontexts: [{name: x, context: {cluster: c}}]\n", "x",
         "clusters must be a list"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.yaml);
        auto cfg = loadKubeconfig(dir.write("config", c.yaml), c.context);
        REQUIRE_FALSE(cfg.ok());
        CHECK(cfg.code() == Errc::InvalidConfig);
        CHECK(cfg.error().message.find(c.mentions) != std::string::npos);
        CHECK(cfg.error().message.find(dir.path.string()) != std::string::npos);
    }
}

TEST_CASE("an auth-provider user is refused with the exec plugin to move to") {
    TempDir dir;
    const std::pair<const char*, const char*> providers[] = {
        {"gcp", "gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin"},
        {"azure", "kubelogin (kubelogin convert-kubeconfig -l azurecli"},
        {"oidc", "kubelogin (kubectl oidc-login setup"},
        {"acme", "the provider's exec plugin"}};
    for (const auto& [name, advice] : providers) {
        CAPTURE(name);
        auto cfg = loadKubeconfig(dir.write(
            "config", std::string("clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
                                  "users: [{name: u, user: {auth-provider: {name: ") +
                          name +
                          ", config: {access-token: s3cret}}}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n"));
        REQUIRE_FALSE(cfg.ok());
        CHECK(cfg.code() == Errc::InvalidConfig);
        const std::string& m = cfg.error().message;
        CHECK(m.find(std::string("user \"u\": auth-provider \"") + name +
                     "\" credentials are not supported") != std::string::npos);
        CHECK(m.find("move the user to an exec plugin, " + std::string(advice)) !=
              std::string::npos);
        CHECK(m.find("s3cret") == std::string::npos);
    }
}

TEST_CASE("an exec user is read, not run; a token or certificate beside it wins, as in kubectl") {
    TempDir dir;
    const std::string head =
        "clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";
    auto cfg = loadKubeconfig(dir.write(
        "config", head + "users: [{name: u, user: {exec: {apiVersion: "
                         "client.authentication.k8s.io/v1, command: aws, args: [eks, get-token], "
                         "interactiveMode: Always, installHint: '  get the aws CLI  '}}}]\n"));
    REQUIRE(cfg.ok());
    REQUIRE(cfg->exec);
    CHECK(cfg->exec->command == "aws");  // no '/': looked up on PATH when it runs
    CHECK(cfg->exec->args == std::vector<std::string>{"eks", "get-token"});
    CHECK(cfg->exec->interactiveMode == allot::k8s::InteractiveMode::Always);
    CHECK(cfg->exec->installHint == "get the aws CLI");
    CHECK_FALSE(cfg->exec->provideClusterInfo);
    CHECK(cfg->exec->cluster.server == "https://k");
    CHECK(cfg->token.empty());

    cfg = loadKubeconfig(dir.write(
        "config", head + "users: [{name: u, user: {token: abc, exec: {command: aws}}}]\n"));
    REQUIRE(cfg.ok());
    CHECK_FALSE(cfg->exec);
    CHECK(cfg->token == "abc");

    // A command with a '/' is a path: relative to the kubeconfig's directory.
    cfg = loadKubeconfig(dir.write(
        "sub/config", head + "users: [{name: u, user: {exec: {apiVersion: "
                             "client.authentication.k8s.io/v1beta1, command: bin/login}}}]\n"));
    REQUIRE(cfg.ok());
    REQUIRE(cfg->exec);
    CHECK(cfg->exec->command == (dir.path / "sub/bin/login").string());
    // ... and stays a path when the kubeconfig is named relative to the working directory.
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.path);
    cfg = loadKubeconfig("sub/config");
    std::filesystem::current_path(cwd);
    REQUIRE(cfg.ok());
    CHECK(cfg->exec->command == (std::filesystem::canonical(dir.path) / "sub/bin/login").string());
}

TEST_CASE("garbage instead of YAML is an InvalidConfig error, not a crash") {
    TempDir dir;
    for (const char* text :
         {"clusters: [unclosed\n  - {{{", "\t\t: : :\n[", "just a string", "- a\n- list\n", ""}) {
        CAPTURE(text);
        auto cfg = loadKubeconfig(dir.write("config", text));
        REQUIRE_FALSE(cfg.ok());
        CHECK(cfg.code() == Errc::InvalidConfig);
    }
}

TEST_CASE("a YAML kubeconfig whose aliases expand past a million values is refused") {
    TempDir dir;
    // Each level names the one before ten times: 10^7 values from a few hundred bytes.
    std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 7; ++i) {
        const std::string prev = "*l" + std::to_string(i - 1);
        text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
        for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
        text += "]\n";
    }
    auto cfg = loadKubeconfig(dir.write("config", text));
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.code() == Errc::InvalidConfig);
    CHECK(cfg.error().message.find("aliases included") != std::string::npos);
}

TEST_CASE("an unreadable kubeconfig path is an error naming the path") {
    auto cfg = loadKubeconfig("/nonexistent/allot/kubeconfig");
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.code() == Errc::InvalidConfig);
    CHECK(cfg.error().message.find("/nonexistent/allot/kubeconfig") != std::string::npos);
}

TEST_CASE("secrets from the kubeconfig never appear in its error messages") {
    TempDir dir;
    auto cfg = loadKubeconfig(dir.write("config", R"(
clusters: [{name: c, cluster: {server: 'https://k'}}]
users: [{name: u, user: {token: s3cr3t-t0ken, client-key-data: 'bm90LWEta2V5'}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)"));
    REQUIRE_FALSE(cfg.ok());  // a key without a certificate
    CHECK(cfg.error().message.find("s3cr3t") == std::string::npos);
    CHECK(cfg.error().message.find("bm90") == std::string::npos);
    CHECK(cfg.error().message.find("not-a-key") == std::string::npos);
}

TEST_CASE("the in-cluster config uses the service environment and the serviceaccount files") {
    TempDir dir;
    dir.write("token", "sa-token\n");
    const auto ca = dir.write("ca.crt", "ca");
    dir.write("namespace", "kube-system\n");
    EnvVar host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    EnvVar port("KUBERNETES_SERVICE_PORT", "443");
    auto cfg = inClusterConfig(dir.path.string());
    REQUIRE(cfg.ok());
    CHECK(cfg->server == "https://10.96.0.1:443");
    CHECK(cfg->token == "sa-token");
    CHECK(cfg->tokenFile == (dir.path / "token").string());
    CHECK(cfg->caFile == ca);
    CHECK(cfg->namespace_ == "kube-system");
    CHECK(cfg->identity.find("serviceaccount token from") == 0);
}

TEST_CASE("an IPv6 in-cluster service host is bracketed in the server URL") {
    TempDir dir;
    dir.write("token", "t");
    EnvVar host("KUBERNETES_SERVICE_HOST", "fd00::1");
    EnvVar port("KUBERNETES_SERVICE_PORT", "6443");
    auto cfg = inClusterConfig(dir.path.string());
    REQUIRE(cfg.ok());
    CHECK(cfg->server == "https://[fd00::1]:6443");
    CHECK(cfg->caFile.empty());
    CHECK(cfg->namespace_.empty());
}

TEST_CASE("the in-cluster config fails clearly outside a cluster or without a token") {
    TempDir dir;
    {
        EnvVar host("KUBERNETES_SERVICE_HOST", nullptr);
        auto cfg = inClusterConfig(dir.path.string());
        REQUIRE_FALSE(cfg.ok());
        CHECK(cfg.code() == Errc::InvalidConfig);
        CHECK(cfg.error().message.find("KUBERNETES_SERVICE_HOST") != std::string::npos);
    }
    EnvVar host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    EnvVar port("KUBERNETES_SERVICE_PORT", "443");
    auto cfg = inClusterConfig(dir.path.string());
    REQUIRE_FALSE(cfg.ok());
    CHECK(cfg.code() == Errc::InvalidConfig);
    CHECK(cfg.error().message.find((dir.path / "token").string()) != std::string::npos);
}

TEST_CASE("every client construction reads the token file again") {
    TempDir dir;
    ClusterConfig cfg;
    cfg.server = "https://127.0.0.1:1";
    cfg.token = "stale-inline-token";
    cfg.tokenFile = dir.write("token", "first\n");
    auto a = allot::k8s::Client::fromConfig(cfg);
    REQUIRE(a.ok());
    CHECK(a->config().token == "first");
    dir.write("token", "second");
    auto b = allot::k8s::Client::fromConfig(cfg);
    REQUIRE(b.ok());
    CHECK(b->config().token == "second");

    fs::remove(cfg.tokenFile);
    auto c = allot::k8s::Client::fromConfig(cfg);
    REQUIRE_FALSE(c.ok());
    CHECK(c.code() == Errc::InvalidConfig);
}
