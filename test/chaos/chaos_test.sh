#!/usr/bin/env bash
# Chaos test of allot against a real kube-apiserver + etcd (issue #8).
#
#   test/chaos/chaos_test.sh              short form: ~600 operations (scripts/test runs this)
#   test/chaos/chaos_test.sh --ops 5000   long form
#   (any other flag goes to test/chaos/chaos.py; see its --help: --seed, --concurrency, ...)
#
# N ADD/DEL operations from 4 simulated nodes (each with its own NODENAME, lock dir, journal
# dir and allot-gc process watching that node) at a concurrency of 50, on two networks whose
# ranges overlap (10.90.0.0/23 and 10.90.0.0/24: only the OverlappingRangeIPReservations keep
# them apart), while: plugin processes are SIGKILLed at random points, the API server is
# restarted twice, etcd is paused (SIGSTOP/SIGCONT) for longer than the plugin's deadline
# (deadline_ms 10000 here, the most a DEL may take anyway; etcd paused 12 s), and allot-gc
# processes are killed (SIGKILL, SIGTERM) and restarted. Each container is a pod object bound
# to its node (spec.nodeName), ADDed through the plugin; it ends by a DEL through the plugin
# or by deleting its pod (allot-gc reclaims through the network-status annotation, written as
# Multus writes it). An ADD that failed or was killed never made a live container, but the
# runtime calls DEL for a failed ADD (the CNI spec requires it; kubelet does it when it tears
# the failed sandbox down), so the driver does too, retrying it as kubelet retries a failed
# DEL, and then either tries a new sandbox for the same pod or deletes the pod.
#
# Checks, one line each, then `chaos: N passed, N failed`: no address held by two live
# containers at overlapping times (life: from the ADD's success to the start of its DEL or pod
# deletion); every live container's address in its pool (pool reads during the run and at the
# end, and a watch of the pools that must never show a live container's entry removed); every
# DEL succeeds in the end; no plugin or allot-gc crash; after everything is deleted and the
# sidecars converge (bounded wait): no allocation, no OverlappingRangeIPReservation, no journal
# entry left. Prints operations, failures by CNI error code, duplicates, leaks, the time to
# converge, and what the pool watch and allot-gc's logs saw.
#
# The API server restarts and the etcd pause would disturb anything else using a cluster, so
# this starts a private one (torn down at exit) even when ALLOT_CLUSTER_DIR names a running
# cluster; CHAOS_SHARED_CLUSTER=1 uses that one instead. On failure (or with KEEP_WORK=1) the
# work dir is kept and its path printed: ops.jsonl (every plugin exec with its times, outcome
# and, on failure, stdout and stderr; the faults), pool-history.jsonl (every IPPool entry
# change the watch saw), gc-NODE.log, nodes/NODE/journal, and the cluster's audit.log.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=chaos
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"

args=()
while (( $# )); do
  case $1 in
    --ops) args+=(--ops "$2"); shift 2 ;;
    --ops=*) args+=(--ops "${1#--ops=}"); shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

[[ "${CHAOS_SHARED_CLUSTER:-}" == 1 ]] || unset ALLOT_CLUSTER_DIR
cluster_start || suite_die "cluster starts"
gc_init || suite_die "binaries and namespaces"

# Two networks whose ranges overlap: their pools hand out the same addresses, and only the
# OverlappingRangeIPReservations keep them apart.
NETWORKS=chaosnet-a=10.90.0.0/23,chaosnet-b=10.90.0.0/24
for n in ${NETWORKS//,/ }; do
  mk_nad "${n%%=*}" "{\"range\":\"${n#*=}\"}" || suite_die "NetworkAttachmentDefinition ${n%%=*}"
done

# Whatever happens to the driver: etcd resumed, every allot-gc it started gone.
chaos_cleanup() {
  local pid
  if [[ -n "${driver_pid:-}" ]] && kill -0 "$driver_pid" 2>/dev/null; then
    kill -TERM "$driver_pid" 2>/dev/null
    wait "$driver_pid" 2>/dev/null
  fi
  [[ -f "$WORK/etcd.paused" ]] && kill -CONT "$(<"$WORK/etcd.paused")" 2>/dev/null
  if [[ -f "$WORK/gc.pids" ]]; then
    while read -r pid; do
      # Only our own allot-gc (its argv names our work dir), never a recycled pid.
      { tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$WORK/" && kill -9 "$pid"; } 2>/dev/null
    done <"$WORK/gc.pids"
  fi
  return 0
}
on_exit chaos_cleanup

# In the background and waited for, so that a TERM or INT reaches the cleanup at once.
python3 "$root/test/chaos/chaos.py" --work "$WORK" --plugin "$PLUGIN" --gc "$GC" \
  --podns "$PODNS" --poolns "$POOLNS" --run "$RUN" --networks "$NETWORKS" \
  --cluster "$ALLOT_E2E_DIR/cluster" "${args[@]}" &
driver_pid=$!
wait "$driver_pid"
rc=$?
driver_pid=
if (( rc != 0 )) || [[ -n "${KEEP_WORK:-}" ]]; then  # KEEP_WORK=1: keep them anyway
  KEEP_WORK=1
  # The cluster is torn down at exit: keep its logs (audit.log: every API request) for evidence.
  cp "$ALLOT_CLUSTER_DIR"/{audit.log,apiserver.log,etcd.log} "$WORK/" 2>/dev/null
  echo "# logs kept in $WORK (ops.jsonl, gc-*.log, nodes/*/journal, audit.log)"
fi
exit "$rc"
