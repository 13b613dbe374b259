#!/usr/bin/env bash
# allot-gc's CRI client (gc-sidecar/node/cri_runtime.h) against a real containerd: Debian's
# (/usr/bin/containerd, 1.6), started here with its own root, state and socket under a temp dir,
# in a private mount namespace whose /run is that dir's run/ (containerd 1.6 keeps shim sockets
# and runc's state under /run/containerd: the machine's is never touched). The sandbox image is
# built here (test/cri/pause.c, gcc -static) and imported with ctr: no registry is needed. A
# hostNetwork sandbox (no CNI) is run, stopped and removed through k8s.io/cri-api's own client
# (e2e/cri-driver), and each time allot-gc's client, through test/cri/cri_state.cpp, must say
# what the runtime says: Ready, NotReady, NotFound, and Unknown once containerd is stopped.
#
#   test/cri/cri_test.sh [CRI_STATE]     (default: build/test/cri-state)
#
# Needs root, containerd, containerd-shim-runc-v2, runc, ctr, gcc (static libc) and unshare:
# skipped (exit 77) without them. The first run builds e2e/cri-driver (Go, cached). Prints
# `ok - NAME` / `not ok - NAME` per check, then `cri: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"  # check, note, expect_eq, wait_for, on_exit, suite_summary
SUITE_NAME=cri
CHECK_TIME=ms
cri_state=${1:-$root/build/test/cri-state}
pause_image=allot.local/pause:cri-test

if ((EUID != 0)); then
  echo "SKIP: needs root (starts containerd and runs a sandbox)"
  exit 77
fi
for tool in containerd containerd-shim-runc-v2 runc ctr gcc unshare; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done
[[ -x "$cri_state" ]] || suite_die "no $cri_state (meson builds test/cri-state)"

# A short path: the sockets under it must fit a sockaddr_un.
work=$(mktemp -d /tmp/allot-cri.XXXXXX)
on_exit "rm -rf '$work'"
sock=$work/containerd.sock
cgroup_parent=/allot-cri-$$
ctrd_pid=''
sandbox=''

# ------------------------------------------------------------------------------ setup --

# pause_tar: the sandbox image as a `docker save` archive (manifest.json, the config, one
# layer holding /pause), which ctr imports under $pause_image.
pause_tar() {
  local img=$work/image diff cfg arch
  mkdir -p "$img/rootfs"
  gcc -static -Os -s -o "$img/rootfs/pause" "$root/test/cri/pause.c" || return 1
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$img/rootfs" -cf "$img/layer.tar" pause
  diff=$(sha256sum "$img/layer.tar" | cut -d' ' -f1)
  case $(uname -m) in
    x86_64) arch=amd64 ;;
    aarch64) arch=arm64 ;;
    *) arch=$(uname -m) ;;
  esac
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$diff" >"$img/config.json"
  cfg=$(sha256sum "$img/config.json" | cut -d' ' -f1)
  mv "$img/config.json" "$img/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg" "$pause_image" \
    >"$img/manifest.json"
  tar -C "$img" -cf "$work/pause.tar" manifest.json "$cfg.json" layer.tar
}

# containerd_config: everything under $work; CRI on, the native snapshotter (no overlay mount
# needed), no AppArmor profile, a CNI directory that stays empty (host network only), and the
# sandbox's oom_score_adj (-998) raised to containerd's own: a machine may refuse to lower it
# (this one's runc fails with "failed to update /proc/self/oom_score_adj").
containerd_config() {
  mkdir -p "$work/run" "$work/cni/bin" "$work/cni/conf"
  cat >"$work/config.toml" <<EOF
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$work/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$work/cni/bin"
    conf_dir = "$work/cni/conf"
EOF
}

start_containerd() {
  # shellcheck disable=SC2016 # expanded by the inner sh
  unshare --mount --propagation private -- sh -c 'mount --bind "$1" /run && exec containerd --config "$2"' \
    sh "$work/run" "$work/config.toml" >"$work/containerd.log" 2>&1 &
  ctrd_pid=$!
  wait_for 30 ctr -a "$sock" version
}

stop_containerd() {
  [[ -n "$ctrd_pid" ]] || return 0
  kill -TERM "$ctrd_pid" 2>/dev/null
  wait "$ctrd_pid" 2>/dev/null
  ctrd_pid=''
}

# remember_pause: the sandbox's process, by the pid its shim recorded.
pause_pid=''
remember_pause() {
  local f
  for f in "$work"/state/io.containerd.runtime.v2.task/*/*/init.pid; do
    [[ -f "$f" ]] && pause_pid=$(cat "$f")
  done
}

# our_processes: the pids of this run's shims (their command line names $sock, under this run's
# own temp dir) and of its sandbox's process (the pid recorded, if it still runs /pause).
our_processes() {
  local d cmd
  for d in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
    [[ "$cmd" == *containerd-shim*" -address $sock "* ]] && echo "${d#/proc/}"
  done
  if [[ -n "$pause_pid" && "$(tr '\0' ' ' 2>/dev/null <"/proc/$pause_pid/cmdline")" == "/pause " ]]; then
    echo "$pause_pid"
  fi
}

# cleanup: a sandbox a failed check left is removed through containerd; then containerd stops,
# and any shim or sandbox process of this run still there is killed by its pid (a shim whose
# sandbox was removed waits for containerd to shut it down, which a containerd stopped at once
# may not do). The mount namespace goes with its last process; the cgroups runc made go with
# the sandbox, their parent here.
cleanup() {
  local p d
  remember_pause
  if [[ -n "$sandbox" && -n "$ctrd_pid" ]]; then
    "$driver" -a "$sock" -t 20s stop "$sandbox" >/dev/null 2>&1
    "$driver" -a "$sock" -t 20s rm "$sandbox" >/dev/null 2>&1
  fi
  stop_containerd
  for p in $(our_processes); do
    kill -KILL "$p" 2>/dev/null
  done
  for d in /sys/fs/cgroup/*"$cgroup_parent" /sys/fs/cgroup"$cgroup_parent"; do
    [[ -d "$d" ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

t0=$SECONDS
driver=$("$root/e2e/cri-driver/build" 2>"$work/driver-build.log") ||
  suite_die "build e2e/cri-driver" "$work/driver-build.log"
note "cri-driver: $driver ($((SECONDS - t0)) s)"
pause_tar >"$work/image.log" 2>&1 || suite_die "build the pause image" "$work/image.log"
containerd_config
on_exit cleanup
start_containerd || suite_die "start containerd ($(containerd --version | awk '{print $3}'))" "$work/containerd.log"
ctr -a "$sock" -n k8s.io images import --snapshotter native "$work/pause.tar" >"$work/import.log" 2>&1 ||
  suite_die "import $pause_image" "$work/import.log"
# The CRI plugin initializes after the socket is up: until then it answers every call with an
# error ("server is not initialized yet").
wait_for 30 "$cri_state" "$sock" --version || suite_die "containerd's CRI plugin ready" "$work/containerd.log"
ok "containerd $(containerd --version | awk '{print $3}') up, $pause_image imported ($((SECONDS - t0)) s)"

# -------------------------------------------------------------------------- checks --

# state ID: allot-gc's answer on $sock (why, when it gives one, into $CHECK_DIR/why).
state() { "$cri_state" "$sock" "$@" 2>"$CHECK_DIR/why"; }

# t_state WANT ID: allot-gc says WANT, and so does the CRI API's own client.
t_state() {
  local got ref
  got=$(state "$2") || return 1
  expect_eq "allot-gc's client" "$got" "$1" || { cat "$CHECK_DIR/why"; return 1; }
  ref=$("$driver" -a "$sock" status "$2") || return 1
  expect_eq "cri-api's client" "$ref" "$1"
}

t_version() {
  local v
  v=$("$cri_state" "$sock" --version) || return 1
  note "$v"
  [[ "$v" == "containerd "*" (CRI v1)" ]] || { echo "version: '$v'"; return 1; }
}

t_run() {
  sandbox=$("$driver" -a "$sock" -cgroup-parent "$cgroup_parent" run "cri-test-$$")
  remember_pause
  [[ -n "$sandbox" ]] || return 1
  note "sandbox $sandbox"
  [[ "$sandbox" =~ ^[0-9a-f]{64}$ ]]
}

# t_threads N: N calls from 4 threads through one client (one CURL handle) all say Ready.
t_threads() {
  local got
  got=$(state "$id" "$1") || return 1
  expect_eq "answers" "$got" ready || { cat "$CHECK_DIR/why"; return 1; }
}

# t_prefix: containerd resolves a unique prefix of an ID to its sandbox; an answer about a
# sandbox of another ID proves nothing of the one asked for.
t_prefix() {
  local got ref
  got=$(state "${id:0:12}") || return 1
  ref=$("$driver" -a "$sock" status "${id:0:12}")
  note "cri-api's client says '$ref' of the prefix ${id:0:12}"
  expect_eq "allot-gc's client" "$got" unknown || return 1
  grep -q "another sandbox" "$CHECK_DIR/why" || { cat "$CHECK_DIR/why"; return 1; }
}

t_rm() {
  "$driver" -a "$sock" rm "$id" || return 1
  sandbox=''  # nothing left for cleanup to remove
}

t_stopped() {
  local got
  stop_containerd
  got=$(state "$id") || return 1
  expect_eq "allot-gc's client" "$got" unknown || return 1
  note "why: $(cat "$CHECK_DIR/why")"
  grep -q "$sock" "$CHECK_DIR/why" || { echo "the detail does not name $sock"; return 1; }
}

check "allot-gc's client reads the runtime's version" t_version
check "RunPodSandbox runs a host-network sandbox of the local pause image" t_run
[[ -n "$sandbox" ]] || suite_die "no sandbox to ask about"
id=$sandbox  # $sandbox: what cleanup must remove; $id: what the checks ask about
check "a running sandbox is Ready" t_state ready "$id"
check "40 calls from 4 threads through one client all say Ready" t_threads 40
check "a prefix of the sandbox's ID is Unknown, not the sandbox's state" t_prefix
check "an ID the runtime never ran is NotFound" t_state not_found "$(printf '%064d' 7)"
check "StopPodSandbox" "$driver" -a "$sock" stop "$id"
check "a stopped sandbox is NotReady" t_state not_ready "$id"
check "RemovePodSandbox" t_rm
check "a removed sandbox is NotFound" t_state not_found "$id"
check "with containerd stopped the answer is Unknown, naming the socket" t_stopped

suite_summary
((failed == 0))
