# shellcheck shell=bash
# Helpers for shell tests that need a real API server. Source it:
#
#   source "$(dirname "$0")/../../e2e/lib.sh"
#   cluster_start          # private cluster for this run, torn down on exit
#   kubectl get ns         # KUBECONFIG, ALLOT_KUBECONFIG, ... are exported
#
# If a cluster is already provided (ALLOT_CLUSTER_DIR set and `e2e/cluster
# status` succeeds, e.g. a test runner started one for the whole run),
# cluster_start reuses it and leaves it running.

ALLOT_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ALLOT_CLUSTER="$ALLOT_E2E_DIR/cluster"

# Commands run at exit, last registered first.
_allot_cleanups=()
_allot_run_cleanups() {
  local rc=$? i
  for (( i = ${#_allot_cleanups[@]} - 1; i >= 0; i-- )); do
    eval "${_allot_cleanups[i]}" || true
  done
  _allot_cleanups=()
  return $rc
}
trap _allot_run_cleanups EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# on_exit COMMAND: run COMMAND (a string for eval) when the script exits.
on_exit() { _allot_cleanups+=("$1"); }

# cluster_start: bring up a cluster for this script and export its env.
cluster_start() {
  if [[ -n "${ALLOT_CLUSTER_DIR:-}" ]] && "$ALLOT_CLUSTER" status >/dev/null 2>&1; then
    eval "$("$ALLOT_CLUSTER" env)"
    return 0
  fi
  ALLOT_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-cluster.XXXXXX")
  export ALLOT_CLUSTER_DIR
  on_exit "ALLOT_CLUSTER_DIR='$ALLOT_CLUSTER_DIR' '$ALLOT_CLUSTER' down"
  "$ALLOT_CLUSTER" up
  eval "$("$ALLOT_CLUSTER" env)"
}

# cluster_env: export the env of the cluster in ALLOT_CLUSTER_DIR (or the default).
cluster_env() { eval "$("$ALLOT_CLUSTER" env)"; }

# kubectl_allot ARGS...: kubectl as the allot ServiceAccount.
kubectl_allot() { kubectl --kubeconfig="$ALLOT_KUBECONFIG" "$@"; }

# audit_count JQ-FILTER: number of audit events matching a jq boolean filter,
# e.g. audit_count '.user.username == "system:serviceaccount:kube-system:allot" and .verb == "update"'
audit_count() {
  jq -c "select(.stage == \"ResponseComplete\" and ($1))" "$ALLOT_AUDIT_LOG" | wc -l
}
