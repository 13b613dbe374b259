#!/usr/bin/env bash
# The integration, plugin-integration, gc-integration and claims suites a second time, on a
# private cluster whose IPPool, NodeSlicePool and OverlappingRangeIPReservation CRDs are
# Whereabouts' own (e2e/cluster with ALLOT_CLUSTER_CRDS=whereabouts, the files from its module
# via e2e/whereabouts-crds). The API server then drops allot's entry fields node, poduid,
# network and ipamclaim: every release rule must still hold (test/lib.sh entry_fields_pruned
# says which outcomes change, always to the safe one), and allot-gc must say so at start.
#
#   test/crds/whereabouts_crds_test.sh [INTEGRATION-BINARY]
#
# Prints each suite's lines, `ok - SUITE` / `not ok - SUITE` per suite, then
# `whereabouts-crds: N passed, N failed`.
#
# Short form by default (what scripts/test and CI run): the integration and claims suites, and
# the gc-integration checks whose outcome the schema changes (the release rules), not its load
# and failover ones; plugin-integration is left out. ALLOT_WA_CRDS_FULL=1 runs all four suites
# whole. WA_CRDS_SUITES (space-separated: integration plugin gc claims) picks suites.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=whereabouts-crds

# Always a private cluster: the one a run shares has allot's CRDs.
ALLOT_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-cluster-wa.XXXXXX")
export ALLOT_CLUSTER_DIR
on_exit "ALLOT_CLUSTER_DIR='$ALLOT_CLUSTER_DIR' '$ALLOT_CLUSTER' down"
ALLOT_CLUSTER_CRDS=whereabouts "$ALLOT_CLUSTER" up >"$ALLOT_CLUSTER_DIR.up.log" 2>&1 ||
  suite_die "a cluster with Whereabouts' CRDs starts" "$ALLOT_CLUSTER_DIR.up.log"
cluster_env
[[ "$ALLOT_CRDS" == whereabouts ]] || suite_die "the cluster runs Whereabouts' CRDs (ALLOT_CRDS=$ALLOT_CRDS)"

# The schema really prunes: an entry field allot writes does not come back.
t_prunes() {
  local got
  got=$(jq -n --arg ns kube-system '{apiVersion: "whereabouts.cni.cncf.io/v1alpha1", kind: "IPPool",
      metadata: {name: "crd-probe", namespace: $ns},
      spec: {range: "192.0.2.0/30", allocations: {"1": {id: "c", podref: "x/y", ifname: "net1", node: "n"}}}}' |
    kubectl create --dry-run=server --validate=false -o json -f -) || return 1
  expect_eq "entry as stored" "$(jq -cS '.spec.allocations["1"]' <<<"$got")" '{"id":"c","ifname":"net1","podref":"x/y"}'
}
check "Whereabouts' IPPool schema drops allot's entry fields" t_prunes

# The README's CRD install on this cluster creates nothing and takes over nothing.
t_readme_crds() {
  local before after
  before=$(kubectl get crd ippools.whereabouts.cni.cncf.io -o jsonpath='{.metadata.resourceVersion}') || return 1
  (cd "$root" && for f in deploy/crds/*.yaml; do kubectl get -f "$f" >/dev/null 2>&1 || kubectl create -f "$f"; done) || return 1
  after=$(kubectl get crd ippools.whereabouts.cni.cncf.io -o jsonpath='{.metadata.resourceVersion}') || return 1
  expect_eq "IPPool CRD resourceVersion" "$after" "$before" || return 1
  t_prunes
}
check "the README's CRD install leaves Whereabouts' own CRDs theirs" t_readme_crds

suites="integration plugin gc claims"
if [[ "${ALLOT_WA_CRDS_FULL:-0}" != 1 ]]; then
  suites="integration gc claims"
  GC_ONLY=${GC_ONLY:-'t_start|t_delete|t_catchup|t_statefulset|t_forged|t_scan|t_force|t_relist_catchup|t_elect|t_mirror|t_leak|t_every_node'}
  export GC_ONLY
  note "short form (ALLOT_WA_CRDS_FULL=1 runs every check of integration, plugin, gc and claims)"
fi

# run_suite NAME SCRIPT [ARGS...]: one suite on this cluster, its lines as they come.
run_suite() {
  local name=$1 rc; shift
  [[ " ${WA_CRDS_SUITES:-$suites} " == *" $name "* ]] || return 0
  "$@" 2>&1
  rc=$?
  if (( rc == 0 )); then ok "$name suite under Whereabouts' CRDs"; else bad "$name suite under Whereabouts' CRDs (exit $rc)"; fi
}
run_suite integration "$root/test/integration/k8s_store_test.sh" "${1:-$root/build/test/integration}"
run_suite plugin "$root/test/integration/plugin_test.sh"
run_suite gc "$root/test/integration/gc_test.sh"
run_suite claims "$root/test/claims/claims_test.sh"

suite_summary
(( failed == 0 ))
