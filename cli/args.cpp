#include <charconv>
#include <map>

#include "cli/cli.h"

namespace allot::cli {

using core::Errc;
using core::makeError;

namespace {

const char* kOverview =
    R"(kubectl-allot: see, check and fix allot's (and Whereabouts') address pools.

Usage: kubectl allot COMMAND [ARGS] [FLAGS]

Commands:
  pools                 each IPPool and NodeSlicePool: range, size, used, free, % used,
                        node slices, and the networks (NADs) that use it
  who IP...             who holds each address: pool, pod, container, interface, node,
                        pod UID, the pod's state, and its OverlappingRangeIPReservation
  pod NAMESPACE/NAME    every address the pod holds, across pools
  check                 the repair loop's analysis, read-only: leaked entries, duplicates,
                        missing or orphan reservations, out-of-range entries, NADs that do
                        not parse; exits 1 when it finds any
  release IP            release an address (as allot-gc does) and record an Event;
                        refused while the holding pod is alive unless --force
  lint FILE|-           validate a NetworkAttachmentDefinition or CNI config with the
                        plugin's parser; reports overlaps with existing pools
  version               this program's version and revision, and each node's allot-gc's

Global flags:
  --kubeconfig PATH     kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else
                        the in-cluster ServiceAccount)
  --context NAME        kubeconfig context (default: its current-context)
  -n, --namespace NS    the pools' namespace (default: the context's, else kube-system)
  -o, --output FORMAT   table (default), json or yaml
  --request-timeout S   give up after S seconds (default 60)
  -h, --help            help; `kubectl allot COMMAND --help` for a command's

Completion: kubectl 1.26+ completes `kubectl allot` through kubectl_complete-allot (install it
on PATH beside kubectl-allot); for the binary alone: source <(kubectl-allot completion bash).

Exit codes: 0 ok; 1 check/lint found problems; 2 bad command line; 3 kubeconfig, API or
input error; 4 not found (who, pod, release); 5 release refused (pod alive).
)";

const std::map<std::string, std::string>& commandHelp() {
    static const std::map<std::string, std::string> help = {
        {"pools", R"(Usage: kubectl allot pools [-n NS] [-o table|json|yaml]

Each IPPool of the namespace with its range, size (allocatable addresses, network and
broadcast excluded), used, free and % used, the node it belongs to (node-slice pools), and
the networks (NetworkAttachmentDefinitions, any namespace) whose IPAM config maps to it.
Then each NodeSlicePool with its slices and their use.
)"},
        {"who", R"(Usage: kubectl allot who IP... [-n NS] [-o table|json|yaml]

For each address: the IPPool that holds it (several when overlapping pools hold it twice),
the container ID, interface, node, pod and pod UID recorded, the pod's state now (running,
pending, terminal, gone, replaced: a pod of that name with another UID, unknown: no pod
recorded), and whether its OverlappingRangeIPReservation exists and agrees.
Exits 4 when some address is held by no pool.
)"},
        {"pod", R"(Usage: kubectl allot pod NAMESPACE/NAME [-n NS] [-o table|json|yaml]

Every address the pod holds in the namespace's pools, with its state now.
Exits 4 when it holds none.
)"},
        {"check", R"(Usage: kubectl allot check [-n NS] [--leak-grace DURATION] [-o table|json|yaml]

Runs allot-gc's repair analysis once, changing nothing, and lists each finding:
  leaked                           an entry whose pod is gone (no_pod), re-created with
                                   another UID (other_uid), terminated (terminal), on a
                                   deleted Node (node_gone), or on a Node NotReady longer
                                   than --leak-grace (node_not_ready; 5m). Only a deleted
                                   Node's entries are freed by allot-gc's leader; the rest
                                   wait for their node's allot-gc to prove them unused
  duplicate_ip                     one address held in two overlapping pools
  out_of_range                     an entry outside its pool's range
  allocation_without_reservation   an entry with no OverlappingRangeIPReservation
  reservation_without_allocation   a reservation no entry holds
  undecodable_pool/undecodable_entry  data allot cannot read
  slice_node_gone                  a node's slice pool holding addresses after its Node went
  outside_node_slice               an address outside every slice its node has now, or held
                                   by a pod running on another node
  pool_object_full                 an IPPool object that cannot take another entry (its
                                   ADDs fail with code 11)
  bad_nad_config                   a NAD with allot/whereabouts IPAM that does not parse
One scan is a snapshot: an ADD in flight can show as allocation_without_reservation for a
moment (allot-gc waits for several passes before it acts).
Exits 1 when it finds anything, 0 when the pools are healthy.
)"},
        {"release", R"(Usage: kubectl allot release IP [--force] [--pool NAME] [-n NS] [-o ...]

Releases the address through allot-gc's code path (a resourceVersion-guarded pool write
that removes the entry only while the holder seen still holds it, then its reservation)
and records a Kubernetes Event (reason AddressReleased) naming who released what.
Refused (exit 5) unless --force: a pod that lives would lose its address, and one that is
gone may still have a sandbox holding it (allot-gc frees those itself once its node's probe,
or the Node's deletion, proves them unused). --pool picks the pool when overlapping pools
hold the IP.
Exits 4 when no pool holds it.
)"},
        {"lint", R"(Usage: kubectl allot lint FILE|- [--offline] [-n NS] [-o table|json|yaml]

Validates NetworkAttachmentDefinition manifests (YAML or JSON, several documents allowed)
or a bare CNI network config / conflist with the plugin's own parser. Reports every value
the plugin refuses (errors, each naming its key), the values it ignores or repairs as
Whereabouts does (warnings),
the pool each range uses, and existing pools whose ranges overlap (unless --offline).
Exits 1 when a config does not parse, 0 otherwise.
)"},
        {"version",
         R"(Usage: kubectl allot version [--client] [--lease-namespace NS] [-o table|json|yaml]

The version and git revision of this kubectl-allot, then, for each node, those of its
allot-gc, as the node's report says (the Lease allot-node-<node> in the Lease namespace,
rewritten at every node sweep; default kube-system, as allot-gc's --lease-namespace) and how
long ago it was written. A Node without a report runs no allot-gc (or one that does not
sweep); "unknown" is an allot-gc older than the version in its report.
--client: this program's alone, without the cluster.
)"},
    };
    return help;
}

Result<std::chrono::milliseconds> parseDuration(const std::string& flag, const std::string& v) {
    // 30, 30s, 5m, 2h, 500ms
    size_t end = 0;
    while (end < v.size() && v[end] >= '0' && v[end] <= '9') ++end;
    long long n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + end, n);
    const std::string unit = v.substr(end);
    const std::map<std::string, long long> scale = {
        {"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"h", 3600000}};
    auto u = scale.find(unit);
    if (end == 0 || ec != std::errc() || u == scale.end() || n > 100000000)
        return makeError(Errc::InvalidConfig,
                         flag + " \"" + v + "\" is not a duration (30s, 5m, 1h)");
    return std::chrono::milliseconds(n * u->second);
}

Result<void> setFlag(Options& o, const std::string& flag, const std::string& v) {
    if (flag == "--kubeconfig")
        o.kubeconfig = v;
    else if (flag == "--context")
        o.context = v;
    else if (flag == "-n" || flag == "--namespace")
        o.ns = v;
    else if (flag == "--pool")
        o.pool = v;
    else if (flag == "--lease-namespace")
        o.leaseNamespace = v;
    else if (flag == "-o" || flag == "--output") {
        if (v == "table")
            o.output = Format::Table;
        else if (v == "json")
            o.output = Format::Json;
        else if (v == "yaml")
            o.output = Format::Yaml;
        else
            return makeError(Errc::InvalidConfig,
                             "--output \"" + v + "\": want table, json or yaml" +
                                 (v == "wide" ? " (the table already shows every column)" : ""));
    } else if (flag == "--leak-grace" || flag == "--request-timeout") {
        auto d = parseDuration(flag, v);
        if (!d) return d.error();
        (flag == "--leak-grace" ? o.leakGrace : o.timeout) = *d;
    } else {
        return makeError(Errc::InvalidConfig, "unknown flag " + flag);
    }
    return {};
}

bool takesValue(const std::string& f) {
    static const char* kValued[] = {
        "--kubeconfig", "--context", "-n",           "--namespace",       "-o",
        "--output",     "--pool",    "--leak-grace", "--request-timeout", "--lease-namespace"};
    for (const char* k : kValued)
        if (f == k) return true;
    return false;
}

}  // namespace

std::string helpText(const std::string& command) {
    auto it = commandHelp().find(command);
    return it == commandHelp().end() ? kOverview : it->second;
}

Result<Options> parseArgs(const std::vector<std::string>& argv) {
    Options o;
    bool positionalOnly = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (positionalOnly || a == "-" || a.empty() || a[0] != '-') {
            if (o.command.empty())
                o.command = a;
            else
                o.args.push_back(a);
            continue;
        }
        if (a == "--") {
            positionalOnly = true;
            continue;
        }
        if (a == "-h" || a == "--help") {
            o.help = true;
            continue;
        }
        if (a == "--force") {
            o.force = true;
            continue;
        }
        if (a == "--offline") {
            o.offline = true;
            continue;
        }
        if (a == "--client") {
            o.client = true;
            continue;
        }
        std::string flag = a, value;
        bool hasValue = false;
        if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
            flag = a.substr(0, eq);
            value = a.substr(eq + 1);
            hasValue = true;
        }
        if (!takesValue(flag)) return makeError(Errc::InvalidConfig, "unknown flag " + flag);
        if (!hasValue) {
            if (i + 1 >= argv.size())
                return makeError(Errc::InvalidConfig, flag + " needs a value");
            value = argv[++i];
        }
        if (auto r = setFlag(o, flag, value); !r) return r.error();
    }
    if (o.help) return o;
    if (o.command.empty()) return makeError(Errc::InvalidConfig, "no command given");
    if (!commandHelp().count(o.command))
        return makeError(Errc::InvalidConfig, "unknown command \"" + o.command + "\"");
    const size_t n = o.args.size();
    if (o.command == "pools" || o.command == "check" || o.command == "version") {
        if (n != 0) return makeError(Errc::InvalidConfig, o.command + " takes no arguments");
    } else if (o.command == "who") {
        if (n == 0) return makeError(Errc::InvalidConfig, "who needs at least one IP address");
    } else if (n != 1) {
        return makeError(Errc::InvalidConfig, o.command + " needs exactly one argument");
    }
    return o;
}

}  // namespace allot::cli
