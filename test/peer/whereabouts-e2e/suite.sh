#!/usr/bin/env bash
# meson test `whereabouts-e2e` (suite peer): the short form of Whereabouts' own e2e suite on
# allot (test/peer/whereabouts-e2e/run) on its own 2 real nodes. Runs when the real-node
# binaries are cached, as the node suite does (test/lib.sh real_nodes_or_skip), and builds the
# suite's binaries the first time (about 6 min on 2 cores). ALLOT_PEER_E2E=0 skips it. The long
# form: test/peer/whereabouts-e2e/run --long.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
source "$root/test/lib.sh"
[[ "${ALLOT_PEER_E2E:-}" == 0 ]] && { echo "SKIP: ALLOT_PEER_E2E=0"; exit 77; }
real_nodes_or_skip
# Its own harness, never one a user has up: a private state dir.
ALLOT_NODE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-wb-e2e-suite.XXXXXX")
export ALLOT_NODE_DIR
on_exit "rm -rf '$ALLOT_NODE_DIR'"
"$root/e2e/node/cluster" up >"$ALLOT_NODE_DIR.up.log" 2>&1 || { tail -n 40 "$ALLOT_NODE_DIR.up.log"; echo "not ok - e2e/node/cluster up"; exit 1; }
on_exit "'$root/e2e/node/cluster' down >/dev/null 2>&1; rm -f '$ALLOT_NODE_DIR.up.log'"
"$root/test/peer/whereabouts-e2e/run"
