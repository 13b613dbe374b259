#include <map>

#include "cli/cli.h"
#include "core/duration.h"

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
  pod [NAME]            every address the pod holds, across pools; without NAME, every pod
                        of the namespace (-A: of every namespace) that holds one
  check                 the repair loop's analysis, read-only: leaked entries, duplicates,
                        missing or orphan reservations, out-of-range entries, NADs that do
                        not parse; exits 1 when it finds any (0 with -o json|yaml: a
                        report, which release --from-report reads)
  release IP            release an address (as allot-gc does) and record an Event
  release --from-report FILE
                        release the leaks of a check report that are still leaks; both
                        need --force unless the entry's Node is deleted; --dry-run says
                        what would go
  lint FILE|-           validate a NetworkAttachmentDefinition or CNI config with the
                        plugin's parser; reports overlaps with existing pools
  version               this program's version and revision, and each node's allot-gc's

Global flags:
  --kubeconfig PATH     kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else
                        the in-cluster ServiceAccount)
  --context NAME        kubeconfig context (default: its current-context)
  -n, --namespace NS    the pods' namespace, as in kubectl (pod, check; default: the
                        context's namespace, else default)
  -A, --all-namespaces  pods of every namespace (pod, check)
  --pool-namespace NS   the namespace of the IPPools and reservations (default:
                        $ALLOT_POOL_NAMESPACE, else kube-system)
  -o, --output FORMAT   table (default), wide (more columns), json or yaml
  --request-timeout S   give up after S seconds (default 60)
  -h, --help            help; `kubectl allot COMMAND --help` for a command's

Completion: kubectl 1.26+ completes `kubectl allot` through kubectl_complete-allot (install it
on PATH beside kubectl-allot); for the binary alone: source <(kubectl-allot completion bash).

Exit codes: 0 ok; 1 check/lint found problems; 2 bad command line; 3 kubeconfig, API or
input error; 4 not found (who, pod, release); 5 release refused (pod alive, or no --force).
)";

const char* kCheckHelp =
    R"(Usage: kubectl allot check [--pool-namespace NS] [-n NS | -A] [--leak-grace DURATION]
                           [-o table|wide|json|yaml]

Runs allot-gc's repair analysis once on the pools of the pool namespace, changing nothing,
and lists each finding (all of them, or with -n only those about pods of that namespace):
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
Each finding names its kind, reason, pool namespace and pool, reservation, ip, offset, pod,
pod UID, container ID, interface, node and a message; -o wide shows them all. The -o json
(or yaml) document is a report: `release --from-report FILE` releases its leaks.
One scan is a snapshot: an ADD in flight can show as allocation_without_reservation for a
moment (allot-gc waits for several passes before it acts).
Exits 1 when it finds anything, 0 when the pools are healthy; with -o json or yaml it exits 0
either way (the document counts the findings), so that a report can be saved and passed on.
)";

const char* kReleaseHelp =
    R"(Usage: kubectl allot release IP [--force] [--dry-run] [--pool NAME] [--pool-namespace NS]
       kubectl allot release --from-report FILE|- [--force] [--dry-run] [-o ...]

Releases the address through allot-gc's code path (a resourceVersion-guarded pool write
that removes the entry only while the holder seen still holds it, then its reservation)
and records a Kubernetes Event (reason AddressReleased) naming who released what.
Refused (exit 5) unless --force, or unless the entry's Node object is deleted (its sandboxes
went with it): a pod that lives would lose its address, and one that is gone may still have a
sandbox holding it (allot-gc frees those itself once its node's probe proves them unused).
--pool picks the pool when overlapping pools hold the IP. Exits 4 when no pool holds it.
--from-report FILE: the leaked findings of a `check -o json` (or yaml) report, each in its
report's pool namespace. Each is checked again first and skipped, saying why, when its
entry is gone or now held by another container ID, or its pod is running or pending now.
Those whose Node is deleted are released; the others only with --force (else exit 5).
A Node is deleted when no Node has its name now and one is known to have had it: a
NodeSlicePool gave it a slice, or its allot-gc's report (a Lease in --lease-namespace,
default kube-system) names its Node's UID. A name no Node is known to have had needs --force.
--dry-run: prints what would be released, refused and skipped, changes nothing, exits 0.
)";

const std::map<std::string, std::string>& commandHelp() {
    static const std::map<std::string, std::string> help = {
        {"pools", R"(Usage: kubectl allot pools [--pool-namespace NS] [-o table|wide|json|yaml]

Each IPPool of the namespace with its range, size (allocatable addresses, network and
broadcast excluded), used, free and % used, the node it belongs to (node-slice pools), and
the networks (NetworkAttachmentDefinitions, any namespace) whose IPAM config maps to it.
Then each NodeSlicePool with its slices and their use. -o wide adds the pool's namespace.
)"},
        {"who", R"(Usage: kubectl allot who IP... [--pool-namespace NS] [-o table|wide|json|yaml]

For each address: the IPPool that holds it (several when overlapping pools hold it twice),
the container ID, interface, node, pod and pod UID recorded, the pod's state now (running,
pending, terminal, gone, replaced: a pod of that name with another UID, unknown: no pod
recorded), and whether its OverlappingRangeIPReservation exists and agrees.
-o wide adds the network, the offset and the whole container ID.
Exits 4 when some address is held by no pool.
)"},
        {"pod", R"(Usage: kubectl allot pod [NAME] [-n NS | -A] [--pool-namespace NS] [-o ...]

Every address the pod NAME of namespace NS (-n; default: the context's namespace, else
default) holds in the pools, with its state now. NAMESPACE/NAME is accepted too.
Without NAME: every pod of NS holding an address; with -A, of every namespace (with NAME
and -A: every pod of that name). -o wide adds the network, offset and whole container ID.
Exits 4 when it holds none.
)"},
        {"check", kCheckHelp},
        {"release", kReleaseHelp},
        {"lint",
         R"(Usage: kubectl allot lint FILE|- [--offline] [--pool-namespace NS] [-o table|json|yaml]

Validates NetworkAttachmentDefinition manifests (YAML or JSON, several documents allowed)
or a bare CNI network config / conflist with the plugin's own parser. Reports every value
the plugin refuses (errors, each naming its key), the values it ignores or repairs as
Whereabouts does (warnings),
the pool each range uses, and existing pools whose ranges overlap (unless --offline).
Exits 1 when a config does not parse, 0 otherwise.
)"},
        {"version",
         R"(Usage: kubectl allot version [--client] [--lease-namespace NS] [-o table|wide|json|yaml]

The version and git revision of this kubectl-allot, then, for each node, those of its
allot-gc, as the node's report says (the Lease allot-node-<node> in the Lease namespace,
rewritten at every node sweep; default kube-system, as allot-gc's --lease-namespace) and how
long ago it was written (-o wide: and when). A Node without a report runs no allot-gc (or
one that does not sweep); "unknown" is an allot-gc older than the version in its report.
--client: this program's alone, without the cluster.
)"},
    };
    return help;
}

Result<Format> parseFormat(const std::string& v) {
    static const std::map<std::string, Format> formats = {{"table", Format::Table},
                                                          {"wide", Format::Wide},
                                                          {"json", Format::Json},
                                                          {"yaml", Format::Yaml}};
    auto f = formats.find(v);
    if (f == formats.end())
        return makeError(Errc::InvalidConfig,
                         "--output \"" + v + "\" is not a format: want table, wide, json or yaml");
    return f->second;
}

Result<void> setFlag(Options& o, const std::string& flag, const std::string& v) {
    if (flag == "--kubeconfig")
        o.kubeconfig = v;
    else if (flag == "--context")
        o.context = v;
    else if (flag == "-n" || flag == "--namespace")
        o.podNamespace = v;
    else if (flag == "--pool-namespace")
        o.poolNamespace = v;
    else if (flag == "--pool")
        o.pool = v;
    else if (flag == "--from-report")
        o.fromReport = v;
    else if (flag == "--lease-namespace")
        o.leaseNamespace = v;
    else if (flag == "-o" || flag == "--output") {
        auto f = parseFormat(v);
        if (!f) return f.error();
        o.output = *f;
    } else if (flag == "--leak-grace" || flag == "--request-timeout") {
        auto d = core::parseDuration(v, flag);
        if (!d) return d.error();
        (flag == "--leak-grace" ? o.leakGrace : o.timeout) = *d;
    } else {
        return makeError(Errc::InvalidConfig, "unknown flag " + flag);
    }
    return {};
}

bool takesValue(const std::string& f) {
    static const char* kValued[] = {"--kubeconfig",
                                    "--context",
                                    "-n",
                                    "--namespace",
                                    "-o",
                                    "--output",
                                    "--pool",
                                    "--leak-grace",
                                    "--request-timeout",
                                    "--lease-namespace",
                                    "--pool-namespace",
                                    "--from-report"};
    for (const char* k : kValued)
        if (f == k) return true;
    return false;
}

// Flags without a value; false when `a` is not one.
bool setSwitch(Options& o, const std::string& a) {
    if (a == "-h" || a == "--help")
        o.help = true;
    else if (a == "--force")
        o.force = true;
    else if (a == "--dry-run")
        o.dryRun = true;
    else if (a == "-A" || a == "--all-namespaces")
        o.allNamespaces = true;
    else if (a == "--offline")
        o.offline = true;
    else if (a == "--client")
        o.client = true;
    else
        return false;
    return true;
}

// What each command takes: its arguments, and the pod namespace flags only where it names or
// lists pods (so a script written when -n meant the pools' namespace fails loudly).
Result<void> checkCommand(const Options& o) {
    const std::string& c = o.command;
    const size_t n = o.args.size();
    const bool podScoped = c == "pod" || c == "check";
    if (!podScoped && (!o.podNamespace.empty() || o.allNamespaces))
        return makeError(Errc::InvalidConfig,
                         c + " takes no " +
                             (o.allNamespaces ? "-A/--all-namespaces" : "-n/--namespace") +
                             " (the pods' namespace): the pools' namespace is --pool-namespace");
    if (!o.podNamespace.empty() && o.allNamespaces)
        return makeError(Errc::InvalidConfig, "-n/--namespace and -A/--all-namespaces together");
    if (c != "release" && (o.dryRun || !o.fromReport.empty()))
        return makeError(
            Errc::InvalidConfig,
            std::string(o.dryRun ? "--dry-run" : "--from-report") + " is release's flag");
    if (c == "pools" || c == "check" || c == "version") {
        if (n != 0) return makeError(Errc::InvalidConfig, c + " takes no arguments");
    } else if (c == "who") {
        if (n == 0) return makeError(Errc::InvalidConfig, "who needs at least one IP address");
    } else if (c == "pod") {
        if (n > 1) return makeError(Errc::InvalidConfig, "pod takes at most one pod name");
    } else if (c == "release" && !o.fromReport.empty()) {
        if (n != 0 || !o.pool.empty())
            return makeError(Errc::InvalidConfig,
                             "release --from-report takes no IP and no --pool: the report names "
                             "each pool");
    } else if (n != 1) {
        return makeError(Errc::InvalidConfig, c + " needs exactly one argument");
    }
    return {};
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
        if (setSwitch(o, a)) continue;
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
    if (auto r = checkCommand(o); !r) return r.error();
    return o;
}

}  // namespace allot::cli
