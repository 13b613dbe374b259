#!/bin/sh
# Init container of the allot DaemonSet: installs the plugin on the node and writes its
# node-local configuration. The node kubeconfig itself is written (and refreshed when the
# projected token rotates) by allot-gc --node-kubeconfig.
#
# All of it under an exclusive flock(2) on $CONF_DIR/.install.lock, and last the stamp
# $CONF_DIR/installed-by with this pod's UID: a stopping allot-gc that takes the DaemonSet for
# uninstalled (a pod deleted with --force reads 401) removes the files, under the same lock,
# only while the stamp names its own pod, so never an install this pod just made
# (gc-sidecar/daemon/uninstall.h). flock is util-linux's, Essential in Debian: in the image.
set -eu
CNI_BIN_DIR=${CNI_BIN_DIR:-/host/opt/cni/bin}
CONF_DIR=${CONF_DIR:-/host/etc/cni/net.d/allot.d}
: "${NODE_NAME:?NODE_NAME must be set from spec.nodeName}"
: "${POD_UID:?POD_UID must be set from metadata.uid (the install stamp allot-gc --pod-uid checks)}"
umask 077
mkdir -p "$CNI_BIN_DIR" "$CONF_DIR"
# Held until the script exits (fd 9 closes). A stopping allot-gc holds it for a few file
# removals; a minute without it is something else, and the kubelet runs the script again.
exec 9>>"$CONF_DIR/.install.lock"
flock -w 60 9 || { echo "$CONF_DIR/.install.lock: not locked within 60 s" >&2; exit 1; }
# Atomic install: a runtime exec'ing the plugin mid-copy never sees a torn binary.
cp /usr/local/bin/allot "$CNI_BIN_DIR/.allot.new"
chmod 0755 "$CNI_BIN_DIR/.allot.new"
mv -f "$CNI_BIN_DIR/.allot.new" "$CNI_BIN_DIR/allot"
# PLUGIN_ALIASES (comma-separated, such as "whereabouts"): further names for the plugin, for
# network configs and cached DELs that still name another IPAM. Each is a copy, not a symlink:
# another install that later copies its own binary to that name (cp follows a symlink) must
# not write over allot. allot-gc --plugin-aliases removes a copy left unchanged at uninstall.
for a in $(printf '%s' "${PLUGIN_ALIASES:-}" | tr ',' ' '); do
  case $a in
    allot|.|..|*[!A-Za-z0-9._-]*) echo "PLUGIN_ALIASES: \"$a\" is not a file name other than allot" >&2; exit 1 ;;
  esac
  cp "$CNI_BIN_DIR/allot" "$CNI_BIN_DIR/.$a.new"
  chmod 0755 "$CNI_BIN_DIR/.$a.new"
  mv -f "$CNI_BIN_DIR/.$a.new" "$CNI_BIN_DIR/$a"
done
cat >"$CONF_DIR/.allot.conf.new" <<CONF
{
  "kubernetes": {"kubeconfig": "/etc/cni/net.d/allot.d/allot.kubeconfig"},
  "namespace": "${POOL_NAMESPACE:-kube-system}",
  "lock_dir": "/run/allot/locks",
  "journal_dir": "/var/lib/allot/journal"
}
CONF
chmod 0600 "$CONF_DIR/.allot.conf.new"
mv -f "$CONF_DIR/.allot.conf.new" "$CONF_DIR/allot.conf"
printf '%s\n' "$NODE_NAME" >"$CONF_DIR/.nodename.new"
chmod 0644 "$CONF_DIR/.nodename.new"
mv -f "$CONF_DIR/.nodename.new" "$CONF_DIR/nodename"
# Last: the stamp says the whole install above is this pod's.
printf '%s\n' "$POD_UID" >"$CONF_DIR/.installed-by.new"
mv -f "$CONF_DIR/.installed-by.new" "$CONF_DIR/installed-by"
echo "allot installed on $NODE_NAME by pod $POD_UID"
