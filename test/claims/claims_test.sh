#!/usr/bin/env bash
# Persistent IPs (issue 18) against a real kube-apiserver and etcd (e2e/cluster), driving the
# real plugin (build/plugin/allot) as a runtime does, from simulated nodes (NODENAME and a lock
# dir each): the released-address cooldown across nodes and its yield to exhaustion, a fixed
# address as Multus delivers it, IPAMClaims (allowPersistentIPs): KubeVirt's flow, allot-gc
# freeing a deleted claim's address, and bad input; and sticky StatefulSet addresses
# (sticky_statefulsets).
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up, else starts a private one.
# Prints `ok - NAME` / `not ok - NAME` per check, then `claims: N passed, N failed`.
#
#   ALLOT_CLAIMS_ONLY=REGEX       run only the checks whose name or function matches
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=claims
# shellcheck source=test/integration/lib_plugin.sh disable=SC1091
source "$root/test/integration/lib_plugin.sh"

cluster_start || suite_die "cluster starts"
plugin_init || suite_die "plugin binary present"
CHECK_DIR=$WORK
CHECK_ONLY=${ALLOT_CLAIMS_ONLY:-}
CHECK_TIME=ms
suite_start=$SECONDS

net() { echo "$RUN-$1"; }
# released_log POOL: the pool's release log annotation ({} when none).
released_log() {
  pool_json "$1" | jq -c '.metadata.annotations["allot.cni.cncf.io/released"] // "{}" | fromjson'
}

# ---------------------------------------------------------------- cooldown --

# Two addresses (.1, .2), a 600 s cooldown, two nodes: node-b never gets the address node-a
# just released while another is free; once nothing else is, it does (the oldest release).
t_cooldown_two_nodes() {
  local n r=10.181.0.0/30 pool ipam a b c
  n=$(net cool); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":600}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  expect_eq "first ADD" 10.181.0.1 "$a" || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  cni_ok "DEL c1" || return 1
  released_log "$pool" | jq -e '.keep == 600 and (.at | has("1"))' >/dev/null ||
    { echo "release not recorded: $(released_log "$pool")"; return 1; }
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "node-b passes over the cooling address" 10.181.0.2 "$b" || return 1
  c=$(add_ok node-b c3 "$(netconf node-b "$ipam")" p3) || return 1
  expect_eq "the cooldown yields when nothing else is free" 10.181.0.1 "$c" || return 1
  released_log "$pool" | jq -e '.at == {}' >/dev/null ||
    { echo "an address in use still listed: $(released_log "$pool")"; return 1; }
  cni ADD node-a c4 "$(netconf node-a "$ipam")" p4
  cni_code 100 "exhausted pool" || return 1
  cni_msg "no free address" || return 1
  expect_eq "nothing released by the failed ADD" 2 "$(pool_count "$pool")"
}

# A short cooldown passes: the lowest free address is back in turn.
t_cooldown_expires() {
  local n r=10.182.0.0/29 ipam a b
  n=$(net expire)
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":2}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  cni_ok "DEL c1" || return 1
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "inside the cooldown" 10.182.0.2 "$b" || return 1
  sleep 3
  b=$(add_ok node-b c3 "$(netconf node-b "$ipam")" p3) || return 1
  expect_eq "after the cooldown" "$a" "$b"
}

# Without the key: today's behaviour, the lowest free address at once, no annotation written.
t_cooldown_off() {
  local n r=10.183.0.0/29 pool ipam a b
  n=$(net off); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "the released address again" "$a" "$b" || return 1
  pool_json "$pool" | jq -e '.metadata.annotations["allot.cni.cncf.io/released"] == null' >/dev/null ||
    { echo "annotation written without a cooldown"; return 1; }
}

# A writer that knows nothing of the log (Whereabouts updates the object it read, spec only)
# keeps the annotation; allot then honours it on the next ADD.
t_cooldown_foreign_writer() {
  local n r=10.184.0.0/29 pool ipam a
  n=$(net foreign); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":600}"
  add_ok node-a c1 "$(netconf node-a "$ipam")" p1 >/dev/null || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  pool_json "$pool" |
    jq '.spec.allocations["5"] = {"id":"wb-ctr","podref":"itest/wb-pod","ifname":"net1"}' |
    kubectl replace -f - >/dev/null || return 1
  a=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "the cooling .1 still passed over after the foreign write" 10.184.0.2 "$a"
}

# ------------------------------------------------------------- fixed IPs --

# The README's example as Multus delivers it: the element's `ips` become runtimeConfig.ips of a
# config that declares the `ips` capability.
t_fixed_ip_multus() {
  local n r=10.185.0.0/24 top a
  n=$(net fixed)
  top='{"capabilities":{"ips":true},"runtimeConfig":{"ips":["10.185.0.7/24"]}}'
  a=$(add_ok node-a c1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p1) || return 1
  expect_eq "the fixed address" 10.185.0.7 "$a" || return 1
  cni ADD node-b c2 "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p2
  cni_code 7 "the same fixed address for another pod" || return 1
  cni_msg "already allocated" || return 1
  top='{"capabilities":{"ips":true},"runtimeConfig":{"ips":["10.99.0.7/24"]}}'
  cni ADD node-b c3 "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p3
  cni_code 7 "a fixed address outside the range" || return 1
  cni_msg "in no configured range"
}

# ------------------------------------------------------------- IPAMClaim --

# The IPAMClaim CRD, pinned in deploy/optional, installed into the real API server; pods and
# claims live in this run's namespace (RUN_NS), beside its pools.
claims_init() {
  kubectl apply -f "$root/deploy/optional/k8s.cni.cncf.io_ipamclaims.yaml" >/dev/null || return 1
  kubectl wait --for=condition=Established --timeout=60s crd/ipamclaims.k8s.cni.cncf.io >/dev/null || return 1
  # The allot identity may read the claims once RBAC and the new resource reach the server.
  wait_for 60 kubectl --kubeconfig="$ALLOT_KUBECONFIG" get ipamclaims -n "$RUN_NS" || return 1
  on_exit "kubectl delete -n '$RUN_NS' --all --grace-period=0 --force --wait=false pods,ipamclaims,statefulsets >/dev/null 2>&1"
}
# mk_claim NAME NETWORK: an IPAMClaim as KubeVirt creates it, before its pod.
mk_claim() {
  jq -n --arg n "$1" --arg ns "$RUN_NS" --arg net "$2" \
    '{apiVersion: "k8s.cni.cncf.io/v1alpha1", kind: "IPAMClaim", metadata: {name: $n, namespace: $ns},
      spec: {network: $net, interface: "net1"}}' | kubectl create -f - >/dev/null
}
claim_json() { kubectl get ipamclaim -n "$RUN_NS" "$1" -o json 2>/dev/null; }
# mk_pod NAME NETWORKS_ANNOTATION: a pod on node-a carrying Multus' networks annotation.
mk_pod() {
  jq -n --arg n "$1" --arg ns "$RUN_NS" --arg a "$2" \
    '{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: $ns,
      annotations: {"k8s.v1.cni.cncf.io/networks": $a}},
      spec: {nodeName: "node-a", containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}' |
    kubectl create -f - >/dev/null
}
# ccni VERB CTR NET IPAM POD: the plugin for POD in RUN_NS on a network with allowPersistentIPs.
ccni() {
  local POD_NS=$RUN_NS
  cni "$1" node-a "$2" "$(netconf node-a "$4" "{\"name\":\"$3\",\"allowPersistentIPs\":true}")" "$5"
}
sel() { echo "[{\"name\":\"$1\",\"ipam-claim-reference\":\"$2\"}]"; }
# pool_claim_at POOL OFFSET: the claim owning the entry at OFFSET: its `ipamclaim` field, or the
# pool's claims annotation where a schema pruned that field (Whereabouts' own CRDs).
pool_claim_at() {
  pool_json "$1" | jq -r --arg o "$2" '(.spec.allocations // {})[$o] as $e |
    ($e.ipamclaim // ((.metadata.annotations["allot.cni.cncf.io/claims"] // "{}") | fromjson | .[$o] |
      select(. != null and .id == $e.id) | .claim)) // empty'
}

# KubeVirt's flow against the real API server: the claim first, then the launcher pod; then a
# migration target pod sharing the address; both pods gone, the address stays.
t_claim_add_and_migrate() {
  local n r=10.187.0.0/24 pool ipam a b st
  n=$(net vm); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_claim vm-a "$n" || return 1
  mk_pod launcher-a "$(sel "$n" vm-a)" || return 1
  ccni ADD src "$n" "$ipam" launcher-a
  cni_ok "ADD launcher-a" || return 1
  a=$(result_ip)
  expect_eq "the first address" 10.187.0.1 "$a" || return 1
  st=$(claim_json vm-a | jq -c '.status')
  expect_eq "status.ips" "$(jq -c '.ips' <<<"$st")" '["10.187.0.1/24"]' || return 1
  expect_eq "status.ownerPod" "$(jq -r '.ownerPod.name' <<<"$st")" launcher-a || return 1
  expect_eq "IPsAllocated" "$(jq -r '.conditions[] | select(.type == "IPsAllocated") | .status' <<<"$st")" True || return 1
  expect_eq "the entry's owner" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-a" || return 1
  mk_pod launcher-b "$(sel "$n" vm-a)" || return 1
  ccni ADD dst "$n" "$ipam" launcher-b
  cni_ok "ADD launcher-b (migration target)" || return 1
  b=$(result_ip)
  expect_eq "the target pod shares the address" "$b" "$a" || return 1
  expect_eq "one entry" "$(pool_count "$pool")" 1 || return 1
  ccni DEL src "$n" "$ipam" launcher-a; cni_ok "DEL src" || return 1
  ccni DEL dst "$n" "$ipam" launcher-b; cni_ok "DEL dst" || return 1
  kubectl delete pod -n "$RUN_NS" launcher-a launcher-b --grace-period=0 --force >/dev/null 2>&1
  expect_eq "kept after both DELs" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-a" || return 1
  res_exists "$(res_name 10.187.0.1 "$n")" || { echo "reservation of 10.187.0.1 gone"; return 1; }
  # A restarted VM (a new launcher pod) gets it again.
  mk_pod launcher-c "$(sel "$n" vm-a)" || return 1
  ccni ADD c3 "$n" "$ipam" launcher-c
  cni_ok "ADD launcher-c" || return 1
  expect_eq "the restarted VM's address" "$(result_ip)" "$a"
}

# start_claim_gc NAME FLAGS...: allot-gc for node-a as the allot identity, pools in RUN_NS; sets
# GC_PORT and GC_LOG (the last one started's) and adds it to GC_PIDS; waits for its first
# sync (/readyz).
start_claim_gc() {
  local name=$1; shift
  GC_PORT=$(free_port); GC_LOG=$WORK/gc-$name.log
  local kc=$ALLOT_KUBECONFIG
  [[ " $* " == *" --role=controller "* ]] && kc=$ALLOT_CONTROLLER_KUBECONFIG
  "$GC_BIN" --node-name=node-a --kubeconfig="$kc" --namespace="$RUN_NS" \
    --listen="127.0.0.1:$GC_PORT" --lease-name="$RUN-lease" --lease-namespace=kube-system \
    --journal-dir= --lease-duration=3s --lease-renew-interval=1s --node-slices=false \
    --log-level=debug "$@" >>"$GC_LOG" 2>&1 &
  GC_PID=$!
  GC_PIDS+=("$GC_PID")
  on_exit "kill -9 $GC_PID 2>/dev/null; kubectl delete lease -n kube-system '$RUN-lease' >/dev/null 2>&1"
  gc_ready() { [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GC_PORT/readyz")" == 200 ]]; }
  wait_for 60 gc_ready || { echo "allot-gc $name not ready"; tail -n 20 "$GC_LOG"; return 1; }
}

# Through allot-gc's node relay: the pod's annotation comes from its pod watch and the claim
# from its IPAMClaim watch (neither GET reaches the API server), the status write goes on the
# relay's connection. A claim created after the copy was listed is still found (an event, or
# the plugin's own GET when the event has not arrived).
t_claim_via_relay() {
  local n r=10.193.0.0/24 ipam sock mark claims
  n=$(net relay); sock=$(node_dir node-a)/relay.sock
  mkdir -p "$(node_dir node-a)"
  mk_claim vm-r "$n" && mk_pod launcher-r "$(sel "$n" vm-r)" && mk_pod launcher-r2 "$(sel "$n" vm-r)" || return 1
  start_claim_gc relay --role=agent --relay-socket="$sock" || return 1
  copied() { grep -q "listed [0-9]* IPAMClaims" "$GC_LOG"; }
  wait_for 30 copied || { echo "allot-gc never listed the IPAMClaims"; tail -n 20 "$GC_LOG"; return 1; }
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"relay_socket\":\"$sock\"}"
  mark=$(audit_mark)
  ccni ADD r1 "$n" "$ipam" launcher-r
  cni_ok "ADD through the relay" || return 1
  expect_eq "status.ips" "$(claim_json vm-r | jq -c '.status.ips')" '["10.193.0.1/24"]' || return 1
  # The status write reaches the copy as an event; a second pod (migration) then shares it.
  sleep 1
  ccni ADD r2 "$n" "$ipam" launcher-r2
  cni_ok "a second pod with the claim, through the relay" || return 1
  expect_eq "the second pod's address" "$(result_ip)" 10.193.0.1 || return 1
  audit_settle
  expect_eq "GETs of the pods at the API server" \
    "$(audit_since "$mark" ".verb == \"get\" and (.requestURI | startswith(\"/api/v1/namespaces/$RUN_NS/pods/launcher-r\"))")" 0 || return 1
  claims="(.requestURI | startswith(\"/apis/k8s.cni.cncf.io/v1alpha1/namespaces/$RUN_NS/ipamclaims/vm-r\"))"
  expect_eq "GETs of the claim at the API server, but the test's kubectl (the relay's copy answers)" \
    "$(audit_since "$mark" ".verb == \"get\" and $claims and (.userAgent | startswith(\"kubectl\") | not)")" 0 || return 1
  expect_eq "status writes carried by allot-gc's connection" \
    "$(audit_since "$mark" "$claims and (.requestURI | endswith(\"/status\")) and (.userAgent | startswith(\"allot-gc/node-a\"))")" 1 || return 1
  mk_claim vm-s "$n" && mk_pod launcher-s "$(sel "$n" vm-s)" || return 1
  ccni ADD s1 "$n" "$ipam" launcher-s
  cni_ok "ADD with a claim created a moment before" || return 1
  expect_eq "its status.ips" "$(claim_json vm-s | jq -c '.status.ips')" '["10.193.0.2/24"]'
}

# orphaned_claim NET RANGE X: the claim vm-X on network NET holds the first address of RANGE,
# and its pod launcher-X is gone; sets ORPHAN_POOL.
orphaned_claim() {
  local n r=$2 ipam
  n=$(net "$1"); ORPHAN_POOL=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_claim "vm-$3" "$n" && mk_pod "launcher-$3" "$(sel "$n" "vm-$3")" || return 1
  ccni ADD "${3}1" "$n" "$ipam" "launcher-$3"; cni_ok "ADD" || return 1
  kubectl delete pod -n "$RUN_NS" "launcher-$3" --grace-period=0 --force >/dev/null 2>&1
}

# allot-gc (leader, repair every second, no leak grace) keeps the address of a claim whose pods
# are gone, and frees it once the claim is deleted.
t_claim_deleted_frees() {
  local pool port log
  orphaned_claim gone 10.188.0.0/24 g || return 1
  pool=$ORPHAN_POOL
  start_claim_gc repair --role=controller --repair-interval=1s --resync-interval=1s --leak-passes=1 --leak-grace=0s || return 1
  port=$GC_PORT; log=$GC_LOG
  passes() { curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | awk '$1 == "allot_repair_pass_duration_seconds_count" { print $2 }'; }
  passes_reach() { local p; p=$(passes); (( ${p:-0} >= $1 )); }
  wait_for 60 passes_reach 3 ||
    { echo "allot-gc made no 3 repair passes"; tail -n 20 "$log"; return 1; }
  expect_eq "kept over $(passes) passes without its pod" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-g" || return 1
  grep -Eq "owned-address pass: [0-9]+ addresses owned" "$log" || { echo "no claim pass logged"; tail -n 20 "$log"; return 1; }
  kubectl delete ipamclaim -n "$RUN_NS" vm-g >/dev/null || return 1
  freed() { [[ -z "$(pool_claim_at "$pool" 1)" ]]; }
  wait_for 30 freed ||
    { echo "not freed after the claim was deleted"; tail -n 20 "$log"; return 1; }
  wait_for 10 not res_exists "$(res_name 10.188.0.1 "$n")" || { echo "reservation left"; return 1; }
  grep -q "its IPAMClaim $RUN_NS/vm-g was deleted" "$log" || { echo "no release logged"; return 1; }
}

# With no periodic pass (a one-hour resync), the claim's deletion itself starts the pass that
# frees its address: the controller watches IPAMClaims and lists none.
t_claim_deleted_watched() {
  local pool mark
  orphaned_claim watched 10.197.0.0/24 w || return 1
  pool=$ORPHAN_POOL
  start_claim_gc watched --role=controller --repair-interval=1s --resync-interval=1h --leak-passes=1 --leak-grace=0s || return 1
  listed() { grep -q "listed [0-9]* IPAMClaims" "$GC_LOG"; }
  wait_for 30 listed || { echo "the controller never listed the IPAMClaims"; tail -n 20 "$GC_LOG"; return 1; }
  claim_pass() { grep -Eq "owned-address pass: [0-9]+ addresses owned" "$GC_LOG"; }
  wait_for 30 claim_pass || { echo "no claim pass logged"; tail -n 20 "$GC_LOG"; return 1; }
  expect_eq "kept while its claim exists" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-w" || return 1
  mark=$(audit_mark)
  kubectl delete ipamclaim -n "$RUN_NS" vm-w >/dev/null || return 1
  freed() { [[ -z "$(pool_claim_at "$pool" 1)" ]]; }
  wait_for 30 freed || { echo "not freed after the claim was deleted"; tail -n 20 "$GC_LOG"; return 1; }
  grep -q "its IPAMClaim $RUN_NS/vm-w was deleted" "$GC_LOG" || { echo "no release logged"; return 1; }
  audit_settle
  expect_eq "IPAMClaim LISTs by the controller" \
    "$(audit_since "$mark" ".verb == \"list\" and (.objectRef.resource == \"ipamclaims\") and (.userAgent | startswith(\"allot-gc/\"))")" 0
}

# The CRD installed after the controller started (its watch found IPAMClaims not served, and asks
# again only every 5 minutes): the claim pass lists them, finds them served, and the watch lists
# them at once; a deleted claim's address is then freed within seconds, with a one-hour resync.
t_claim_crd_late() {
  local pool
  kubectl delete crd ipamclaims.k8s.cni.cncf.io --ignore-not-found --wait=true >/dev/null 2>&1
  start_claim_gc late --role=controller --repair-interval=1s --resync-interval=1h --leak-passes=1 --leak-grace=0s || return 1
  not_served() { grep -q "IPAMClaims are not served" "$GC_LOG"; }
  wait_for 30 not_served || { echo "the controller did not find IPAMClaims not served"; tail -n 20 "$GC_LOG"; return 1; }
  claims_init || { echo "the IPAMClaim CRD did not install"; return 1; }
  orphaned_claim late 10.198.0.0/24 l || return 1
  pool=$ORPHAN_POOL
  listed() { grep -q "listed [0-9]* IPAMClaims" "$GC_LOG"; }
  wait_for 30 listed || { echo "the watch never listed the IPAMClaims once served"; tail -n 20 "$GC_LOG"; return 1; }
  expect_eq "kept while its claim exists" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-l" || return 1
  kubectl delete ipamclaim -n "$RUN_NS" vm-l >/dev/null || return 1
  freed() { [[ -z "$(pool_claim_at "$pool" 1)" ]]; }
  wait_for 30 freed || { echo "not freed after the claim was deleted"; tail -n 20 "$GC_LOG"; return 1; }
}

# Live-migrated, then the VM deleted: the entry names the source pod (gone), the target still
# runs and shares the address. The claim deleted frees nothing until the target is gone too.
t_claim_deleted_target_runs() {
  local n r=10.196.0.0/24 pool ipam
  n=$(net mig); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_claim vm-m "$n" && mk_pod launcher-s "$(sel "$n" vm-m)" && mk_pod launcher-t "$(sel "$n" vm-m)" || return 1
  ccni ADD s1 "$n" "$ipam" launcher-s; cni_ok "ADD source" || return 1
  ccni ADD t1 "$n" "$ipam" launcher-t; cni_ok "ADD target" || return 1
  kubectl delete pod -n "$RUN_NS" launcher-s --grace-period=0 --force >/dev/null 2>&1
  kubectl delete ipamclaim -n "$RUN_NS" vm-m >/dev/null || return 1
  start_claim_gc mig --role=controller --repair-interval=1s --resync-interval=1s --leak-passes=1 --leak-grace=0s || return 1
  repair_passes 3 || return 1
  expect_eq "kept while the migration target runs" "$(pool_claim_at "$pool" 1)" "$RUN_NS/vm-m" || return 1
  kubectl delete pod -n "$RUN_NS" launcher-t --grace-period=0 --force >/dev/null 2>&1
  freed() { [[ -z "$(pool_claim_at "$pool" 1)" ]]; }
  wait_for 30 freed || { echo "not freed once the target was gone"; tail -n 20 "$GC_LOG"; return 1; }
}

# A claim that does not exist yet: code 11 (the runtime retries); one for another network is
# used, with a warning.
t_claim_missing_or_other_network() {
  local n r=10.189.0.0/24 pool ipam
  n=$(net miss); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_pod launcher-m "$(sel "$n" vm-missing)" || return 1
  ccni ADD m1 "$n" "$ipam" launcher-m
  cni_code 11 "a missing claim" || return 1
  cni_msg "IPAMClaim $RUN_NS/vm-missing not found" || return 1
  expect_eq "nothing allocated" "$(pool_count "$pool")" 0 || return 1
  mk_claim vm-missing "$n" || return 1
  ccni ADD m1 "$n" "$ipam" launcher-m
  cni_ok "the retry once the claim exists" || return 1
  mk_claim vm-other some-other-network && mk_pod launcher-o "$(sel "$n" vm-other)" || return 1
  ccni ADD o1 "$n" "$ipam" launcher-o
  cni_ok "a claim for another network" || return 1
  grep -q "is for network \"some-other-network\", not \"$n\"; using it" <<<"$CNI_ERR" ||
    { echo "no warning: $CNI_ERR"; return 1; }
}

# Bad input gets a clear error, and releases nothing.
t_claim_bad_input() {
  local n r=10.190.0.0/24 pool ipam before
  n=$(net bad); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_claim vm-ok "$n" && mk_pod launcher-ok "$(sel "$n" vm-ok)" || return 1
  ccni ADD ok1 "$n" "$ipam" launcher-ok; cni_ok "ADD" || return 1
  before=$(pool_allocs "$pool")
  mk_pod launcher-x '[{"name":"'"$n"'","ipam-claim-reference":5}]' || return 1
  ccni ADD x1 "$n" "$ipam" launcher-x
  cni_code 7 "a malformed networks annotation" || return 1
  cni_msg "k8s.v1.cni.cncf.io/networks element 0" || return 1
  mk_pod launcher-y "$(sel "$n" Not_A_Name)" || return 1
  ccni ADD y1 "$n" "$ipam" launcher-y
  cni_code 7 "a reference that is no object name" || return 1
  cni_msg "is not an IPAMClaim name" || return 1
  mk_claim vm-out "$n" && mk_pod launcher-z "$(sel "$n" vm-out)" || return 1
  kubectl patch ipamclaim -n "$RUN_NS" vm-out --subresource=status --type=merge \
    -p '{"status":{"ips":["10.9.9.9/24"]}}' >/dev/null || return 1
  ccni ADD z1 "$n" "$ipam" launcher-z
  cni_code 7 "a claim whose status address is outside the range" || return 1
  cni_msg "status.ips \"10.9.9.9/24\" is outside every range" || return 1
  expect_eq "nothing released or taken" "$(pool_allocs "$pool")" "$before"
}

# An exhausted network: IPsAllocated=False, reason SubnetExhausted, and the ADD fails.
t_claim_exhausted() {
  local n r=10.191.0.0/30 pool ipam st
  n=$(net full); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  mk_pod plain-1 "" && mk_pod plain-2 "" || return 1  # pods without a claim
  ccni ADD f1 "$n" "$ipam" plain-1; cni_ok "ADD f1" || return 1
  ccni ADD f2 "$n" "$ipam" plain-2; cni_ok "ADD f2" || return 1
  mk_claim vm-f "$n" && mk_pod launcher-f "$(sel "$n" vm-f)" || return 1
  ccni ADD f3 "$n" "$ipam" launcher-f
  cni_code 100 "an exhausted network" || return 1
  st=$(claim_json vm-f | jq -c '.status.conditions[] | select(.type == "IPsAllocated")')
  expect_eq "condition" "$(jq -r '.status + " " + .reason' <<<"$st")" "False SubnetExhausted"
}

# args.cni's reference (cni-args, which Multus copies) works without the pod annotation.
t_claim_args_cni() {
  local n r=10.192.0.0/24 POD_NS=$RUN_NS a
  n=$(net args)
  mk_claim vm-args "$n" || return 1
  cni ADD node-a a1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" \
    "{\"name\":\"$n\",\"allowPersistentIPs\":true,\"args\":{\"cni\":{\"ipam-claim-reference\":\"vm-args\"}}}")" no-such-pod
  cni_ok "ADD with args.cni" || return 1
  a=$(result_ip)
  expect_eq "status.ips" "$(claim_json vm-args | jq -c '.status.ips')" "[\"$a/24\"]"
}

# ---------------------------------------------------- sticky StatefulSets --

# mk_sts NAME REPLICAS: a StatefulSet (this API server runs no controllers, so no pods come of
# it); prints its UID.
mk_sts() {
  jq -n --arg n "$1" --arg ns "$RUN_NS" --argjson r "$2" \
    '{apiVersion: "apps/v1", kind: "StatefulSet", metadata: {name: $n, namespace: $ns},
      spec: {replicas: $r, serviceName: $n, selector: {matchLabels: {app: $n}},
        template: {metadata: {labels: {app: $n}},
          spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}}}' |
    kubectl create -f - -o jsonpath='{.metadata.uid}'
}
# mk_member POD SET SET_UID: a pod on node-a that the StatefulSet controls; prints its UID.
mk_member() {
  jq -n --arg n "$1" --arg ns "$RUN_NS" --arg set "$2" --arg uid "$3" \
    '{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: $ns,
      ownerReferences: [{apiVersion: "apps/v1", kind: "StatefulSet", name: $set, uid: $uid,
        controller: true, blockOwnerDeletion: true}]},
      spec: {nodeName: "node-a", containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}' |
    kubectl create -f - -o jsonpath='{.metadata.uid}'
}
# sadd CTR IPAM POD POD_UID: ADD for a member; prints its address.
sadd() {
  local POD_NS=$RUN_NS POD_UID=$4
  add_ok node-a "$1" "$(netconf node-a "$2")" "$3"
}
sdel() {
  local POD_NS=$RUN_NS POD_UID=$4
  cni DEL node-a "$1" "$(netconf node-a "$2")" "$3"
  cni_ok "DEL $1"
}
gone_pod() { kubectl delete pod -n "$RUN_NS" "$1" --grace-period=0 --force >/dev/null 2>&1; }
# repair_passes N: allot-gc (GC_PORT) has made at least N more repair passes than now.
repair_passes() {
  local port=$GC_PORT want
  passes() { curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | awk '$1 == "allot_repair_pass_duration_seconds_count" { print $2 }'; }
  want=$(( $(passes) + $1 ))
  reached() { local p; p=$(passes); (( ${p:-0} >= want )); }
  wait_for 60 reached || { echo "allot-gc made no $1 more repair passes"; tail -n 20 "$GC_LOG"; return 1; }
}

# sticky_statefulsets, with allot-gc on node-a (its relay, its pod watch, a repair pass every
# second, no leak grace): a member deleted keeps its address over passes and its re-created
# pod (new UID, new sandbox) gets it back; another pod does not get it meanwhile. A scale-down
# frees the member outside the replicas, once its pod is gone; deleting the set frees the rest.
t_sticky_statefulset() {
  local n r=10.194.0.0/29 pool ipam sock set u0 u1 a0 a1 o mark
  n=$(net sts); pool=$(pool_name "$r" "$n"); sock=$(node_dir node-a)/relay.sock
  mkdir -p "$(node_dir node-a)"
  set=$(mk_sts web 2) || return 1
  u0=$(mk_member web-0 web "$set") && u1=$(mk_member web-1 web "$set") || return 1
  # node-a's agent (its relay, its pod watch), then the controller (the passes; GC_PORT).
  start_claim_gc sts-agent --role=agent --relay-socket="$sock" || return 1
  start_claim_gc sts --role=controller --repair-interval=1s --resync-interval=1s --leak-passes=1 --leak-grace=0s || return 1
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"sticky_statefulsets\":true,\"relay_socket\":\"$sock\"}"
  mark=$(audit_mark)
  a0=$(sadd s0 "$ipam" web-0 "$u0") || { echo "$a0"; return 1; }
  a1=$(sadd s1 "$ipam" web-1 "$u1") || { echo "$a1"; return 1; }
  expect_eq "the set's owner on the entry" "$(pool_claim_at "$pool" 1)" "statefulset:$RUN_NS/web/$set" || return 1
  audit_settle
  expect_eq "GETs of the members at the API server (the relay answers from its pod watch)" \
    "$(audit_since "$mark" ".verb == \"get\" and (.requestURI | startswith(\"/api/v1/namespaces/$RUN_NS/pods/web-\"))")" 0 || return 1
  # web-0 deleted (its DEL, its pod's deletion event): kept over passes.
  sdel s0 "$ipam" web-0 "$u0" || return 1
  gone_pod web-0
  repair_passes 3 || return 1
  expect_eq "web-0's address kept without its pod" "$(pool_holder "$pool" 1)" s0 || return 1
  mk_pod plain-pod "" || return 1
  o=$(POD_NS=$RUN_NS add_ok node-a o1 "$(netconf node-a "$ipam")" plain-pod) || { echo "$o"; return 1; }
  expect_eq "another pod passes over it" 10.194.0.3 "$o" || return 1
  u0=$(mk_member web-0 web "$set") || return 1
  expect_eq "the re-created web-0 gets its address back" "$a0" "$(sadd s0-new "$ipam" web-0 "$u0")" || return 1
  expect_eq "now held by the new sandbox" "$(pool_holder "$pool" 1)" s0-new || return 1
  # Scale-down to 1: web-1 is outside the replicas, but its pod still runs: kept.
  kubectl scale statefulset -n "$RUN_NS" web --replicas=1 >/dev/null || return 1
  repair_passes 2 || return 1
  expect_eq "web-1 kept while its pod runs" "$(pool_holder "$pool" 2)" s1 || return 1
  sdel s1 "$ipam" web-1 "$u1" || return 1
  gone_pod web-1
  freed1() { [[ -z "$(pool_holder "$pool" 2)" ]]; }
  wait_for 30 freed1 || { echo "web-1 not freed after the scale-down"; tail -n 20 "$GC_LOG"; return 1; }
  grep -q "StatefulSet $RUN_NS/web no longer has ordinal 1" "$GC_LOG" || { echo "no release logged"; return 1; }
  expect_eq "web-0 kept" "$(pool_holder "$pool" 1)" s0-new || return 1
  # The set deleted: web-0's address goes once its pod is gone too.
  sdel s0-new "$ipam" web-0 "$u0" || return 1
  gone_pod web-0
  kubectl delete statefulset -n "$RUN_NS" web >/dev/null || return 1
  freed0() { [[ -z "$(pool_holder "$pool" 1)" ]]; }
  wait_for 30 freed0 || { echo "web-0 not freed after the set was deleted"; tail -n 20 "$GC_LOG"; return 1; }
  wait_for 10 not res_exists "$(res_name "$a0" "$n")" || { echo "reservation of $a0 left"; return 1; }
  grep -q "StatefulSet $RUN_NS/web is gone" "$GC_LOG" || { echo "no release logged"; return 1; }
}

# A set re-created under its name (another UID) frees the old members' addresses; without the
# key (the default) a member's DEL frees its address, as Whereabouts does.
t_sticky_recreated_and_default() {
  local n r=10.195.0.0/29 pool ipam set u0
  n=$(net sts2); pool=$(pool_name "$r" "$n")
  set=$(mk_sts db 1) && u0=$(mk_member db-0 db "$set") || return 1
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"sticky_statefulsets\":true}"
  sadd d0 "$ipam" db-0 "$u0" >/dev/null || return 1
  sdel d0 "$ipam" db-0 "$u0" || return 1
  gone_pod db-0
  expect_eq "kept after its DEL" "$(pool_holder "$pool" 1)" d0 || return 1
  kubectl delete statefulset -n "$RUN_NS" db >/dev/null && mk_sts db 1 >/dev/null || return 1
  start_claim_gc sts2 --role=controller --repair-interval=1s --resync-interval=1s --leak-passes=1 --leak-grace=0s || return 1
  freed() { [[ -z "$(pool_holder "$pool" 1)" ]]; }
  wait_for 30 freed || { echo "not freed after the set was re-created"; tail -n 20 "$GC_LOG"; return 1; }
  grep -q "StatefulSet $RUN_NS/db was re-created" "$GC_LOG" || { echo "no release logged"; return 1; }
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  set=$(kubectl get statefulset -n "$RUN_NS" db -o jsonpath='{.metadata.uid}')
  u0=$(mk_member db-0 db "$set") || return 1
  sadd d1 "$ipam" db-0 "$u0" >/dev/null || return 1
  expect_eq "no owner without the key" "$(pool_claim_at "$pool" 1)" "" || return 1
  sdel d1 "$ipam" db-0 "$u0" || return 1
  expect_eq "freed by its DEL without the key" "$(pool_count "$pool")" 0
}

check "cooldown across two nodes: not handed out while another is free; yields to exhaustion" t_cooldown_two_nodes
check "a 2 s cooldown expires: the address is handed out again" t_cooldown_expires
check "no cooldown key: Whereabouts' behaviour, no annotation" t_cooldown_off
check "a write that knows nothing of the log (Whereabouts') keeps it" t_cooldown_foreign_writer

check "a fixed address through Multus' ips capability (runtimeConfig.ips)" t_fixed_ip_multus
t_persistent_ips_not_bool() {
  local n r=10.186.0.0/29
  n=$(net persist)
  cni ADD node-a c2 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" '{"allowPersistentIPs":"yes"}')" p2
  cni_code 7 "allowPersistentIPs not a boolean" || return 1
  cni_msg allowPersistentIPs
}

GC_BIN=$WORK/allot-gc
cp "$root/build/gc-sidecar/allot-gc" "$GC_BIN" || suite_die "allot-gc binary present"
# Each allot-gc stops with its check: the later checks' pods and pools are not its business.
GC_PIDS=()
with_gc() {
  "$@"
  local rc=$?
  local pid
  for pid in "${GC_PIDS[@]}"; do { kill -9 "$pid"; wait "$pid"; } 2>/dev/null; done
  GC_PIDS=()
  return $rc
}
check "IPAMClaim: the CRD installed after the controller started is watched once a claim pass finds it; a deleted claim is freed" with_gc t_claim_crd_late
claims_init || suite_die "the IPAMClaim CRD installs"
check "IPAMClaim: an address for the claim, in its status; shared by a migration target; kept after both pods" t_claim_add_and_migrate
check "IPAMClaim: allot-gc keeps it without pods over repair passes, frees it when the claim is deleted" with_gc t_claim_deleted_frees
check "IPAMClaim: its deletion, seen by the controller's watch, starts the pass that frees it (no IPAMClaim list)" with_gc t_claim_deleted_watched
check "IPAMClaim: a deleted claim's address waits while a migration target that names it runs" with_gc t_claim_deleted_target_runs
check "IPAMClaim: missing is code 11 (then works once created); another network's claim is used with a warning" t_claim_missing_or_other_network
check "IPAMClaim: malformed annotation, bad name, status outside the range are code 7 and release nothing" t_claim_bad_input
check "IPAMClaim: exhaustion writes IPsAllocated=False SubnetExhausted and fails with code 100" t_claim_exhausted
check "IPAMClaim: a reference in args.cni (cni-args)" t_claim_args_cni
check "IPAMClaim through the node relay: the pod from allot-gc's watch, the status write on its connection" with_gc t_claim_via_relay
check "allowPersistentIPs that is not a boolean is code 7" t_persistent_ips_not_bool
check "sticky StatefulSet: a member keeps its address across re-creation; freed on scale-down once its pod is gone, and when the set is deleted" with_gc t_sticky_statefulset
check "sticky StatefulSet: a re-created set frees its old members' addresses; without the key a DEL frees" with_gc t_sticky_recreated_and_default

suite_summary "($((SECONDS - suite_start)) s)"
(( failed == 0 ))
