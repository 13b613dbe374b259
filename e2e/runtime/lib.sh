# shellcheck shell=bash
# Helpers to run allot the way a container runtime does: through libcni (cnitool) and
# real main plugins, on simulated nodes made of network namespaces. Shared by
# test/runtime/runtime_test.sh and scripts/demo. Source after e2e/lib.sh (on_exit) and
# once the cluster env (ALLOT_KUBECONFIG, kubectl on PATH) is exported:
#
#   rt_init                         # tools, work dir, cleanup at exit
#   rt_node node-1; rt_node node-2  # a "host" netns each, with lo up and a bridge br0
#   rt_wire node-1 node-2           # link the two br0 bridges (and macvlan parents mv0)
#   rt_proxy_start                  # the API server reachable from inside the hosts
#   rt_net NAME FLAVOR EXT JSON     # write the network config on every node
#   rt_container c1                 # a container netns
#   rt_cni node-1 add NAME c1       # cnitool add NAME /run/netns/<c1> in node-1's host netns
#
# Nothing here touches the machine's root network namespace: every link is made with
# `ip -n` inside a netns this run created, and every netns is deleted at exit. libcni's
# result cache (/var/lib/cni) is per node: an overlay on /var/lib, mounted only inside the
# mount namespace of each `ip netns exec`, so the machine's /var/lib is never written.

RT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RT_ROOT=$(cd "$RT_LIB_DIR/../.." && pwd)
RT_POOL_NS=${RT_POOL_NS:-kube-system}
RT_DEBIAN_PLUGINS=${RT_DEBIAN_PLUGINS:-/usr/lib/cni}

# rt_init [PREFIX]: build (or find) cnitool and the reference plugins, make a work dir and
# the two plugin directories (Debian's and the reference plugins, each with allot), and
# register cleanup. PREFIX (default rt<pid>) starts every netns name of this run.
rt_init() {
  RT_PREFIX=${1:-rt$$}
  RT_TOOLS=$("$RT_LIB_DIR/build-tools") || { echo "rt_init: building the CNI tools failed" >&2; return 1; }
  RT_WORK=$(mktemp -d "${TMPDIR:-/tmp}/allot-runtime.XXXXXX")
  RT_NETNS=()
  RT_NODES=()
  RT_PROXY_PID=
  on_exit rt_cleanup
  local allot=$RT_ROOT/build/plugin/allot i p
  [[ -x "$allot" ]] || { echo "rt_init: $allot missing: run scripts/build" >&2; return 1; }
  mkdir -p "$RT_WORK/bin-debian" "$RT_WORK/bin-ref" "$RT_WORK/paths"
  # A snapshot of the plugin: a rebuild during the run must not pull it from under us.
  for (( i = 0; i < 20; i++ )); do
    cp "$allot" "$RT_WORK/allot" 2>/dev/null &&
      echo '{"cniVersion":"1.1.0"}' | CNI_COMMAND=VERSION "$RT_WORK/allot" >/dev/null 2>&1 && break
    sleep 1
  done
  (( i < 20 )) || { echo "rt_init: cannot run a copy of $allot" >&2; return 1; }
  for p in "$RT_DEBIAN_PLUGINS"/*; do ln -s "$p" "$RT_WORK/bin-debian/"; done
  for p in bridge macvlan host-local loopback; do ln -s "$RT_TOOLS/$p" "$RT_WORK/bin-ref/"; done
  ln -s "$RT_WORK/allot" "$RT_WORK/bin-debian/allot"
  ln -s "$RT_WORK/allot" "$RT_WORK/bin-ref/allot"
  # Keep any flat file on this machine out: the network config says everything.
  # The admin's flat file names the work dir as one a network config may use for its node
  # files (lock_dir, journal_dir, log_file, relay_socket): allot refuses others.
  mkdir -p "$RT_WORK/admin"
  jq -cn --arg w "$RT_WORK" '{node_dirs: [$w]}' >"$RT_WORK/admin/allot.conf"
  export ALLOT_FLAT_FILES=$RT_WORK/admin/allot.conf
}

rt_cleanup() {
  local n
  if [[ -n "${RT_PROXY_PID:-}" ]]; then
    kill "$RT_PROXY_PID" 2>/dev/null
    wait "$RT_PROXY_PID" 2>/dev/null
    RT_PROXY_PID=
  fi
  for n in "${RT_NETNS[@]}"; do ip netns del "$n" 2>/dev/null; done
  RT_NETNS=()
  [[ -n "${RT_WORK:-}" && -d "$RT_WORK" ]] && rm -rf "$RT_WORK"
  return 0
}

rt_ns() { echo "$RT_PREFIX-$1"; }              # the netns of a node or container
rt_node_dir() { echo "$RT_WORK/nodes/$1"; }

# rt_node NODE: the node's "host" netns (lo up, an empty bridge br0), its CNI config dir,
# lock and journal dirs and libcni cache.
rt_node() {
  local node=$1 ns d
  ns=$(rt_ns "$node"); d=$(rt_node_dir "$node")
  mkdir -p "$d/net.d" "$d/locks" "$d/journal" "$d/varlib/upper" "$d/varlib/work"
  ip netns add "$ns" || return 1
  RT_NETNS+=("$ns")
  RT_NODES+=("$node")
  # A set MAC address stays put: otherwise the bridge takes its ports' lowest, which changes
  # as containers come and go, and the bridge plugin's CHECK (which compares it) fails.
  ip -n "$ns" link set lo up &&
    ip -n "$ns" link add br0 type bridge &&
    ip -n "$ns" link set br0 address "$(printf '02:a1:07:00:%02x:01' "${#RT_NODES[@]}")" &&
    ip -n "$ns" link set br0 up
}

# rt_wire NODE1 NODE2: a veth pair w0 joining the two br0 bridges, and a second pair mv0
# (up, unbridged) to serve as each node's macvlan parent: both nodes share one L2 segment.
rt_wire() {
  local a b
  a=$(rt_ns "$1"); b=$(rt_ns "$2")
  ip -n "$a" link add w0 type veth peer name w0 netns "$b" &&
    ip -n "$a" link add mv0 type veth peer name mv0 netns "$b" || return 1
  local ns
  for ns in "$a" "$b"; do
    ip -n "$ns" link set w0 master br0 && ip -n "$ns" link set w0 up && ip -n "$ns" link set mv0 up || return 1
  done
}

# rt_container NAME: a container netns, lo up, IPv6 on without duplicate address detection.
rt_container() {
  local ns
  ns=$(rt_ns "$1")
  ip netns add "$ns" || return 1
  RT_NETNS+=("$ns")
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
    net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null 2>&1
  return 0  # without IPv6 in the kernel only the dual-stack cases fail
}

# rt_container_del NAME: delete a container netns (its interfaces go with it).
rt_container_del() {
  local ns i
  ns=$(rt_ns "$1")
  ip netns del "$ns" 2>/dev/null
  for i in "${!RT_NETNS[@]}"; do [[ "${RT_NETNS[i]}" == "$ns" ]] && unset 'RT_NETNS[i]'; done
  return 0
}

# rt_proxy_start: relay 127.0.0.1:<API server port> inside every node's host netns to the API
# server in the root netns (e2e/runtime/netns-proxy), so that allot, run by cnitool inside a
# host netns, reaches it with the unchanged kubeconfig. Call after the last rt_node.
rt_proxy_start() {
  local server hostport nss=() n
  server=$(kubectl config view --kubeconfig "$ALLOT_KUBECONFIG" --minify -o jsonpath='{.clusters[0].cluster.server}')
  hostport=${server#https://}; hostport=${hostport%%/*}
  for n in "${RT_NODES[@]}"; do nss+=("$(rt_ns "$n")"); done
  # The coprocess sets RT_PROXY_PID (rt_cleanup kills it).
  coproc RT_PROXY { exec python3 "$RT_LIB_DIR/netns-proxy" "$hostport" "${nss[@]}" 2>&1; }
  local line
  if ! read -r -t 10 line <&"${RT_PROXY[0]}" || [[ "$line" != ready ]]; then
    echo "rt_proxy_start: netns-proxy did not start: $line" >&2
    return 1
  fi
}

# rt_net NAME FLAVOR EXT JSON: write JSON as NAME.EXT (conf or conflist) in every node's
# config dir, with each allot ipam section completed for that node (kubeconfig, lock_dir,
# journal_dir, log_file). FLAVOR picks the main plugins: debian (/usr/lib/cni, CNI up to
# 1.0.0) or ref (the reference plugins built from Go, CNI 1.1.0).
rt_net() {
  local name=$1 flavor=$2 ext=$3 json=$4 node d
  case $flavor in
    debian) echo "$RT_WORK/bin-debian" >"$RT_WORK/paths/$name" ;;
    ref) echo "$RT_WORK/bin-ref" >"$RT_WORK/paths/$name" ;;
    *) echo "rt_net: flavor $flavor is neither debian nor ref" >&2; return 1 ;;
  esac
  for node in "${RT_NODES[@]}"; do
    d=$(rt_node_dir "$node")
    jq --arg kc "$ALLOT_KUBECONFIG" --arg d "$d" '
      walk(if type == "object" and .type == "allot" and (has("range") or has("ipRanges"))
           then {kubernetes: {kubeconfig: $kc}, lock_dir: ($d + "/locks"), journal_dir: ($d + "/journal"),
                 log_file: ($d + "/allot.log"), log_level: "debug"} + .
           else . end)' <<<"$json" >"$d/net.d/$name.$ext" || return 1
  done
}

# rt_net_json NODE NAME: the network config as written on NODE.
rt_net_json() { cat "$(rt_node_dir "$1")/net.d/$2".conf*; }

# rt_cid CONTAINER: the container ID cnitool uses for it (a hash of the netns path).
rt_cid() { printf 'cnitool-%s' "$(printf '%s' "/run/netns/$(rt_ns "$1")" | sha512sum | cut -c1-20)"; }

# rt_cni NODE COMMAND NET CONTAINER [IFNAME]: run `cnitool COMMAND NET <netns>` on NODE: inside
# its host netns, with its config dir and libcni cache, NODENAME=NODE. Pod identity goes in
# CNI_ARGS: $RT_CNI_ARGS if set, else K8S_POD_NAMESPACE=$RT_POD_NS (rt), K8S_POD_NAME=CONTAINER.
# Output: cnitool's stdout and stderr.
rt_cni() {
  local node=$1 cmd=$2 net=$3 ctr=$4 ifname=${5:-eth0} d
  d=$(rt_node_dir "$node")
  local args=${RT_CNI_ARGS:-"IgnoreUnknown=1;K8S_POD_NAMESPACE=${RT_POD_NS:-rt};K8S_POD_NAME=$ctr"}
  rt_in_node "$node" env CNI_PATH="$(cat "$RT_WORK/paths/$net")" NETCONFPATH="$d/net.d" NODENAME="$node" \
    CNI_IFNAME="$ifname" CNI_ARGS="$args" "$RT_TOOLS/cnitool" "$cmd" "$net" "/run/netns/$(rt_ns "$ctr")"
}

# rt_cni_gc NODE NET [--cache-dir DIR] [CONTAINERID/IFNAME ...]: libcni GC (e2e/runtime/cmd/cni-gc)
# on NODE with the given valid attachments. RT_NETCONFPATH overrides the node's config dir.
rt_cni_gc() {
  local node=$1 net=$2 d; shift 2
  d=$(rt_node_dir "$node")
  local cache=()
  if [[ "${1:-}" == --cache-dir ]]; then cache=("$1" "$2"); shift 2; fi
  rt_in_node "$node" env CNI_PATH="$(cat "$RT_WORK/paths/$net")" NETCONFPATH="${RT_NETCONFPATH:-$d/net.d}" \
    NODENAME="$node" "$RT_TOOLS/cni-gc" "${cache[@]}" "$net" "$@"
}

# rt_in_node NODE CMD...: run CMD in NODE's host netns with the node's libcni cache mounted
# (an overlay on /var/lib private to this command). One command per node at a time.
rt_in_node() {
  local node=$1 d; shift
  d=$(rt_node_dir "$node")
  # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
  flock "$d/cni.lock" ip netns exec "$(rt_ns "$node")" sh -c '
    mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$0/upper,workdir=$0/work" /var/lib ||
      { echo "rt_in_node: cannot mount the node'"'"'s libcni cache (an overlay on /var/lib)" >&2; exit 125; }
    exec "$@"' "$d/varlib" "$@"
}

# rt_addrs CONTAINER [IFNAME]: the global addresses on the interface, "ip/len" one a line.
rt_addrs() {
  ip -n "$(rt_ns "$1")" -o addr show dev "${2:-eth0}" scope global 2>/dev/null | awk '{print $4}'
}

# rt_pools_json: every IPPool in the pool namespace (as the admin sees them).
rt_pools_json() { kubectl get ippools.whereabouts.cni.cncf.io -n "$RT_POOL_NS" -o json; }

# rt_allocs RANGE: the allocations of the pool of RANGE, one "ip id podref ifname node" a line,
# sorted by IP; nothing when the pool does not exist.
rt_allocs() {
  rt_pools_json | jq -c --arg r "$1" '.items[] | select(.spec.range == $r)' | python3 -c '
import ipaddress, json, sys
for line in sys.stdin:
    p = json.loads(line)
    net = ipaddress.ip_network(p["spec"]["range"], strict=False)
    rows = []
    for off, a in (p["spec"].get("allocations") or {}).items():
        rows.append((int(off), str(net.network_address + int(off)), a.get("id", "-"), a.get("podref", "-"),
                     a.get("ifname", "-"), a.get("node", "-")))
    for r in sorted(rows):
        print(*r[1:])
'
}

# rt_delete_pools RANGE...: delete the pools of these ranges and every reservation (test cleanup).
rt_delete_pools() {
  local r names
  for r in "$@"; do
    names=$(rt_pools_json | jq -r --arg r "$r" '.items[] | select(.spec.range == $r) | .metadata.name')
    # shellcheck disable=SC2086
    [[ -n "$names" ]] && kubectl delete ippools.whereabouts.cni.cncf.io -n "$RT_POOL_NS" $names >/dev/null 2>&1
  done
  return 0
}
