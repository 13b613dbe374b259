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
# Environment: ALLOT_NODE_SCENARIOS (default "1 2 3 4 8 9 10 11 12"), ALLOT_NODE_PODS (default 10).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

case "${ALLOT_NODE:-}" in
  0) skip "ALLOT_NODE=0" ;;
  1) ;;
  *) "$root/e2e/node/build" --print >/dev/null 2>&1 ||
       skip "the real-node binaries are not cached (e2e/node/build --print fails; a cold build of" \
            "kubelet, containerd and Multus takes about an hour on 2 cores): run e2e/node/build" \
            "once, or set ALLOT_NODE=1 to build them in this test" ;;
esac
[[ $(id -u) -eq 0 ]] || skip "needs root (the nodes are Docker containers with most capabilities)"
docker version >/dev/null 2>&1 || skip "no Docker engine answers"

state=$(mktemp -d "${TMPDIR:-/tmp}/allot-node-suite.XXXXXX")
export ALLOT_NODE_DIR=$state
trap '"$root/e2e/node/cluster" down >/dev/null 2>&1; rm -rf "$state"' EXIT

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
ALLOT_NODE_PODS=${ALLOT_NODE_PODS:-10} "$root/test/node/node_test.sh" ${ALLOT_NODE_SCENARIOS:-1 2 3 4 8 9 10 11 12}
