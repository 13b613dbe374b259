#!/usr/bin/env bash
# allot for arm64 nodes, run here under qemu-user. Cross-compiles the tree (scripts/build
# --arm64: Debian's g++-aarch64-linux-gnu against scripts/arm64-sysroot, into build-arm64/),
# then checks:
#   - the plugin is one static aarch64 executable (as on x86-64: it runs on the node's own OS);
#   - the arm64 unit suite passes, each test executable under qemu-aarch64 (meson test -C
#     build-arm64 --suite unit; the cross file names qemu as the exe wrapper);
#   - the three arm64 programs report the version and revision the x86-64 build reports;
#   - the arm64 plugin, under qemu-aarch64, answers VERSION and does a real ADD and DEL against
#     the real API server (direct: no relay, so its own static libcurl and TLS do the work).
#
#   test/arm64/arm64_test.sh
#
# ALLOT_ARM64=0 skips the suite (exit 77). About 5 minutes cold (the cross toolchain's
# packages, the arm64 libcurl and the cross build), under a minute warm. Uses the cluster named
# by ALLOT_CLUSTER_DIR when up (eval "$(e2e/cluster env)"), else starts a private one.
# Prints `ok - NAME` / `not ok - NAME` per check, then `arm64: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"   # on_exit, cluster_start, ok, bad, suite_die, node_conf/add/held/del
SUITE_NAME=arm64
die() { suite_die "$@"; }

if [[ "${ALLOT_ARM64:-1}" == 0 ]]; then
  echo "SKIP: ALLOT_ARM64=0"; exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/allot-arm64.XXXXXX")
on_exit "rm -rf '$work'"
build=$root/build-arm64

t0=$SECONDS
"$root/scripts/build" --arm64 >"$work/build.log" 2>&1 || die "scripts/build --arm64" "$work/build.log"
sysroot=$("$root/scripts/arm64-sysroot") || die "scripts/arm64-sysroot"
ok "cross build of build-arm64/ ($((SECONDS - t0)) s)"

kind=$(file -b "$build/plugin/allot")
if [[ "$kind" == *"ARM aarch64"* && "$kind" == *"statically linked"* ]]; then
  ok "the arm64 plugin is static: ${kind%%, BuildID*}"
else
  bad "the arm64 plugin is one static aarch64 executable: $kind"
fi

t0=$SECONDS
if meson test -C "$build" --no-rebuild --suite unit >"$work/unit.log" 2>&1; then
  ok "arm64 unit suite under qemu-aarch64: $(grep -cE '^ *[0-9]+/[0-9]+ .* OK ' "$work/unit.log") executables," \
    "$(sed -n 's/^\[doctest\] test cases: *\([0-9]*\) .*/\1/p' "$build/meson-logs/testlog.txt" |
       awk '{ n += $1 } END { print n }') test cases ($((SECONDS - t0)) s)"
else
  bad "arm64 unit suite under qemu-aarch64"; tail_of "$work/unit.log"
fi

# Each program's --version, arm64 under qemu against the x86-64 build's.
for prog in plugin/allot gc-sidecar/allot-gc cli/kubectl-allot; do
  args=(--version); [[ $prog == cli/* ]] && args=(version --client)
  want=$("$root/build/$prog" "${args[@]}" 2>&1)
  got=$(qemu-aarch64 -L "$sysroot" "$build/$prog" "${args[@]}" 2>&1)
  if [[ -n "$want" && "$got" == "$want" ]]; then
    ok "arm64 ${prog##*/} reports what the x86-64 build does: $got"
  else
    bad "arm64 ${prog##*/} reports '$got', the x86-64 build '$want'"
  fi
done

# ------------------------------------------------------- VERSION, ADD, DEL under qemu --

cluster_start >"$work/cluster.log" 2>&1 || die "cluster starts" "$work/cluster.log"
RUN=a64$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
node=$work/node
mkdir -p "$node/lock" "$node/journal"
kubectl config view --raw --flatten --kubeconfig="$ALLOT_KUBECONFIG" >"$node/kubeconfig" ||
  die "a self-contained kubeconfig"
# The node admin's flat file names the run's directory as allot's (allot refuses paths elsewhere).
printf '{"node_dirs":["%s"]}\n' "$node" >"$node/admin.conf"

# cni VERB CONF: the arm64 plugin under qemu-aarch64, with the environment a runtime gives it.
cni() {
  printf '%s' "$2" | env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    CNI_COMMAND="$1" CNI_CONTAINERID="ctr-$RUN" CNI_NETNS=/var/run/netns/none CNI_IFNAME=net1 \
    CNI_PATH=/opt/cni/bin ALLOT_FLAT_FILES="$node/admin.conf" NODENAME=arm64 \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=arm64;K8S_POD_NAME=pod-$RUN;K8S_POD_UID=uid-$RUN" \
    qemu-aarch64 "$build/plugin/allot"
}

node_version "by the arm64 plugin"

node_conf "$node" "10.252.$(( RANDOM % 250 )).0/24"
node_add "by the arm64 plugin"
node_held
node_del "by the arm64 plugin" "$node/journal"

suite_summary
((failed == 0))
