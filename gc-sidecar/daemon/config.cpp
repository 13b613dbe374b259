#include "gc-sidecar/daemon/config.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <type_traits>

#include "core/duration.h"

namespace allot::gc {

using core::durationIn;
using core::Errc;
using core::makeError;
using core::Result;

namespace {

core::Error bad(std::string_view what, std::string_view value, const std::string& why) {
    return makeError(Errc::InvalidConfig,
                     std::string(what) + ": \"" + std::string(value.substr(0, 128)) + "\" " + why);
}

Result<int64_t> parseInt(std::string_view text, std::string_view what, int64_t lo, int64_t hi) {
    if (text.empty() || text.size() > 18) return bad(what, text, "is not a whole number");
    int64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return bad(what, text, "is not a whole number");
        v = v * 10 + (c - '0');
    }
    if (v < lo || v > hi)
        return bad(what, text,
                   "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return v;
}

Result<bool> parseBool(std::string_view text, std::string_view what) {
    if (text == "true" || text == "1" || text == "yes") return true;
    if (text == "false" || text == "0" || text == "no") return false;
    return bad(what, text, "must be true or false");
}

bool validName(std::string_view s) {
    // DNS-1123 subdomain: what Kubernetes accepts for node, namespace and Lease names.
    if (s.empty() || s.size() > 253) return false;
    for (char c : s)
        if (!(std::islower(static_cast<unsigned char>(c)) ||
              std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'))
            return false;
    return std::isalnum(static_cast<unsigned char>(s.front())) &&
           std::isalnum(static_cast<unsigned char>(s.back()));
}

// A name for a file in the CNI plugin directory: letters, digits, '.', '_', '-'.
bool validFileName(std::string_view s) {
    if (s.empty() || s.size() > 64 || s == "." || s == ".." || s == "allot") return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

using Setter =
    std::function<Result<void>(Config&, const std::string& value, const std::string& what)>;
// A flag's value in a Config, as --help shows its default; empty: the flag's `unset` words.
using Show = std::function<std::string(const Config&)>;

// How a flag reads into a Config and shows from one: the default in --help is always
// show(Config{}), so config.h's initialisers are the only place a default is written.
struct Binding {
    Setter set;
    Show show;
};

struct Flag {
    const char* name;  // without "--"
    const char* env;   // fallback variable
    const char* arg;   // placeholder in --help
    const char* help;
    Binding bind;
    const char* unset = "none";  // the default's words when show(Config{}) is empty
};

// 60s, 150s, 5m, 2h: seconds up to five minutes, then the largest whole unit.
std::string showDuration(Millis d) {
    const auto ms = d.count();
    if (ms % 3'600'000 == 0 && ms >= 3'600'000) return std::to_string(ms / 3'600'000) + "h";
    if (ms % 60'000 == 0 && ms >= 300'000) return std::to_string(ms / 60'000) + "m";
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

template <typename T>
Show showField(T Config::*field) {
    return [field](const Config& c) {
        if constexpr (std::is_same_v<T, std::string>)
            return c.*field;
        else if constexpr (std::is_same_v<T, bool>)
            return std::string(c.*field ? "true" : "false");
        else if constexpr (std::is_same_v<T, Millis>)
            return showDuration(c.*field);
        else if constexpr (std::is_same_v<T, int>)
            return std::to_string(c.*field);
        else {
            std::string out;
            for (const auto& e : c.*field) out += (out.empty() ? "" : ",") + e;
            return out;
        }
    };
}

Binding durationSetter(Millis Config::*field, Millis lo, Millis hi) {
    Setter set = [=](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        auto d = durationIn(v, what, lo, hi);
        if (!d) return d.error();
        c.*field = *d;
        return {};
    };
    return {set, showField(field)};
}

Binding intSetter(int Config::*field, int lo, int hi) {
    Setter set = [=](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        auto n = parseInt(v, what, lo, hi);
        if (!n) return n.error();
        c.*field = static_cast<int>(*n);
        return {};
    };
    return {set, showField(field)};
}

Binding stringSetter(std::string Config::*field, bool mustBeName, bool mayBeEmpty) {
    Setter set = [=](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        if (v.empty() && !mayBeEmpty) return bad(what, v, "must not be empty");
        if (mustBeName && !validName(v))
            return bad(what, v,
                       "is not a valid Kubernetes name (lowercase letters, digits, '-', '.')");
        c.*field = v;
        return {};
    };
    return {set, showField(field)};
}

Binding boolSetter(bool Config::*field) {
    Setter set = [=](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        auto b = parseBool(v, what);
        if (!b) return b.error();
        c.*field = *b;
        return {};
    };
    return {set, showField(field)};
}

// A comma-separated LIST flag into `field`, each entry trimmed; with `fileNames`, an empty
// value is the empty list and each entry must be a plain file name other than "allot".
Binding listSetter(std::vector<std::string> Config::*field, bool fileNames) {
    Setter set = [=](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        std::vector<std::string> out;
        for (size_t p = 0; p <= v.size() && !(fileNames && v.empty());) {
            size_t e = v.find(',', p);
            if (e == std::string::npos) e = v.size();
            std::string t = v.substr(p, e - p);
            while (!t.empty() && t.front() == ' ') t.erase(t.begin());
            while (!t.empty() && t.back() == ' ') t.pop_back();
            if (t.empty()) return bad(what, v, "has an empty entry");
            if (fileNames && !validFileName(t))
                return bad(what, v, "has \"" + t + "\", not a file name other than allot");
            out.push_back(t);
            p = e + 1;
        }
        c.*field = std::move(out);
        return {};
    };
    return {set, showField(field)};
}

Result<void> setListen(Config& c, const std::string& v, const std::string& what) {
    auto hp = parseListen(v, what);
    if (!hp) return hp.error();
    c.listenHost = hp->first;
    c.listenPort = hp->second;
    return {};
}

// A NAMESPACE/NAME flag into `field`.
Binding nsNameSetter(std::string Config::*field) {
    Setter set = [field](Config& c, const std::string& v, const std::string& what) -> Result<void> {
        auto slash = v.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == v.size() ||
            !validName(v.substr(0, slash)) || !validName(v.substr(slash + 1)))
            return bad(what, v, "is not NAMESPACE/NAME");
        c.*field = v;
        return {};
    };
    return {set, showField(field)};
}

// A pod's UID (metadata.uid, a UUID): letters, digits and '-'; compared with install-cni.sh's
// stamp as text, so anything else is a wrong value, not a UID.
Result<void> setPodUid(Config& c, const std::string& v, const std::string& what) {
    if (v.empty() || v.size() > 128 || !std::all_of(v.begin(), v.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-';
        }))
        return bad(what, v, "is not a pod UID (letters, digits, '-')");
    c.podUid = v;
    return {};
}

Result<void> setRole(Config& c, const std::string& v, const std::string& what) {
    if (v != "agent" && v != "controller") return bad(what, v, "must be agent or controller");
    c.role = v == "agent" ? Role::Agent : Role::Controller;
    return {};
}

Result<void> setLogLevel(Config& c, const std::string& v, const std::string& what) {
    if (v != "debug" && v != "info" && v != "warn" && v != "error")
        return bad(what, v, "must be debug, info, warn or error");
    c.logLevel = v;
    return {};
}

Result<void> setLogFormat(Config& c, const std::string& v, const std::string& what) {
    if (v != "text" && v != "json") return bad(what, v, "must be text or json");
    c.logFormat = v;
    return {};
}

// Whose addresses this process reclaims, and how it reaches the API server.
std::vector<Flag> whoseFlags() {
    return {
        {"role",
         "ALLOT_GC_ROLE",
         "ROLE",
         "agent: this node's work (the pod watch, releases, the sweep and report, the relay, the "
         "journal, the plugin's token and files), one per node; controller: the cluster-wide "
         "work (the repair loop, the node-slice controller, deleted IPAMClaims, the pool "
         "gauges), a few replicas of which one leads through the Lease",
         {setRole,
          [](const Config& c) {
              return std::string(c.role == Role::Agent ? "agent" : "controller");
          }}},
        {"node-name", "NODE_NAME", "NAME",
         "this node's name (required): an agent's pods are this node's; a controller names "
         "its Events' source with it",
         stringSetter(&Config::nodeName, true, false), "none (required)"},
        {"identity", "POD_NAME", "ID",
         "identity in Events and the Lease, unique per process (the manifests pass the pod's name)",
         stringSetter(&Config::identity, false, false),
         "the node name, a process ID and a random suffix"},
        {"namespace", "ALLOT_GC_NAMESPACE", "NS", "namespace of the IPPools and reservations",
         stringSetter(&Config::poolNamespace, true, false)},
        {"kubeconfig", "KUBECONFIG", "PATH", "kubeconfig to use",
         stringSetter(&Config::kubeconfig, false, true), "none: the in-cluster ServiceAccount"},
        {"ipam-types", "ALLOT_GC_IPAM_TYPES", "LIST",
         "comma-separated IPAM types whose addresses this sidecar reclaims",
         listSetter(&Config::ipamTypes, false)},
        {"cri-socket", "ALLOT_GC_CRI_SOCKET", "PATH",
         "the container runtime's CRI socket: before freeing a deleted pod's address, ask the "
         "runtime (PodSandboxStatus) whether its sandbox is gone; ready or unreachable keeps it "
         "(none: the namespace probe alone decides)",
         stringSetter(&Config::criSocket, false, false),
         "the first of /run/containerd/containerd.sock and /var/run/crio/crio.sock that "
         "exists"},
        {"sandbox-probe", "ALLOT_GC_SANDBOX_PROBE", "BOOL",
         "before freeing the address of a deleted pod whose sandbox the runtime does not "
         "say is gone (or with no runtime asked), read the node's network namespaces (needs "
         "CAP_SYS_ADMIN and the host PID namespace) and free it only when none holds it "
         "(false: such addresses stay held until the kubelet's DEL, the Node's deletion or "
         "out-of-service taint, or kubectl allot release --force)",
         boolSetter(&Config::sandboxProbe)},
        {"add-in-flight-bound", "ALLOT_GC_ADD_IN_FLIGHT_BOUND", "DURATION",
         "the longest a runtime's ADD may run after the plugin answers: an address whose ADD "
         "started less than this ago (the plugin's mark in /run/allot/adds) is never freed, and "
         "an entry another IPAM wrote is kept this long after its pod is known gone (the "
         "default is the kubelet's 2-minute runtime request timeout and a margin)",
         durationSetter(&Config::addInFlightBound, std::chrono::milliseconds(100),
                        std::chrono::hours(1))},
        {"node-sweep-interval", "ALLOT_GC_NODE_SWEEP_INTERVAL", "DURATION",
         "time between sweeps of this node's own entries: an entry whose pod is gone is freed "
         "once the namespace probe shows no namespace here holds its address; each sweep also "
         "reports the probe's findings to the controller (a Lease allot-node-<node> in the Lease "
         "namespace). 0 turns both off",
         durationSetter(&Config::nodeSweepInterval, std::chrono::milliseconds(0),
                        std::chrono::hours(24))},
    };
}

// The cluster-wide repair loop.
std::vector<Flag> repairFlags() {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    return {
        {"repair-interval", "ALLOT_GC_REPAIR_INTERVAL", "DURATION",
         "least time between repair passes; one follows a change of a pod, Node, NAD or "
         "NodeSlicePool, and they come this often while a leak candidate or an anomaly waits "
         "for its next sighting",
         durationSetter(&Config::repairInterval, milliseconds(100), hours(24))},
        {"leak-grace", "ALLOT_GC_LEAK_GRACE", "DURATION",
         "a leaked allocation is released only when first seen at least this long ago",
         durationSetter(&Config::leakGrace, milliseconds(0), hours(24 * 7))},
        {"leak-passes", "ALLOT_GC_LEAK_PASSES", "N",
         "consecutive passes an allocation must be seen leaked before release",
         intSetter(&Config::leakPasses, 1, 100)},
        {"repair-batch", "ALLOT_GC_REPAIR_BATCH", "N", "releases per repair pass at most",
         intSetter(&Config::repairBatch, 1, 100000)},
        {"node-slices", "ALLOT_GC_NODE_SLICES", "BOOL",
         "the leader also runs the node-slice controller: a NodeSlicePool per network whose "
         "NetworkAttachmentDefinition sets node_slice_size, a slice for every Node",
         boolSetter(&Config::nodeSlices)},
        {"slice-interval", "ALLOT_GC_SLICE_INTERVAL", "DURATION",
         "least time between node-slice passes; one follows a change of a Node, NAD or "
         "NodeSlicePool",
         durationSetter(&Config::sliceInterval, milliseconds(100), hours(1))},
        {"resync-interval", "ALLOT_GC_RESYNC_INTERVAL", "DURATION",
         "a repair pass and a node-slice pass at least this often, whatever changed",
         durationSetter(&Config::resyncInterval, milliseconds(100), hours(24))},
    };
}

// What it serves the node: metrics and health, the relay, the journal, the node kubeconfig.
std::vector<Flag> serviceFlags() {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    return {
        {"listen",
         "ALLOT_GC_LISTEN",
         "HOST:PORT",
         "address of /metrics, /healthz and /readyz (port 0: off)",
         {setListen,
          [](const Config& c) { return c.listenHost + ":" + std::to_string(c.listenPort); }}},
        {"journal-dir", "ALLOT_GC_JOURNAL_DIR", "DIR",
         "the plugin's DEL journal to replay (empty: off)",
         stringSetter(&Config::journalDir, false, true)},
        {"relay-socket", "ALLOT_GC_RELAY_SOCKET", "PATH",
         "Unix socket where the plugin's pool requests are relayed to the API server over this "
         "process's connection; the plugin looks at /run/allot/api.sock unless its relay_socket "
         "says otherwise",
         stringSetter(&Config::relaySocket, false, true), "none (off)"},
        {"journal-interval", "ALLOT_GC_JOURNAL_INTERVAL", "DURATION",
         "time between journal replays",
         durationSetter(&Config::journalInterval, milliseconds(100), hours(24))},
        {"node-kubeconfig", "ALLOT_GC_NODE_KUBECONFIG", "PATH",
         "kubeconfig written for the plugin from the ServiceAccount token and CA",
         stringSetter(&Config::nodeKubeconfig, false, true), "none (not written)"},
        {"plugin-service-account", "ALLOT_GC_PLUGIN_SERVICE_ACCOUNT", "NAMESPACE/NAME",
         "the plugin's own ServiceAccount: the node kubeconfig then carries a token requested "
         "for it (TokenRequest, 1 h, renewed at half-life) instead of allot-gc's own",
         nsNameSetter(&Config::pluginServiceAccount), "none: allot-gc's own token"},
        {"uninstall-with", "ALLOT_GC_UNINSTALL_WITH", "NAMESPACE/NAME",
         "the DaemonSet that installed allot on this node: when allot-gc stops and it is gone or "
         "being deleted (or allot-gc's identity was deleted with it), allot-gc removes the "
         "plugin from --cni-bin-dir, and allot.conf, nodename and the node kubeconfig; the "
         "journal, IPPools and reservations stay",
         nsNameSetter(&Config::uninstallWith), "none (never)"},
        {"pod-uid",
         "POD_UID",
         "UID",
         "this pod's UID (the DaemonSet passes metadata.uid): --uninstall-with removes the "
         "node's files only while install-cni.sh's stamp (installed-by, beside allot.conf) names "
         "this pod, never a replacement pod's install (without it nothing is removed)",
         {setPodUid, showField(&Config::podUid)}},
        {"cni-bin-dir", "ALLOT_GC_CNI_BIN_DIR", "DIR",
         "the node's CNI plugin directory as this container sees it, where --uninstall-with "
         "removes the plugin",
         stringSetter(&Config::cniBinDir, false, false)},
        {"plugin-aliases", "ALLOT_GC_PLUGIN_ALIASES", "LIST",
         "further names install-cni.sh gave the plugin in --cni-bin-dir (PLUGIN_ALIASES, such as "
         "whereabouts): --uninstall-with removes each one that is still a copy of the plugin",
         listSetter(&Config::pluginAliases, true)},
        {"service-account-dir", "ALLOT_GC_SERVICE_ACCOUNT_DIR", "DIR",
         "where the ServiceAccount token and ca.crt are mounted",
         stringSetter(&Config::serviceAccountDir, false, false)},
        {"token-check-interval", "ALLOT_GC_TOKEN_CHECK_INTERVAL", "DURATION",
         "how often the token is checked for rotation",
         durationSetter(&Config::tokenCheckInterval, milliseconds(100), hours(1))},
    };
}

// Leader election, timeouts, retries and logs.
std::vector<Flag> tuningFlags() {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    using std::chrono::minutes;
    using std::chrono::seconds;
    return {
        {"lease-name", "ALLOT_GC_LEASE_NAME", "NAME", "Lease electing the repair leader",
         stringSetter(&Config::leaseName, true, false)},
        {"lease-namespace", "ALLOT_GC_LEASE_NAMESPACE", "NS",
         "namespace of the Lease and of the node reports",
         stringSetter(&Config::leaseNamespace, true, false)},
        {"lease-duration", "ALLOT_GC_LEASE_DURATION", "DURATION",
         "how long a leader's claim lasts without renewal",
         durationSetter(&Config::leaseDuration, seconds(1), minutes(10))},
        {"lease-renew-interval", "ALLOT_GC_LEASE_RENEW_INTERVAL", "DURATION",
         "how often the leader renews and a follower retries (at most half the duration)",
         durationSetter(&Config::leaseRenewInterval, milliseconds(100), minutes(5))},
        {"watch-timeout", "ALLOT_GC_WATCH_TIMEOUT", "DURATION",
         "the API server ends each pod watch after this long; it is resumed",
         durationSetter(&Config::watchTimeout, seconds(1), hours(1))},
        {"health-threshold", "ALLOT_GC_HEALTH_THRESHOLD", "DURATION",
         "/healthz fails when the agent's pod watch, or the controller's Lease reads or its repair "
         "loop, made no progress for this long",
         durationSetter(&Config::healthThreshold, seconds(1), hours(24))},
        {"api-parallelism", "ALLOT_GC_API_PARALLELISM", "N",
         "concurrent API requests when releasing a batch",
         intSetter(&Config::apiParallelism, 1, 32)},
        {"request-timeout", "ALLOT_GC_REQUEST_TIMEOUT", "DURATION", "timeout of one API request",
         durationSetter(&Config::requestTimeout, milliseconds(100), minutes(5))},
        {"release-retries", "ALLOT_GC_RELEASE_RETRIES", "N",
         "attempts at a failing release before a ReleaseFailed Event",
         intSetter(&Config::releaseRetries, 1, 100)},
        {"log-level",
         "ALLOT_GC_LOG_LEVEL",
         "LEVEL",
         "debug, info, warn or error",
         {setLogLevel, showField(&Config::logLevel)}},
        {"log-format",
         "ALLOT_GC_LOG_FORMAT",
         "FORMAT",
         "text: one line \"<time> <level> <message> key=value...\"; json: one object "
         "per line with time, level, msg, and pool, network, pod, container, ip when the line "
         "concerns them (absent otherwise)",
         {setLogFormat, showField(&Config::logFormat)}},
    };
}

// In --help order.
const std::vector<Flag>& flags() {
    static const std::vector<Flag> table = [] {
        std::vector<Flag> all;
        for (auto group : {whoseFlags, repairFlags, serviceFlags, tuningFlags})
            for (auto& f : group()) all.push_back(std::move(f));
        return all;
    }();
    return table;
}

}  // namespace

Result<std::pair<std::string, int>> parseListen(std::string_view text, std::string_view what) {
    std::string host;
    std::string_view portText;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return bad(what, text, "is not HOST:PORT");
        host = std::string(text.substr(1, close - 1));
        portText = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return bad(what, text, "is not HOST:PORT");
        host = std::string(text.substr(0, colon));
        if (host.find(':') != std::string::npos)
            return bad(what, text, "needs brackets around an IPv6 host");
        portText = text.substr(colon + 1);
    }
    if (host.empty()) host = "0.0.0.0";
    auto port = parseInt(portText, what, 0, 65535);
    if (!port) return port.error();
    return std::pair<std::string, int>(host, static_cast<int>(*port));
}

Result<ParsedArgs> parseArgs(const std::vector<std::string>& args, const GetEnv& env) {
    ParsedArgs out;
    Config& c = out.config;
    const auto& table = flags();
    std::vector<bool> seen(table.size(), false);
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h" || a == "--version") {
            (a == "--version" ? out.version : out.help) = true;
            return out;
        }
        if (a.rfind("--", 0) != 0) return bad("argument", a, "is not a flag (see --help)");
        std::string name = a.substr(2), value;
        bool hasValue = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            hasValue = true;
        }
        auto it =
            std::find_if(table.begin(), table.end(), [&](const Flag& f) { return name == f.name; });
        if (it == table.end()) return bad("flag", "--" + name, "is unknown (see --help)");
        if (!hasValue) {
            if (i + 1 >= args.size()) return bad("--" + name, "", "needs a value");
            value = args[++i];
        }
        if (auto r = it->bind.set(c, value, "--" + name); !r) return r.error();
        seen[static_cast<size_t>(it - table.begin())] = true;
    }
    for (size_t i = 0; i < table.size(); ++i) {
        if (seen[i]) continue;
        auto v = env(table[i].env);
        if (!v) continue;
        // An empty variable counts as unset, except where empty has a meaning of its own.
        if (v->empty() && std::string_view(table[i].name) != "journal-dir" &&
            std::string_view(table[i].name) != "relay-socket")
            continue;
        if (auto r = table[i].bind.set(c, *v, std::string(table[i].env)); !r) return r.error();
    }
    if (c.nodeName.empty())
        return makeError(Errc::InvalidConfig,
                         "the node name is required: --node-name or NODE_NAME");
    if (c.identity.empty()) {
        c.identity = c.nodeName;
        c.identityDefaulted = true;  // the daemon makes it unique per process
    }
    if (c.leaseRenewInterval * 2 > c.leaseDuration)
        return makeError(Errc::InvalidConfig,
                         "--lease-renew-interval must be at most half of --lease-duration (" +
                             std::to_string(c.leaseRenewInterval.count()) + "ms vs " +
                             std::to_string(c.leaseDuration.count()) + "ms)");
    return out;
}

std::string usage() {
    std::string s =
        "allot-gc: the node agent and the controller of the allot IPAM plugin.\n"
        "\n"
        "As --role=agent (one per node): releases the addresses of this node's deleted pods,\n"
        "replays the plugin's DEL journal and keeps the plugin's node kubeconfig fresh.\n"
        "As --role=controller (a few replicas, one leading): repairs leaked allocations, runs\n"
        "the node-slice controller and reports pool anomalies. Both serve /metrics, /healthz\n"
        "and /readyz.\n"
        "\n"
        "Usage: allot-gc [--flag=value | --flag value]...\n"
        "Each flag falls back to the environment variable shown; a flag wins.\n"
        "Durations: 100ms, 30s, 5m, 1h, 1m30s. Exit status 2 on a bad flag.\n\n";
    const Config defaults;
    for (const auto& f : flags()) {
        std::string left = std::string("  --") + f.name + "=" + f.arg;
        s += left;
        s += std::string(left.size() < 36 ? 36 - left.size() : 1, ' ');
        const std::string shown = f.bind.show(defaults);
        s += "[$" + std::string(f.env) + "] (default " + (shown.empty() ? f.unset : shown) +
             ")\n      " + f.help + "\n";
    }
    s += "  --version                         the version and the git revision it was built from\n";
    s += "  --help                            this text\n";
    return s;
}

}  // namespace allot::gc
