#!/usr/bin/env bash
# The two ways to install allot on a cluster that has none, on a private real API server:
# the kustomize base (`kubectl apply -k deploy/`, and an overlay outside the repository that
# changes the namespace, image, pull secret and node selection and adds the k3s component) and
# the Helm chart (deploy/helm/allot: install, upgrade, uninstall). Also: the plain manifests in
# deploy/ are the chart's rendering (scripts/render-deploy --check), and `helm lint` passes.
#
#   test/deploy/install_test.sh
#
# helm comes from e2e/build-helm (built from its pinned Go module, cached). It starts its own
# cluster (e2e/cluster up binds allot's RBAC at start; this removes it first, as on a cluster
# without allot), so it never touches the shared one. Prints `ok - NAME` / `not ok - NAME`,
# then `install: N passed, N failed`.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$ROOT/test/lib.sh"   # on_exit, check, ok, bad, suite_die, suite_summary
SUITE_NAME=install
cd "$ROOT" || exit 1

helm_bin=$(e2e/build-helm 2>"${TMPDIR:-/tmp}/allot-build-helm.log") ||
  suite_die "e2e/build-helm" "${TMPDIR:-/tmp}/allot-build-helm.log"
PATH=$(dirname "$helm_bin"):$PATH   # the README's commands call `helm`

t_rendered() { scripts/render-deploy --check; }
t_lint() { helm lint deploy/helm/allot; }
check "deploy/rbac.yaml, daemonset.yaml and monitoring/podmonitor.yaml are the chart's rendering" t_rendered
check "helm lint deploy/helm/allot" t_lint

# values.schema.json: a value of the wrong type is refused by name, by lint and by install.
t_schema() {
  local bad=$WORK_VALUES/bad.yaml out
  printf 'metrics:\n  port: "9847"\nextraEnv: {name: X}\n' >"$bad"
  if out=$(helm lint deploy/helm/allot -f "$bad" 2>&1); then echo "helm lint took $bad"; return 1; fi
  { grep -q "/metrics/port" <<<"$out" && grep -q "/extraEnv" <<<"$out"; } || { echo "$out"; return 1; }
  if out=$(helm template allot deploy/helm/allot -f "$bad" 2>&1); then echo "helm template took $bad"; return 1; fi
  grep -q "/metrics/port" <<<"$out" || { echo "$out"; return 1; }
  printf 'metricz: {port: 1}\n' >"$bad"
  if helm lint deploy/helm/allot -f "$bad" >/dev/null 2>&1; then echo "helm lint took an unknown key"; return 1; fi
}
# The chart's kubeVersion: a cluster older than the tested range is refused.
t_kube_version() {
  local out
  if out=$(helm template allot deploy/helm/allot --kube-version 1.29.0 2>&1); then
    echo "helm template rendered for Kubernetes 1.29"; return 1
  fi
  grep -q "kubeVersion" <<<"$out" || { echo "$out"; return 1; }
  helm template allot deploy/helm/allot --kube-version 1.37.2 >/dev/null
}
# The pod-level values reach the DaemonSet.
t_pod_values() {
  local v=$WORK_VALUES/pod.yaml
  cat >"$v" <<'EOF_V'
extraEnv: [{name: KUBERNETES_SERVICE_HOST, value: api.internal.example}]
podLabels: {team: net}
podAnnotations: {example.com/owner: net}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: NotIn, values: [gpu]}]}]
podSecurityContext: {seLinuxOptions: {type: container_t}}
securityContext:
  allotGc: {runAsUser: 0, capabilities: {drop: [ALL], add: [SYS_ADMIN]}}
EOF_V
  helm template allot deploy/helm/allot -f "$v" --namespace kube-system --show-only templates/daemonset.yaml |
    kubectl create --dry-run=client -o json -f - | jq -e '.spec.template as $t | $t.metadata.labels.team == "net"
      and $t.metadata.labels["app.kubernetes.io/name"] == "allot"
      and $t.metadata.annotations["example.com/owner"] == "net"
      and $t.spec.affinity.nodeAffinity != null
      and $t.spec.securityContext.seLinuxOptions.type == "container_t"
      and ($t.spec.containers[0].env | map(select(.name == "KUBERNETES_SERVICE_HOST"))[0].value) == "api.internal.example"
      and $t.spec.containers[0].securityContext.capabilities.add == ["SYS_ADMIN"]
      and $t.spec.initContainers[0].securityContext.runAsUser == 0' >/dev/null
}
WORK_VALUES=$(mktemp -d "${TMPDIR:-/tmp}/allot-values.XXXXXX")
on_exit "rm -rf '$WORK_VALUES'"
check "values.schema.json refuses a wrong type and an unknown key, naming them" t_schema
check "the chart refuses a Kubernetes older than its kubeVersion" t_kube_version

ALLOT_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-cluster-install.XXXXXX")
export ALLOT_CLUSTER_DIR
on_exit "e2e/cluster down >/dev/null 2>&1; rm -rf '$ALLOT_CLUSTER_DIR'"
e2e/cluster up >"$ALLOT_CLUSTER_DIR.up.log" 2>&1 || suite_die "a private cluster starts" "$ALLOT_CLUSTER_DIR.up.log"
eval "$(e2e/cluster env)"
kubectl delete -f deploy/rbac.yaml --wait >/dev/null || suite_die "the cluster's bootstrap RBAC is removed"
check "extraEnv, pod labels and annotations, affinity and security contexts reach the DaemonSet" t_pod_values

# allot_objects: every allot object in the cluster, as kind/namespace/name lines.
# (allot-controller-test: e2e/cluster's identity for the suites' controllers, not installed.)
allot_objects() {
  kubectl get daemonsets,deployments,serviceaccounts,roles,rolebindings -A -o json |
    jq -r '.items[] | select(.metadata.name | startswith("allot") and . != "allot-controller-test")
      | "\(.kind)/\(.metadata.namespace)/\(.metadata.name)"'
  kubectl get clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings -o json |
    jq -r '.items[] | select(.metadata.name | startswith("allot") and . != "allot-controller-test")
      | "\(.kind)//\(.metadata.name)"'
}
crd_versions() { kubectl get -f deploy/crds/ -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}'; }
ds() { kubectl -n "$1" get daemonset allot -o json; }

# ------------------------------------------------------------------------ kustomize --

# objects_are N: fails, listing them, unless exactly N allot objects exist.
objects_are() {
  local n
  n=$(allot_objects | wc -l)
  [[ $n -eq $1 ]] && return 0
  echo "want $1 allot objects, found $n:"; allot_objects
  return 1
}
t_base() {
  kubectl apply -k deploy/ || return 1
  # shellcheck disable=SC2016 # $(INSTALL_NAMESPACE) is the kubelet's, not the shell's
  ds kube-system | jq -e '.spec.template.spec.nodeSelector["kubernetes.io/os"] == "linux"
    and (.spec.template.spec.containers[0].args | index("--plugin-service-account=$(INSTALL_NAMESPACE)/allot-plugin"))' || return 1
  objects_are 17
}
t_base_delete() { kubectl delete -k deploy/ --wait && objects_are 0; }
check "kubectl apply -k deploy/ installs the 17 objects of the base" t_base
check "kubectl delete -k deploy/ leaves no allot object" t_base_delete

# docs/operations.md's clean-up after `kubectl apply -k` over a release without the controller,
# as written: that release's Roles and RoleBindings go.
t_old_roles() {
  local cmd r
  cmd=$(awk '/once the roll is done, delete them:/ { f = 1 } f && /^```sh/ { y = 1; next } y && /^```/ { exit } y' docs/operations.md)
  [[ -n "$cmd" ]] || { echo "docs/operations.md: no clean-up command"; return 1; }
  for r in allot-leader-election allot-plugin-token; do
    kubectl -n kube-system create role "$r" --verb=get --resource=leases >/dev/null &&
      kubectl -n kube-system create rolebinding "$r" --role="$r" --serviceaccount=kube-system:allot >/dev/null || return 1
  done
  bash -c "$cmd" || return 1
  objects_are 0
}
check "docs/operations.md's command deletes the Roles of a release without the controller" t_old_roles

# docs/install.md's overlay, as written (a user's directory beside the release's deploy/:
# kustomize refuses one inside its base), with this checkout's path: allot in allot-system, its
# pools left in kube-system.
overlay=$(mktemp -d "${TMPDIR:-/tmp}/allot-overlay.XXXXXX")
on_exit "rm -rf '$overlay'"
rel=$(realpath --relative-to="$overlay" "$ROOT/deploy")
awk '/write an overlay beside the release/ { f = 1 } f && /^```yaml/ { y = 1; next } y && /^```/ { exit } y' docs/install.md |
  sed -e "s#\.\./allot-0\.1\.0/deploy#$rel#" >"$overlay/kustomization.yaml"
grep -q "^namespace: allot-system" "$overlay/kustomization.yaml" || suite_die "docs/install.md's kustomize overlay is found"
# The namespace is made apart: this cluster runs no namespace controller, so a Namespace in the
# overlay would never finish deleting.
kubectl create namespace allot-system >/dev/null
# own_namespace_wiring: allot in allot-system writes its Leases and finds its DaemonSet and the
# plugin's ServiceAccount there, and keeps its pools in kube-system.
own_namespace_wiring() {
  # shellcheck disable=SC2016 # $(...) is the kubelet's, not the shell's
  ds allot-system | jq -e '.spec.template.spec | [.initContainers[0], .containers[0]]
    | map(.env[] | select(.name == "POOL_NAMESPACE") | .value) == ["kube-system", "kube-system"]
      and (.[1].args | index("--lease-namespace=$(INSTALL_NAMESPACE)") and index("--uninstall-with=$(INSTALL_NAMESPACE)/allot")
           and index("--plugin-service-account=$(INSTALL_NAMESPACE)/allot-plugin"))
      and any(.[1].env[]; .name == "INSTALL_NAMESPACE" and .valueFrom.fieldRef.fieldPath == "metadata.namespace")' || return 1
  # shellcheck disable=SC2016
  kubectl -n allot-system get deployment allot-controller -o json | jq -e '.spec.template.spec.containers[0]
    | any(.env[]; .name == "POOL_NAMESPACE" and .value == "kube-system")
      and (.args | index("--lease-namespace=$(INSTALL_NAMESPACE)"))' || return 1
}
t_overlay() {
  kubectl apply -k "$overlay" || return 1
  ds allot-system | jq -e '
    .spec.template.spec.volumes[0] == {name: "cni-bin", hostPath: {path: "/var/lib/rancher/k3s/data/cni", type: "DirectoryOrCreate"}}
    and ([.spec.template.spec.initContainers[0].image, .spec.template.spec.containers[0].image] | unique == ["registry.example.com/allot:0.1.0"])
    and .spec.template.spec.imagePullSecrets == [{name: "my-registry"}]
    and .spec.template.spec.nodeSelector == {"kubernetes.io/os": "linux"}' || return 1
  kubectl -n allot-system get deployment allot-controller -o json |
    jq -e '.spec.template.spec.containers[0].image == "registry.example.com/allot:0.1.0"
      and .spec.template.spec.imagePullSecrets == [{name: "my-registry"}]' || return 1
  own_namespace_wiring || return 1
  # Every binding names the ServiceAccount in the overlay's namespace.
  kubectl get clusterrolebindings,rolebindings -A -o json | jq -e '
    [.items[] | select(.metadata.name | startswith("allot") and . != "allot-controller-test") | .subjects[].namespace]
    | unique == ["allot-system"]' || return 1
  ! allot_objects | grep /kube-system/
}
t_overlay_delete() { kubectl delete -k "$overlay" --wait && objects_are 0; }
check "docs/install.md's overlay moves allot to its namespace, image, pull secret and k3s's CNI path" t_overlay
check "kubectl delete -k of the overlay leaves no allot object" t_overlay_delete
# The OpenShift component, rendered (no OpenShift here): the agent under the privileged SCC,
# the controller under hostnetwork-v2 with no fixed user ID, and OpenShift's CNI path.
t_openshift() {
  local os out
  os=$(mktemp -d "${TMPDIR:-/tmp}/allot-openshift.XXXXXX")
  printf 'resources: [%s]\ncomponents: [%s/components/openshift]\n' "$(realpath --relative-to="$os" deploy)" \
    "$(realpath --relative-to="$os" deploy)" >"$os/kustomization.yaml"
  out=$(kubectl kustomize "$os" | python3 -c 'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(sys.stdin))))')
  rm -rf "$os"
  jq -e '
    (map(select(.kind == "ClusterRoleBinding" and (.metadata.name | startswith("allot-scc"))))
      | map({(.subjects[0].name): .roleRef.name}) | add) == {"allot": "allot-scc-privileged", "allot-controller": "allot-scc-hostnetwork"}
    and (map(select(.kind == "ClusterRole" and .metadata.name == "allot-scc-hostnetwork")) | .[0].rules[0].resourceNames == ["hostnetwork-v2"])
    and (map(select(.kind == "Deployment")) | .[0].spec.template.spec.securityContext == {runAsNonRoot: true})
    and (map(select(.kind == "DaemonSet")) | .[0].spec.template.spec.volumes[0].hostPath.path == "/var/lib/cni/bin")' <<<"$out"
}
check "the OpenShift component: privileged for the agent, hostnetwork-v2 and no fixed user for the controller" t_openshift

# ----------------------------------------------------------------------------- Helm --

# The chart installs its CRDs only where missing: drop one, keep the others' versions.
kubectl delete crd nodeslicepools.whereabouts.cni.cncf.io --wait >/dev/null
crds_kept=$(crd_versions 2>/dev/null | tr ' ' '\n' | grep -v nodeslicepools)
t_helm_install() {
  helm install allot deploy/helm/allot --namespace allot-system || return 1
  kubectl get crd nodeslicepools.whereabouts.cni.cncf.io >/dev/null || { echo "the missing CRD was not created"; return 1; }
  local kept
  kept=$(crd_versions | tr ' ' '\n' | grep -v nodeslicepools)
  [[ "$kept" == "$crds_kept" ]] || { echo "existing CRDs changed: $crds_kept -> $kept"; return 1; }
  objects_are 17 || return 1
  own_namespace_wiring || return 1
  ds allot-system | jq -e '.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
    and .spec.template.spec.containers[0].image == "allot:0.1.0"'
}
t_helm_upgrade() {
  helm upgrade allot deploy/helm/allot --namespace allot-system --set metrics.port=9850 \
      --set-json 'controller.extraArgs=["--node-slices=false"]' --set controller.replicas=3 || return 1
  ds allot-system | jq -e '.spec.template.spec.containers[0]
    | (.args | index("--listen=0.0.0.0:9850"))
      and .ports == [{name: "metrics", containerPort: 9850, protocol: "TCP"}]' || return 1
  kubectl -n allot-system get deployment allot-controller -o json |
    jq -e '.spec.replicas == 3 and (.spec.template.spec.containers[0].args | index("--node-slices=false"))'
}
# The release's own identities at work from allot-system, as its pods would run them (no
# kubelet here: allot-gc runs on this machine with tokens of the release's ServiceAccounts, the
# agent's bound to a pod on node inst-node-a): the controller leads through its Lease in
# allot-system, the agent writes its node's report there, and neither can write a Lease in
# kube-system.
gc_kubeconfig() {  # gc_kubeconfig TOKEN FILE
  kubectl config view --raw --minify -o json | jq --arg t "$1" \
    '.users = [{name: "sa", user: {token: $t}}] | .contexts[0].context.user = "sa"' >"$2"
}
t_own_namespace_run() {
  local work=$ALLOT_CLUSTER_DIR/own-ns puid
  mkdir -p "$work"
  kubectl create -f - >/dev/null <<'EOF2' || return 1
{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "inst-node-a"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "inst-agent-a", "namespace": "allot-system"},
  "spec": {"nodeName": "inst-node-a", "serviceAccountName": "allot", "automountServiceAccountToken": false,
           "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}]}
EOF2
  puid=$(kubectl get pod -n allot-system inst-agent-a -o jsonpath='{.metadata.uid}')
  gc_kubeconfig "$(kubectl create token allot -n allot-system --bound-object-kind=Pod \
    --bound-object-name=inst-agent-a --bound-object-uid="$puid")" "$work/agent.kubeconfig" || return 1
  gc_kubeconfig "$(kubectl create token allot-controller -n allot-system)" "$work/controller.kubeconfig" || return 1
  "$ROOT/build/gc-sidecar/allot-gc" --role=controller --node-name=inst-node-a --identity=inst-controller \
    --kubeconfig="$work/controller.kubeconfig" --namespace=kube-system --lease-namespace=allot-system \
    --listen=127.0.0.1:0 >"$work/controller.log" 2>&1 &
  on_exit "kill $! 2>/dev/null"
  "$ROOT/build/gc-sidecar/allot-gc" --role=agent --node-name=inst-node-a --kubeconfig="$work/agent.kubeconfig" \
    --namespace=kube-system --lease-namespace=allot-system --journal-dir="$work/journal" \
    --cri-socket=none --sandbox-probe=false --node-sweep-interval=1s --listen=127.0.0.1:0 >"$work/agent.log" 2>&1 &
  on_exit "kill $! 2>/dev/null"
  leads() { [[ $(kubectl get lease -n allot-system allot-gc -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) == inst-controller ]]; }
  reported() { kubectl get lease -n allot-system allot-node-inst-node-a >/dev/null 2>&1; }
  wait_for 30 leads || { echo "the controller did not take allot-system/allot-gc:"; tail -n 20 "$work/controller.log"; return 1; }
  wait_for 30 reported || { echo "the agent wrote no report in allot-system:"; tail -n 20 "$work/agent.log"; return 1; }
  if kubectl get leases -n kube-system -o name | grep -qE 'allot-gc|allot-node'; then
    echo "a Lease of allot's in kube-system"; return 1
  fi
  local sa
  for sa in allot allot-controller; do
    [[ $(kubectl auth can-i create leases -n kube-system --as="system:serviceaccount:allot-system:$sa") == no ]] ||
      { echo "$sa may create Leases in kube-system"; return 1; }
  done
}
t_helm_uninstall() {
  helm uninstall allot --namespace allot-system --wait || return 1
  objects_are 0 || return 1
  [[ $(kubectl get -f deploy/crds/ -o name | wc -l) -eq 4 ]] || { echo "a CRD went with the release"; return 1; }
}
# A release from before poolNamespace, installed outside kube-system, kept its pools in its own
# namespace: the chart refuses to move them (new pools would hand out their addresses again),
# and names the value that keeps them.
t_helm_old_pools() {
  local out
  kubectl create namespace allot-old >/dev/null || return 1
  kubectl create -n allot-old -f - >/dev/null <<'EOF2' || return 1
{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "allot",
  "labels": {"app.kubernetes.io/managed-by": "Helm"},
  "annotations": {"meta.helm.sh/release-name": "allot", "meta.helm.sh/release-namespace": "allot-old"}},
 "spec": {"selector": {"matchLabels": {"app": "allot"}}, "template": {"metadata": {"labels": {"app": "allot"}},
  "spec": {"containers": [{"name": "allot-gc", "image": "allot:0.1.0", "env": [{"name": "POOL_NAMESPACE",
    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]}]}}}}
EOF2
  if out=$(helm install allot deploy/helm/allot --namespace allot-old --dry-run=server 2>&1); then
    echo "helm took over a release's pools in allot-old with poolNamespace kube-system"; return 1
  fi
  [[ "$out" == *"--set poolNamespace=allot-old"* ]] || { echo "unclear refusal: $out"; return 1; }
  helm install allot deploy/helm/allot --namespace allot-old --set poolNamespace=allot-old --dry-run=server >/dev/null || return 1
  kubectl delete -n allot-old daemonset allot --wait >/dev/null
}
check "helm refuses to move an older release's pools out of its namespace, naming poolNamespace" t_helm_old_pools
check "helm install into allot-system creates only the missing CRD and the 17 objects, pools left in kube-system" t_helm_install
check "helm upgrade changes the metrics port, the controller's replicas and its extra flags" t_helm_upgrade
check "from allot-system the controller leads and the agent reports there, with no right to kube-system's Leases" t_own_namespace_run
# docs/operations.md's CRD upgrade, as written: an older IPPool CRD (here: another
# allocations description) gets the release's schema back; the NAD CRD is left alone.
t_crd_upgrade() {
  local cmd nad_before path=".spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.allocations"
  cmd=$(grep -m1 '^for f in deploy/crds/whereabouts' docs/operations.md) || { echo "no CRD upgrade command in docs/operations.md"; return 1; }
  kubectl patch crd ippools.whereabouts.cni.cncf.io --type=json -p '[{"op": "replace",
    "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/allocations/description",
    "value": "an older release"}]' >/dev/null || return 1
  nad_before=$(kubectl get crd network-attachment-definitions.k8s.cni.cncf.io -o jsonpath='{.metadata.resourceVersion}')
  bash -c "$cmd" || return 1
  [[ $(kubectl get crd ippools.whereabouts.cni.cncf.io -o json | jq -r "$path.description") == \
     $(kubectl create --dry-run=client -o json -f deploy/crds/whereabouts.cni.cncf.io_ippools.yaml | jq -r "$path.description") ]] ||
    { echo "the IPPool CRD did not get the release's schema back"; return 1; }
  [[ $(kubectl get crd network-attachment-definitions.k8s.cni.cncf.io -o jsonpath='{.metadata.resourceVersion}') == "$nad_before" ]] ||
    { echo "the NAD CRD changed"; return 1; }
}
check "the CRD upgrade in docs/operations.md restores an older IPPool CRD's schema" t_crd_upgrade
check "helm uninstall leaves no allot object and keeps the CRDs" t_helm_uninstall

suite_summary
((failed == 0))
