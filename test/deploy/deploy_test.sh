#!/usr/bin/env bash
# Applies every manifest in deploy/ to the real API server with server-side apply and checks
# that the allot ServiceAccount may do exactly what allot and allot-gc need, and no more.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$ROOT/test/lib.sh"   # cluster_start, ok, bad, suite_summary
SUITE_NAME=deploy
cluster_start >/dev/null
# The node-report admission policy binds every ServiceAccount named allot: the suites after this
# one on a shared cluster run agents with tokens bound to no pod, which it would refuse.
on_exit "kubectl delete -f '$ROOT/deploy/admission.yaml' --ignore-not-found >/dev/null 2>&1"

# The README's install commands, as a user runs them from the repository (client-side apply).
readme_install() {
  cd "$ROOT" &&
    { for f in deploy/crds/*.yaml; do kubectl get -f "$f" >/dev/null 2>&1 || kubectl create -f "$f"; done; } &&
    kubectl apply -k deploy/ &&
    kubectl apply -f deploy/optional/k8s.cni.cncf.io_ipamclaims.yaml &&
    kubectl apply -f deploy/example-nad.yaml
}
# The cluster's CRDs exist already (e2e/cluster made them): the install leaves them as they are.
crd_versions() { kubectl get -f "$ROOT/deploy/crds/" -o jsonpath='{range .items[*]}{.metadata.resourceVersion} {end}'; }
crds_before=$(crd_versions)
if out=$(readme_install 2>&1); then
  ok "the README's install commands apply"
else
  bad "the README's install commands: $out"
fi
if [[ -n "$crds_before" && "$(crd_versions)" == "$crds_before" ]]; then
  ok "the README's install leaves CRDs that exist untouched"
else
  bad "the README's install changed existing CRDs: $crds_before -> $(crd_versions)"
fi

for f in "$ROOT"/deploy/crds/*.yaml "$ROOT"/deploy/optional/*.yaml "$ROOT"/deploy/rbac.yaml "$ROOT"/deploy/daemonset.yaml \
         "$ROOT"/deploy/controller.yaml "$ROOT"/deploy/admission.yaml "$ROOT"/deploy/example-nad.yaml; do
  if out=$(kubectl apply --server-side --force-conflicts --field-manager=allot-test -f "$f" 2>&1); then
    ok "server-side apply $(basename "$f")"
  else
    bad "server-side apply $(basename "$f"): $out"
  fi
done

if kubectl -n kube-system get daemonset allot -o jsonpath='{.spec.template.spec.serviceAccountName}' | grep -qx allot; then
  ok "the DaemonSet runs as the allot ServiceAccount"
else
  bad "the DaemonSet's ServiceAccount is not allot"
fi
if kubectl get network-attachment-definitions macvlan-allot -n default -o jsonpath='{.spec.config}' | jq -e '.ipam.type == "allot"' >/dev/null; then
  ok "the example NetworkAttachmentDefinition uses allot"
else
  bad "the example NetworkAttachmentDefinition is not an allot network"
fi

# The pod spec the node needs (issue 22.6): the host network (no pod address needed to
# install the plugin), DNS that still resolves cluster names from there, and a Lease identity
# per pod from the downward API.
ds=$(kubectl -n kube-system get daemonset allot -o json)
check_ds() {  # check_ds DESCRIPTION JQ-FILTER
  if jq -e "$2" <<<"$ds" >/dev/null; then ok "$1"; else bad "$1"; fi
}
check_ds "the DaemonSet runs on the host network" '.spec.template.spec.hostNetwork == true'
check_ds "the DaemonSet's DNS policy is ClusterFirstWithHostNet" '.spec.template.spec.dnsPolicy == "ClusterFirstWithHostNet"'
# shellcheck disable=SC2016 # $(POD_UID) is the DaemonSet's own expansion
check_ds "both containers' POD_UID comes from the downward API (the install stamp), and allot-gc checks it" \
  '([.spec.template.spec.initContainers[0], (.spec.template.spec.containers[] | select(.name == "allot-gc"))] | map(any(.env[]; .name == "POD_UID" and .valueFrom.fieldRef.fieldPath == "metadata.uid")) | all) and (.spec.template.spec.containers[] | select(.name == "allot-gc") | .args | index("--pod-uid=$(POD_UID)") != null)'
check_ds "allot-gc asks the node's container runtime: the CRI socket's directory mounted read-only" \
  '(.spec.template.spec.containers[] | select(.name == "allot-gc") | any(.env[]; .name == "ALLOT_GC_CRI_SOCKET" and .value == "/run/allot-cri/containerd.sock") and any(.volumeMounts[]; .name == "cri" and .readOnly == true)) and any(.spec.template.spec.volumes[]; .name == "cri" and .hostPath.path == "/run/containerd")'
check_ds "allot-gc runs as the node agent" '.spec.template.spec.containers[] | select(.name == "allot-gc") | .args | index("--role=agent") != null'
check_ds "allot-gc's POD_NAME comes from the downward API (its identity)" \
  '.spec.template.spec.containers[] | select(.name == "allot-gc") | .env[] | select(.name == "POD_NAME") | .valueFrom.fieldRef.fieldPath == "metadata.name"'
check_ds "allot-gc adds only SYS_ADMIN and SYS_PTRACE (the namespace probe) to no capabilities" \
  '.spec.template.spec.containers[] | select(.name == "allot-gc") | .securityContext.capabilities | (.drop == ["ALL"]) and ((.add | sort) == ["SYS_ADMIN", "SYS_PTRACE"])'
check_ds "no container is privileged" '[.spec.template.spec.containers[], .spec.template.spec.initContainers[] | .securityContext.privileged // false] | all(. == false)'

SA=system:serviceaccount:kube-system:allot
can() {  # can VERB RESOURCE [NAMESPACE]
  local ns=${3:-kube-system}
  kubectl auth can-i "$1" "$2" --as="$SA" -n "$ns" >/dev/null 2>&1
}
# What the programs use: the plugin (pools, reservations, node slices) and allot-gc (pods,
# NADs, events, the leader Lease).
allowed=(
  "get ippools.whereabouts.cni.cncf.io" "list ippools.whereabouts.cni.cncf.io"
  "create ippools.whereabouts.cni.cncf.io" "update ippools.whereabouts.cni.cncf.io"
  "get overlappingrangeipreservations.whereabouts.cni.cncf.io"
  "create overlappingrangeipreservations.whereabouts.cni.cncf.io"
  "delete overlappingrangeipreservations.whereabouts.cni.cncf.io"
  "list overlappingrangeipreservations.whereabouts.cni.cncf.io"
  "get nodeslicepools.whereabouts.cni.cncf.io" "list nodeslicepools.whereabouts.cni.cncf.io"
  "watch nodeslicepools.whereabouts.cni.cncf.io"
  "list pods" "watch pods" "get pods" "get nodes"
  "get network-attachment-definitions.k8s.cni.cncf.io" "list network-attachment-definitions.k8s.cni.cncf.io"
  "create events"
  # Its node's report (a Lease allot-node-<node>, an apply patch; admission.yaml checks the name).
  "create leases.coordination.k8s.io" "patch leases.coordination.k8s.io"
  "get ipamclaims.k8s.cni.cncf.io" "list ipamclaims.k8s.cni.cncf.io" "watch ipamclaims.k8s.cni.cncf.io"
)
for a in "${allowed[@]}"; do
  # shellcheck disable=SC2086
  if can $a; then ok "allowed: $a"; else bad "allot cannot $a"; fi
done
denied=(
  "get secrets" "list secrets" "create pods/exec" "delete nodes" "delete pods" "update pods"
  "create pods" "delete network-attachment-definitions.k8s.cni.cncf.io"
  "create serviceaccounts/token" "update clusterroles.rbac.authorization.k8s.io"
  "delete leases.coordination.k8s.io"
  # The controller's: the leader's Lease, the reports' list, Nodes, slices, StatefulSets.
  "get leases.coordination.k8s.io" "update leases.coordination.k8s.io" "list leases.coordination.k8s.io"
  "list nodes" "create nodeslicepools.whereabouts.cni.cncf.io"
  "update nodeslicepools.whereabouts.cni.cncf.io" "delete nodeslicepools.whereabouts.cni.cncf.io"
  "get statefulsets.apps"
  # Verbs the code never calls.
  "patch ippools.whereabouts.cni.cncf.io" "delete ippools.whereabouts.cni.cncf.io"
  "watch ippools.whereabouts.cni.cncf.io"
  "update overlappingrangeipreservations.whereabouts.cni.cncf.io"
  "patch nodeslicepools.whereabouts.cni.cncf.io"
  "watch network-attachment-definitions.k8s.cni.cncf.io"
  "patch events" "create events.events.k8s.io"
  # IPAMClaims: read, and only their status written (issue 18).
  "create ipamclaims.k8s.cni.cncf.io" "update ipamclaims.k8s.cni.cncf.io"
  "patch ipamclaims.k8s.cni.cncf.io" "delete ipamclaims.k8s.cni.cncf.io"
  "list statefulsets.apps" "watch statefulsets.apps" "update statefulsets.apps"
  "delete statefulsets.apps"
)
for d in "${denied[@]}"; do
  # shellcheck disable=SC2086
  if can $d; then bad "allot may $d (must be denied)"; else ok "denied: $d"; fi
done
if can patch leases.coordination.k8s.io default; then bad "allot may patch leases outside kube-system"; else ok "denied: leases outside kube-system"; fi
# The status subresource of an IPAMClaim: update only (the relay carries the plugin's write).
for who in "$SA" system:serviceaccount:kube-system:allot-plugin; do
  if kubectl auth can-i update ipamclaims.k8s.cni.cncf.io --subresource=status --as="$who" -n vms >/dev/null 2>&1; then
    ok "allowed: $who update ipamclaims/status"
  else
    bad "$who cannot update ipamclaims/status"
  fi
  if kubectl auth can-i patch ipamclaims.k8s.cni.cncf.io --subresource=status --as="$who" -n vms >/dev/null 2>&1; then
    bad "$who may patch ipamclaims/status (must be denied)"
  else
    ok "denied: $who patch ipamclaims/status"
  fi
done

# The plugin's own identity: what ADD/DEL/CHECK/GC call, nothing else (issue 22.10).
PSA=system:serviceaccount:kube-system:allot-plugin
# rights WHO SA allowed|denied "VERB RESOURCE"...: `kubectl auth can-i` in kube-system as SA
# says so for each (WHO names it in the results).
rights() {
  local who=$1 sa=$2 want=$3 a
  shift 3
  for a in "$@"; do
    # shellcheck disable=SC2086
    if kubectl auth can-i $a --as="$sa" -n kube-system >/dev/null 2>&1; then
      if [[ $want == allowed ]]; then ok "$who allowed: $a"; else bad "$who may $a (must be denied)"; fi
    else
      if [[ $want == allowed ]]; then bad "$who cannot $a"; else ok "$who denied: $a"; fi
    fi
  done
}
rights plugin "$PSA" allowed "get ippools.whereabouts.cni.cncf.io" "list ippools.whereabouts.cni.cncf.io" \
         "create ippools.whereabouts.cni.cncf.io" "update ippools.whereabouts.cni.cncf.io" \
         "get overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "list overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "create overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "delete overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "get nodeslicepools.whereabouts.cni.cncf.io" "get pods" \
         "get ipamclaims.k8s.cni.cncf.io"
# get pods and IPAMClaims: an ADD with allowPersistentIPs reads its pod's annotation and claim
# when the node relay is down (issue 18).
rights plugin "$PSA" denied "list pods" "watch pods" "get network-attachment-definitions.k8s.cni.cncf.io" \
         "list ipamclaims.k8s.cni.cncf.io" "update ipamclaims.k8s.cni.cncf.io" \
         "delete ipamclaims.k8s.cni.cncf.io" \
         "create events" "get leases.coordination.k8s.io" "update leases.coordination.k8s.io" \
         "patch ippools.whereabouts.cni.cncf.io" "delete ippools.whereabouts.cni.cncf.io" \
         "update nodeslicepools.whereabouts.cni.cncf.io" "get secrets" "list nodes" \
         "create serviceaccounts/token" "get statefulsets.apps"
if kubectl auth can-i create serviceaccounts/allot-plugin --subresource=token --as="$SA" -n kube-system >/dev/null 2>&1; then
  ok "allot-gc may request the plugin's tokens"
else
  bad "allot-gc cannot request tokens for allot-plugin"
fi
if kubectl auth can-i create serviceaccounts/allot --subresource=token --as="$SA" -n kube-system >/dev/null 2>&1; then
  bad "allot-gc may request tokens for another ServiceAccount"
else
  ok "allot-gc may not request tokens for other ServiceAccounts"
fi
# As it stops, allot-gc reads its own DaemonSet (--uninstall-with), and no other.
if kubectl auth can-i get daemonsets.apps/allot --as="$SA" -n kube-system >/dev/null 2>&1; then
  ok "allot-gc may read its DaemonSet"
else
  bad "allot-gc cannot read its DaemonSet"
fi
for v in "get daemonsets.apps/kube-proxy" "list daemonsets.apps" "update daemonsets.apps/allot" "delete daemonsets.apps/allot"; do
  # shellcheck disable=SC2086
  if can $v; then bad "allot may $v (must be denied)"; else ok "denied: $v"; fi
done

# A real request, not only the authorizer's opinion: the allot identity reading secrets is 403.
secrets_out=$(kubectl --kubeconfig="$ALLOT_KUBECONFIG" get secrets -n kube-system 2>&1)
if [[ "$secrets_out" == *Forbidden* ]]; then
  ok "a real request for secrets as allot is Forbidden"
else
  bad "secrets were readable as allot"
fi

# The controller Deployment: its own identity, the controller role, nothing of the node's.
dep=$(kubectl -n kube-system get deployment allot-controller -o json)
check_dep() {  # check_dep DESCRIPTION JQ-FILTER
  if jq -e "$2" <<<"$dep" >/dev/null; then ok "$1"; else bad "$1"; fi
}
check_dep "the controller runs 2 replicas as allot-controller" \
  '.spec.replicas == 2 and .spec.template.spec.serviceAccountName == "allot-controller"'
check_dep "the controller runs allot-gc --role=controller, its Lease identity the pod's name" \
  '.spec.template.spec.containers[0] | (.args | index("--role=controller") != null) and
   ([.env[] | select(.name == "POD_NAME") | .valueFrom.fieldRef.fieldPath] == ["metadata.name"])'
check_dep "the controller is not root, adds no capability and mounts nothing of the host" \
  '.spec.template.spec.securityContext.runAsNonRoot == true and
   (.spec.template.spec.containers[0].securityContext.capabilities.drop == ["ALL"]) and
   (.spec.template.spec.containers[0].securityContext.capabilities.add // [] | length == 0) and
   ((.spec.template.spec.volumes // []) | length == 0)'
check_dep "the controller's port is not the node agent's (both on the host network)" \
  '.spec.template.spec.containers[0].ports[0].containerPort != 9847'
# A surge replica would need a node without one (its host port): on a cluster of as many nodes
# as replicas a roll would never end (the real-node suite's gc_mode rolls it).
check_dep "the controller rolls a replica at a time without surge (its host port)" \
  '.spec.strategy.rollingUpdate.maxSurge == 0 and .spec.strategy.rollingUpdate.maxUnavailable == 1'

CSA=system:serviceaccount:kube-system:allot-controller
rights controller "$CSA" allowed "get ippools.whereabouts.cni.cncf.io" "list ippools.whereabouts.cni.cncf.io" \
         "create ippools.whereabouts.cni.cncf.io" "update ippools.whereabouts.cni.cncf.io" \
         "list overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "create overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "delete overlappingrangeipreservations.whereabouts.cni.cncf.io" \
         "list nodeslicepools.whereabouts.cni.cncf.io" "create nodeslicepools.whereabouts.cni.cncf.io" \
         "update nodeslicepools.whereabouts.cni.cncf.io" "delete nodeslicepools.whereabouts.cni.cncf.io" \
         "list network-attachment-definitions.k8s.cni.cncf.io" "list pods" "get pods" "watch pods" \
         "list nodes" "get nodes" "watch nodes" "watch network-attachment-definitions.k8s.cni.cncf.io" \
         "watch nodeslicepools.whereabouts.cni.cncf.io" \
         "create events" "list ipamclaims.k8s.cni.cncf.io" "watch ipamclaims.k8s.cni.cncf.io" \
         "get statefulsets.apps" \
         "get leases.coordination.k8s.io/allot-gc" "update leases.coordination.k8s.io/allot-gc" \
         "create leases.coordination.k8s.io" "list leases.coordination.k8s.io"
rights controller "$CSA" denied "update leases.coordination.k8s.io/kube-controller-manager" \
         "patch leases.coordination.k8s.io/kube-controller-manager" "patch leases.coordination.k8s.io" \
         "update leases.coordination.k8s.io/allot-node-worker-1" "delete leases.coordination.k8s.io" \
         "get secrets" "delete pods" "update pods" "patch ippools.whereabouts.cni.cncf.io" \
         "delete ippools.whereabouts.cni.cncf.io" "create serviceaccounts/token" \
         "get daemonsets.apps/allot" "update ipamclaims.k8s.cni.cncf.io"

# Real requests with a node agent's token bound to its pod, as the DaemonSet's pods get them
# (the token carries the pod's node): it writes its own node's report and nothing else.
kubectl create -f - >/dev/null 2>&1 <<'EOF2'
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "deploy-node-a"}},
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "deploy-node-b"}},
 {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
  "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
  "spec": {"holderIdentity": "the-real-one"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "deploy-agent-a", "namespace": "kube-system"},
  "spec": {"nodeName": "deploy-node-a", "serviceAccountName": "allot", "automountServiceAccountToken": false,
           "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}]}
EOF2
puid=$(kubectl get pod -n kube-system deploy-agent-a -o jsonpath='{.metadata.uid}')
atoken=$(kubectl create token allot -n kube-system --bound-object-kind=Pod \
  --bound-object-name=deploy-agent-a --bound-object-uid="$puid" 2>&1)
# lease_as TOKEN NAME: an apply patch of Lease NAME in kube-system; prints the HTTP status, then
# the message.
lease_as() {
  curl -s --cacert "$ALLOT_CLUSTER_DIR/pki/ca.crt" -H "Authorization: Bearer $1" -X PATCH \
    -H 'Content-Type: application/apply-patch+yaml' -w '\n%{http_code}' \
    --data "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"$2\",\"namespace\":\"kube-system\"},\"spec\":{\"holderIdentity\":\"deploy-test\"}}" \
    "$ALLOT_APISERVER/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$2?fieldManager=allot-gc&force=true" |
    jq -Rrs 'split("\n") | "\(.[-1]) \(.[:-1] | join("\n") | fromjson? | .message // "")"'
}
# The policy reaches admission through an informer: wait for its first denial.
own=$(lease_as "$atoken" allot-node-deploy-node-a)
other() { lease_as "$atoken" allot-node-deploy-node-b; }
other_denied() { [[ "$(other)" == 403* ]]; }
wait_for 30 other_denied
if [[ "$own" == 20[01]* ]]; then ok "node A's agent writes node A's report"; else bad "node A's agent cannot write its own report: $own"; fi
out=$(other)
if [[ "$out" == 403*"only its own report"* ]]; then
  ok "node A's agent cannot write node B's report (admission: ${out#403 })"
else
  bad "node A's agent wrote node B's report: $out"
fi
out=$(lease_as "$atoken" kube-controller-manager)
if [[ "$out" == 403* && "$(kubectl get lease -n kube-system kube-controller-manager -o jsonpath='{.spec.holderIdentity}')" == the-real-one ]]; then
  ok "the node agent's token cannot patch kube-system/kube-controller-manager"
else
  bad "the node agent's token patched kube-controller-manager's Lease: $out"
fi
# A token not bound to a pod names no node: it writes no report.
out=$(lease_as "$(kubectl create token allot -n kube-system)" allot-node-deploy-node-a)
if [[ "$out" == 403*"bound to their pod"* ]]; then ok "an agent token bound to no pod writes no report"; else bad "an unbound agent token wrote a report: $out"; fi
# The controller writes its own Lease, and not kube-controller-manager's.
ctoken=$(kubectl create token allot-controller -n kube-system)
out=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ALLOT_CLUSTER_DIR/pki/ca.crt" -H "Authorization: Bearer $ctoken" \
  -X PUT -H 'Content-Type: application/json' \
  --data "$(kubectl get lease -n kube-system kube-controller-manager -o json | jq -c '.spec.holderIdentity = "allot"')" \
  "$ALLOT_APISERVER/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager")
if [[ "$out" == 403 ]]; then ok "the controller's token cannot update kube-system/kube-controller-manager (403)"; else bad "the controller's token updated kube-controller-manager's Lease: $out"; fi
kubectl delete pod -n kube-system deploy-agent-a --wait=false >/dev/null 2>&1
kubectl delete lease -n kube-system kube-controller-manager allot-node-deploy-node-a >/dev/null 2>&1
kubectl delete node deploy-node-a deploy-node-b >/dev/null 2>&1

suite_summary
((failed == 0))
