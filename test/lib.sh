# shellcheck shell=bash
# The helpers every shell test suite shares. Source it first:
#
#   root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
#   source "$root/test/lib.sh"
#
# It sources e2e/lib.sh (on_exit, cluster_start, kubectl_allot, audit_count) and adds:
#   check NAME COMMAND...      run one check, print `ok - NAME` / `not ok - NAME`, count it
#   ok / bad / skip / note     report a check by hand, or a measurement under the current one
#   suite_summary / suite_die  the suite's last line `NAME: N passed, N failed`
#   expect_eq, wait_for, never_for, not, free_port, audit_mark/since/settle
#   pool_name / res_name       the object names the product derives (test/tools/names.cpp)
#   node_version/conf/add/...  a node's plugin run elsewhere (a chroot, qemu): VERSION, ADD, DEL
#
# A suite sets SUITE_NAME (its name in the summary line) and may set, before its first check:
#   CHECK_DIR    where check keeps a check's output (default: a private dir removed at exit)
#   CHECK_ONLY   extended regex: run only the checks whose name or command matches
#   CHECK_TIME   s or ms: append the check's duration to its `ok` line (default: nothing)
#   CHECK_TAIL   lines of a failing check's output shown (default 30)

ALLOT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=e2e/lib.sh disable=SC1091
source "$ALLOT_ROOT/e2e/lib.sh"

# allot-gc run by a suite on this machine (simulated nodes): no container runtime of the
# node's to ask (--cri-socket=none), and the suites' "runtime" (cnitool, the plugin run by hand)
# has finished each ADD when it returns, so the wait for a runtime's ADD still in flight
# (--add-in-flight-bound, 150s in a cluster) is a second. A suite may set either itself; the
# suites that test the two (cri, gc's in-flight check, the node suite) do.
export ALLOT_GC_CRI_SOCKET=${ALLOT_GC_CRI_SOCKET:-none}
export ALLOT_GC_ADD_IN_FLIGHT_BOUND=${ALLOT_GC_ADD_IN_FLIGHT_BOUND:-1s}

passed=0
failed=0
skipped=0

# ------------------------------------------------------------------ checks --

_check_dir() {
  if [[ -z "${CHECK_DIR:-}" ]]; then
    CHECK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/allot-check.XXXXXX")
    on_exit "rm -rf '$CHECK_DIR'"
  fi
  echo "$CHECK_DIR"
}

_check_elapsed() {
  case "${CHECK_TIME:-}" in
    s) echo " ($(( SECONDS - $1 ))s)" ;;
    ms) awk -v a="$2" -v b="$EPOCHREALTIME" 'BEGIN { printf " (%d ms)", (b - a) * 1000 }' ;;
  esac
}

# check NAME COMMAND...: run COMMAND (usually a t_ function); report by its exit status, with
# the last CHECK_TAIL lines of its output when it fails. Lines the check prints with `note`
# are shown either way.
check() {
  local name=$1; shift
  [[ -n "${CHECK_ONLY:-}" && ! "$name" =~ $CHECK_ONLY && ! "$*" =~ $CHECK_ONLY ]] && return 0
  local dir t0=$SECONDS t0r=$EPOCHREALTIME
  _check_dir >/dev/null
  dir=$CHECK_DIR
  : >"$dir/notes"
  _check_running=1
  if "$@" >"$dir/out" 2>&1; then
    echo "ok - $name$(_check_elapsed "$t0" "$t0r")"
    passed=$((passed + 1))
  else
    echo "not ok - $name"
    sed 's/^/#   /' "$dir/out" | tail -n "${CHECK_TAIL:-30}"
    failed=$((failed + 1))
  fi
  _check_running=
  sed 's/^/# /' "$dir/notes"
}

# note TEXT: a `# TEXT` line under the current check's result (a measurement, a detail).
# Outside a check it is printed at once.
note() {
  if [[ -n "${_check_running:-}" ]]; then
    echo "$*" >>"$CHECK_DIR/notes"
  else
    echo "# $*"
  fi
}

# ok TEXT / bad TEXT / skip TEXT: report a check made inline.
ok() { echo "ok - $*"; passed=$((passed + 1)); }
bad() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "skip - $*"; skipped=$((skipped + 1)); }

# tail_of FILE [N]: the last N (30) lines of FILE, indented as check output.
tail_of() { tail -n "${2:-30}" "$1" | sed 's/^/#   /'; }

# suite_summary: the suite's last line, `SUITE_NAME: N passed, N failed`.
# shellcheck disable=SC2120 # the suffix is optional; most suites pass none
suite_summary() { echo "$SUITE_NAME: $passed passed, $failed failed${1:+ $1}"; }
# suite_die WHAT [LOG]: a failed setup step ends the suite: `not ok - WHAT`, LOG's tail, summary.
suite_die() {
  bad "$1"
  [[ -n "${2:-}" && -f "$2" ]] && tail_of "$2"
  suite_summary
  exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
  [[ "$2" == "$3" ]] && return 0
  echo "$1: got '$2', want '$3'"
  return 1
}

# ------------------------------------------------------------------ waiting --

# wait_for SECONDS COMMAND...: poll COMMAND every 0.1 s until it succeeds; 1 on timeout.
wait_for() {
  local deadline=$(( SECONDS + $1 )); shift
  while ! "$@" >/dev/null 2>&1; do
    (( SECONDS >= deadline )) && return 1
    sleep 0.1
  done
}
# never_for SECONDS COMMAND...: COMMAND fails throughout SECONDS.
never_for() {
  local deadline=$(( SECONDS + $1 )); shift
  while (( SECONDS < deadline )); do
    "$@" >/dev/null 2>&1 && return 1
    sleep 0.2
  done
}
not() { ! "$@"; }

# free_port: a TCP port on 127.0.0.1 nobody listens on (below the ephemeral range).
free_port() {
  local p
  while :; do
    p=$(( 20000 + RANDOM % 12000 ))
    ss -Htan "( sport = :$p )" 2>/dev/null | grep -q . && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

# -------------------------------------------------------------------- audit --

# audit_mark: the audit log's current line count, to count only later events.
audit_mark() { wc -l <"$ALLOT_AUDIT_LOG"; }
# audit_since MARK JQ-FILTER: events after MARK at stage ResponseComplete matching the filter.
audit_since() {
  tail -n "+$(( $1 + 1 ))" "$ALLOT_AUDIT_LOG" |
    jq -c "select(.stage == \"ResponseComplete\" and ($2))" 2>/dev/null | wc -l
}
# audit_settle: wait until the audit log stops growing (events land a few ms after responses).
audit_settle() {
  local prev=-1 now i
  for (( i = 0; i < 50; i++ )); do
    now=$(wc -l <"$ALLOT_AUDIT_LOG")
    [[ "$now" == "$prev" ]] && return 0
    prev=$now
    sleep 0.2
  done
}

# -------------------------------------------------------------------- schema --

# entry_fields_pruned: the cluster's IPPool CRD is Whereabouts' own (e2e/cluster with
# ALLOT_CLUSTER_CRDS=whereabouts), so the API server drops allot's entry fields node, poduid,
# network and ipamclaim. A check whose outcome that changes asserts the safe one then: the
# address is kept (no node is known to prove it unused), never freed early.
entry_fields_pruned() { [[ "${ALLOT_CRDS:-allot}" == whereabouts ]]; }
# as_stored ENTRY_JSON: the entry as the cluster's IPPool schema stores it, keys sorted (jq -cS).
as_stored() {
  if entry_fields_pruned; then
    jq -cS '{id, podref, ifname} | with_entries(select(.value != null))' <<<"$1"
  else
    jq -cS . <<<"$1"
  fi
}

# -------------------------------------------------------------------- names --

# The product's own naming (core/naming.h), through build/test/allot-names: the tests
# never re-derive Whereabouts' rules. ALLOT_NAMES overrides the binary (meson test sets the
# one of its build tree).
ALLOT_NAMES=${ALLOT_NAMES:-$ALLOT_ROOT/build/test/allot-names}
export ALLOT_NAMES

# pool_name CIDR [NETWORK_NAME [NODE_NAME]]: the IPPool's name.
pool_name() { "$ALLOT_NAMES" pool "$@"; }
# res_name IP [NETWORK_NAME]: the OverlappingRangeIPReservation's name.
res_name() { "$ALLOT_NAMES" reservation "$@"; }

# ------------------------------------------------ a node's plugin, direct to the API server --

# For suites that run the built plugin as a node does, somewhere other than this machine's own
# root (oldroot: in a Debian 11 chroot; arm64: the arm64 plugin under qemu-user). The suite
# sets RUN and defines `cni VERB CONF`: the plugin run its way, with CNI_CONTAINERID ctr-$RUN.
#   node_version WHERE         check: VERSION answers, with 0.3.1 among the supported versions
#   node_conf DIR RANGE        set NODE_CONF: a config for RANGE, network $RUN, kubeconfig, locks
#                              and journal under DIR (the path the plugin sees), no relay; the
#                              run's pool and reservations are deleted at exit
#   node_add WHERE             ADD; sets NODE_IP (check: an address came back)
#   node_held                  check: the API server holds the container's allocation
#   node_del WHERE JOURNAL     DEL; check: released in the API server, nothing in JOURNAL (the
#                              journal directory as this machine sees it)
NODE_CONF='' NODE_RANGE='' NODE_IP=''

node_version() {
  local out
  if out=$(cni VERSION '{"cniVersion":"1.1.0"}' 2>&1) &&
     jq -e '.cniVersion == "1.1.0" and (.supportedVersions | index("0.3.1"))' <<<"$out" >/dev/null 2>&1; then
    ok "VERSION $1: $out"
  else
    bad "VERSION $1"; echo "#   $out"
  fi
}

node_conf() {
  NODE_RANGE=$2
  NODE_CONF=$(jq -cn --arg dir "$1" --arg range "$2" --arg net "$RUN" '
    {cniVersion: "1.1.0", name: $net, type: "macvlan",
     ipam: {type: "allot", range: $range, network_name: $net,
            kubernetes: {kubeconfig: ($dir + "/kubeconfig")},
            lock_dir: ($dir + "/lock"), journal_dir: ($dir + "/journal"),
            relay_socket: ($dir + "/no-relay.sock"), deadline_ms: 30000}}')
  on_exit _node_cleanup
}

# _node_pool: the run's IPPool (kube-system: the kubeconfig's namespace), or nothing.
_node_pool() {
  kubectl get ippools -n kube-system -o json |
    jq -c --arg r "$NODE_RANGE" --arg p "$RUN" '.items[] | select(.spec.range == $r and (.metadata.name | startswith($p)))'
}

_node_cleanup() {  # the run's pool and any reservation its container still holds
  local n
  for n in $(kubectl get ippools,overlappingrangeipreservations -n kube-system -o json 2>/dev/null |
               jq -r --arg p "$RUN" --arg c "ctr-$RUN" '.items[]
                 | select((.metadata.name | startswith($p)) or .spec.containerid == $c)
                 | "\(.kind | ascii_downcase)/\(.metadata.name)"'); do
    kubectl delete -n kube-system --ignore-not-found --wait=false "$n" >/dev/null 2>&1
  done
  return 0
}

node_add() {
  local out rc err
  err=$(mktemp "${TMPDIR:-/tmp}/allot-add.XXXXXX")
  out=$(cni ADD "$NODE_CONF" 2>"$err"); rc=$?
  NODE_IP=$(jq -r '.ips[0].address // empty' <<<"$out" 2>/dev/null)
  if [[ $rc -eq 0 && -n "$NODE_IP" ]]; then
    ok "ADD $1 (direct to the API server, no relay): $NODE_IP"
  else
    bad "ADD $1"; echo "#   rc=$rc $out"; tail -n 5 "$err" | sed 's/^/#   /'
  fi
  rm -f "$err"
}

node_held() {
  local pool
  pool=$(_node_pool)
  if [[ -n "$NODE_IP" ]] &&
     jq -e --arg c "ctr-$RUN" '[.spec.allocations[] | select(.id == $c)] | length == 1' <<<"$pool" >/dev/null 2>&1; then
    ok "the API server holds the allocation of ctr-$RUN in IPPool $(jq -r .metadata.name <<<"$pool")"
  else
    bad "the API server holds the allocation of ctr-$RUN"; echo "#   pool: ${pool:-none}"
  fi
}

node_del() {
  local out rc err pool journal
  err=$(mktemp "${TMPDIR:-/tmp}/allot-del.XXXXXX")
  out=$(cni DEL "$NODE_CONF" 2>"$err"); rc=$?
  pool=$(_node_pool)
  journal=$(find "$2" -type f 2>/dev/null | head -n 3)
  if [[ $rc -eq 0 && -z "$journal" ]] &&
     jq -e --arg c "ctr-$RUN" '[.spec.allocations // {} | .[] | select(.id == $c)] | length == 0' <<<"$pool" >/dev/null 2>&1; then
    ok "DEL $1 released $NODE_IP in the API server (nothing journaled)"
  else
    bad "DEL $1 released the address"
    echo "#   rc=$rc $out; journal: ${journal:-none}; pool: ${pool:-none}"; tail -n 5 "$err" | sed 's/^/#   /'
  fi
  rm -f "$err"
}

# real_nodes_or_skip: exits 77 (meson: SKIP), with the reason on a `SKIP: ` line, unless this
# machine can run e2e/node's real nodes now: their binaries cached (`e2e/node/build --print`) or
# ALLOT_NODE=1 (build them: about an hour cold on 2 cores), root, and a Docker engine.
# ALLOT_NODE=0 always skips.
real_nodes_or_skip() {
  local why=""
  case "${ALLOT_NODE:-}" in
    0) why="ALLOT_NODE=0" ;;
    1) ;;
    *) "$ALLOT_ROOT/e2e/node/build" --print >/dev/null 2>&1 ||
         why="the real-node binaries are not cached (e2e/node/build --print fails; a cold build of kubelet, containerd and Multus takes about an hour on 2 cores): run e2e/node/build once, or set ALLOT_NODE=1 to build them in this test" ;;
  esac
  [[ -z "$why" && $(id -u) -ne 0 ]] && why="needs root (the nodes are Docker containers with most capabilities)"
  [[ -z "$why" ]] && ! docker version >/dev/null 2>&1 && why="no Docker engine answers"
  [[ -z "$why" ]] && return 0
  echo "SKIP: $why"
  exit 77
}
