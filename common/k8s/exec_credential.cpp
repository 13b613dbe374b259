#include "k8s/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "k8s/kubeconfig.h"
#include "sys/fd.h"

extern char** environ;

namespace allot::k8s {

using core::Errc;
using core::makeError;
using core::Result;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxStdout = 1u << 20;  // a token and a certificate chain fit many times
constexpr size_t kStderrTail = 512;

std::string quoted(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

// A UTC time without its "Z"; past 2200 as 2200: the clock's nanoseconds end in 2262, and a
// credential valid for that long is valid for good.
std::optional<SystemTime> parseUtc(std::string_view s) {
    std::string text = std::string(s) + "Z";
    if (text.size() < 4 || text.compare(0, 4, "2200") < 0) return parseTime(text);
    text.replace(0, 4, "2000");  // its form checked without overflowing the clock
    if (!parseTime(text)) return std::nullopt;
    return parseTime("2200-01-01T00:00:00Z");
}

// An RFC 3339 time, as Go's time.Time reads it: "Z" or a numeric offset ("+05:30").
std::optional<SystemTime> parseRfc3339(std::string_view s) {
    if (!s.empty() && (s.back() == 'Z' || s.back() == 'z'))
        return parseUtc(s.substr(0, s.size() - 1));
    if (s.size() < 25) return std::nullopt;
    const std::string_view off = s.substr(s.size() - 6);
    auto digit = [&](size_t i) { return off[i] >= '0' && off[i] <= '9' ? off[i] - '0' : -100; };
    const int hours = digit(1) * 10 + digit(2), minutes = digit(4) * 10 + digit(5);
    if ((off[0] != '+' && off[0] != '-') || off[3] != ':' || hours < 0 || minutes < 0)
        return std::nullopt;
    auto t = parseUtc(s.substr(0, s.size() - 6));
    if (!t) return std::nullopt;
    const std::chrono::minutes shift(hours * 60 + minutes);
    return off[0] == '+' ? *t - shift : *t + shift;
}

Result<std::string> statusString(const json::Value& status, const char* key) {
    auto v = status.getString(key);
    if (!v) return makeError(Errc::Decode, "status." + std::string(key) + " is not a string");
    return v->value_or("");
}

Result<void> checkHeader(const json::Value& v, std::string_view apiVersion) {
    const std::string got = json::stringAt(v, {"apiVersion"});
    if (got != apiVersion)
        return makeError(Errc::Decode, "it answered apiVersion " + quoted(got) +
                                           " where the kubeconfig asks for " + quoted(apiVersion));
    if (const std::string kind = json::stringAt(v, {"kind"}); kind != "ExecCredential")
        return makeError(Errc::Decode, "it answered kind " + quoted(kind) + ", not ExecCredential");
    return core::success();
}

}  // namespace

Result<ExecCredential> parseExecCredential(std::string_view text, std::string_view apiVersion) {
    auto v = json::parse(text);
    if (!v) return makeError(Errc::Decode, "its output is not JSON: " + v.error().message);
    if (!v->isObject()) return makeError(Errc::Decode, "its output is not a JSON object");
    if (auto r = checkHeader(*v, apiVersion); !r) return r.error();
    const json::Value* status = v->find("status");
    if (!status || !status->isObject())
        return makeError(Errc::Decode, "its ExecCredential has no status");
    ExecCredential cred;
    const std::pair<const char*, std::string*> fields[] = {
        {"token", &cred.token},
        {"clientCertificateData", &cred.clientCertData},
        {"clientKeyData", &cred.clientKeyData}};
    for (const auto& [key, out] : fields) {
        auto s = statusString(*status, key);
        if (!s) return s.error();
        *out = std::move(*s);
    }
    auto expiry = statusString(*status, "expirationTimestamp");
    if (!expiry) return expiry.error();
    if (!expiry->empty()) {
        cred.expiry = parseRfc3339(*expiry);
        if (!cred.expiry)
            return makeError(Errc::Decode, "status.expirationTimestamp " + quoted(*expiry) +
                                               " is not an RFC 3339 time");
    }
    if (cred.token.empty() && cred.clientCertData.empty() && cred.clientKeyData.empty())
        return makeError(Errc::Decode,
                         "its status holds neither a token nor a client certificate and key");
    if (cred.clientCertData.empty() != cred.clientKeyData.empty())
        return makeError(Errc::Decode, cred.clientCertData.empty()
                                           ? "its status holds clientKeyData without "
                                             "clientCertificateData"
                                           : "its status holds clientCertificateData without "
                                             "clientKeyData");
    return cred;
}

std::string execInfo(const ExecConfig& cfg, bool interactive) {
    using json::Value;
    Value spec = Value::object();
    spec.set("interactive", Value::boolean(interactive));
    if (cfg.provideClusterInfo) {
        const ExecClusterInfo& c = cfg.cluster;
        Value cluster = Value::object();
        cluster.set("server", Value::string(c.server));
        if (!c.tlsServerName.empty())
            cluster.set("tls-server-name", Value::string(c.tlsServerName));
        if (c.insecureSkipTlsVerify) cluster.set("insecure-skip-tls-verify", Value::boolean(true));
        if (!c.caData.empty())
            cluster.set("certificate-authority-data", Value::string(base64Encode(c.caData)));
        if (!c.proxyUrl.empty()) cluster.set("proxy-url", Value::string(c.proxyUrl));
        if (!c.config.isNull()) cluster.set("config", c.config);
        spec.set("cluster", std::move(cluster));
    }
    Value cred = Value::object();
    cred.set("kind", Value::string("ExecCredential"));
    cred.set("apiVersion", Value::string(cfg.apiVersion));
    cred.set("spec", std::move(spec));
    return cred.dump();
}

namespace {

// This process's environment with the kubeconfig's env and KUBERNETES_EXEC_INFO set over it.
std::vector<std::string> pluginEnv(const ExecConfig& cfg, bool interactive) {
    std::vector<std::pair<std::string, std::string>> set = cfg.env;
    set.emplace_back("KUBERNETES_EXEC_INFO", execInfo(cfg, interactive));
    auto overridden = [&](std::string_view entry) {
        const std::string_view name = entry.substr(0, entry.find('='));
        for (const auto& [k, v] : set)
            if (k == name) return true;
        return false;
    };
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e)
        if (!overridden(*e)) env.emplace_back(*e);
    std::map<std::string, size_t> at;  // a name given twice: the last value, as in kubectl
    for (const auto& [k, v] : set) {
        if (auto it = at.find(k); it != at.end()) {
            env[it->second] = k + "=" + v;
            continue;
        }
        at.emplace(k, env.size());
        env.push_back(k + "=" + v);
    }
    return env;
}

std::vector<char*> cStrings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// Spawn attributes and descriptors set up for one run, released with it.
struct SpawnSetup {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    SpawnSetup() {
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// Starts the plugin with stdout and stderr on the pipes' write ends and stdin the terminal's
// (interactive) or /dev/null. Signals as a fresh process has them (allot-gc blocks some). An
// errno when it cannot start, else 0 and `pid` set.
// COMMAND exists: a path as it is, a bare name in one of PATH's directories.
bool runnable(const std::string& command) {
    if (command.find('/') != std::string::npos) return ::access(command.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (size_t p = 0; p <= dirs.size();) {
        size_t e = dirs.find(':', p);
        if (e == std::string::npos) e = dirs.size();
        const std::string dir = e == p ? "." : dirs.substr(p, e - p);
        if (::access((dir + "/" + command).c_str(), X_OK) == 0) return true;
        p = e + 1;
    }
    return false;
}

int spawnPlugin(const ExecConfig& cfg, bool interactive, int stdinFd, int outFd, int errFd,
                pid_t& pid) {
    SpawnSetup s;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&s.attr, &none);
    posix_spawnattr_setsigdefault(&s.attr, &all);
    posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (interactive)
        posix_spawn_file_actions_adddup2(&s.actions, stdinFd, 0);
    else
        posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&s.actions, outFd, 1);
    posix_spawn_file_actions_adddup2(&s.actions, errFd, 2);
    std::vector<std::string> argStrings{cfg.command};
    argStrings.insert(argStrings.end(), cfg.args.begin(), cfg.args.end());
    std::vector<std::string> envStrings = pluginEnv(cfg, interactive);
    std::vector<char*> argv = cStrings(argStrings), envp = cStrings(envStrings);
    // Looked up first, as kubectl does: under an emulator (qemu-user) a spawn of a missing
    // program succeeds and its child exits 127, so the spawn's own ENOENT is not enough.
    if (!runnable(cfg.command)) return ENOENT;
    // posix_spawnp searches this process's PATH, as kubectl does; a path is run as it is.
    return cfg.command.find('/') == std::string::npos
               ? posix_spawnp(&pid, cfg.command.c_str(), &s.actions, &s.attr, argv.data(),
                              envp.data())
               : posix_spawn(&pid, cfg.command.c_str(), &s.actions, &s.attr, argv.data(),
                             envp.data());
}

// What one run of the plugin left.
struct PluginOutput {
    std::string out;
    std::string errTail;  // the last kStderrTail bytes of its stderr
    bool tooLarge = false;
    bool timedOut = false;
    int status = 0;  // waitpid's
};

// Milliseconds to the deadline, for poll: 0 when past, at most a minute (poll again then).
int msLeft(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::clamp<long long>(left.count(), 0, 60000));
}

// Reads the plugin's stdout and stderr until both end or the deadline passes; stderr is also
// written to `forwardFd` as it comes.
void drain(sys::Fd& out, sys::Fd& err, Clock::time_point deadline, int forwardFd,
           PluginOutput& got) {
    char buf[8192];
    while (out || err) {
        const int left = msLeft(deadline);
        if (left <= 0) {
            got.timedOut = true;
            return;
        }
        pollfd fds[2] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}};
        const int n = ::poll(fds, 2, left);
        if (n < 0 && errno != EINTR) return;
        for (int i = 0; i < 2 && n > 0; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                (i == 0 ? out : err).reset();
                continue;
            }
            const std::string_view chunk(buf, static_cast<size_t>(r));
            if (i == 0) {
                got.tooLarge = got.tooLarge || got.out.size() + chunk.size() > kMaxStdout;
                if (!got.tooLarge) got.out.append(chunk);
                continue;
            }
            if (forwardFd >= 0 && ::write(forwardFd, chunk.data(), chunk.size()) < 0)
                forwardFd = -1;
            got.errTail.append(chunk);
            if (got.errTail.size() > kStderrTail)
                got.errTail.erase(0, got.errTail.size() - kStderrTail);
        }
    }
}

// Waits for the plugin to exit, killing it at the deadline (at once when it has timed out).
void reap(pid_t pid, Clock::time_point deadline, PluginOutput& got) {
    if (!got.timedOut) {
#ifdef SYS_pidfd_open
        const sys::Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#else
        const sys::Fd pidfd;
#endif
        // Without a pidfd (a kernel before 5.3): its output has ended, so it is exiting.
        while (!pidfd) {
            if (::waitpid(pid, &got.status, 0) == pid || errno != EINTR) return;
        }
        // A plugin that closed its output but lingers is waited for up to the deadline.
        for (;;) {
            const pid_t r = ::waitpid(pid, &got.status, WNOHANG);
            if (r == pid || (r < 0 && errno != EINTR)) return;
            const int left = msLeft(deadline);
            if (left <= 0) break;
            pollfd p{pidfd.get(), POLLIN, 0};
            ::poll(&p, 1, left);
        }
        got.timedOut = true;
    }
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &got.status, 0) < 0 && errno == EINTR) {
    }
}

// The error of a failed run: the plugin's command, what went wrong, its stderr's tail and the
// kubeconfig's installHint.
core::Error pluginError(const ExecConfig& cfg, Errc code, const std::string& what,
                        std::string_view errTail = {}) {
    std::string msg = "exec plugin " + quoted(cfg.command) + " " + what;
    std::string tail;
    for (char c : errTail) {
        const bool space = c == '\n' || c == '\r' || c == '\t';
        if (space && !tail.empty() && tail.back() != ' ') tail += ' ';
        if (!space && static_cast<unsigned char>(c) >= 0x20) tail += c;
    }
    while (!tail.empty() && tail.back() == ' ') tail.pop_back();
    if (!tail.empty())
        msg +=
            "; its stderr ended: " + std::string(errTail.size() >= kStderrTail ? "..." : "") + tail;
    if (!cfg.installHint.empty()) msg += "; install hint: " + cfg.installHint;
    return makeError(code, std::move(msg));
}

std::string exitDescription(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "ended with wait status " + std::to_string(status);
}

Result<bool> interactiveRun(const ExecConfig& cfg, const ExecTerminal& term) {
    const bool terminal = term.stdinFd >= 0 && ::isatty(term.stdinFd) == 1;
    switch (cfg.interactiveMode) {
        case InteractiveMode::Never:
            return false;
        case InteractiveMode::IfAvailable:
            return terminal;
        case InteractiveMode::Always:
            break;
    }
    if (!terminal)
        return pluginError(cfg, Errc::InvalidConfig,
                           "needs a terminal (interactiveMode Always) and standard input is not "
                           "one");
    return true;
}

}  // namespace

Result<ExecCredential> runExecPlugin(const ExecConfig& cfg, std::chrono::milliseconds timeout,
                                     const ExecTerminal& term) {
    const auto deadline = Clock::now() + timeout;
    auto interactive = interactiveRun(cfg, term);
    if (!interactive) return interactive.error();
    int outPipe[2], errPipe[2];
    if (::pipe2(outPipe, O_CLOEXEC) != 0)
        return pluginError(cfg, Errc::Internal, std::string("cannot run: ") + std::strerror(errno));
    sys::Fd outR(outPipe[0]), outW(outPipe[1]);
    if (::pipe2(errPipe, O_CLOEXEC) != 0)
        return pluginError(cfg, Errc::Internal, std::string("cannot run: ") + std::strerror(errno));
    sys::Fd errR(errPipe[0]), errW(errPipe[1]);
    pid_t pid = -1;
    if (const int e = spawnPlugin(cfg, *interactive, term.stdinFd, outW.get(), errW.get(), pid))
        return pluginError(cfg, Errc::InvalidConfig,
                           e != ENOENT ? std::string("cannot run: ") + std::strerror(e)
                           : cfg.command.find('/') == std::string::npos ? "is not on PATH"
                                                                        : "does not exist");
    outW.reset();
    errW.reset();
    PluginOutput got;
    drain(outR, errR, deadline, term.stderrFd, got);
    reap(pid, deadline, got);
    if (got.timedOut)
        return pluginError(
            cfg, Errc::Transient,
            "did not answer within " +
                (timeout.count() % 1000 == 0 ? std::to_string(timeout.count() / 1000) + " s"
                                             : std::to_string(timeout.count()) + " ms") +
                " and was killed",
            got.errTail);
    if (!WIFEXITED(got.status) || WEXITSTATUS(got.status) != 0)
        return pluginError(cfg, Errc::InvalidConfig, exitDescription(got.status), got.errTail);
    if (got.tooLarge)
        return pluginError(cfg, Errc::InvalidConfig,
                           "printed more than " + std::to_string(kMaxStdout >> 20) + " MiB");
    auto cred = parseExecCredential(got.out, cfg.apiVersion);
    if (!cred)
        return pluginError(cfg, Errc::InvalidConfig,
                           "gave no usable credential: " + cred.error().message, got.errTail);
    return cred;
}

namespace {

// What makes two configs one plugin: everything it is run with.
std::string cacheKey(const ExecConfig& cfg) {
    std::string key = cfg.command + '\0' + cfg.apiVersion + '\0' + execInfo(cfg, false);
    for (const std::string& a : cfg.args) key += '\0' + a;
    key += '\1';
    for (const auto& [k, v] : cfg.env) key += '\0' + k + '=' + v;
    return key;
}

}  // namespace

Result<ExecCredential> execCredential(const ExecConfig& cfg, std::chrono::milliseconds timeout,
                                      const ExecCredential* rejected, const ExecTerminal& term) {
    static std::mutex mu;
    static std::map<std::string, ExecCredential> kept;
    const std::lock_guard<std::mutex> lock(mu);
    const std::string key = cacheKey(cfg);
    if (auto it = kept.find(key); it != kept.end()) {
        const bool refused = rejected && *rejected == it->second;
        if (!refused && !it->second.expiredAt(std::chrono::system_clock::now())) return it->second;
        kept.erase(it);
    }
    auto cred = runExecPlugin(cfg, timeout, term);
    if (!cred) return cred.error();
    kept[key] = *cred;
    return cred;
}

}  // namespace allot::k8s
