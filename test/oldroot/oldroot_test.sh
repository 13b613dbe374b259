#!/usr/bin/env bash
# Runs the built plugin where it really runs: on a node's own OS. A Debian 11 (bullseye,
# glibc 2.31, no libcurl) root filesystem is debootstrap'd once from this machine's apt mirror
# into ${XDG_CACHE_HOME:-~/.cache}/allot/oldroot-<suite>; the plugin is copied in and, chroot'ed
# there, answers VERSION and does a real ADD and DEL against the real API server (127.0.0.1,
# which a chroot shares) with the relay absent, so the plugin's own libcurl and TLS do the
# work. The server is named kubernetes.default.svc, from the chroot's /etc/hosts (curl
# resolves "localhost" itself, without glibc), and the chroot's nsswitch.conf names NSS
# modules the way Fedora does; with strace present, the ADD is traced to show it opens no
# shared object.
#
#   test/oldroot/oldroot_test.sh [PLUGIN]     default build/plugin/allot
#
# Environment: ALLOT_OLDROOT_SUITE (default bullseye; the mirror here no longer serves
# buster), ALLOT_OLDROOT_MIRROR (default: the machine's apt mirror). Uses the cluster named by
# ALLOT_CLUSTER_DIR when up (eval "$(e2e/cluster env)"), else starts a private one. Needs
# root (debootstrap, chroot). About 2 minutes cold (debootstrap), seconds warm.
# Prints `ok - NAME` / `not ok - NAME` per check, then `oldroot: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"   # on_exit, cluster_start, ok, bad, suite_die
SUITE_NAME=oldroot

PLUGIN=${1:-$root/build/plugin/allot}
SUITE=${ALLOT_OLDROOT_SUITE:-bullseye}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/allot"
ROOTFS=$CACHE/oldroot-$SUITE

die() { suite_die "$@"; }

[[ $(id -u) -eq 0 ]] || die "runs as root (debootstrap, chroot)"
[[ -x "$PLUGIN" ]] || die "plugin $PLUGIN exists (scripts/build)"
for tool in jq debootstrap; do
  command -v "$tool" >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$tool" >/dev/null 2>&1 ||
    die "$tool is installed"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/allot-oldroot.XXXXXX")
on_exit "rm -rf '$work'"

# ------------------------------------------------------------------------ the old root --

# A debootstrap that failed half way may leave /proc or /sys mounted in its target.
unmount_under() {
  local m
  for m in $(findmnt -rn -o TARGET | grep "^$1/" | sort -r); do umount -l "$m" 2>/dev/null; done
  return 0
}
make_rootfs() {
  local mirror tmp=$ROOTFS.tmp.$$
  mirror=${ALLOT_OLDROOT_MIRROR:-$("$root/scripts/apt-mirror" | head -n 1)}
  echo "debootstrap --variant=minbase $SUITE from $mirror"
  if ! debootstrap --variant=minbase "$SUITE" "$tmp" "$mirror"; then
    unmount_under "$tmp"; rm -rf --one-file-system "$tmp"; return 1
  fi
  unmount_under "$tmp"
  mv "$tmp" "$ROOTFS" && touch "$ROOTFS/.allot-complete"
}
mkdir -p "$CACHE"
t0=$SECONDS
exec 9>"$ROOTFS.lock"
flock 9   # one maker at a time; a second run reuses its result
if [[ -f "$ROOTFS/.allot-complete" ]]; then
  how="cached in $ROOTFS"
else
  rm -rf --one-file-system "$ROOTFS"
  make_rootfs >"$work/debootstrap.log" 2>&1 || die "debootstrap $SUITE into $ROOTFS" "$work/debootstrap.log"
  how="debootstrap'd into $ROOTFS"
fi
exec 9>&-
glibc=$(chroot "$ROOTFS" /usr/bin/ldd --version 2>/dev/null | sed -n '1s/.* //p')
here_glibc=$(ldd --version | sed -n '1s/.* //p')
curl_libs=$(find "$ROOTFS" -xdev -name 'libcurl.so*' 2>/dev/null | head -n 3)
if [[ -n "$glibc" && $(printf '%s\n%s\n' "$glibc" "$here_glibc" | sort -V | head -n 1) == "$glibc" &&
      "$glibc" != "$here_glibc" && -z "$curl_libs" ]]; then
  ok "$SUITE root: glibc $glibc (this machine: $here_glibc), no libcurl; $how ($((SECONDS - t0)) s)"
else
  die "$SUITE root is older than this machine and has no libcurl (glibc '$glibc', here $here_glibc; libcurl: ${curl_libs:-none})"
fi

# A node whose hosts: line names modules besides files and dns (Fedora/RHEL 9 style).
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.0.1\tkubernetes.default.svc\n' >"$ROOTFS/etc/hosts"
echo 'hosts: files myhostname resolve [!UNAVAIL=return] dns' >"$ROOTFS/etc/nsswitch.conf.allot"
grep -v '^hosts:' "$ROOTFS/etc/nsswitch.conf" >>"$ROOTFS/etc/nsswitch.conf.allot" 2>/dev/null
mv -f "$ROOTFS/etc/nsswitch.conf.allot" "$ROOTFS/etc/nsswitch.conf"

# ----------------------------------------------------------------------------- the node --

cluster_start >"$work/cluster.log" 2>&1 || die "cluster starts" "$work/cluster.log"
RUN=or$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
node=/allot-$RUN          # the run's files, as the chroot sees them
host_node=$ROOTFS$node
mkdir -p "$host_node/lock" "$host_node/journal"
on_exit "rm -rf --one-file-system '$host_node'"
cp "$PLUGIN" "$host_node/allot"
port=${ALLOT_APISERVER##*:}
APISERVER_NAME=kubernetes.default.svc   # in the API server's certificate (e2e/cluster)
# Self-contained (certificate data inline), and the server by name.
if ! kubectl config view --raw --flatten --kubeconfig="$ALLOT_KUBECONFIG" |
     sed -E "s#server: https://127\.0\.0\.1:$port#server: https://$APISERVER_NAME:$port#" \
       >"$host_node/kubeconfig" || ! grep -q "server: https://$APISERVER_NAME:$port" "$host_node/kubeconfig"; then
  die "a kubeconfig for the chroot naming https://$APISERVER_NAME:$port"
fi

# The node admin's flat file names the run's directory as allot's (allot refuses paths elsewhere).
printf '{"node_dirs":["%s"]}\n' "$node" >"$host_node/admin.conf"

# cni VERB CONF: the plugin inside the chroot, with the environment a runtime gives it. With
# TRACE set (a file), under strace: the chroot process and the plugin it execs.
TRACE=
cni() {
  local tracer=()
  [[ -n "$TRACE" ]] && tracer=(strace -f -qq -e "trace=openat,open,execve" -o "$TRACE")
  printf '%s' "$2" | "${tracer[@]}" chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    CNI_COMMAND="$1" CNI_CONTAINERID="ctr-$RUN" CNI_NETNS=/var/run/netns/none CNI_IFNAME=net1 \
    CNI_PATH=/opt/cni/bin ALLOT_FLAT_FILES="$node/admin.conf" NODENAME=oldroot \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=oldroot;K8S_POD_NAME=pod-$RUN;K8S_POD_UID=uid-$RUN" \
    "$node/allot"
}

node_version "in the $SUITE chroot"

node_conf "$node" "10.251.$(( RANDOM % 250 )).0/24"

command -v strace >/dev/null && TRACE=$work/strace
node_add "in the $SUITE chroot"
TRACE=
if [[ -f "$work/strace" ]]; then
  # chroot and env (one process: each execs the next) load their own libraries; only what
  # happens after the plugin's exec counts, in every thread (the resolver runs in its own).
  plugin_pid=$(awk -v f="\"$node/allot\"" '$2 ~ /^execve\(/ && index($2, f) == 8 { print $1 }' "$work/strace" | tail -n 1)
  plugin_lines=$(awk -v f="\"$node/allot\"" '
    $2 ~ /^execve\(/ && index($2, f) == 8 { on = 1; next }
    on' "$work/strace")
  plugin_opens=$(grep -E '\.so(\.[0-9]+)*"' <<<"$plugin_lines" | grep -v execve | head -n 5)
  if [[ -z "$plugin_pid" ]]; then
    bad "the ADD opened no shared object: the plugin's exec is not in the trace"; head -n 5 "$work/strace" | sed 's/^/#   /'
  elif [[ -z "$plugin_opens" ]]; then
    ok "the ADD opened no shared object (strace: $(grep -c -E 'open(at)?\(' <<<"$plugin_lines") opens by the plugin, none of a .so)"
  else
    bad "the ADD opened no shared object"
    # shellcheck disable=SC2001 # a prefix on every line
    sed 's/^/#   /' <<<"$plugin_opens"
  fi
fi

node_held
node_del "in the $SUITE chroot" "$host_node/journal"

suite_summary
((failed == 0))
