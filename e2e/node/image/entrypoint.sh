#!/bin/bash
# PID 1 of a node container (e2e/node/cluster). /node holds this node's files, written by
# the harness: env (NODE_NAME, APISERVER_FWD=ip:port, SNAPSHOTTER), kubelet.yaml,
# kubelet.kubeconfig, containerd.toml and cni/ (the CNI config dir); /images holds the
# image archives (docker save) to import.
#
# Starts containerd, imports the images, then keeps kubelet running unless
# /run/kubelet.disabled exists (the harness stops and starts kubelet with it).
set -euo pipefail
# shellcheck source=/dev/null # written into the node container, not in the tree
source /node/env
NODE_IP=$(ip -4 -o addr show dev eth0 | awk '{ split($4, a, "/"); print a[1]; exit }')
log() { echo "node-entrypoint: $(date +%T) $*"; }

# The container is not --privileged: Docker on these machines cannot grant it (the engine's
# capability bounding set lacks CAP_SYS_RESOURCE: "runc create failed: unable to start
# container process: unable to apply caps: operation not permitted"). It gets every other
# capability, no seccomp/AppArmor, unmasked /proc and all devices; this makes up for the rest.
mount -o remount,rw /sys
# cgroup v1: Docker mounted the hierarchies read-only; mount them again (the container has
# its own cgroup namespace, so each shows this container's cgroup as its root).
ctrls=$(mount -t cgroup | sed -E 's/.*\((.*)\)$/\1/' | tr , '\n' |
        grep -vxE 'ro|rw|nosuid|nodev|noexec|relatime' | sort -u)
for m in $(mount -t cgroup | awk '{print $3}'); do umount "$m"; done
umount /sys/fs/cgroup
mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
for c in $ctrls; do
  mkdir -p "/sys/fs/cgroup/${c#name=}"
  mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/${c#name=}"
done
[[ -e /dev/kmsg ]] || mknod /dev/kmsg c 1 11
# kubelet sets these host-wide sysctls when they differ; show it the values it wants
# instead, so the shared machine's kernel settings are left alone.
mkdir -p /run/sysctl
for kv in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
          kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
  f=/run/sysctl/${kv%%=*}
  mkdir -p "${f%/*}"
  echo "${kv#*=}" >"$f"
  mount --bind "$f" "/proc/sys/${kv%%=*}"
done
# kubelet's volume mounts need shared propagation.
mount --make-rshared /
sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.ipv4.conf.all.route_localnet=1 || true

# The "kubernetes" Service address (10.96.0.1:443, in the API server certificate) goes to
# the API server through the harness's forwarder on the Docker network's gateway: for
# processes of the node (OUTPUT) and for pods on the node's bridge (PREROUTING).
for chain in OUTPUT PREROUTING; do
  iptables -t nat -A "$chain" -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "$APISERVER_FWD"
done
iptables -t nat -A POSTROUTING -d "${APISERVER_FWD%:*}/32" -p tcp -j MASQUERADE

mkdir -p /opt/cni/bin /etc/cni /etc/containerd /var/log/allot-node /etc/kubernetes/manifests
cp -a /opt/cni/bin.dist/. /opt/cni/bin/
rm -rf /etc/cni/net.d
cp -a /node/cni /etc/cni/net.d
cp /node/containerd.toml /etc/containerd/config.toml

containerd --config /etc/containerd/config.toml >>/var/log/allot-node/containerd.log 2>&1 &
for _ in $(seq 100); do
  ctr version >/dev/null 2>&1 && break
  sleep 0.2
done
ctr version >/dev/null || { log "containerd did not start"; tail -20 /var/log/allot-node/containerd.log; exit 1; }
for img in /images/*.tar; do
  ctr -n k8s.io images import --snapshotter "${SNAPSHOTTER:-overlayfs}" "$img" >>/var/log/allot-node/images.log 2>&1 ||
    { log "ctr images import $img failed"; tail -5 /var/log/allot-node/images.log; exit 1; }
done
log "containerd up, images: $(ctr -n k8s.io images ls -q | tr '\n' ' ')"
touch /run/node-ready

stop=false
trap 'stop=true; [[ -n "${kpid:-}" ]] && kill -TERM "$kpid" 2>/dev/null' TERM INT
while ! $stop; do
  if [[ -e /run/kubelet.disabled ]]; then sleep 0.5; continue; fi
  log "starting kubelet"
  kubelet --config=/node/kubelet.yaml --kubeconfig=/node/kubelet.kubeconfig \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=2 \
    >>/var/log/allot-node/kubelet.log 2>&1 &
  kpid=$!
  echo "$kpid" >/run/kubelet.pid
  wait "$kpid" || true
  rm -f /run/kubelet.pid
  log "kubelet exited"
  $stop || sleep 1
done
