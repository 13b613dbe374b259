#!/usr/bin/env bash
# allot on real nodes (e2e/node/cluster up first): kubelet, containerd and Multus drive the
# plugin that deploy/'s DaemonSet installed, and allot-gc runs as that DaemonSet's pods.
# Prints one line per scenario, `ok - N name` or `not ok - N name: why`, then a summary.
#
#   test/node/node_test.sh [SCENARIO...]     all by default: 1 2 3 4 8 9 10 6 7 11 15 16 17 18 19
#                                            20 12 21 13 14 5 (5 removes a node, so it runs last)
#
# Environment: ALLOT_NODE_DIR (the harness's state), ALLOT_NODE_PODS (scenario 1's pod
# count, default 40), ALLOT_NODE_TIMEOUT (seconds to wait for pods, default 300).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
harness="$root/e2e/node/cluster"
eval "$("$harness" env)" || { echo "not ok - the harness is up (run: e2e/node/cluster up)"; exit 1; }
nodes=${ALLOT_NODES:-2}
npods=${ALLOT_NODE_PODS:-40}
timeout=${ALLOT_NODE_TIMEOUT:-300}
ns=allot-node-test
nad='node-test-net'
range=10.77.0.0/24
pool=10.77.0.0-24   # the IPPool name allot (and Whereabouts) derive from the range
poolns=kube-system  # deploy/daemonset.yaml: the DaemonSet's namespace

passed=0
failed=0
results=()
note() { echo "# $*"; }
pass() { results+=("ok - $1"); echo "ok - $1"; passed=$((passed + 1)); }
fail() { results+=("not ok - $1: $2"); echo "not ok - $1: $2"; failed=$((failed + 1)); }

# -------------------------------------------------------------- helpers ---

# apply_nad TYPE: the scenario network $nad on $range with IPAM TYPE (allot or whereabouts).
# Whereabouts runs with an identity of its own, as it would in a cluster migrating from it (it
# needs Leases, which allot's plugin identity lacks): here the node's admin kubeconfig that
# Multus uses; both keep pools in kube-system.
apply_nad() {
  local kubeconfig=/etc/cni/net.d/allot.d/allot.kubeconfig
  [[ "$1" == whereabouts ]] && kubeconfig=/etc/cni/net.d/multus.d/multus.kubeconfig
  nad_apply "$nad" "$range" "" "" "$1" "$kubeconfig"
}

# pod_yaml NAME LABEL [NODE]: a busybox pod on the secondary network.
pod_yaml() { net_pod_yaml "$1" "$2" "${3:-}" "$nad"; }

# make_pods LABEL COUNT [NODE]: create COUNT pods at once, named LABEL-1 ... LABEL-COUNT.
make_pods() {
  local i
  for ((i = 1; i <= $2; i++)); do pod_yaml "$1-$i" "$1" "${3:-}"; done | kubectl apply -f - >/dev/null
}

# wait_running LABEL COUNT: all COUNT pods with this label Running (within $timeout).
wait_running() {
  local deadline=$(( SECONDS + timeout )) n
  while :; do
    n=$(kubectl -n "$ns" get pods -l "scenario=$1" -o json |
        jq '[.items[] | select(.status.phase == "Running" and .metadata.deletionTimestamp == null)] | length')
    (( n == $2 )) && return 0
    (( SECONDS < deadline )) || { note "$n of $2 pods Running after ${timeout}s"; kubectl -n "$ns" get pods -l "scenario=$1" -o wide | tail -n 5 | sed 's/^/#   /'; return 1; }
    sleep 2
  done
}

# pod_ip POD: the IPv4 address on net1, read inside the pod.
pod_ip() {
  kubectl -n "$ns" exec "$1" -- ip -4 -o addr show dev net1 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }'
}

# status_ip POD: the address Multus's network-status annotation gives for net1.
status_ip() {
  kubectl -n "$ns" get pod "$1" -o json |
    jq -r '.metadata.annotations["k8s.v1.cni.cncf.io/network-status"] // "[]" | fromjson |
           .[] | select(.interface == "net1") | .ips[0] // empty' | sed 's|/.*||'
}

# pool_allocs: "offset containerID podref" per allocation in the pool, sorted.
pool_allocs() {
  kubectl -n "$poolns" get ippools.whereabouts.cni.cncf.io "$pool" -o json 2>/dev/null |
    jq -r '.spec.allocations // {} | to_entries[] | "\(.key) \(.value.id) \(.value.podref)"' | sort -n
}
pool_count() { pool_allocs | wc -l; }
# held POD: the pool has an allocation for $ns/POD.
held() { pool_allocs | awk -v r="$ns/$1" '$3 == r { f = 1 } END { exit !f }'; }

# wait_pool_count N [SECONDS]: the pool holds N allocations.
wait_pool_count() {
  local deadline=$(( SECONDS + ${2:-120} )) n
  while :; do
    n=$(pool_count)
    (( n == $1 )) && return 0
    (( SECONDS < deadline )) || { note "pool holds $n allocations, want $1"; return 1; }
    sleep 2
  done
}

# check_pods LABEL: every pod's net1 address is in the range, distinct, matches the
# network-status annotation and a pool allocation for that pod. Prints the pod->ip lines.
check_pods() {
  local p ip sip bad=0
  local -A seen=()
  : >"$work/$1.ips"
  for p in $(kubectl -n "$ns" get pods -l "scenario=$1" -o jsonpath='{.items[*].metadata.name}'); do
    ip=$(pod_ip "$p")
    sip=$(status_ip "$p")
    if [[ ! "$ip" =~ ^10\.77\.0\.[0-9]+$ ]]; then note "$p: net1 has no address in $range ('$ip')"; bad=1; continue; fi
    if [[ "$sip" != "$ip" ]]; then note "$p: network-status says '$sip', net1 has $ip"; bad=1; fi
    if [[ -n "${seen[$ip]:-}" ]]; then note "$p and ${seen[$ip]} both have $ip"; bad=1; fi
    seen[$ip]=$p
    if ! pool_allocs | awk -v o="${ip##*.}" -v r="$ns/$p" '$1 == o && $3 == r { f = 1 } END { exit !f }'; then
      note "$p: no pool allocation of $ip for $ns/$p"; bad=1
    fi
    echo "$p $ip" >>"$work/$1.ips"
  done
  return $bad
}

delete_label() { kubectl -n "$ns" delete pods -l "scenario=$1" --wait=true --timeout="${timeout}s" >/dev/null 2>&1; }

# nad_apply NAME RANGE IPAM_EXTRA TOP_EXTRA [TYPE] [KUBECONFIG]: a NetworkAttachmentDefinition
# NAME (macvlan on each node's eth0) with IPAM TYPE (default allot, with the plugin's node
# kubeconfig; "none": no kubernetes key, the flat file's) on RANGE; IPAM_EXTRA and TOP_EXTRA are
# JSON members, each with a leading comma, for the ipam section and the top level. Its pool is
# named after RANGE, in kube-system.
nad_apply() {
  local type=${5:-allot} kubeconfig=${6:-/etc/cni/net.d/allot.d/allot.kubeconfig} k8s
  k8s=", \"kubernetes\": {\"kubeconfig\": \"$kubeconfig\"}"
  [[ $kubeconfig == none ]] && k8s=
  kubectl apply -f - >/dev/null <<EOF
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: $1, namespace: $ns}
spec:
  config: |
    {"cniVersion": "1.0.0", "name": "$1", "type": "macvlan", "master": "eth0", "mode": "bridge"$4,
     "ipam": {"type": "$type", "range": "$2"$k8s$3}}
EOF
}

# apply_sts NAME LABEL REPLICAS NETWORK: a StatefulSet of busybox pods on NETWORK.
apply_sts() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: $1, namespace: $ns}
spec:
  serviceName: $1
  replicas: $3
  selector: {matchLabels: {scenario: $2}}
  template:
    metadata:
      labels: {scenario: $2}
      annotations: {k8s.v1.cni.cncf.io/networks: $4}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: allot.local/busybox:1, imagePullPolicy: Never, command: ["sleep", "100000"]}
EOF
}

# recreate_member POD LABEL COUNT: delete a StatefulSet's POD and wait (within $timeout) until
# the controller has re-created it (another UID) and all COUNT pods with LABEL are Running.
recreate_member() {
  local uid newuid deadline=$(( SECONDS + timeout ))
  uid=$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.uid}')
  kubectl -n "$ns" delete pod "$1" --wait=true >/dev/null
  until newuid=$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null) &&
        [[ -n "$newuid" && "$newuid" != "$uid" ]] && wait_running "$2" "$3"; do
    (( SECONDS < deadline )) || return 1
    sleep 2
  done
}

# net_pod_yaml NAME LABEL NODE NETWORKS: a busybox pod on NODE ("" = any) whose networks
# annotation is NETWORKS (a JSON list of network-selection elements).
net_pod_yaml() {
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  labels: {scenario: "$2"}
  annotations:
    k8s.v1.cni.cncf.io/networks: '$4'
spec:
  terminationGracePeriodSeconds: 1
  ${3:+nodeSelector: {kubernetes.io/hostname: $3\}}
  containers:
  - name: c
    image: allot.local/busybox:1
    imagePullPolicy: Never
    command: ["sleep", "100000"]
EOF
}

# allocs POOL: the pool's allocations as one JSON object ({} when it has none or is missing).
allocs() {
  local j
  j=$(kubectl -n "$poolns" get ippools.whereabouts.cni.cncf.io "$1" -o json 2>/dev/null) || { echo '{}'; return; }
  jq -c '.spec.allocations // {}' <<<"$j"
}
# holds POOL PODNAME: POOL has an allocation for $ns/PODNAME (prints its offset).
holds() { allocs "$1" | jq -er --arg r "$ns/$2" 'to_entries[] | select(.value.podref == $r) | .key'; }
# holds_offset POOL OFFSET: POOL has an allocation at OFFSET.
holds_offset() { allocs "$1" | jq -e --arg o "$2" 'has($o)' >/dev/null; }

# wait_for SECONDS CMD...: CMD succeeds within SECONDS.
wait_for() {
  local deadline=$(( SECONDS + $1 ))
  shift
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || return 1
    sleep 2
  done
}
not() { ! "$@"; }

# gc_mode fast|default [no-cri]: the controller's repair loop and the node agents, rolled out when it
# changes: fast is a pass every 2 s, a leak released on its second pass with no grace, and a
# node sweep every 2 s (the deletion scenarios' ownership rules show in seconds); default is
# deploy/'s (60 s, 3 passes, 5 min; a sweep every 60 s). no-cri: no container runtime is asked
# (--cri-socket=none), the namespace probe alone decides. Both also reclaim for the scenarios'
# IPAM wrappers (slow_ipam), and wait 30 s, not 150 s, for an ADD that may still run
# (--add-in-flight-bound): the harness's ADDs take seconds (the slowest, scenario 16's, 5 s), and
# the deletion scenarios free a force-deleted pod's address within a minute of its ADD.
gc_mode() {
  local types="ALLOT_GC_IPAM_TYPES=allot,whereabouts,allot-slow-add,allot-slow-del"
  # The controller's passes, and the node agents' sweep and proofs.
  local cenv=(ALLOT_GC_REPAIR_INTERVAL- ALLOT_GC_RESYNC_INTERVAL- ALLOT_GC_LEAK_PASSES- ALLOT_GC_LEAK_GRACE- "$types")
  local env=(ALLOT_GC_NODE_SWEEP_INTERVAL- "$types" ALLOT_GC_ADD_IN_FLIGHT_BOUND=30s)
  if [[ "$1" == fast ]]; then
    cenv=(ALLOT_GC_REPAIR_INTERVAL=2s ALLOT_GC_RESYNC_INTERVAL=2s ALLOT_GC_LEAK_PASSES=2 ALLOT_GC_LEAK_GRACE=0s "$types")
    env=(ALLOT_GC_NODE_SWEEP_INTERVAL=2s "$types" ALLOT_GC_ADD_IN_FLIGHT_BOUND=30s)
  fi
  if [[ "${2:-}" == no-cri ]]; then env+=(ALLOT_GC_CRI_SOCKET=none)
  else env+=(ALLOT_GC_CRI_SOCKET=/run/allot-cri/containerd.sock); fi
  kubectl -n kube-system set env ds/allot -c allot-gc "${env[@]}" >/dev/null &&
    kubectl -n kube-system set env deployment/allot-controller "${cenv[@]}" >/dev/null &&
    kubectl -n kube-system rollout status ds/allot --timeout=180s >/dev/null &&
    kubectl -n kube-system rollout status deployment/allot-controller --timeout=180s >/dev/null
}

# repair_passes: "repair pass:" lines in the controllers' logs on every node (only the leader runs
# passes), read from the container runtime's log files on the node: `kubectl logs` goes through
# the node's kubelet, so it cannot read a leader whose node's kubelet is stopped (scenario 11).
repair_passes() {
  local n=0 i c
  for ((i = 1; i <= nodes; i++)); do
    c=$("$harness" exec "node-$i" sh -c 'cat /var/log/pods/kube-system_allot-controller-*/allot-controller/*.log 2>/dev/null | grep -c "repair pass:"')
    n=$(( n + ${c:-0} ))
  done
  echo "$n"
}
# passes_since N K: at least K passes logged since the count was N.
passes_since() { (( $(repair_passes) >= $1 + $2 )); }

# -------------------------------------------------------------- scenarios ---

s1() {
  local name="1 $npods pods created together reach Running, each net1 a distinct pool address named by network-status"
  make_pods s1 "$npods"
  wait_running s1 "$npods" || { fail "$name" "pods not Running"; return; }
  check_pods s1 || { fail "$name" "address checks failed (see notes)"; return; }
  local n nodes_used
  n=$(pool_count)
  nodes_used=$(kubectl -n "$ns" get pods -l scenario=s1 -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort -u | wc -l)
  (( n == npods )) || { fail "$name" "pool holds $n allocations for $npods pods"; return; }
  pass "$name ($nodes_used nodes, pool $n allocations)"
}

s2() {
  local name="2 normal deletion: the pool returns to empty through kubelet's CNI DEL"
  delete_label s1 || { fail "$name" "kubectl delete did not finish"; return; }
  wait_pool_count 0 60 || { fail "$name" "pool not empty"; return; }
  pass "$name"
}

# s3: kubelet stops on a node; two of its four pods lose their sandbox without a CNI DEL (a
# node crash or a runtime that lost its state), the other two keep running; all four are
# force-deleted. allot-gc must free the two dead sandboxes' addresses (no namespace holds them)
# and keep the two live ones (their namespaces still carry them). New pods on the other node
# may take the freed addresses. When kubelet returns it tears the four sandboxes down (CNI
# DEL through Multus): the live ones' addresses come back, the dead ones' late DEL changes
# nothing (their container IDs no longer own anything), and the new pods keep theirs.
s3() {
  local name="3 force deletion while kubelet is stopped: allot-gc frees only dead sandboxes' addresses; kubelet's late DEL is harmless"
  local node=node-$nodes other=node-1
  (( nodes > 1 )) || other=$node
  # With the default repair loop (5 min grace), only the deletion path decides within the test.
  gc_mode default || { fail "$name" "allot-gc with deploy/'s settings did not roll out"; return; }
  make_pods s3 4 "$node"
  wait_running s3 4 || { fail "$name" "pods not Running"; return; }
  check_pods s3 || { fail "$name" "address checks failed"; return; }
  local live=() p ip
  local -A sid_of=() ip_of=()
  while read -r p ip; do
    ip_of[$p]=$ip
    sid_of[$p]=$(pool_allocs | awk -v o="${ip##*.}" '$1 == o { print $2 }')
  done <"$work/s3.ips"
  live=(s3-3 s3-4)
  "$harness" kubelet-stop "$node" || { fail "$name" "could not stop kubelet on $node"; return; }
  local undo="$harness kubelet-start $node"
  if ! "$harness" sandbox-kill "$node" "${sid_of[s3-1]}" "${sid_of[s3-2]}"; then
    $undo; fail "$name" "could not kill the sandboxes of s3-1 s3-2"; return
  fi
  kubectl -n "$ns" delete pods -l scenario=s3 --grace-period=0 --force >/dev/null 2>&1
  local deadline=$(( SECONDS + 60 ))
  until ! held s3-1 && ! held s3-2; do
    (( SECONDS < deadline )) || { $undo; fail "$name" "allot-gc did not free the dead sandboxes' addresses in 60s"; return; }
    sleep 2
  done
  sleep 10  # allot-gc has seen all four deletions by now
  for p in "${live[@]}"; do
    held "$p" || { $undo; fail "$name" "allot-gc freed $p's ${ip_of[$p]} while its sandbox still holds it"; return; }
  done
  make_pods s3b 2 "$other"
  if ! wait_running s3b 2 || ! check_pods s3b; then $undo; fail "$name" "new pods on $other"; return; fi
  if awk '{print $2}' "$work/s3b.ips" | grep -qxF -e "${ip_of[s3-3]}" -e "${ip_of[s3-4]}"; then
    $undo; fail "$name" "a new pod got the address of a sandbox that still runs"; return
  fi
  local before
  before=$(pool_allocs | grep -v "$ns/s3-")
  $undo
  # kubelet finds the four sandboxes of pods the API no longer has and stops them.
  deadline=$(( SECONDS + 120 ))
  until ! held s3-3 && ! held s3-4; do
    (( SECONDS < deadline )) || { fail "$name" "kubelet's DEL did not free the live sandboxes' addresses in 120s"; return; }
    sleep 2
  done
  sleep 10
  local after
  after=$(pool_allocs)
  if [[ "$before" != "$after" ]]; then
    note "pool before kubelet returned (less the s3 pods):"
    # shellcheck disable=SC2001 # a prefix on every line
    sed 's/^/#   /' <<<"$before"
    note "after:"
    # shellcheck disable=SC2001
    sed 's/^/#   /' <<<"$after"
    fail "$name" "kubelet's late DEL changed other pods' allocations"; return
  fi
  check_pods s3b || { fail "$name" "new pods' addresses changed"; return; }
  local reused
  reused=$(awk '{print $2}' "$work/s3b.ips" | grep -cxF -e "${ip_of[s3-1]}" -e "${ip_of[s3-2]}")
  pass "$name (allot-gc freed ${ip_of[s3-1]} ${ip_of[s3-2]}, kept ${ip_of[s3-3]} ${ip_of[s3-4]} until kubelet's DEL; $reused re-used by new pods, intact)"
  delete_label s3b
}

s4() {
  local name="4 a StatefulSet pod deleted and re-created keeps a correct address"
  apply_sts web s4 3 "$nad"
  wait_running s4 3 || { fail "$name" "StatefulSet pods not Running"; return; }
  check_pods s4 || { fail "$name" "address checks failed"; return; }
  local old new
  old=$(awk '$1 == "web-0" {print $2}' "$work/s4.ips")
  recreate_member web-0 s4 3 || { fail "$name" "web-0 not re-created and Running"; return; }
  # Let any late release of the old pod land, then check again.
  sleep 20
  check_pods s4 || { fail "$name" "address checks failed after re-creation"; return; }
  new=$(awk '$1 == "web-0" {print $2}' "$work/s4.ips")
  local n
  n=$(pool_count)
  (( n == 3 )) || { fail "$name" "pool holds $n allocations for 3 pods"; return; }
  pass "$name (web-0 $old -> $new, pool 3 allocations)"
  kubectl -n "$ns" delete statefulset web --wait=true >/dev/null
  delete_label s4
}

s6() {
  local name="6 allot-gc restarted during a burst of pod creations: nothing lost, nothing duplicated"
  make_pods s6 20
  kubectl -n kube-system delete pods -l app.kubernetes.io/name=allot --wait=false >/dev/null
  wait_running s6 20 || { fail "$name" "pods not Running"; return; }
  check_pods s6 || { fail "$name" "address checks failed"; return; }
  local deadline=$(( SECONDS + 120 ))
  until [[ "$(kubectl -n kube-system get ds allot -o jsonpath='{.status.numberReady}')" == "$nodes" ]]; do
    (( SECONDS < deadline )) || { fail "$name" "the DaemonSet did not come back"; return; }
    sleep 2
  done
  local n j i
  n=$(pool_count)
  (( n == 20 )) || { fail "$name" "pool holds $n allocations for 20 pods"; return; }
  j=0
  for ((i = 1; i <= nodes; i++)); do
    j=$(( j + $("$harness" exec "node-$i" sh -c 'ls /var/lib/allot/journal 2>/dev/null | wc -l') ))
  done
  pass "$name (pool 20 allocations; $j journal files left on the nodes)"
}

s7() {
  local name="7 switching the NetworkAttachmentDefinition to whereabouts and back keeps live addresses, no duplicates"
  [[ -s "$work/s6.ips" ]] || { fail "$name" "needs scenario 6's pods"; return; }
  cp "$work/s6.ips" "$work/s7-before.ips"
  # Whereabouts' own DaemonSet would have put its flat file on every node: it fails every
  # ADD with "config file not found" without one.
  local i
  for ((i = 1; i <= nodes; i++)); do
    "$harness" exec "node-$i" sh -c 'mkdir -p /etc/cni/net.d/whereabouts.d &&
      echo "{\"datastore\": \"kubernetes\", \"kubernetes\": {\"kubeconfig\": \"/etc/cni/net.d/multus.d/multus.kubeconfig\"}}" \
        >/etc/cni/net.d/whereabouts.d/whereabouts.conf' || { fail "$name" "could not write whereabouts.conf on node-$i"; return; }
  done
  apply_nad whereabouts
  make_pods s7w 5
  wait_running s7w 5 || { apply_nad allot; fail "$name" "pods under whereabouts not Running"; return; }
  apply_nad allot
  make_pods s7a 5
  wait_running s7a 5 || { fail "$name" "pods back under allot not Running"; return; }
  check_pods s6 || { fail "$name" "scenario 6 pods' checks failed"; return; }
  if ! diff <(sort "$work/s7-before.ips") <(sort "$work/s6.ips") >/dev/null; then
    fail "$name" "live pods' addresses changed"; return
  fi
  check_pods s7w || { fail "$name" "whereabouts pods' checks failed"; return; }
  check_pods s7a || { fail "$name" "allot pods' checks failed"; return; }
  local dup
  dup=$(cat "$work/s6.ips" "$work/s7w.ips" "$work/s7a.ips" | awk '{print $2}' | sort | uniq -d)
  [[ -z "$dup" ]] || { fail "$name" "duplicate addresses: $dup"; return; }
  pass "$name (30 pods, $(pool_count) allocations)"
  delete_label s6; delete_label s7w; delete_label s7a
  wait_pool_count 0 90 || note "pool not empty after deleting scenario 6/7 pods"
}

# leader_node: the node of the controller replica that holds the repair loop's Lease.
leader_node() {
  local holder
  holder=$(kubectl -n kube-system get lease allot-gc -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
  [[ -n "$holder" ]] && kubectl -n kube-system get pod "$holder" -o jsonpath='{.spec.nodeName}' 2>/dev/null
}
# lead_on NODE: move the repair loop's leadership to a controller replica on NODE (delete the leader's pod
# until the Lease lands there).
lead_on() {
  local i now
  for ((i = 0; i < 6; i++)); do
    now=$(leader_node)
    [[ "$now" == "$1" ]] && return 0
    [[ -n "$now" ]] && kubectl -n kube-system delete pod "$(kubectl -n kube-system get lease allot-gc -o jsonpath='{.spec.holderIdentity}')" --wait=false >/dev/null 2>&1
    sleep 20
  done
  [[ "$(leader_node)" == "$1" ]]
}

s5() {
  local name="5 the leader's node removed from the cluster at once: a new leader reclaims its pods' addresses"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-$nodes
  gc_mode default || { fail "$name" "allot-gc with deploy/'s settings did not roll out"; return; }
  make_pods s5 3 "$node"
  wait_running s5 3 || { fail "$name" "pods not Running"; return; }
  check_pods s5 || { fail "$name" "address checks failed"; return; }
  lead_on "$node" || { fail "$name" "the repair loop's leadership did not move to $node"; return; }
  note "the repair loop's leader runs on $node"
  # The node goes away: its container (kubelet, containerd, its allot-gc) stops, then its
  # Node object is deleted; the pod garbage collector deletes its pods.
  "$harness" node-stop "$node" || { fail "$name" "could not stop $node"; return; }
  kubectl delete node "$node" --wait=true >/dev/null
  # allot-gc's defaults (deploy/): a repair pass every 60s, release after 3 passes and 5 min.
  wait_pool_count 0 600 || { fail "$name" "addresses not reclaimed within 10 min"; return; }
  pass "$name"
}

# --------------------------------------------------------- the runtime's word ---

# slow_ipam: on every node, two IPAM wrappers around the installed plugin, as a slower stack
# would behave (each hands allot its config with the type allot): allot-slow-add answers
# allot's ADD 5 s late (the address is not on net1 yet:
# the main plugin configures it after), allot-slow-del runs allot's DEL 20 s late (the sandbox
# and its address stay while its teardown runs). Each leaves /run/allot-slow/{added,deleting}-ID.
slow_ipam() {
  local i script
  script=$(cat <<'WRAPPER'
#!/bin/sh
in=$(sed -E 's/"allot-slow-(add|del)"/"allot"/')
case "$0:$CNI_COMMAND" in
  *-del:DEL) touch "/run/allot-slow/deleting-$CNI_CONTAINERID"; sleep 20 ;;
esac
out=$(printf '%s' "$in" | /opt/cni/bin/allot); rc=$?
case "$0:$CNI_COMMAND:$rc" in
  *-add:ADD:0) touch "/run/allot-slow/added-$CNI_CONTAINERID"; sleep 5 ;;
esac
printf '%s' "$out"
exit $rc
WRAPPER
)
  for ((i = 1; i <= nodes; i++)); do
    # shellcheck disable=SC2016 # expanded by the node's shell
    "$harness" exec "node-$i" sh -c 'mkdir -p /run/allot-slow && printf "%s\n" "$1" >/opt/cni/bin/allot-slow-add &&
      chmod 755 /opt/cni/bin/allot-slow-add && ln -sf allot-slow-add /opt/cni/bin/allot-slow-del' sh "$script" || return 1
  done
}

# one_pod NAME NODE NETWORK [RESTART] [COMMAND]: a busybox pod with NET_ADMIN (COMMAND default
# sleep), restartPolicy RESTART (default Always).
one_pod() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  labels: {scenario: "$1"}
  annotations: {k8s.v1.cni.cncf.io/networks: '$3'}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: ${4:-Always}
  nodeSelector: {kubernetes.io/hostname: $2}
  containers:
  - name: c
    image: allot.local/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "${5:-sleep 100000}"]
    securityContext: {capabilities: {add: ["NET_ADMIN"]}}
EOF
}
# allot_ready_on NODE: NODE's allot pod is Ready (allot-gc ready: its first catch-up is done).
allot_ready_on() {
  [[ "$(kubectl -n kube-system get pods -l app.kubernetes.io/name=allot --field-selector "spec.nodeName=$1" \
        -o jsonpath='{range .items[*]}{.status.containerStatuses[0].ready}{" "}{end}')" == "true " ]]
}
# container_done POD: POD's container reports terminated with exit code 0.
container_done() {
  [[ "$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}' 2>/dev/null)" == 0 ]]
}
phase_is() { [[ "$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" == "$2" ]]; }
pod_gone() { ! kubectl -n "$ns" get pod "$1" >/dev/null 2>&1; }
# gc_released POD: some allot-gc logged releasing an address of $ns/POD.
gc_released() {
  local i
  for ((i = 1; i <= nodes; i++)); do
    "$harness" exec "node-$i" sh -c "cat /var/log/pods/kube-system_allot-*/allot-gc/*.log 2>/dev/null" |
      grep -q "released .* of pod $ns/$1 " && return 0
  done
  return 1
}
# restore_node NODE: kubelet running, the Node Ready and allot's DaemonSet on it again.
restore_node() {
  "$harness" kubelet-start "$1" >/dev/null 2>&1
  wait_for 180 node_ready "$1" && kubectl -n kube-system rollout status ds/allot --timeout=180s >/dev/null
}

# s15: a VM-like pod: its container takes the address off net1 (as KubeVirt's bridge binding
# moves it into the guest), its node's kubelet stops and it is force-deleted. No namespace holds
# the address, but the runtime says the sandbox is ready: allot-gc keeps it, and a new pod on the
# other node gets another. When kubelet returns it stops the sandbox, and its DEL frees it.
s15() {
  local name="15 a VM-like pod (address on no kernel interface) force-deleted while its sandbox runs: kept until its sandbox stops"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-1 other=node-$nodes net=vm-net ip newip
  gc_mode fast || { fail "$name" "allot-gc with a 2 s sweep did not roll out"; return; }
  nad_apply "$net" 10.97.0.0/30 "" ""
  delete_label vm-a; delete_label vm-b  # an earlier run's, if it failed
  one_pod vm-a "$node" "$net" Always "ip addr flush dev net1; sleep 100000"
  wait_running vm-a 1 || { fail "$name" "vm-a not Running"; return; }
  ip=$(status_ip vm-a)
  if [[ -z "$ip" ]] || ! holds 10.97.0.0-30 vm-a >/dev/null; then fail "$name" "vm-a has no address"; return; fi
  [[ -z "$(pod_ip vm-a)" ]] || { fail "$name" "vm-a's container did not take $ip off net1"; return; }
  "$harness" kubelet-stop "$node" || { fail "$name" "could not stop kubelet on $node"; return; }
  kubectl -n "$ns" delete pod vm-a --grace-period=0 --force >/dev/null 2>&1
  sleep 45  # over 20 node sweeps
  if ! holds 10.97.0.0-30 vm-a >/dev/null; then
    restore_node "$node"; fail "$name" "allot-gc freed $ip while vm-a's sandbox runs"; return
  fi
  one_pod vm-b "$other" "$net"
  if ! wait_running vm-b 1; then restore_node "$node"; fail "$name" "vm-b not Running"; return; fi
  newip=$(status_ip vm-b)
  if [[ "$newip" == "$ip" ]]; then restore_node "$node"; fail "$name" "vm-b got vm-a's $ip"; return; fi
  restore_node "$node" || { fail "$name" "$node did not come back"; return; }
  wait_for 120 not holds 10.97.0.0-30 vm-a || { fail "$name" "$ip not freed after kubelet stopped the sandbox"; return; }
  delete_label vm-b
  pass "$name (kept $ip 45 s with no namespace holding it; vm-b got $newip; freed by the sandbox's DEL)"
}

# s16: a pod force-deleted while its ADD is in flight: allot has answered (the pool holds the
# entry) but the address is not configured yet (the wrapper waits 5 s). A second pod on the
# same one-address network must not get it before the first sandbox's DEL.
s16() {
  local name="16 a pod force-deleted while its ADD is in flight: its address goes only with its sandbox's DEL"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-1 other=node-$nodes net=slow-net id="" deadline
  gc_mode fast || { fail "$name" "allot-gc with a 2 s sweep did not roll out"; return; }
  slow_ipam || { fail "$name" "could not install the IPAM wrappers"; return; }
  delete_label slow-a; delete_label slow-b; delete_label slow-w  # an earlier run's, if it failed
  "$harness" exec "$node" sh -c 'rm -f /run/allot-slow/added-*'
  nad_apply "$net" 10.96.0.0/30 ', "range_start": "10.96.0.1", "range_end": "10.96.0.1"' "" allot-slow-add
  # The pool is one $node's allot-gc knows to hold its entries (the worst case: a deletion of a
  # pod without network-status is looked for there): slow-w holds .2 through a second NAD on
  # the same range, and $node's allot-gc restarts, scanning every pool.
  nad_apply slow-warm 10.96.0.0/30 ', "range_start": "10.96.0.2", "range_end": "10.96.0.2"' ""
  one_pod slow-w "$node" slow-warm
  wait_running slow-w 1 || { fail "$name" "slow-w not Running"; return; }
  kubectl -n kube-system delete pod --wait=true -l app.kubernetes.io/name=allot --field-selector "spec.nodeName=$node" >/dev/null
  wait_for 180 allot_ready_on "$node" || { fail "$name" "allot-gc on $node did not come back"; return; }
  one_pod slow-a "$node" "$net"
  deadline=$(( SECONDS + 120 ))
  until id=$("$harness" exec "$node" sh -c 'ls /run/allot-slow | sed -n "s/^added-//p" | head -n1') && [[ -n "$id" ]]; do
    (( SECONDS < deadline )) || { fail "$name" "slow-a's ADD never answered"; return; }
    sleep 0.1
  done
  sleep 0.5
  kubectl -n "$ns" delete pod slow-a --grace-period=0 --force >/dev/null 2>&1
  one_pod slow-b "$other" "$net"
  # Until slow-a's sandbox is torn down (its DEL), its entry stays and slow-b waits.
  deadline=$(( SECONDS + 120 ))
  while holds 10.96.0.0-30 slow-a >/dev/null; do
    if phase_is slow-b Running; then fail "$name" "slow-b Running while slow-a's entry is there"; return; fi
    (( SECONDS < deadline )) || { fail "$name" "slow-a's entry not released in 120 s"; return; }
    sleep 1
  done
  if gc_released slow-a; then fail "$name" "allot-gc, not the sandbox's DEL, freed slow-a's address"; return; fi
  wait_running slow-b 1 || { fail "$name" "slow-b did not get the address after slow-a's DEL"; return; }
  delete_label slow-b; delete_label slow-w
  pass "$name (slow-a's entry kept through its ADD; freed by its DEL; then slow-b got 10.96.0.1)"
}

# s17: a node known to be off: kubelet stopped and its allot-gc killed (nothing of the node
# answers; its sandboxes run on, as a machine cut off would leave them), and the Node tainted
# out-of-service. Kubernetes deletes its pods, and the leader frees their addresses for new pods
# on the other node.
s17() {
  local name="17 a node tainted out-of-service: its pods' addresses come back and new pods on the other node get them"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-1 other=node-$nodes reused
  gc_mode fast || { fail "$name" "allot-gc with a 2 s repair pass did not roll out"; return; }
  make_pods s17 2 "$node"
  wait_running s17 2 || { fail "$name" "pods not Running"; return; }
  check_pods s17 || { fail "$name" "address checks failed"; return; }
  "$harness" kubelet-stop "$node" || { fail "$name" "could not stop kubelet on $node"; return; }
  local undo="kubectl taint nodes $node node.kubernetes.io/out-of-service- >/dev/null 2>&1; restore_node $node"
  "$harness" exec "$node" pkill -f /usr/local/bin/allot-gc || { eval "$undo"; fail "$name" "could not stop allot-gc on $node"; return; }
  wait_for 120 node_not_ready "$node" || { eval "$undo"; fail "$name" "$node not NotReady within 120 s"; return; }
  kubectl taint nodes "$node" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute >/dev/null
  if ! wait_for 180 pod_gone s17-1 || ! wait_for 60 pod_gone s17-2; then
    eval "$undo"; fail "$name" "the pods of out-of-service $node were not deleted"; return
  fi
  if ! wait_for 120 not held s17-1 || ! wait_for 60 not held s17-2; then
    eval "$undo"; fail "$name" "addresses not freed within 3 min of the pods' deletion"; return
  fi
  make_pods s17b 2 "$other"
  if ! wait_running s17b 2 || ! check_pods s17b; then eval "$undo"; fail "$name" "new pods on $other"; return; fi
  reused=$(awk '{print $2}' "$work/s17b.ips" | grep -cxF -f <(awk '{print $2}' "$work/s17.ips"))
  eval "$undo" || { fail "$name" "$node did not come back"; return; }
  delete_label s17b
  (( reused > 0 )) || { fail "$name" "no new pod got a freed address"; return; }
  pass "$name ($reused of 2 freed addresses re-used on $other)"
}

# s18: a pod that ran to completion and is deleted at once (its container reported terminated,
# "Completed"): its sandbox still holds the address while its teardown runs (the DEL is 20 s slow
# here). The address is kept until the sandbox's DEL.
s18() {
  local name="18 a completed pod deleted at once keeps its address until its sandbox stops"
  local node=node-1 net=job-net t0
  gc_mode fast || { fail "$name" "allot-gc with a 2 s sweep did not roll out"; return; }
  slow_ipam || { fail "$name" "could not install the IPAM wrappers"; return; }
  nad_apply "$net" 10.95.0.0/30 "" "" allot-slow-del
  delete_label job-a  # an earlier run's, if it failed
  one_pod job-a "$node" "$net" Never "sleep 5"
  # kubectl shows it Completed as soon as its container's status says terminated; the kubelet
  # sets the phase Succeeded only after the sandbox is torn down.
  wait_for 120 container_done job-a || { fail "$name" "job-a's container did not complete"; return; }
  holds 10.95.0.0-30 job-a >/dev/null || { fail "$name" "job-a's entry is gone already"; return; }
  kubectl -n "$ns" delete pod job-a --grace-period=0 --force >/dev/null 2>&1
  t0=$SECONDS
  while (( SECONDS - t0 < 12 )); do
    holds 10.95.0.0-30 job-a >/dev/null || { fail "$name" "freed $(( SECONDS - t0 )) s after the deletion, while its sandbox's DEL runs"; return; }
    sleep 1
  done
  wait_for 90 not holds 10.95.0.0-30 job-a || { fail "$name" "not freed after the sandbox's DEL"; return; }
  if gc_released job-a; then fail "$name" "allot-gc, not the sandbox's DEL, freed it"; return; fi
  pass "$name (kept while the sandbox was torn down, freed by its DEL)"
}

# s19: no CRI socket: the namespace probe decides as before, and allot-gc says so.
s19() {
  local name="19 without a CRI socket the namespace probe decides, and the log and metric say so"
  local node=node-$nodes pod metrics sid why=""
  gc_mode fast no-cri || { fail "$name" "allot-gc without a CRI socket did not roll out"; return; }
  pod=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=allot --field-selector "spec.nodeName=$node" -o jsonpath='{.items[0].metadata.name}')
  metrics=$(kubectl get --raw "/api/v1/namespaces/kube-system/pods/$pod:9847/proxy/metrics")
  if ! kubectl -n kube-system logs "$pod" -c allot-gc | grep -q "sandbox proof: no container runtime socket"; then
    why="allot-gc's log does not say which proof it uses"
  elif ! grep -qx 'allot_sandbox_proof{proof="namespaces"} 1' <<<"$metrics"; then
    why="allot_sandbox_proof does not say namespaces"
  else
    why=$(s19_probe "$node")
  fi
  gc_mode fast || why=${why:-"allot-gc with its CRI socket again did not roll out"}
  [[ -z "$why" ]] || { fail "$name" "$why"; return; }
  pass "$name"
}
# s19_probe NODE: a dead sandbox's address freed, a live one's kept until its DEL; prints why not.
s19_probe() {
  local node=$1 sid
  make_pods s19 2 "$node"
  { wait_running s19 2 && check_pods s19; } >/dev/null || { echo "pods not Running"; return; }
  sid=$(pool_allocs | awk -v r="$ns/s19-1" '$3 == r { print $2 }')
  "$harness" kubelet-stop "$node" || { echo "could not stop kubelet"; return; }
  "$harness" sandbox-kill "$node" "$sid" || { restore_node "$node"; echo "sandbox-kill"; return; }
  kubectl -n "$ns" delete pods -l scenario=s19 --grace-period=0 --force >/dev/null 2>&1
  if ! wait_for 60 not held s19-1; then restore_node "$node"; echo "the dead sandbox's address was not freed"; return; fi
  if ! held s19-2; then restore_node "$node"; echo "the live sandbox's address was freed"; return; fi
  restore_node "$node" || { echo "$node did not come back"; return; }
  wait_for 120 not held s19-2 || echo "the live sandbox's address not freed by its DEL"
}

# s8: a static pod (a manifest in kubelet's staticPodPath). kubelet gives the plugin the
# static pod's own UID (its config hash); the mirror pod in the API has another UID and names
# the hash in kubernetes.io/config.mirror. With a repair pass every 2 s and no leak grace, the
# static pod's entry survives 5 passes while a planted entry for a pod that does not exist is
# released (the passes do release leaks); removing the manifest frees the address (kubelet's
# CNI DEL).
s8() {
  local name="8 a static pod keeps its address through 5 repair passes (owned through its mirror pod's config.mirror); freed when its manifest goes"
  local node=node-1 mirror=static-web-node-1 manifest=/etc/kubernetes/manifests/static-web.yaml
  gc_mode fast || { fail "$name" "allot-gc with a 2 s repair pass did not roll out"; return; }
  local spec
  spec=$(net_pod_yaml static-web s8 "" "[{\"name\":\"$nad\"}]" | base64 -w0)
  "$harness" exec "$node" sh -c "echo $spec | base64 -d >$manifest" ||
    { fail "$name" "could not write $manifest on $node"; return; }
  wait_running s8 1 || { fail "$name" "the mirror pod $mirror is not Running"; return; }
  check_pods s8 || { fail "$name" "address checks failed"; return; }
  local hash uid euid
  hash=$(kubectl -n "$ns" get pod "$mirror" -o json | jq -r '.metadata.annotations["kubernetes.io/config.mirror"] // empty')
  uid=$(kubectl -n "$ns" get pod "$mirror" -o jsonpath='{.metadata.uid}')
  euid=$(allocs "$pool" | jq -r --arg r "$ns/$mirror" 'to_entries[] | select(.value.podref == $r) | .value.poduid // empty')
  if [[ -z "$hash" || "$euid" != "$hash" || "$euid" == "$uid" ]]; then
    fail "$name" "the entry's poduid '$euid' is not the config.mirror '$hash' (mirror pod uid $uid)"; return
  fi
  kubectl -n "$poolns" patch ippools.whereabouts.cni.cncf.io "$pool" --type merge \
    -p "{\"spec\":{\"allocations\":{\"250\":{\"id\":\"ghost-s8\",\"podref\":\"$ns/ghost-s8\",\"ifname\":\"net1\"}}}}" >/dev/null ||
    { fail "$name" "could not plant a leaked entry"; return; }
  local p0
  p0=$(repair_passes)
  wait_for 120 passes_since "$p0" 5 || { fail "$name" "fewer than 5 repair passes in 120 s"; return; }
  holds_offset "$pool" 250 && { fail "$name" "the planted leak survived 5 passes (the passes release nothing)"; return; }
  holds "$pool" "$mirror" >/dev/null || { fail "$name" "the repair loop freed the running static pod's address"; return; }
  "$harness" exec "$node" rm -f "$manifest"
  wait_for 120 not holds "$pool" "$mirror" || { fail "$name" "address not freed 120 s after the manifest went"; return; }
  pass "$name (entry poduid = config.mirror ${hash:0:8}..., mirror uid ${uid:0:8}...; $(( $(repair_passes) - p0 )) passes)"
}

# s9: IPAMClaims through Multus (allowPersistentIPs): the launcher pod's network-selection
# element names the claim; allot reads it from the pod, writes the claim's status; a second
# launcher on the other node (live migration) gets the same address; the address outlives
# both pods over repair passes and goes with the claim. And a fixed address asked for in the
# element's `ips` (the delegate declares the ips capability).
s9() {
  local name="9 IPAMClaim through Multus: status written, same address on migration, kept without pods, freed with the claim; a fixed address from ips"
  local cpool=10.78.0.0-24 fpool=10.79.0.0-24 other=node-$nodes
  gc_mode fast || { fail "$name" "allot-gc with a 2 s repair pass did not roll out"; return; }
  { kubectl apply -f "$root/deploy/optional/k8s.cni.cncf.io_ipamclaims.yaml" >/dev/null &&
      kubectl wait --for=condition=Established crd/ipamclaims.k8s.cni.cncf.io --timeout=60s >/dev/null; } ||
    { fail "$name" "the IPAMClaim CRD did not install"; return; }
  nad_apply claim-net 10.78.0.0/24 "" ', "allowPersistentIPs": true'
  nad_apply fixed-net 10.79.0.0/24 "" ', "capabilities": {"ips": true}'
  kubectl apply -f - >/dev/null <<EOF
apiVersion: k8s.cni.cncf.io/v1alpha1
kind: IPAMClaim
metadata: {name: vm1.net1, namespace: $ns}
spec: {network: claim-net, interface: net1}
EOF
  local sel='[{"name":"claim-net","interface":"net1","ipam-claim-reference":"vm1.net1"}]'
  net_pod_yaml launcher-a s9 node-1 "$sel" | kubectl apply -f - >/dev/null
  wait_running s9 1 || { fail "$name" "launcher-a not Running"; return; }
  local a st
  a=$(pod_ip launcher-a)
  [[ "$a" == 10.78.0.* ]] || { fail "$name" "launcher-a's net1 has '$a'"; return; }
  st=$(kubectl -n "$ns" get ipamclaims.k8s.cni.cncf.io vm1.net1 -o json |
       jq -c '[.status.ips, .status.ownerPod.name, (.status.conditions // [] | map(select(.type == "IPsAllocated")) | .[0].status)]')
  [[ "$st" == "[[\"$a/24\"],\"launcher-a\",\"True\"]" ]] || { fail "$name" "claim status $st, want $a/24 owned by launcher-a"; return; }
  net_pod_yaml launcher-b s9 "$other" "$sel" | kubectl apply -f - >/dev/null
  wait_running s9 2 || { fail "$name" "launcher-b (migration target) not Running"; return; }
  [[ "$(pod_ip launcher-b)" == "$a" ]] || { fail "$name" "launcher-b got '$(pod_ip launcher-b)', not the claim's $a"; return; }
  delete_label s9 || { fail "$name" "deleting the launchers did not finish"; return; }
  local p0
  p0=$(repair_passes)
  wait_for 120 passes_since "$p0" 3 || { fail "$name" "fewer than 3 repair passes in 120 s"; return; }
  holds_offset "$cpool" "${a##*.}" || { fail "$name" "the claim's $a was freed with its pods gone"; return; }
  kubectl -n "$ns" delete ipamclaims.k8s.cni.cncf.io vm1.net1 --wait=true >/dev/null
  wait_for 60 not holds_offset "$cpool" "${a##*.}" || { fail "$name" "$a not freed 60 s after the claim was deleted"; return; }
  net_pod_yaml fixed-a s9f "" '[{"name":"fixed-net","ips":["10.79.0.7/24"]}]' | kubectl apply -f - >/dev/null
  wait_running s9f 1 || { fail "$name" "fixed-a not Running"; return; }
  [[ "$(pod_ip fixed-a)" == 10.79.0.7 ]] || { fail "$name" "fixed-a got '$(pod_ip fixed-a)', asked for 10.79.0.7"; return; }
  holds "$fpool" fixed-a >/dev/null || { fail "$name" "no pool entry for fixed-a"; return; }
  delete_label s9f
  pass "$name (claim address $a on node-1 and $other)"
}

# s10: sticky StatefulSet addresses with the real StatefulSet controller: a member deleted and
# re-created keeps its address; a scale-down frees the member outside the replicas; deleting
# the set frees the rest.
s10() {
  local name="10 sticky StatefulSet: a re-created member keeps its address, scale-down and deletion free"
  local spool=10.80.0.0-24
  gc_mode fast || { fail "$name" "allot-gc with a 2 s repair pass did not roll out"; return; }
  nad_apply sticky-net 10.80.0.0/24 ', "sticky_statefulsets": true' ""
  apply_sts db s10 2 sticky-net
  wait_running s10 2 || { fail "$name" "StatefulSet pods not Running"; return; }
  local a0 a1
  a0=$(pod_ip db-0); a1=$(pod_ip db-1)
  [[ "$a0" == 10.80.0.* && "$a1" == 10.80.0.* && "$a0" != "$a1" ]] || { fail "$name" "db-0 '$a0', db-1 '$a1'"; return; }
  recreate_member db-0 s10 2 || { fail "$name" "db-0 not re-created and Running"; return; }
  [[ "$(pod_ip db-0)" == "$a0" ]] || { fail "$name" "re-created db-0 got '$(pod_ip db-0)', had $a0"; return; }
  kubectl -n "$ns" scale statefulset db --replicas=1 >/dev/null
  wait_for 120 not holds_offset "$spool" "${a1##*.}" || { fail "$name" "db-1's $a1 not freed after the scale-down"; return; }
  holds_offset "$spool" "${a0##*.}" || { fail "$name" "db-0's $a0 freed by the scale-down"; return; }
  kubectl -n "$ns" delete statefulset db --wait=true >/dev/null
  wait_for 120 not holds_offset "$spool" "${a0##*.}" || { fail "$name" "db-0's $a0 not freed after the set was deleted"; return; }
  pass "$name (db-0 kept $a0 across re-creation; db-1's $a1 freed on scale-down)"
}

# s11: kubelet stops on a node and its Node goes NotReady while its sandboxes run on. With a
# repair pass every 2 s and no grace, its pods keep their addresses over 10 passes and no new
# pod on the other node gets them; `kubectl delete node` (Kubernetes' statement that its pods
# are gone) frees them. kubelet then comes back and registers the node again.
node_ready() { kubectl get node "$1" -o json 2>/dev/null | jq -e '.status.conditions[] | select(.type == "Ready") | .status == "True"' >/dev/null; }
node_not_ready() { kubectl get node "$1" >/dev/null 2>&1 && ! node_ready "$1"; }
s11() {
  local name="11 kubelet stopped past the grace: its pods keep their addresses and no new pod gets them; kubectl delete node frees them"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-1 other=node-$nodes p ip
  gc_mode fast || { fail "$name" "allot-gc with a 2 s repair pass did not roll out"; return; }
  make_pods s11 2 "$node"
  wait_running s11 2 || { fail "$name" "pods not Running"; return; }
  check_pods s11 || { fail "$name" "address checks failed"; return; }
  "$harness" kubelet-stop "$node" || { fail "$name" "could not stop kubelet on $node"; return; }
  local undo="$harness kubelet-start $node" t0=$SECONDS p0
  wait_for 120 node_not_ready "$node" || { $undo; fail "$name" "$node not NotReady within 120 s"; return; }
  note "$node NotReady $(( SECONDS - t0 )) s after its kubelet stopped"
  p0=$(repair_passes)
  wait_for 120 passes_since "$p0" 10 || { $undo; fail "$name" "fewer than 10 repair passes in 120 s"; return; }
  for p in s11-1 s11-2; do
    held "$p" || { $undo; fail "$name" "$p's address was freed while its node is NotReady"; return; }
  done
  make_pods s11b 2 "$other"
  if ! wait_running s11b 2 || ! check_pods s11b; then $undo; fail "$name" "new pods on $other"; return; fi
  while read -r p ip; do
    if grep -qxF "$ip" <(awk '{print $2}' "$work/s11b.ips"); then
      $undo; fail "$name" "a new pod got $p's $ip while $p runs on NotReady $node"; return
    fi
  done <"$work/s11.ips"
  kubectl delete node "$node" --wait=true >/dev/null
  if ! wait_for 120 not held s11-1 || ! wait_for 60 not held s11-2; then
    $undo; fail "$name" "addresses not freed within 3 min of the Node's deletion"; return
  fi
  # As the pod garbage collector would: the pods of a deleted Node go; kubelet, back, stops
  # their sandboxes (its late DEL finds nothing of theirs left).
  kubectl -n "$ns" delete pods -l scenario=s11 --grace-period=0 --force >/dev/null 2>&1
  $undo
  wait_for 180 node_ready "$node" || { fail "$name" "$node did not register again"; return; }
  kubectl -n kube-system rollout status ds/allot --timeout=180s >/dev/null ||
    { fail "$name" "allot's DaemonSet did not come back on $node"; return; }
  delete_label s11b
  pass "$name ($(awk '{print $2}' "$work/s11.ips" | xargs) kept over 10 passes while NotReady, freed after the Node's deletion)"
}

# s12: the README's installs and removals on real nodes. `kubectl delete -k deploy/` removes the
# harness's allot, and its pods take the plugin and allot's files off every node as they stop;
# then the README's commands as written (the CRD loop, `kubectl apply -k deploy/`) give new pods
# their addresses; the same with `helm install`, and `helm uninstall` leaves the nodes clean
# too; finally the harness's DaemonSet is applied again.
no_allot_pods() { [[ -z "$(kubectl -n kube-system get pods -l app.kubernetes.io/name=allot -o name)" ]]; }
# nodes_clean: no node has the plugin or allot's conf files left.
nodes_clean() {
  local i left
  for ((i = 1; i <= nodes; i++)); do
    left=$("$harness" exec "node-$i" sh -c 'ls -d /opt/cni/bin/allot /etc/cni/net.d/allot.d/* 2>/dev/null')
    [[ -z "$left" ]] || { note "node-$i still has: ${left//$'\n'/ }"; return 1; }
  done
}
# removed: allot's pods are gone and the nodes are clean.
removed() { wait_for 120 no_allot_pods && nodes_clean; }
# installed_pods LABEL: the DaemonSet is ready on every node and two new pods get addresses.
installed_pods() {
  kubectl -n kube-system rollout status ds/allot --timeout=180s >/dev/null || { note "DaemonSet not ready"; return 1; }
  make_pods "$1" 2
  wait_running "$1" 2 || return 1
  check_pods "$1" || return 1
  delete_label "$1"
}
s12() {
  local name="12 the README's installs and removals: kubectl delete -k and helm uninstall leave no allot file on a node; kubectl apply -k and helm install give pods addresses"
  PATH=$(dirname "$("$root/e2e/build-helm")"):$PATH   # the README's commands call helm
  cd "$root" || return
  kubectl delete -k deploy/ >/dev/null || { fail "$name" "kubectl delete -k deploy/ failed"; return; }
  removed || { fail "$name" "kubectl delete -k deploy/ left allot on a node"; return; }
  for f in deploy/crds/*.yaml; do kubectl get -f "$f" >/dev/null 2>&1 || kubectl create -f "$f"; done
  kubectl apply -k deploy/ >/dev/null || { fail "$name" "kubectl apply -k deploy/ failed"; return; }
  installed_pods s12a || { fail "$name" "no addresses after kubectl apply -k deploy/"; return; }
  kubectl delete -k deploy/ >/dev/null || { fail "$name" "kubectl delete -k deploy/ failed"; return; }
  removed || { fail "$name" "kubectl delete -k deploy/ left allot on a node"; return; }
  helm install allot deploy/helm/allot --namespace kube-system >/dev/null || { fail "$name" "helm install failed"; return; }
  installed_pods s12b || { fail "$name" "no addresses after helm install"; return; }
  helm uninstall allot --namespace kube-system --wait >/dev/null || { fail "$name" "helm uninstall failed"; return; }
  removed || { fail "$name" "helm uninstall left allot on a node"; return; }
  if ! kubectl apply -k deploy/ >/dev/null || ! kubectl -n kube-system rollout status ds/allot --timeout=180s >/dev/null; then
    fail "$name" "the harness's DaemonSet did not come back"; return
  fi
  pass "$name ($(awk '{print $2}' "$work/s12a.ips" | xargs); $(awk '{print $2}' "$work/s12b.ips" | xargs))"
}

# s20: an allot pod force-deleted while its replacement installs. The old allot-gc's read of its
# DaemonSet may then answer 401 (its token went with the pod) after the new pod's init container
# has installed the plugin; allot removes a node's files only while the install stamp names its
# own pod, and a relay unlinks only its own socket. 60 s after the new pod is Ready, the plugin,
# allot.conf, the new pod's stamp and the relay socket are on the node, and a new pod there gets
# an address.
agent_pod() { kubectl -n kube-system get pods -l app.kubernetes.io/name=allot --field-selector "spec.nodeName=$1" -o json; }
# new_agent_ready NODE OLD-UID: the node's allot pod is another than OLD-UID and Ready.
new_agent_ready() {
  agent_pod "$1" | jq -e --arg old "$2" '[.items[] | select(.metadata.uid != $old and .metadata.deletionTimestamp == null)
    | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length == 1' >/dev/null
}
s20() {
  local name="20 an allot pod force-deleted while its replacement installs: 60 s after the new pod is Ready its node keeps the plugin, allot.conf and the relay, and a new pod there gets an address"
  local node=node-1 old uid new stamp files
  old=$(agent_pod "$node" | jq -r '.items[0].metadata.name'); uid=$(agent_pod "$node" | jq -r '.items[0].metadata.uid')
  [[ -n "$old" && "$old" != null ]] || { fail "$name" "no allot pod on $node"; return; }
  kubectl -n kube-system delete pod "$old" --grace-period=0 --force >/dev/null 2>&1
  wait_for 180 new_agent_ready "$node" "$uid" || { fail "$name" "no new allot pod Ready on $node within 180 s"; return; }
  new=$(agent_pod "$node" | jq -r --arg old "$uid" '.items[] | select(.metadata.uid != $old) | .metadata.uid')
  sleep 60
  files=$("$harness" exec "$node" sh -c 'ls /opt/cni/bin/allot /etc/cni/net.d/allot.d/allot.conf /run/allot/api.sock 2>&1')
  stamp=$("$harness" exec "$node" cat /etc/cni/net.d/allot.d/installed-by 2>/dev/null)
  for f in /opt/cni/bin/allot /etc/cni/net.d/allot.d/allot.conf /run/allot/api.sock; do
    grep -qx "$f" <<<"$files" || { fail "$name" "$f is gone from $node: ${files//$'\n'/ }"; return; }
  done
  [[ "$stamp" == "$new" ]] || { fail "$name" "the install stamp on $node is '$stamp', want the new pod's UID $new"; return; }
  make_pods s20 1 "$node"
  if ! { wait_running s20 1 && check_pods s20; }; then fail "$name" "a new pod on $node got no address"; delete_label s20; return; fi
  delete_label s20
  pass "$name ($(awk '{print $2}' "$work/s20.ips" | xargs) on $node)"
}

# s21: allot in a namespace of its own, on real nodes: docs/install.md's way with kustomize (an
# overlay of deploy/ with `namespace: allot-system`) and with helm (`helm install -n
# allot-system`). Each time: pods get addresses, a controller leads on the Lease
# allot-system/allot-gc, each node's report is written in allot-system, no allot Lease is made in
# kube-system, the pool (in kube-system, where it was) is empty once the pods are gone, and the
# removal leaves no allot file on a node. Then the harness's install comes back.
in_ns_ready() {
  kubectl -n "$1" rollout status ds/allot --timeout=180s >/dev/null &&
    kubectl -n "$1" rollout status deployment/allot-controller --timeout=180s >/dev/null
}
no_pods_in() { [[ -z "$(kubectl -n "$1" get pods -l 'app.kubernetes.io/name in (allot, allot-controller)' -o name 2>/dev/null)" ]]; }
leads_in() { [[ -n "$(kubectl -n "$1" get lease allot-gc -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ]]; }
reports_in() {
  local i
  for ((i = 1; i <= nodes; i++)); do kubectl -n "$1" get lease "allot-node-node-$i" >/dev/null 2>&1 || return 1; done
}
# own_namespace_works NS LABEL: the checks above, for the install in NS.
own_namespace_works() {
  in_ns_ready "$1" || { note "allot in $1 not ready"; return 1; }
  make_pods "$2" 4
  if ! { wait_running "$2" 4 && check_pods "$2"; }; then note "pods got no addresses with allot in $1"; return 1; fi
  wait_for 60 leads_in "$1" || { note "no controller holds $1/allot-gc"; return 1; }
  wait_for 120 reports_in "$1" || { note "not every node's report is in $1"; return 1; }
  local stray
  stray=$(kubectl -n kube-system get leases -o name | grep -E 'allot-gc$|allot-node-' | xargs)
  [[ -z "$stray" ]] || { note "allot Leases in kube-system: $stray"; return 1; }
  delete_label "$2"
  wait_pool_count 0 120 || { note "the pool kept entries after the pods were deleted (allot in $1)"; return 1; }
}
s21() {
  local name="21 allot in allot-system, by a kustomize overlay and by helm: pods get addresses, the controller leads there, every node reports there, the pool empties, removal leaves nodes clean"
  local overlay=$work/overlay
  PATH=$(dirname "$("$root/e2e/build-helm")"):$PATH
  cd "$root" || return
  kubectl delete -k deploy/ >/dev/null || { fail "$name" "kubectl delete -k deploy/ failed"; return; }
  removed || { fail "$name" "removing the harness's allot left it on a node"; return; }
  kubectl -n kube-system delete leases -l allot.cni.dev/node-report >/dev/null 2>&1
  kubectl -n kube-system delete lease allot-gc >/dev/null 2>&1
  mkdir -p "$overlay"
  printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: allot-system\nresources:\n- %s\n' \
    "$(realpath --relative-to="$overlay" "$root/deploy")" >"$overlay/kustomization.yaml"
  kubectl create namespace allot-system >/dev/null 2>&1
  kubectl apply -k "$overlay" >/dev/null || { fail "$name" "kubectl apply -k of the overlay failed"; return; }
  own_namespace_works allot-system s21a || { fail "$name" "the overlay's install (see notes)"; return; }
  kubectl delete -k "$overlay" >/dev/null 2>&1
  if ! { wait_for 120 no_pods_in allot-system && nodes_clean; }; then fail "$name" "kubectl delete -k of the overlay left allot on a node"; return; fi
  kubectl create namespace allot-system >/dev/null 2>&1
  helm install allot deploy/helm/allot --namespace allot-system >/dev/null || { fail "$name" "helm install -n allot-system failed"; return; }
  own_namespace_works allot-system s21b || { fail "$name" "helm's install in allot-system (see notes)"; return; }
  helm uninstall allot --namespace allot-system --wait >/dev/null || { fail "$name" "helm uninstall failed"; return; }
  if ! { wait_for 120 no_pods_in allot-system && nodes_clean; }; then fail "$name" "helm uninstall left allot on a node"; return; fi
  kubectl delete namespace allot-system --wait=false >/dev/null 2>&1
  if ! kubectl apply -k deploy/ >/dev/null || ! in_ns_ready kube-system; then
    fail "$name" "the harness's install did not come back"; return
  fi
  pass "$name ($(awk '{print $2}' "$work/s21a.ips" | xargs); $(awk '{print $2}' "$work/s21b.ips" | xargs))"
}

# s13: a rolling upgrade from an earlier revision to this one, and back, while pods come and go.
# The earlier revision ($upgrade_from, pinned: its relay predates the frame this plugin sends,
# so a new plugin beside an old allot-gc goes direct) is installed as it was then (its own
# rbac.yaml and daemonset.yaml, its own image built from its sources); six pods start under
# it. Then docs/operations.md's upgrade (`kubectl apply -k deploy/`) and rollback (`kubectl
# rollout undo`), each rolled node by node while rounds of three pods are created and the
# previous round deleted. Every pod of every round must reach Running, the six keep their
# addresses, no two live pods share one, and when all are gone the pool is empty.
upgrade_from=f36ba11c8eee
ds_images() { kubectl -n kube-system get pods -l app.kubernetes.io/name=allot -o jsonpath='{.items[*].spec.containers[0].image}' | tr ' ' '\n' | sort -u | xargs; }
images_are() { [[ "$(ds_images)" == "$1" ]]; }
# rolled IMAGE: the DaemonSet rolled out and every one of its pods runs IMAGE.
rolled() {
  kubectl -n kube-system rollout status ds/allot --timeout=300s >/dev/null || { note "rollout not done"; return 1; }
  wait_for 60 images_are "$1" || { note "allot pods run '$(ds_images)', want $1"; return 1; }
}
# lease_watch STOPFILE: until STOPFILE exists, once a second, "NOW RENEWED DURATION HOLDER" of the
# Lease kube-system/allot-gc (epoch seconds; the old layout's DaemonSet and the new controller
# both lead on it) into $work/lease.log.
lease_watch() {
  local l rt
  while [[ ! -e "$1" ]]; do
    l=$(kubectl -n kube-system get lease allot-gc -o jsonpath='{.spec.renewTime} {.spec.leaseDurationSeconds} {.spec.holderIdentity}' 2>/dev/null)
    read -r r d h <<<"$l"
    rt=$(date -d "$r" +%s 2>/dev/null) && echo "$(date +%s) $rt $d ${h:--}" >>"$work/lease.log"
    sleep 1
  done
}
# leaderless: the longest time the Lease stood expired (seconds since its last renewal beyond
# its duration), and that duration: "GAP DURATION".
leaderless() {
  awk '{ d = $1 - $2 - $3; if (d > m) m = d; dur = $3 } END { printf "%d %d\n", m, dur }' "$work/lease.log"
}
# churn LABEL STOPFILE: rounds until STOPFILE exists: three pods LABEL-R-1..3 (label LABEL-R)
# must reach Running within 120 s, then the previous round is deleted. One line per round in
# $work/churn.log: "ok R" or "fail R".
churn() {
  local r=0 timeout=120 i
  while [[ ! -e "$2" ]]; do
    r=$((r + 1))
    for i in 1 2 3; do pod_yaml "$1-$r-$i" "$1-$r"; done | kubectl apply -f - >/dev/null
    if wait_running "$1-$r" 3 >/dev/null; then echo "ok $r"; else echo "fail $r"; fi >>"$work/churn.log"
    (( r > 1 )) && kubectl -n "$ns" delete pods -l "scenario=$1-$((r - 1))" --wait=false >/dev/null 2>&1
  done
}
# same_addresses: the six pods still have the addresses they started with.
same_addresses() {
  check_pods s13 || return 1
  diff <(sort "$work/s13-before.ips") <(sort "$work/s13.ips") >/dev/null || { note "s13 pods' addresses changed"; return 1; }
}
s13() {
  local name="13 rolling upgrade from an earlier revision and rollback under pod churn: every pod starts, none loses its address, no duplicate"
  local old new=allot:0.1.0 stop=$work/churn.stop
  old=$("$harness" image-of "$upgrade_from") || { fail "$name" "no image of $upgrade_from"; return; }
  cd "$root" || return
  if ! { kubectl delete -k deploy/ >/dev/null && removed; }; then fail "$name" "removing the harness's allot failed"; return; fi
  { git show "$upgrade_from:deploy/rbac.yaml"; echo ---
    git show "$upgrade_from:deploy/daemonset.yaml" | sed "s|image: allot:0.1.0|image: $old|"; } | kubectl apply -f - >/dev/null ||
    { fail "$name" "installing $upgrade_from failed"; return; }
  rolled "$old" || { fail "$name" "$upgrade_from did not roll out"; return; }
  make_pods s13 6
  if ! { wait_running s13 6 && check_pods s13; }; then fail "$name" "pods under $upgrade_from"; return; fi
  cp "$work/s13.ips" "$work/s13-before.ips"
  : >"$work/churn.log"; : >"$work/lease.log"
  churn s13c "$stop" &
  local churner=$! t0=$SECONDS ok=true
  lease_watch "$stop" &
  local watcher=$!
  sleep 10
  if ! { kubectl apply -k deploy/ >/dev/null && rolled "$new"; }; then note "upgrade did not roll out"; ok=false; fi
  local up=$(( SECONDS - t0 ))
  sleep 15
  $ok && { same_addresses || ok=false; }
  if $ok && ! { kubectl -n kube-system rollout undo ds/allot >/dev/null && rolled "$old"; }; then
    note "rollback did not roll out"; ok=false
  fi
  sleep 15
  touch "$stop"; wait "$churner" "$watcher"
  $ok || { fail "$name" "see notes"; return; }
  same_addresses || { fail "$name" "after the rollback"; return; }
  local rounds bad last dup events
  rounds=$(wc -l <"$work/churn.log"); bad=$(grep -c '^fail' "$work/churn.log")
  (( bad == 0 )) || { fail "$name" "$bad of $rounds churn rounds had a pod not Running in 120 s"; return; }
  last=$(awk 'END { print $2 }' "$work/churn.log")
  check_pods "s13c-$last" || { fail "$name" "the last churn round's checks"; return; }
  dup=$(cat "$work/s13.ips" "$work/s13c-$last.ips" | awk '{print $2}' | sort | uniq -d)
  [[ -z "$dup" ]] || { fail "$name" "duplicate addresses: $dup"; return; }
  events=$(kubectl -n "$ns" get events --field-selector reason=FailedCreatePodSandBox -o json |
           jq '[.items[] | select(.involvedObject.name | startswith("s13")) | .count // 1] | add // 0')
  kubectl -n "$ns" delete pods -l 'scenario' --wait=true --timeout=180s >/dev/null 2>&1
  wait_pool_count 0 120 || { fail "$name" "the pool kept entries after every pod was deleted"; return; }
  # Forward again as docs/operations.md says after a rollout undo: undo the undo (kubectl apply
  # alone would merge POOL_NAMESPACE's value into the old revision's fieldRef, which the API
  # server refuses), then apply, which now agrees with what runs.
  if ! { kubectl -n kube-system rollout undo ds/allot >/dev/null && kubectl apply -k deploy/ >/dev/null && rolled "$new"; }; then
    fail "$name" "the harness's DaemonSet did not come back"; return
  fi
  # Judged last, once the pods are gone and the harness's install is back: a failure here
  # leaves the next scenarios a clean cluster.
  local gap
  gap=$(leaderless)
  note "Lease allot-gc over the upgrade and the rollback: $(wc -l <"$work/lease.log") samples, longest leaderless ${gap% *} s (duration ${gap#* } s)"
  (( $(wc -l <"$work/lease.log") > 10 )) || { fail "$name" "the Lease was not read during the upgrade"; return; }
  if (( ${gap% *} > ${gap#* } )); then
    note "the Lease's holders as sampled (epoch s: holder since), and the controller's start:"
    awk '$4 != h { print "#   " $1 ": " $4 " (renewed " $2 ")"; h = $4 }' "$work/lease.log"
    kubectl -n kube-system get pods -l app.kubernetes.io/name=allot-controller -o json |
      jq -r '.items[] | "#   \(.metadata.name): created \(.metadata.creationTimestamp), started \(.status.containerStatuses[0].state.running.startedAt // "-")"'
    fail "$name" "no leader for ${gap% *} s, longer than the Lease duration (${gap#* } s)"; return
  fi
  pass "$name ($rounds rounds of 3 pods over the upgrade (${up} s) and the rollback; longest leaderless ${gap% *} s (Lease ${gap#* } s); $events failed sandbox attempts retried; 6 pods kept $(awk '{print $2}' "$work/s13-before.ips" | xargs))"
}

# s14: docs/migrate-from-whereabouts.md, as written, on a cluster that runs Whereabouts v0.9.4
# as its own manifests install it (CRDs, DaemonSet with ip-control-loop, reconciler and
# node-slice controller; its image built from its module). Two networks on Whereabouts, one
# naming Whereabouts' kubeconfig and one relying on its flat file, each with three pods. Then
# every step of the document, running its commands block by block, with two new pods on each
# network after each step; step 4's undo (the network back to Whereabouts, and forward again)
# and step 6's (Whereabouts reinstalled, a network switched back, and forward again). Every pod
# must reach Running, the first six keep their addresses, no two live pods share one, a pod
# attached under Whereabouts is released when it goes after the switch and after Whereabouts is
# removed, and when all are gone both pools are empty.
mig_doc=$root/docs/migrate-from-whereabouts.md
# wb_manifests: the directory of Whereabouts' own manifests, in its module (bench/go.mod's).
wb_manifests() {
  local dir
  dir=$(cd "$root/bench" && PATH=$PATH:/usr/local/go/bin GONOSUMDB=github.com/k8snetworkplumbingwg/whereabouts \
        go mod download -json github.com/k8snetworkplumbingwg/whereabouts@v0.9.4 | jq -r .Dir) || return 1
  echo "$dir/doc/crds"
}
# wb_install IMAGE: Whereabouts as its manifests install it, with its image built here (the
# manifests name ghcr.io's :latest, which no node can pull).
wb_install() {
  local crds
  crds=$(wb_manifests) || { note "Whereabouts' module is not available"; return 1; }
  kubectl apply -f "$crds/whereabouts.cni.cncf.io_ippools.yaml" \
    -f "$crds/whereabouts.cni.cncf.io_overlappingrangeipreservations.yaml" \
    -f "$crds/whereabouts.cni.cncf.io_nodeslicepools.yaml" >/dev/null || return 1
  { cat "$crds/daemonset-install.yaml"; echo ---; cat "$crds/reconciler-deployment.yaml"; echo ---
    cat "$crds/node-slice-controller.yaml"; } |
    sed "s|image: ghcr.io/k8snetworkplumbingwg/whereabouts:latest|image: $1|" | kubectl apply -f - >/dev/null || return 1
  kubectl -n kube-system rollout status ds/whereabouts --timeout=180s >/dev/null
}
# doc_step NAME [VAR=VALUE...]: the document's ```sh block marked `migrate-step: NAME`, run with
# bash -eu -o pipefail in $work/mig (beside a link to deploy/: the document's commands run from
# the checkout's top directory) with the variables given. Its output: $work/mig/NAME.log.
doc_step() {
  local name=$1 script
  shift
  script=$(awk -v m="<!-- migrate-step: $name -->" '$0 == m { f = 1; next } f && /^```sh/ { b = 1; next }
                                                    b && /^```/ { exit } b { print }' "$mig_doc")
  [[ -n "$script" ]] || { note "the document has no step $name"; return 1; }
  mkdir -p "$work/mig"
  ln -sfn "$root/deploy" "$work/mig/deploy"
  (cd "$work/mig" && env "$@" bash -eu -o pipefail -c "$script") >"$work/mig/$name.log" 2>&1 ||
    { note "step $name failed:"; tail -n 5 "$work/mig/$name.log" | sed 's/^/#   /'; return 1; }
}
# mig_pods LABEL: two new pods on each network, Running.
mig_pods() {
  local n i
  for n in a b; do
    for i in 1 2; do net_pod_yaml "$1-$n-$i" "$1" "" "[{\"name\":\"mig-$n\"}]"; done
  done | kubectl apply -f - >/dev/null
  wait_running "$1" 4
}
# mig_check: every live s14 pod's net1 address is in its network's range and no two share one;
# the first six that are still there kept theirs. Writes "pod address" lines to $work/s14.all.
mig_check() {
  local p ip bad=0 dup
  : >"$work/s14.all"
  for p in $(kubectl -n "$ns" get pods -o json |
             jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name | select(startswith("s14"))'); do
    ip=$(pod_ip "$p")
    [[ "$ip" =~ ^10\.8[12]\.0\.[0-9]+$ ]] || { note "$p: no address on its network ('$ip')"; bad=1; }
    echo "$p $ip" >>"$work/s14.all"
  done
  dup=$(awk '{print $2}' "$work/s14.all" | sort | uniq -d | xargs)
  [[ -z "$dup" ]] || { note "duplicate addresses: $dup"; bad=1; }
  [[ -e "$work/s14.first" ]] || return $bad
  while read -r p ip; do
    grep -q "^$p " "$work/s14.all" || continue
    grep -qxF "$p $ip" "$work/s14.all" || { note "$p had $ip, now $(grep "^$p " "$work/s14.all")"; bad=1; }
  done <"$work/s14.first"
  return $bad
}
# mig_round LABEL: new pods after a step, then the checks.
mig_round() { mig_pods "$1" && mig_check; }
# nad_ipam NAME: the network's ipam section, compact.
nad_ipam() { kubectl -n "$ns" get net-attach-def "$1" -o json | jq -c '.spec.config | fromjson | .ipam'; }
pools_name() { holds 10.81.0.0-24 "$1" >/dev/null || holds 10.82.0.0-24 "$1" >/dev/null; }
pools_empty() { [[ "$(allocs 10.81.0.0-24)" == '{}' && "$(allocs 10.82.0.0-24)" == '{}' ]]; }
# released POD: the pod goes (its deletion finishes) and neither pool names it within 60 s.
released() {
  kubectl -n "$ns" delete pod "$1" --wait=true --timeout=90s >/dev/null || { note "$1 not deleted in 90 s"; return 1; }
  wait_for 60 not pools_name "$1" || { note "$1's address not released 60 s after it went"; return 1; }
}
# whereabouts_is_allot yes|no: /opt/cni/bin/whereabouts on every node is (is not) allot's copy.
whereabouts_is_allot() {
  local i same
  for ((i = 1; i <= nodes; i++)); do
    same=no
    "$harness" exec "node-$i" cmp -s /opt/cni/bin/allot /opt/cni/bin/whereabouts && same=yes
    [[ $same == "$1" ]] || { note "node-$i: /opt/cni/bin/whereabouts is allot's copy: $same"; return 1; }
  done
}
s14_nads() {
  nad_apply mig-a 10.81.0.0/24 "" "" whereabouts /etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig &&
    nad_apply mig-b 10.82.0.0/24 "" "" whereabouts none
}
# s14_setup: the harness's allot removed, Whereabouts installed, its two networks and six pods.
s14_setup() {
  local image i
  cd "$root" || return 1
  rm -f "$work/s14.first"
  { kubectl delete -k deploy/ >/dev/null && removed; } || { note "removing the harness's allot failed"; return 1; }
  image=$("$harness" whereabouts-image) || { note "no Whereabouts image"; return 1; }
  wb_install "$image" || { note "installing Whereabouts failed"; return 1; }
  s14_nads || { note "the networks were not created"; return 1; }
  for i in 1 2 3; do
    net_pod_yaml "s14w-a-$i" s14w "" '[{"name":"mig-a"}]'
    net_pod_yaml "s14w-b-$i" s14w "" '[{"name":"mig-b"}]'
  done | kubectl apply -f - >/dev/null
  wait_running s14w 6 || { note "pods under Whereabouts not Running"; return 1; }
  mig_check || return 1
  cp "$work/s14.all" "$work/s14.first"
}
# s14_restore: the harness as it was, whatever step the scenario stopped at: no s14 pod, no
# Whereabouts objects, no migration networks, allot's CRDs, allot from deploy/ (no copy), and
# Whereabouts' own binary on the nodes (their image's).
s14_restore() {
  local i
  kubectl -n "$ns" get pods -o name | grep '^pod/s14' | xargs -r kubectl -n "$ns" delete --wait=true --timeout=180s >/dev/null 2>&1
  kubectl -n kube-system delete daemonset/whereabouts deployment/whereabouts-controller deployment/whereabouts-reconciler \
    serviceaccount/whereabouts configmap/whereabouts-config --ignore-not-found >/dev/null
  kubectl delete clusterrolebinding/whereabouts clusterrole/whereabouts-cni --ignore-not-found >/dev/null
  kubectl -n "$ns" delete net-attach-def mig-a mig-b --ignore-not-found >/dev/null
  kubectl apply -f "$root/deploy/crds/" >/dev/null || return 1
  { kubectl apply -k "$root/deploy/" >/dev/null && rolled allot:0.1.0; } || return 1
  for ((i = 1; i <= nodes; i++)); do
    "$harness" exec "node-$i" cp /opt/cni/bin.dist/whereabouts /opt/cni/bin/whereabouts || return 1
  done
}
# s14_first_steps: the document's steps 1 to 5 with step 4's undo.
s14_first_steps() {
  local a=NAD=$ns/mig-a left
  { doc_step stop-slice-controller && mig_round s14-1; } || { note "at step 1"; return 1; }
  { doc_step install && mig_round s14-2; } || { note "at step 2"; return 1; }
  { doc_step stop-reconciler && mig_round s14-3; } || { note "at step 3"; return 1; }
  doc_step switch "$a" || { note "at step 4"; return 1; }
  [[ "$(nad_ipam mig-a)" == '{"type":"allot","range":"10.81.0.0/24","kubernetes":{}}' ]] ||
    { note "step 4 left mig-a's ipam as $(nad_ipam mig-a)"; return 1; }
  { mig_round s14-4 && released s14w-a-1; } || { note "after step 4"; return 1; }
  { doc_step switch-back "$a" && [[ "$(nad_ipam mig-a | jq -r .type)" == whereabouts ]] && mig_round s14-4u; } ||
    { note "at step 4's undo"; return 1; }
  { doc_step switch "$a" && doc_step list; } || { note "at step 4 again"; return 1; }
  left=$(cat "$work/mig/list.log")
  { grep -qxF "$ns/mig-b" <<<"$left" && ! grep -qxF "$ns/mig-a" <<<"$left"; } ||
    { note "step 5 lists '$left'"; return 1; }
  { doc_step switch-all && doc_step list && [[ ! -s "$work/mig/list.log" ]] && mig_round s14-5; } ||
    { note "at step 5"; return 1; }
}
# s14_last_steps: steps 6 and 7 with step 6's undo.
s14_last_steps() {
  local b=NAD=$ns/mig-b image
  { doc_step remove-whereabouts && whereabouts_is_allot yes; } || { note "at step 6"; return 1; }
  { mig_round s14-6 && released s14w-b-1; } || { note "after step 6"; return 1; }
  image=$("$harness" whereabouts-image) || return 1
  # Whereabouts' pods are Ready as their container starts, before install-cni.sh has copied.
  { doc_step reinstall-whereabouts && wb_install "$image" && wait_for 60 whereabouts_is_allot no &&
      doc_step switch-back "$b" && mig_round s14-6u; } || { note "at step 6's undo"; return 1; }
  { doc_step switch "$b" && doc_step remove-whereabouts && whereabouts_is_allot yes && mig_round s14-6r; } ||
    { note "at step 6 again"; return 1; }
  { doc_step crd && mig_round s14-7; } || { note "at step 7"; return 1; }
  allocs 10.81.0.0-24 | jq -e --arg r "$ns/s14-7-a-1" 'to_entries[] | select(.value.podref == $r) | .value.node' >/dev/null ||
    { note "after step 7 a new entry has no node field"; return 1; }
}
s14() {
  local name="14 docs/migrate-from-whereabouts.md as written, from Whereabouts' own install, with pods at every step and two undos: no pod loses its address, no duplicate"
  local t0=$SECONDS pods=0 why=""
  if ! s14_setup; then
    why="setting up Whereabouts (see notes)"
  elif ! s14_first_steps || ! s14_last_steps; then
    why="see notes"
  else
    pods=$(wc -l <"$work/s14.all")
    # shellcheck disable=SC2046 # one pod name a word
    kubectl -n "$ns" delete pods $(awk '{print $1}' "$work/s14.all") --wait=true --timeout=180s >/dev/null 2>&1
    wait_for 120 pools_empty || why="the pools kept entries after every pod was deleted"
  fi
  s14_restore || why=${why:-"restoring the harness"}
  [[ -z "$why" ]] || { fail "$name" "$why"; return; }
  pass "$name ($pods pods at the end; the 4 of Whereabouts' time left kept their addresses; $(( SECONDS - t0 )) s)"
}

# ------------------------------------------------------------------- run ---

work=$(mktemp -d "${TMPDIR:-/tmp}/allot-node-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
kubectl create namespace "$ns" >/dev/null 2>&1 || true
apply_nad allot
scenarios=("$@")
(( ${#scenarios[@]} )) || scenarios=(1 2 3 4 8 9 10 6 7 11 15 16 17 18 19 20 12 21 13 14 5)
t0=$SECONDS
for s in "${scenarios[@]}"; do
  t=$SECONDS
  note "scenario $s"
  "s$s"
  note "scenario $s took $(( SECONDS - t ))s"
done
echo "# ---------------------------------------------------------------- table"
printf '%s\n' "${results[@]}" | sort -t' ' -k3,3n -k2
echo "node: $passed passed, $failed failed ($(( SECONDS - t0 ))s)"
(( failed == 0 ))
