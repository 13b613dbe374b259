# shellcheck shell=bash
# Shared by e2e/kind/up, test and down: pinned versions, names, helpers. Every pin can be
# overridden from the environment.
# shellcheck disable=SC2034  # the variables are used by the scripts that source this

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$KIND_DIR/../.." && pwd)

CLUSTER=${ALLOT_KIND_CLUSTER:-allot}
WORKERS=${ALLOT_KIND_WORKERS:-2}
# The node image kind v0.32.0 defaults to, pinned by digest.
KIND_RELEASE=v0.32.0
NODE_IMAGE=${ALLOT_KIND_NODE_IMAGE:-kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5}
MULTUS_VERSION=${ALLOT_MULTUS_VERSION:-v4.2.4}
MULTUS_FLAVOR=${ALLOT_MULTUS_FLAVOR:-thick}     # thick or thin
# The reference plugins at the version e2e/runtime pins for the local runtime suite.
CNI_PLUGINS_VERSION=${ALLOT_CNI_PLUGINS_VERSION:-$(awk '$1 == "github.com/containernetworking/plugins" { print $2; exit }' "$ROOT/e2e/runtime/go.mod")}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.9.1}
ALLOT_VERSION=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$ROOT/meson.build" | head -n 1)
IMAGE=${ALLOT_IMAGE:-allot:${ALLOT_VERSION:-dev}}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/allot/kind
# kind writes the cluster's kubeconfig here, not into ~/.kube/config.
KUBECONFIG_FILE=$CACHE/$CLUSTER.kubeconfig
POOL_NS=kube-system

log() { echo "e2e/kind/$(basename "$0"): $*" >&2; }
fail() { log "$*"; exit 1; }

# need TOOL...: fail naming every missing tool.
need() {
  local t missing=()
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  ((${#missing[@]} == 0)) ||
    fail "missing: ${missing[*]} (kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation, $KIND_RELEASE recommended)"
}

cluster_exists() { kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; }

# k ARGS...: kubectl on this cluster.
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# use_cluster: point k at the cluster, which must exist.
use_cluster() {
  cluster_exists || fail "no kind cluster '$CLUSTER': run e2e/kind/up"
  mkdir -p "$CACHE"
  kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG_FILE" || fail "kind get kubeconfig --name $CLUSTER"
}

nodes() { kind get nodes --name "$CLUSTER"; }
