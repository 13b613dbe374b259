#!/usr/bin/env bash
# meson test `node` (suite node): the short form of the real-node scenarios. It starts its own
# e2e/node/cluster (2 nodes: kubelet, containerd, Multus, allot from deploy/), runs
# test/node/node_test.sh with fewer pods and the quicker scenarios, and tears it down.
#
# Runs when the node binaries are cached (`e2e/node/build --print` succeeds) or when
# ALLOT_NODE=1 (then it builds them: about an hour cold on 2 cores). Otherwise, and when the
# machine has no Docker engine or is not root, it exits 77: meson reports SKIP, with the reason
# on stdout. ALLOT_NODE=0 always skips. The long form is `e2e/node/cluster up && e2e/node/cluster
# test && e2e/node/cluster down` (every scenario, 40 pods).
#
# Environment: ALLOT_NODE_SCENARIOS (default "1 2 3 4 8 9 10 11 15 16 17 18 20 12 21 13 5"; 5 removes a
# node, so it runs last; 6, 7, 14 and 19 are the long form's), ALLOT_NODE_PODS (default 10).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/test/lib.sh"
real_nodes_or_skip

state=$(mktemp -d "${TMPDIR:-/tmp}/allot-node-suite.XXXXXX")
export ALLOT_NODE_DIR=$state
on_exit "'$root/e2e/node/cluster' down >/dev/null 2>&1; rm -rf '$state'"

t0=$SECONDS
if ! "$root/e2e/node/cluster" up >"$state.up.log" 2>&1; then
  tail -n 40 "$state.up.log"
  echo "not ok - e2e/node/cluster up"
  rm -f "$state.up.log"
  exit 1
fi
echo "ok - e2e/node/cluster up ($((SECONDS - t0))s)"
rm -f "$state.up.log"
# shellcheck disable=SC2086 # a list of scenario numbers
ALLOT_NODE_PODS=${ALLOT_NODE_PODS:-10} "$root/test/node/node_test.sh" ${ALLOT_NODE_SCENARIOS:-1 2 3 4 8 9 10 11 15 16 17 18 20 12 21 13 5}
