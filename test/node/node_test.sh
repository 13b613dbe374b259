#!/usr/bin/env bash
# allot on real nodes (e2e/node/cluster up first): kubelet, containerd and Multus drive the
# plugin that deploy/'s DaemonSet installed, and allot-gc runs as that DaemonSet's pods.
# Prints one line per scenario, `ok - N name` or `not ok - N name: why`, then a summary.
#
#   test/node/node_test.sh [SCENARIO...]     all by default: 1 2 3 4 6 7 5 (5 removes a node,
#                                            so it runs last)
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
nad=node-test-net
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

# apply_nad TYPE: the NetworkAttachmentDefinition, macvlan on each node's eth0, with IPAM
# TYPE (allot or whereabouts) on $range. Whereabouts runs with an identity of its own, as it
# would in a cluster migrating from it (it needs Leases, which allot's plugin identity lacks):
# here the node's admin kubeconfig that Multus uses; both keep pools in kube-system.
apply_nad() {
  local kubeconfig=/etc/cni/net.d/allot.d/allot.kubeconfig
  [[ "$1" == whereabouts ]] && kubeconfig=/etc/cni/net.d/multus.d/multus.kubeconfig
  kubectl apply -f - >/dev/null <<EOF
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: $nad, namespace: $ns}
spec:
  config: |
    {
      "cniVersion": "1.0.0",
      "name": "$nad",
      "type": "macvlan",
      "master": "eth0",
      "mode": "bridge",
      "ipam": {
        "type": "$1",
        "range": "$range",
        "kubernetes": {"kubeconfig": "$kubeconfig"}
      }
    }
EOF
}

# pod_yaml NAME LABEL [NODE]: a busybox pod on the secondary network.
pod_yaml() {
  cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  labels: {scenario: "$2"}
  annotations: {k8s.v1.cni.cncf.io/networks: $nad}
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
    note "pool before kubelet returned (less the s3 pods):"; sed 's/^/#   /' <<<"$before"
    note "after:"; sed 's/^/#   /' <<<"$after"
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
  kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: $ns}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {scenario: s4}}
  template:
    metadata:
      labels: {scenario: s4}
      annotations: {k8s.v1.cni.cncf.io/networks: $nad}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: c, image: allot.local/busybox:1, imagePullPolicy: Never, command: ["sleep", "100000"]}
EOF
  wait_running s4 3 || { fail "$name" "StatefulSet pods not Running"; return; }
  check_pods s4 || { fail "$name" "address checks failed"; return; }
  local uid newuid old new
  uid=$(kubectl -n "$ns" get pod web-0 -o jsonpath='{.metadata.uid}')
  old=$(awk '$1 == "web-0" {print $2}' "$work/s4.ips")
  kubectl -n "$ns" delete pod web-0 --wait=true >/dev/null
  local deadline=$(( SECONDS + timeout ))
  until newuid=$(kubectl -n "$ns" get pod web-0 -o jsonpath='{.metadata.uid}' 2>/dev/null) &&
        [[ -n "$newuid" && "$newuid" != "$uid" ]] && wait_running s4 3; do
    (( SECONDS < deadline )) || { fail "$name" "web-0 not re-created and Running"; return; }
    sleep 2
  done
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

s5() {
  local name="5 a node removed from the cluster: the repair loop reclaims its pods' addresses"
  (( nodes > 1 )) || { fail "$name" "needs 2 nodes"; return; }
  local node=node-$nodes
  make_pods s5 3 "$node"
  wait_running s5 3 || { fail "$name" "pods not Running"; return; }
  check_pods s5 || { fail "$name" "address checks failed"; return; }
  # The node goes away: its container (kubelet, containerd, its allot-gc) stops, then its
  # Node object is deleted; the pod garbage collector deletes its pods.
  "$harness" node-stop "$node" || { fail "$name" "could not stop $node"; return; }
  kubectl delete node "$node" --wait=true >/dev/null
  # allot-gc's defaults (deploy/): a repair pass every 60s, release after 3 passes and 5 min.
  wait_pool_count 0 600 || { fail "$name" "addresses not reclaimed within 10 min"; return; }
  pass "$name"
}

# ------------------------------------------------------------------- run ---

work=$(mktemp -d "${TMPDIR:-/tmp}/allot-node-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
kubectl create namespace "$ns" >/dev/null 2>&1 || true
apply_nad allot
scenarios=("$@")
(( ${#scenarios[@]} )) || scenarios=(1 2 3 4 6 7 5)
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
