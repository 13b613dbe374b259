#!/usr/bin/env bash
# Runs the K8sStore integration tests (build/test/integration, doctest) against the cluster
# named by ALLOT_CLUSTER_DIR when it is up, else a private one torn down at exit, so that
# `meson test --suite integration` needs no cluster started by hand.
#
#   test/integration/k8s_store_test.sh [BINARY [DOCTEST ARGS...]]   default build/test/integration
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=integration

bin=${1:-$root/build/test/integration}
shift $(( $# > 0 ? 1 : 0 ))
cluster_start >/dev/null || suite_die "cluster starts"
"$bin" "$@"
