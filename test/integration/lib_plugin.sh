# shellcheck shell=bash
# Helpers for driving build/plugin/allot the way a container runtime does, against the real
# API server of e2e/cluster. Source after test/lib.sh and cluster_start:
#
#   source "$root/test/lib.sh"; cluster_start
#   source "$root/test/integration/lib_plugin.sh"; plugin_init
#
# Every helper that runs the plugin sets CNI_RC (exit status), CNI_OUT (stdout: the CNI
# result or error JSON) and CNI_ERR (stderr: the log lines).

ALLOT_PLUGIN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ALLOT_BIN=${ALLOT_BIN:-$ALLOT_PLUGIN_ROOT/build/plugin/allot}
# shellcheck disable=SC2034  # used by the scripts that source this
ALLOT_USER="system:serviceaccount:kube-system:allot"
POD_NS=itest

# plugin_init: a work dir removed at exit; a run id that prefixes every name this run makes
# (network names, netns and veth names); a pool namespace of its own (POOL_NS), so that one
# request per kind cleans up at exit. Cases that need the default namespace (the kubeconfig's,
# kube-system) set `local POOL_NS=kube-system`; their objects carry the run id and are deleted
# by name.
plugin_init() {
  [[ -x "$ALLOT_BIN" ]] || { echo "plugin binary $ALLOT_BIN missing: run scripts/build" >&2; return 1; }
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/allot-itest.XXXXXX")
  RUN=it$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
  export WORK RUN
  on_exit "rm -rf '$WORK'"
  # Run a snapshot of the binary: a rebuild during the run must not pull it from under us.
  local i
  for (( i = 0; i < 20; i++ )); do  # a link in progress leaves a partial file: try again
    cp "$ALLOT_BIN" "$WORK/allot" 2>/dev/null &&
      echo '{"cniVersion":"1.1.0"}' | CNI_COMMAND=VERSION "$WORK/allot" >/dev/null 2>&1 && break
    sleep 1
  done
  (( i < 20 )) || { echo "cannot run a copy of $ALLOT_BIN" >&2; return 1; }
  ALLOT_BIN=$WORK/allot
  # Keep any flat file on this machine out of the tests: the network config says everything,
  # except where a network config may put node files: the admin's flat file names $WORK
  # (node_dirs), as a node's admin names directories beyond allot's own.
  mkdir -p "$WORK/admin"
  jq -cn --arg w "$WORK" '{node_dirs: [$w]}' >"$WORK/admin/allot.conf"
  export ALLOT_FLAT_FILES=$WORK/admin/allot.conf
  RUN_NS=allot-$RUN
  POOL_NS=$RUN_NS
  on_exit plugin_cleanup_objects
  kubectl create namespace "$RUN_NS" >/dev/null || return 1
}

# extra_objects: kube-system objects made without this run's prefix (interop), to delete.
extra_objects=()
plugin_cleanup_objects() {
  local kind names o
  for kind in ippools overlappingrangeipreservations; do
    # deletecollection: one request however many objects the run left.
    kubectl delete --raw "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/$RUN_NS/$kind" >/dev/null 2>&1
    names=$(kubectl get "$kind" -n kube-system -o json 2>/dev/null |
      jq -r --arg p "$RUN-" '.items[].metadata.name | select(startswith($p))')
    # shellcheck disable=SC2086
    [[ -n "$names" ]] && kubectl delete "$kind" -n kube-system --wait=false $names >/dev/null 2>&1
  done
  for o in "${extra_objects[@]}"; do
    kubectl delete -n kube-system --ignore-not-found --wait=false "$o" >/dev/null 2>&1
  done
  # No namespace controller runs: finalize the (now empty) namespace by hand.
  kubectl delete namespace "$RUN_NS" --wait=false >/dev/null 2>&1
  kubectl get namespace "$RUN_NS" -o json 2>/dev/null | jq '.spec.finalizers = []' |
    kubectl replace --raw "/api/v1/namespaces/$RUN_NS/finalize" -f - >/dev/null 2>&1
  return 0
}

# node_dir NODE: the per-node runtime dir (lock_dir and journal_dir live under it).
node_dir() { echo "$WORK/nodes/$1"; }

# netconf NODE IPAM_JSON [TOP_JSON]: a network config as the runtime hands it to the plugin on
# NODE. IPAM_JSON is merged into the ipam section (range, ipRanges, network_name, ...), TOP_JSON
# into the top level (runtimeConfig, args, prevResult, name, cniVersion, ...). The network
# "name" defaults to the ipam network_name. ipam.namespace is POOL_NS, left out (the default)
# when POOL_NS is kube-system.
netconf() {
  local node=$1 ipam=$2 top=${3:-'{}'} d
  d=$(node_dir "$node")
  jq -cn --arg kc "${KUBECONFIG_FOR_PLUGIN:-$ALLOT_KUBECONFIG}" --arg lock "$d/lock" --arg journal "$d/journal" \
    --arg ns "$POOL_NS" --argjson ipam "$ipam" --argjson top "$top" '
    {cniVersion: "1.1.0", name: ($ipam.network_name // "net"), type: "macvlan",
     ipam: ({type: "allot", kubernetes: {kubeconfig: $kc}, lock_dir: $lock, journal_dir: $journal,
             relay_socket: ($lock + "/no-relay.sock"), deadline_ms: 5000}
            + (if $ns == "kube-system" then {} else {namespace: $ns} end) + $ipam)} + $top'
}

# cni VERB NODE CONTAINER CONF [POD]: run the plugin. Env knobs: IFNAME (net1), NETNS
# (a path; default a name that does not exist, which ADD and DEL never enter), POD_UID
# (uid-POD), EXTRA_ARGS (appended to CNI_ARGS, e.g. ";IP=10.0.0.5").
cni() {
  local verb=$1 node=$2 ctr=$3 conf=$4 pod=${5:-pod-$3}
  local err
  err=$(mktemp "$WORK/stderr.XXXXXX")
  CNI_OUT=$(printf '%s' "$conf" | env CNI_COMMAND="$verb" CNI_CONTAINERID="$ctr" \
    CNI_NETNS="${NETNS:-/var/run/netns/allot-itest-none}" CNI_IFNAME="${IFNAME:-net1}" \
    CNI_PATH=/opt/cni/bin NODENAME="$node" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$POD_NS;K8S_POD_NAME=$pod;K8S_POD_UID=${POD_UID:-uid-$pod}${EXTRA_ARGS:-}" \
    "$ALLOT_BIN" 2>"$err")
  CNI_RC=$?
  CNI_ERR=$(<"$err")
  rm -f "$err"
  return 0
}

# cni_show: the last call, for failure details.
cni_show() { echo "rc=$CNI_RC stdout=$CNI_OUT"; [[ -n "$CNI_ERR" ]] && echo "stderr: $CNI_ERR" | tail -n 5; return 0; }

# Expectations on the last call; each prints what happened when it fails.
cni_ok() { [[ "$CNI_RC" == 0 ]] || { echo "${1:-call}: expected success"; cni_show; return 1; }; }
cni_code() {  # cni_code WANT [WHAT]
  local code
  code=$(jq -r '.code // empty' <<<"$CNI_OUT" 2>/dev/null)
  [[ "$CNI_RC" != 0 && "$code" == "$1" ]] || { echo "${2:-call}: expected CNI error code $1"; cni_show; return 1; }
}
cni_msg() {  # cni_msg REGEX: the error's msg matches (extended regex, case-insensitive)
  local m
  m=$(jq -r '.msg // empty' <<<"$CNI_OUT" 2>/dev/null)
  grep -Eqi -- "$1" <<<"$m" || { echo "error message does not match /$1/: $m"; return 1; }
}

# result_ips [JSON]: the bare addresses of a CNI result (last call's stdout by default).
result_ips() { jq -r '.ips[]?.address | sub("/.*"; "")' <<<"${1:-$CNI_OUT}"; }
# result_ip [JSON]: the single address of a one-range result.
result_ip() { result_ips "$@" | head -n 1; }

# add_ok NODE CTR CONF [POD]: ADD that must succeed; prints the addresses, one a line.
add_ok() {
  cni ADD "$@"
  cni_ok "ADD $2" || return 1
  result_ips
}

# ------------------------------------------------------------------ objects --

# pool_json POOL: the IPPool as JSON ("" when absent).
pool_json() { kubectl get ippool -n "$POOL_NS" "$1" -o json 2>/dev/null; }
# pool_allocs POOL: its spec.allocations ({} when absent or empty).
pool_allocs() { pool_json "$1" | jq -c '.spec.allocations // {}' 2>/dev/null || echo '{}'; }
pool_count() { pool_allocs "$1" | jq 'length'; }
pool_rv() { pool_json "$1" | jq -r '.metadata.resourceVersion'; }
# pool_ips POOL: the allocated addresses (offset + network address), sorted; IPv4 pools only.
pool_ips() {
  pool_json "$1" | jq -r '
    def ip2n: split(".") | map(tonumber) | .[0]*16777216 + .[1]*65536 + .[2]*256 + .[3];
    def n2ip: [(./16777216|floor)%256, (./65536|floor)%256, (./256|floor)%256, .%256] | map(tostring) | join(".");
    (.spec.range | split("/")[0] | ip2n) as $net
    | (.spec.allocations // {}) | keys[] | (tonumber + $net) | n2ip' | sort -V
}
# pool_holder POOL OFFSET: the container id at OFFSET ("" when free).
pool_holder() { pool_allocs "$1" | jq -r --arg o "$2" '.[$o].id // empty'; }

res_exists() { kubectl get overlappingrangeipreservation -n "$POOL_NS" "$1" >/dev/null 2>&1; }
res_json() { kubectl get overlappingrangeipreservation -n "$POOL_NS" "$1" -o json 2>/dev/null; }
# res_names_with PREFIX: reservation names starting with PREFIX.
res_names_with() {
  kubectl get overlappingrangeipreservations -n "$POOL_NS" -o json |
    jq -r --arg p "$1" '.items[].metadata.name | select(startswith($p))'
}

# ------------------------------------------------------------------- netns --

# netns_with_iface NAME IFNAME: a network namespace NAME holding IFNAME, one end of a veth pair
# made inside that namespace (both ends live there: the machine's root namespace is never
# touched). Deleting the namespace deletes the pair; it is removed at exit.
netns_with_iface() {
  local ns=$1 ifname=$2 peer
  peer="p${RUN}$(( ${#netns_made[@]} ))"
  peer=${peer:0:15}
  ip netns add "$ns" || return 1
  netns_made+=("$ns")
  on_exit "ip netns del '$ns' 2>/dev/null"
  ip -n "$ns" link add "$ifname" type veth peer name "$peer" || return 1
  ip -n "$ns" link set "$peer" up || return 1
  ip -n "$ns" link set "$ifname" up || return 1
}
netns_made=()

# relay_start NAME SOCK [EXTRA allot-gc FLAGS...]: allot-gc on node NAME serving the node relay at
# SOCK (journal replay off unless a flag says otherwise); RELAY_PID is its pid, killed at exit.
# Waits for the socket.
relay_start() {
  local name=$1 sock=$2 i
  shift 2
  mkdir -p "$(dirname "$sock")" "$WORK/gc-$name"
  # Started from a subshell, so that a later `wait` (for plugin runs) does not wait for it.
  ( "$ALLOT_PLUGIN_ROOT/build/gc-sidecar/allot-gc" --node-name="$name" --kubeconfig="$ALLOT_KUBECONFIG" \
      --namespace="$POOL_NS" --listen=127.0.0.1:0 --role=agent --journal-dir= \
      --relay-socket="$sock" "$@" >"$WORK/gc-$name/gc.log" 2>&1 &
    echo $! >"$WORK/gc-$name/gc.pid" )
  RELAY_PID=$(<"$WORK/gc-$name/gc.pid")
  on_exit "kill $RELAY_PID 2>/dev/null"
  for (( i = 0; i < 200; i++ )); do [[ -S "$sock" ]] && return 0; sleep 0.1; done
  echo "allot-gc $name made no relay socket:"; tail -n 5 "$WORK/gc-$name/gc.log"
  return 1
}
