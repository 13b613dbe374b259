#!/usr/bin/env bash
# Checks the local real-cluster harness (e2e/cluster) and the manifests in
# deploy/ against a real kube-apiserver.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up (eval "$(e2e/cluster env)");
# otherwise starts a private one and removes it at exit.
# Prints `ok - NAME` / `not ok - NAME` per check, then `harness: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=harness

cluster_start || suite_die "cluster starts"

work=$(mktemp -d)
on_exit "rm -rf '$work'"
CHECK_DIR=$work
CHECK_TAIL=20
ns=harness-$$-$RANDOM
rbacpool=rbac-$ns
# No namespace controller runs: empty the namespace, then finalize it by hand.
# Pods bound to a node need a forced delete (no kubelet confirms it).
cleanup_ns() {
  kubectl delete -n "$ns" --all --grace-period=0 --force --wait=false \
    ippools,overlappingrangeipreservations,nodeslicepools,network-attachment-definitions,pods >/dev/null 2>&1
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  kubectl get namespace "$ns" -o json 2>/dev/null | jq '.spec.finalizers = []' |
    kubectl replace --raw "/api/v1/namespaces/$ns/finalize" -f - >/dev/null 2>&1
}
on_exit cleanup_ns
kubectl create namespace "$ns" >/dev/null

# http_code_as_allot METHOD PATH: HTTP status of a raw request with allot's token.
allot_token() { awk '$1 == "token:" { print $2 }' "$ALLOT_KUBECONFIG"; }
http_code_as_allot() {
  curl -s -o "$work/body" -w '%{http_code}' --max-time 10 \
    --cacert "$ALLOT_CLUSTER_DIR/pki/ca.crt" -H "Authorization: Bearer $(allot_token)" \
    -X "$1" "$ALLOT_APISERVER$2" "${@:3}"
}

# ------------------------------------------------------------------ checks --

t_kubeconfig() {
  kubectl version >/dev/null
  kubectl get ns default kube-system
}

t_crds_established() {
  local crd
  for crd in ippools.whereabouts.cni.cncf.io overlappingrangeipreservations.whereabouts.cni.cncf.io \
      nodeslicepools.whereabouts.cni.cncf.io network-attachment-definitions.k8s.cni.cncf.io; do
    expect_eq "$crd Established" \
      "$(kubectl get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" True || return 1
  done
  kubectl get net-attach-def -A >/dev/null
}

t_ippool_roundtrip() {
  kubectl create -n "$ns" -f - <<'EOF' || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: 10.10.0.0-24
spec:
  range: 10.10.0.0/24
  allocations:
    "1":
      id: c0ffee
      podref: default/web-0
      ifname: net1
    "2":
      id: beef
      podref: default/web-1
      ifname: net1
      node: node-a
      poduid: 3f0c8a4e-1111-2222-3333-444455556666
EOF
  local got
  got=$(kubectl get ippool -n "$ns" 10.10.0.0-24 -o json | jq -cS .spec) || return 1
  expect_eq spec "$got" \
    '{"allocations":{"1":{"id":"c0ffee","ifname":"net1","podref":"default/web-0"},"2":{"id":"beef","ifname":"net1","node":"node-a","podref":"default/web-1","poduid":"3f0c8a4e-1111-2222-3333-444455556666"}},"range":"10.10.0.0/24"}'
}

t_reservation_roundtrip() {
  kubectl create -n "$ns" -f - <<'EOF' || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: OverlappingRangeIPReservation
metadata:
  name: 10.10.0.1
spec:
  containerid: c0ffee
  podref: default/web-0
  ifname: net1
EOF
  expect_eq spec "$(kubectl get overlappingrangeipreservation -n "$ns" 10.10.0.1 -o json | jq -cS .spec)" \
    '{"containerid":"c0ffee","ifname":"net1","podref":"default/web-0"}'
}

t_nodeslicepool_roundtrip() {
  kubectl create -n "$ns" -f - <<'EOF' || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: NodeSlicePool
metadata:
  name: slicenet
spec:
  range: 10.20.0.0/16
  sliceSize: /24
status:
  allocations:
  - nodeName: node-a
    sliceRange: 10.20.0.0/24
  - nodeName: ""
    sliceRange: 10.20.1.0/24
EOF
  expect_eq object "$(kubectl get nodeslicepool -n "$ns" slicenet -o json | jq -cS '{spec, status}')" \
    '{"spec":{"range":"10.20.0.0/16","sliceSize":"/24"},"status":{"allocations":[{"nodeName":"node-a","sliceRange":"10.20.0.0/24"},{"nodeName":"","sliceRange":"10.20.1.0/24"}]}}'
  # Whereabouts' controller writes status with a plain update: it must stick.
  kubectl patch nodeslicepool -n "$ns" slicenet --type=merge \
    -p '{"status":{"allocations":[{"nodeName":"node-b","sliceRange":"10.20.0.0/24"}]}}' || return 1
  expect_eq status "$(kubectl get nodeslicepool -n "$ns" slicenet -o jsonpath='{.status.allocations[0].nodeName}')" node-b
}

t_nad_roundtrip() {
  local config='{"cniVersion":"1.0.0","name":"macnet","type":"macvlan","master":"eth0","ipam":{"type":"allot","range":"10.30.0.0/24"}}'
  jq -n --arg c "$config" --arg ns "$ns" '{apiVersion:"k8s.cni.cncf.io/v1",kind:"NetworkAttachmentDefinition",
      metadata:{name:"macnet",namespace:$ns},spec:{config:$c}}' | kubectl create -f - || return 1
  expect_eq config "$(kubectl get net-attach-def -n "$ns" macnet -o jsonpath='{.spec.config}')" "$config"
}

t_pruning_kubectl() {
  # --validate=false: let the server prune instead of kubectl refusing.
  kubectl create --validate=false -n "$ns" -f - <<'EOF' || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: prune-me
spec:
  range: 10.11.0.0/24
  bogus: true
  allocations:
    "5":
      id: abc
      podref: default/p
      zzz: unknown
EOF
  # Unknown fields are pruned, but an allocation entry is kept as written (the CRD gives the
  # entries no schema, see deploy/crds): newer Whereabouts and allot fields must survive.
  expect_eq spec "$(kubectl get ippool -n "$ns" prune-me -o json | jq -cS .spec)" \
    '{"allocations":{"5":{"id":"abc","podref":"default/p","zzz":"unknown"}},"range":"10.11.0.0/24"}'
}

t_pruning_raw() {
  # A raw client (like allot) that sends no fieldValidation: pruned, not rejected.
  local code
  code=$(http_code_as_allot POST "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/$ns/ippools" \
    -H 'Content-Type: application/json' \
    -d '{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool","metadata":{"name":"prune-raw"},"spec":{"range":"10.12.0.0/24","bogus":1,"allocations":{"7":{"id":"x","podref":"a/b","zzz":"y"}}}}')
  expect_eq "create status" "$code" 201 || { cat "$work/body"; return 1; }
  expect_eq spec "$(jq -cS .spec "$work/body")" '{"allocations":{"7":{"id":"x","podref":"a/b","zzz":"y"}},"range":"10.12.0.0/24"}'
}

t_schema_requires_allocations() {
  # Whereabouts-compatible required fields are enforced: spec.allocations must be there and be
  # an object (the entries themselves are checked by allot when it reads the pool).
  ! kubectl create -n "$ns" -f - <<'EOF' || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: no-allocations
spec:
  range: 10.13.0.0/24
EOF
  ! kubectl create -n "$ns" -f - <<'EOF'
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: list-allocations
spec:
  range: 10.13.0.0/24
  allocations: []
EOF
}

can_i() { kubectl --kubeconfig="$ALLOT_KUBECONFIG" auth can-i "$@"; }

t_allot_allowed_can_i() {
  local args
  while read -r args; do
    # shellcheck disable=SC2086
    expect_eq "can-i $args" "$(can_i $args 2>/dev/null)" yes || return 1
  done <<'EOF'
get ippools.whereabouts.cni.cncf.io -n kube-system
update ippools.whereabouts.cni.cncf.io -n kube-system
create ippools.whereabouts.cni.cncf.io -n kube-system
create overlappingrangeipreservations.whereabouts.cni.cncf.io -n kube-system
delete overlappingrangeipreservations.whereabouts.cni.cncf.io -n kube-system
get nodeslicepools.whereabouts.cni.cncf.io -n kube-system
get network-attachment-definitions.k8s.cni.cncf.io -n default
list pods --all-namespaces
watch pods --all-namespaces
create events -n default
patch leases.coordination.k8s.io -n kube-system
EOF
}

t_allot_denied_can_i() {
  local args
  while read -r args; do
    # shellcheck disable=SC2086
    expect_eq "can-i $args" "$(can_i $args 2>/dev/null)" no || return 1
  done <<'EOF'
get secrets -n kube-system
list secrets --all-namespaces
delete nodes
create pods/exec -n default
create pods -n default
delete pods -n default
update network-attachment-definitions.k8s.cni.cncf.io -n default
patch leases.coordination.k8s.io -n default
update leases.coordination.k8s.io -n kube-system
create serviceaccounts/token -n kube-system
patch ippools.whereabouts.cni.cncf.io -n kube-system
delete ippools.whereabouts.cni.cncf.io -n kube-system
create events.events.k8s.io -n default
EOF
}

t_allot_real_requests() {
  local k=(kubectl --kubeconfig="$ALLOT_KUBECONFIG")
  # Default namespace of the allot kubeconfig is kube-system.
  "${k[@]}" create -f - <<EOF || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: $rbacpool
spec:
  range: 10.14.0.0/24
  allocations: {}
EOF
  on_exit "kubectl delete ippool -n kube-system '$rbacpool' --ignore-not-found >/dev/null 2>&1"
  "${k[@]}" get ippool "$rbacpool" >/dev/null || return 1
  # allot writes a pool only by a resourceVersion-guarded update (PUT), never a patch.
  "${k[@]}" get ippool "$rbacpool" -o json \
    | jq '.spec.allocations["3"] = {"id":"c2","podref":"default/a","ifname":"net1"}' \
    | "${k[@]}" replace -f - >/dev/null || return 1
  expect_eq "after update" "$("${k[@]}" get ippool "$rbacpool" -o jsonpath='{.spec.allocations.3.id}')" c2 || return 1
  "${k[@]}" get pods -A >/dev/null || return 1
  # A watch that times out after 1s with 200.
  expect_eq "watch pods" "$(http_code_as_allot GET '/api/v1/pods?watch=1&timeoutSeconds=1')" 200 || return 1
  kubectl delete ippool -n kube-system "$rbacpool" >/dev/null
}

t_allot_forbidden_requests() {
  local code
  code=$(http_code_as_allot GET /api/v1/namespaces/kube-system/secrets/anything)
  expect_eq "get secret" "$code" 403 || return 1
  code=$(http_code_as_allot GET /api/v1/namespaces/kube-system/secrets)
  expect_eq "list secrets" "$code" 403 || return 1
  code=$(http_code_as_allot DELETE /api/v1/nodes/node-a)
  expect_eq "delete node" "$code" 403 || return 1
  code=$(http_code_as_allot POST '/api/v1/namespaces/default/pods/any/exec?command=true&stdout=true')
  expect_eq "create pods/exec" "$code" 403 || return 1
  local out
  out=$(kubectl --kubeconfig="$ALLOT_KUBECONFIG" get secrets -n kube-system 2>&1) && return 1
  grep -q Forbidden <<<"$out"
}

t_pod_with_node_name() {
  kubectl create -n "$ns" -f - <<'EOF' || return 1
apiVersion: v1
kind: Pod
metadata:
  name: pinned
spec:
  nodeName: node-a
  containers:
  - name: c
    image: registry.invalid/none
EOF
  expect_eq nodeName "$(kubectl get pod -n "$ns" pinned -o jsonpath='{.spec.nodeName}')" node-a || return 1
  [[ -n "$(kubectl get pod -n "$ns" pinned -o jsonpath='{.metadata.uid}')" ]]
}

t_audit_log() {
  # The allot identity's requests above are in the audit log, one
  # ResponseComplete event each, with user, verb and resource.
  local deadline=$(( SECONDS + 10 )) n
  while :; do
    n=$(audit_count ".user.username == \"system:serviceaccount:kube-system:allot\" and .verb == \"update\"
                     and .objectRef.resource == \"ippools\" and .objectRef.name == \"$rbacpool\"")
    [[ "$n" == 1 ]] && return 0
    (( SECONDS < deadline )) || { echo "update events: $n, want 1"; return 1; }
    sleep 0.2
  done
}

t_up_twice() {
  local before after
  before=$(e2e_cluster_pids)
  "$ALLOT_CLUSTER" up || return 1
  "$ALLOT_CLUSTER" up || return 1
  after=$(e2e_cluster_pids)
  expect_eq pids "$after" "$before" || return 1
  "$ALLOT_CLUSTER" status
}
e2e_cluster_pids() { echo "$("$ALLOT_CLUSTER" pid etcd) $("$ALLOT_CLUSTER" pid apiserver)"; }

t_second_instance() {
  local dir2 env2 pids2 p
  dir2=$(mktemp -d "${TMPDIR:-/tmp}/allot-cluster2.XXXXXX")
  on_exit "ALLOT_CLUSTER_DIR='$dir2' '$ALLOT_CLUSTER' down >/dev/null 2>&1"
  ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" up || return 1
  env2=$(ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" env)
  pids2="$(ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" pid etcd) $(ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" pid apiserver)"
  # Both ready, on different ports, with separate data.
  "$ALLOT_CLUSTER" status || return 1
  ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" status || return 1
  (
    eval "$env2"
    [[ "$ALLOT_APISERVER" != "$1" ]] || { echo "same apiserver URL"; exit 1; }
    kubectl get ippools -A -o name | grep -q . && { echo "second cluster sees first cluster's pools"; exit 1; }
    # Restart on the same port with the same certs and etcd: data survives.
    kubectl create -n kube-system -f - <<'EOF' || exit 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata:
  name: survives
spec:
  range: 10.15.0.0/24
  allocations: {}
EOF
    old=$("$ALLOT_CLUSTER" pid apiserver)
    "$ALLOT_CLUSTER" stop-apiserver || exit 1
    "$ALLOT_CLUSTER" pid apiserver 2>/dev/null && { echo "apiserver still running after stop"; exit 1; }
    kubectl get ns --request-timeout=2s >/dev/null 2>&1 && { echo "apiserver still answering after stop"; exit 1; }
    "$ALLOT_CLUSTER" start-apiserver || exit 1
    [[ "$("$ALLOT_CLUSTER" pid apiserver)" != "$old" ]] || exit 1
    kubectl --kubeconfig="$ALLOT_KUBECONFIG" get ippool survives >/dev/null || { echo "pool or token lost over restart"; exit 1; }
    "$ALLOT_CLUSTER" restart-apiserver || exit 1
    kubectl get ippool -n kube-system survives >/dev/null || exit 1
  ) || return 1
  # The first cluster is untouched.
  "$ALLOT_CLUSTER" status || return 1
  ALLOT_CLUSTER_DIR=$dir2 "$ALLOT_CLUSTER" down || return 1
  [[ ! -e "$dir2" ]] || { echo "$dir2 left behind"; return 1; }
  for p in $pids2; do
    if [[ -d /proc/$p ]] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
      echo "process $p still running after down"; return 1
    fi
  done
  # Whatever the second instance ran is gone (nothing references its dir).
  if pgrep -f -- "$dir2" >/dev/null; then echo "processes referencing $dir2 remain"; pgrep -af -- "$dir2"; return 1; fi
  "$ALLOT_CLUSTER" status
}

t_down_when_down() {
  ALLOT_CLUSTER_DIR="$work/never-up" "$ALLOT_CLUSTER" down || return 1
  ! ALLOT_CLUSTER_DIR="$work/never-up" "$ALLOT_CLUSTER" status >/dev/null
}

check "kubeconfig from e2e/cluster env works with the built kubectl" t_kubeconfig
check "all four CRDs are Established" t_crds_established
check "IPPool round-trips, with allot's optional node/poduid" t_ippool_roundtrip
check "OverlappingRangeIPReservation round-trips" t_reservation_roundtrip
check "NodeSlicePool round-trips, status writable by plain update" t_nodeslicepool_roundtrip
check "NetworkAttachmentDefinition round-trips" t_nad_roundtrip
check "unknown fields are pruned, allocation entries kept as written (kubectl)" t_pruning_kubectl
check "unknown fields are pruned, allocation entries kept as written (raw request)" t_pruning_raw
check "IPPool without allocations, or with a list of them, is rejected" t_schema_requires_allocations
check "allot identity: auth can-i allows what it needs" t_allot_allowed_can_i
check "allot identity: auth can-i denies the rest" t_allot_denied_can_i
check "allot identity: real get/create/update/list/watch" t_allot_real_requests
check "allot identity: 403 for secrets, node delete, pods/exec" t_allot_forbidden_requests
check "a Pod with nodeName can be created directly" t_pod_with_node_name
check "audit log records allot's requests" t_audit_log
check "up twice is harmless" t_up_twice
check "second instance runs side by side, restarts, and goes down cleanly" t_second_instance "$ALLOT_APISERVER"
check "down on a cluster that is not up is harmless" t_down_when_down

suite_summary
(( failed == 0 ))
