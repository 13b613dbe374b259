#include "k8s/exec_credential.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../temp_dir.h"
#include "fake_server.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"

using allot::core::Errc;
using allot::k8s::Client;
using allot::k8s::ExecConfig;
using allot::k8s::ExecCredential;
using allot::k8s::ExecTerminal;
using allot::k8s::InteractiveMode;
using allot::k8s::loadKubeconfig;
using allot::k8s::parseExecCredential;
using allot::test::FakeServer;
using allot::test::response;
using allot::test::TempDir;
using namespace std::chrono_literals;

namespace {

constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kV1beta1 = "client.authentication.k8s.io/v1beta1";

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A plugin as a shell script in `dir`: it records its args, env, KUBERNETES_EXEC_INFO and
// whether stdin is a terminal (else what it read there), counts its runs, and answers a token
// "tok-N" (N: its run) in the apiVersion KUBERNETES_EXEC_INFO names, with the expiry written in
// the file `expiry` when there is one.
std::string recordingPlugin(const TempDir& dir) {
    const std::string path = dir.write("plugin.sh", R"sh(#!/bin/sh
d=$(dirname "$0")
printf '%s\n' "$@" >"$d/args"
printf '%s' "$KUBERNETES_EXEC_INFO" >"$d/info"
printf '%s|%s' "$ALLOT_TEST_A" "$ALLOT_TEST_B" >"$d/env"
if [ -t 0 ]; then echo tty >"$d/stdin"; else cat >"$d/stdin"; fi
n=$(cat "$d/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" >"$d/count"
api=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed 's/.*"apiVersion":"\([^"]*\)".*/\1/')
e=$(cat "$d/expiry" 2>/dev/null)
[ -n "$e" ] && e=",\"expirationTimestamp\":\"$e\""
printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"tok-%s"%s}}\n' "$api" "$n" "$e"
)sh");
    ::chmod(path.c_str(), 0755);
    return path;
}

// A plugin that runs `body` (shell).
std::string scriptPlugin(const TempDir& dir, const std::string& name, const std::string& body) {
    const std::string path = dir.write(name, "#!/bin/sh\n" + body + "\n");
    ::chmod(path.c_str(), 0755);
    return path;
}

ExecConfig execOf(const std::string& command, const char* api = kV1) {
    ExecConfig cfg;
    cfg.command = command;
    cfg.apiVersion = api;
    cfg.interactiveMode = InteractiveMode::Never;
    return cfg;
}

int runs(const TempDir& dir) {
    return std::stoi("0" + slurp(dir.path / "count"));
}

// A pseudo-terminal's two ends: the test's stand-in for a user at a terminal.
struct Pty {
    int master = -1, slave = -1;
    Pty() {
        master = ::posix_openpt(O_RDWR | O_NOCTTY);
        REQUIRE(master >= 0);
        REQUIRE(::grantpt(master) == 0);
        REQUIRE(::unlockpt(master) == 0);
        slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
        REQUIRE(slave >= 0);
    }
    ~Pty() {
        ::close(slave);
        ::close(master);
    }
};

const ExecTerminal kNoTerminal{-1, -1};

}  // namespace

TEST_CASE("a v1 and a v1beta1 ExecCredential give their token, certificate and expiry") {
    auto v1 = parseExecCredential(
        R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
            "status":{"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
        kV1);
    REQUIRE(v1.ok());
    CHECK(v1->token == "abc");
    REQUIRE(v1->expiry);
    CHECK(allot::k8s::formatTime(*v1->expiry) == "2030-01-02T03:04:05Z");
    CHECK_FALSE(v1->expiredAt(*allot::k8s::parseTime("2030-01-02T03:04:04Z")));
    CHECK(v1->expiredAt(*allot::k8s::parseTime("2030-01-02T03:04:05Z")));

    // A plugin in Go may write its local offset; a certificate and key without a token.
    auto beta = parseExecCredential(
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",
            "status":{"clientCertificateData":"-----CERT-----","clientKeyData":"-----KEY-----",
                      "expirationTimestamp":"2030-01-02T05:34:05+02:30"}})",
        kV1beta1);
    REQUIRE(beta.ok());
    CHECK(beta->token.empty());
    CHECK(beta->clientCertData == "-----CERT-----");
    CHECK(beta->clientKeyData == "-----KEY-----");
    REQUIRE(beta->expiry);
    CHECK(allot::k8s::formatTime(*beta->expiry) == "2030-01-02T03:04:05Z");

    auto forever = parseExecCredential(
        R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}})",
        kV1);
    REQUIRE(forever.ok());
    CHECK_FALSE(forever->expiry);
    CHECK_FALSE(forever->expiredAt(std::chrono::system_clock::now() + 24h * 365 * 100));
}

TEST_CASE("an ExecCredential that is not what the kubeconfig asks for is refused, unquoted") {
    struct Case {
        const char* text;
        const char* says;
    };
    const Case cases[] = {
        {"Token: s3cret", "is not JSON"},
        {R"(["s3cret"])", "not a JSON object"},
        {R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"s3cret"}})",
         "answered apiVersion \"client.authentication.k8s.io/v1beta1\" where the kubeconfig asks "
         "for \"client.authentication.k8s.io/v1\""},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Secret","status":{"token":"s3cret"}})",
         "kind \"Secret\""},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
         "has no status"},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
         "neither a token nor a client certificate"},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"s3cret"}})",
         "clientCertificateData without clientKeyData"},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"s3cret","expirationTimestamp":"tomorrow"}})",
         "expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
        {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":7}})",
         "status.token is not a string"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        auto cred = parseExecCredential(c.text, kV1);
        REQUIRE_FALSE(cred.ok());
        CHECK(cred.code() == Errc::Decode);
        CHECK(has(cred.error().message, c.says));
        CHECK_FALSE(has(cred.error().message, "s3cret"));
    }
}

TEST_CASE("the plugin gets the kubeconfig's args and env, and the cluster when it asks for it") {
    TempDir dir;
    const std::string plugin = recordingPlugin(dir);
    // base64 of "-----CA-----".
    const std::string kubeconfig = dir.write("config", R"(clusters:
- name: c
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: LS0tLS1DQS0tLS0t
    tls-server-name: api.internal
    proxy-url: http://proxy.example:3128
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: allot, nested: {n: 1}}
    - name: other
      extension: {x: 1}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./plugin.sh
      args: [get-token, --cluster, "my cluster", 42]
      env:
      - {name: ALLOT_TEST_A, value: "a value"}
      - {name: ALLOT_TEST_B, value: "b"}
      provideClusterInfo: true
contexts:
- {name: x, context: {cluster: c, user: u}}
current-context: x
)");
    auto cfg = loadKubeconfig(kubeconfig);
    REQUIRE(cfg.ok());
    REQUIRE(cfg->exec);
    CHECK(cfg->exec->command == plugin);  // relative to the kubeconfig, as kubectl resolves it
    CHECK(cfg->exec->interactiveMode == InteractiveMode::IfAvailable);  // v1beta1's default
    auto cred = allot::k8s::runExecPlugin(*cfg->exec, 10s, kNoTerminal);
    REQUIRE_MESSAGE(cred.ok(), cred.error().message);
    CHECK(cred->token == "tok-1");
    CHECK(slurp(dir.path / "args") == "get-token\n--cluster\nmy cluster\n42\n");
    CHECK(slurp(dir.path / "env") == "a value|b");
    CHECK(slurp(dir.path / "stdin").empty());  // not interactive: /dev/null
    auto info = allot::json::parse(slurp(dir.path / "info"));
    REQUIRE(info.ok());
    CHECK(
        info->dump() ==
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",)"
        R"("spec":{"interactive":false,"cluster":{"server":"https://10.0.0.1:6443",)"
        R"("tls-server-name":"api.internal","certificate-authority-data":"LS0tLS1DQS0tLS0t",)"
        R"("proxy-url":"http://proxy.example:3128","config":{"audience":"allot","nested":{"n":1}}}}})");

    // Without provideClusterInfo the plugin learns nothing of the cluster.
    cfg->exec->provideClusterInfo = false;
    REQUIRE(allot::k8s::runExecPlugin(*cfg->exec, 10s, kNoTerminal).ok());
    CHECK(slurp(dir.path / "info") ==
          R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",)"
          R"("spec":{"interactive":false}})");
}

TEST_CASE("stdin goes to the plugin only when it may be interactive and stdin is a terminal") {
    TempDir dir;
    ExecConfig cfg = execOf(recordingPlugin(dir));
    Pty pty;
    const ExecTerminal atTerminal{pty.slave, -1};

    cfg.interactiveMode = InteractiveMode::IfAvailable;
    REQUIRE(allot::k8s::runExecPlugin(cfg, 10s, atTerminal).ok());
    CHECK(slurp(dir.path / "stdin") == "tty\n");
    CHECK(has(slurp(dir.path / "info"), R"("interactive":true)"));

    cfg.interactiveMode = InteractiveMode::Never;
    REQUIRE(allot::k8s::runExecPlugin(cfg, 10s, atTerminal).ok());
    CHECK(slurp(dir.path / "stdin").empty());
    CHECK(has(slurp(dir.path / "info"), R"("interactive":false)"));

    cfg.interactiveMode = InteractiveMode::Always;
    REQUIRE(allot::k8s::runExecPlugin(cfg, 10s, atTerminal).ok());
    CHECK(slurp(dir.path / "stdin") == "tty\n");

    // Always without a terminal: refused before the plugin runs.
    cfg.installHint = "see https://example.com/login";
    auto refused = allot::k8s::runExecPlugin(cfg, 10s, kNoTerminal);
    REQUIRE_FALSE(refused.ok());
    CHECK(has(refused.error().message, "exec plugin \"" + cfg.command + "\" needs a terminal"));
    CHECK(has(refused.error().message, "install hint: see https://example.com/login"));
    CHECK(runs(dir) == 3);
}

TEST_CASE("a failing plugin's error names its command, its stderr's end and the installHint") {
    TempDir dir;
    struct Case {
        std::string command;
        std::string says;
        Errc code = Errc::InvalidConfig;
        std::chrono::milliseconds timeout = 10s;
    };
    const std::string v1 =
        R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":)";
    const Case cases[] = {
        {"allot-no-such-plugin", "\"allot-no-such-plugin\" is not on PATH"},
        {dir.path.string() + "/missing.sh", "missing.sh\" does not exist"},
        {scriptPlugin(dir, "fails.sh",
                      "echo 'step one' >&2; echo 'login failed: bad password' >&2; exit 3"),
         "exited with status 3; its stderr ended: step one login failed: bad password"},
        {scriptPlugin(dir, "garbage.sh", "echo 'Token: s3cret'"),
         "gave no usable credential: its output is not JSON"},
        {scriptPlugin(
             dir, "beta.sh",
             "echo '" +
                 std::string(
                     R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"s3cret"}})") +
                 "'"),
         "answered apiVersion \"client.authentication.k8s.io/v1beta1\""},
        {scriptPlugin(dir, "empty.sh", "echo '" + v1 + "{}}'"), "neither a token nor"},
        {scriptPlugin(dir, "killed.sh", "kill -9 $$"), "was killed by signal 9"},
        {scriptPlugin(dir, "slow.sh", "echo waiting >&2; exec sleep 5"),
         "did not answer within 300 ms and was killed; its stderr ended: waiting", Errc::Transient,
         300ms},
    };
    for (const Case& c : cases) {
        CAPTURE(c.command);
        ExecConfig cfg = execOf(c.command);
        cfg.installHint = "Install it with: apt-get install allot-login";
        auto cred = allot::k8s::runExecPlugin(cfg, c.timeout, kNoTerminal);
        REQUIRE_FALSE(cred.ok());
        CHECK(cred.code() == c.code);
        const std::string& m = cred.error().message;
        CHECK(has(m, "exec plugin \"" + c.command + "\""));
        CHECK(has(m, c.says));
        CHECK(has(m, "; install hint: Install it with: apt-get install allot-login"));
        CHECK_FALSE(has(m, "s3cret"));
    }
    // Without an installHint the message ends with what went wrong.
    auto plain = allot::k8s::runExecPlugin(execOf("allot-no-such-plugin"), 1s, kNoTerminal);
    REQUIRE_FALSE(plain.ok());
    CHECK(plain.error().message == "exec plugin \"allot-no-such-plugin\" is not on PATH");
}

TEST_CASE("the credential is kept until its expirationTimestamp, and a refused one is replaced") {
    TempDir dir;
    const ExecConfig cfg = execOf(recordingPlugin(dir));
    auto first = allot::k8s::execCredential(cfg, 10s, nullptr, kNoTerminal);
    REQUIRE(first.ok());
    auto again = allot::k8s::execCredential(cfg, 10s, nullptr, kNoTerminal);
    REQUIRE(again.ok());
    CHECK(again->token == "tok-1");
    CHECK(runs(dir) == 1);

    // The server refused tok-1: the plugin runs again, once, whoever asks next.
    auto renewed = allot::k8s::execCredential(cfg, 10s, &*first, kNoTerminal);
    REQUIRE(renewed.ok());
    CHECK(renewed->token == "tok-2");
    auto stale = allot::k8s::execCredential(cfg, 10s, &*first, kNoTerminal);
    REQUIRE(stale.ok());
    CHECK(stale->token == "tok-2");  // tok-1 is no longer the one kept
    CHECK(runs(dir) == 2);

    // An expired credential is never handed out.
    TempDir other;
    const ExecConfig expiring = execOf(recordingPlugin(other));
    other.write("expiry", "2001-01-01T00:00:00Z");
    CHECK(allot::k8s::execCredential(expiring, 10s, nullptr, kNoTerminal)->token == "tok-1");
    CHECK(allot::k8s::execCredential(expiring, 10s, nullptr, kNoTerminal)->token == "tok-2");
    other.write("expiry", "2999-01-01T00:00:00Z");
    CHECK(allot::k8s::execCredential(expiring, 10s, nullptr, kNoTerminal)->token == "tok-3");
    CHECK(allot::k8s::execCredential(expiring, 10s, nullptr, kNoTerminal)->token == "tok-3");
    CHECK(runs(other) == 3);
}

namespace {

std::string execKubeconfig(const TempDir& dir, const std::string& server,
                           const std::string& execYaml) {
    return dir.write("config", "clusters:\n- {name: c, cluster: {server: '" + server +
                                   "'}}\nusers:\n- name: u\n  user:\n    exec:\n" + execYaml +
                                   "contexts:\n- {name: x, context: {cluster: c, user: u}}\n"
                                   "current-context: x\n");
}

// A client of that kubeconfig.
Client execClient(const TempDir& dir, const std::string& server, const std::string& execYaml) {
    auto cfg = loadKubeconfig(execKubeconfig(dir, server, execYaml));
    REQUIRE(cfg.ok());
    auto client = Client::fromConfig(*cfg);
    REQUIRE(client.ok());
    return std::move(*client);
}

}  // namespace

TEST_CASE("a client sends the plugin's token and runs the plugin again after a 401") {
    TempDir dir;
    recordingPlugin(dir);
    FakeServer server({{response(401, R"({"kind":"Status","reason":"Unauthorized"})")},
                       {response(200, "{}")},
                       {response(200, "{}")}});
    const std::string exec =
        "      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: ./plugin.sh\n"
        "      interactiveMode: Never\n";
    Client client = execClient(dir, server.url(), exec);
    CHECK(runs(dir) == 0);  // not before the first request
    auto first = client.get("/api/v1/namespaces");
    REQUIRE_FALSE(first.ok());
    CHECK(first.code() == Errc::Unauthorized);
    REQUIRE(client.get("/api/v1/namespaces").ok());
    // A second client of the process takes the credential kept.
    REQUIRE(execClient(dir, server.url(), exec).get("/api/v1/namespaces").ok());
    CHECK(runs(dir) == 2);
    const auto& reqs = server.requests();
    REQUIRE(reqs.size() == 3);
    CHECK(has(reqs[0], "Authorization: Bearer tok-1\r\n"));
    CHECK(has(reqs[1], "Authorization: Bearer tok-2\r\n"));
    CHECK(has(reqs[2], "Authorization: Bearer tok-2\r\n"));
}

TEST_CASE("a request whose plugin fails is not sent and says who, which plugin and the hint") {
    TempDir dir;
    scriptPlugin(dir, "fail.sh", "echo 'no cloud session: run cloud login' >&2; exit 1");
    Client client = execClient(dir, "http://127.0.0.1:1",
                               "      apiVersion: client.authentication.k8s.io/v1\n"
                               "      command: ./fail.sh\n"
                               "      interactiveMode: IfAvailable\n"
                               "      installHint: |\n"
                               "        cloud-cli is needed: see its docs\n");
    auto r = client.get("/api/v1/namespaces");
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::InvalidConfig);
    CHECK(r.error().message == "user \"u\" of context \"x\": exec plugin \"" +
                                   (dir.path / "fail.sh").string() +
                                   "\" exited with status 1; its stderr ended: no cloud session: "
                                   "run cloud login; install hint: cloud-cli is needed: see its "
                                   "docs");
}
