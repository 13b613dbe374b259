#!/usr/bin/env bash
# Runtime tests: allot driven the way a container runtime drives it — through libcni
# (cnitool, built from the official module by e2e/runtime/build-tools) and real main
# plugins (Debian's /usr/lib/cni up to CNI 1.0.0; the reference plugins v1.9 for 1.1.0),
# in network namespaces, against the real API server of e2e/cluster.
#
# Topology (all `ip netns`, nothing in the machine's root namespace): two simulated nodes,
# each a "host" netns with a bridge br0; a veth w0 joins the two bridges and a veth pair mv0
# is each node's macvlan parent; containers are netns's attached by cnitool run inside their
# node's host netns. e2e/runtime/netns-proxy lets allot reach the API server from there.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up; otherwise starts a private one.
# Needs root. Prints `ok - NAME` / `not ok - NAME` / `skip - NAME` per check, then
# `runtime: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=runtime
# shellcheck source=e2e/runtime/lib.sh disable=SC1091
source "$root/e2e/runtime/lib.sh"

die() { suite_die "$1"; }

[[ $(id -u) -eq 0 ]] || die "runs as root (ip netns)"
cluster_start || die "cluster starts"
rt_init || die "CNI tools build and the plugin runs"
CHECK_DIR=$RT_WORK
CHECK_TIME=s
CHECK_TAIL=30

# --------------------------------------------------------------------------- topology --

RANGES=(10.207.1.0/24 10.207.2.0/24 fd00:207:2::/64 10.207.3.0/24 10.207.4.0/24 10.207.5.0/30
        10.207.6.0/24 10.207.7.16/28 10.207.7.32/28 10.207.7.48/28 10.207.7.64/28 10.207.7.80/28)
rt_delete_pools "${RANGES[@]}"        # leftovers of an interrupted run
# shellcheck disable=SC2016 # expanded at exit
on_exit 'rt_delete_pools "${RANGES[@]}"'

setup() {
  rt_node node-1 && rt_node node-2 && rt_wire node-1 node-2 && rt_proxy_start
}
check "topology: two host netns (bridge, macvlan parent), API server reachable inside" setup ||
  { suite_summary; exit 1; }

# held_by RANGE CONTAINER: the IP the pool of RANGE holds for CONTAINER (by cnitool's container ID).
held_by() { rt_allocs "$1" | awk -v id="$(rt_cid "$2")" '$2 == id { print $1 }'; }
# alloc_count RANGE
alloc_count() { rt_allocs "$1" | wc -l; }

# attach NODE NET CONTAINER [IFNAME]: make the container netns and ADD it.
attach() {
  rt_container "$3" && rt_cni "$1" add "$2" "$3" "${4:-eth0}" >"$RT_WORK/add-$3.json"
}

# ------------------------------------------------ single .conf, IPv4, Debian's bridge --

rt_net rt-v4 debian conf '{"cniVersion":"1.0.0","name":"rt-v4","type":"bridge","bridge":"br0",
  "ipam":{"type":"allot","range":"10.207.1.0/24","gateway":"10.207.1.254"}}'

t_conf_add() {
  attach node-1 rt-v4 c1 && attach node-1 rt-v4 c2 || return 1
  local ip1 ip2
  ip1=$(held_by 10.207.1.0/24 c1); ip2=$(held_by 10.207.1.0/24 c2)
  [[ -n "$ip1" && -n "$ip2" && "$ip1" != "$ip2" ]] || { echo "pool: $(rt_allocs 10.207.1.0/24)"; return 1; }
  expect_eq "c1 eth0" "$(rt_addrs c1)" "$ip1/24" && expect_eq "c2 eth0" "$(rt_addrs c2)" "$ip2/24" || return 1
  expect_eq "cnitool result for c1" "$(jq -r '.ips[0].address' "$RT_WORK/add-c1.json")" "$ip1/24" || return 1
  expect_eq "c1 podref and node" "$(rt_allocs 10.207.1.0/24 | awk -v ip="$ip1" '$1 == ip { print $3, $4, $5 }')" \
    "rt/c1 eth0 node-1"
}
check "conf (CNI 1.0.0, Debian bridge): ADD puts the pool's address on the container interface" t_conf_add

t_conf_ping() { ip netns exec "$(rt_ns c1)" ping -c1 -W2 "$(held_by 10.207.1.0/24 c2)"; }
check "conf: the two containers ping each other" t_conf_ping

check "conf: CHECK passes" rt_cni node-1 check rt-v4 c1

t_conf_check_fails() {
  ip -n "$(rt_ns c1)" addr del "$(rt_addrs c1)" dev eth0 || return 1
  if rt_cni node-1 check rt-v4 c1; then echo "CHECK passed without the address"; return 1; fi
}
check "conf: CHECK fails once the address is removed from the interface" t_conf_check_fails

t_conf_del() {
  local ip2
  ip2=$(held_by 10.207.1.0/24 c2)
  rt_cni node-1 del rt-v4 c1 || return 1
  expect_eq "c1's allocation" "$(held_by 10.207.1.0/24 c1)" "" &&
    expect_eq "c2's allocation" "$(held_by 10.207.1.0/24 c2)" "$ip2" || return 1
  rt_cni node-1 del rt-v4 c1 || { echo "second DEL failed"; return 1; }
  rt_cni node-1 del rt-v4 c2 && expect_eq "allocations left" "$(alloc_count 10.207.1.0/24)" 0 &&
    expect_eq "c2 eth0 after DEL" "$(ip -n "$(rt_ns c2)" -o link show eth0 2>/dev/null)" ""
}
check "conf: DEL frees the address (IPPool), is idempotent, removes the interface" t_conf_del

t_conf_del_gone() {
  attach node-1 rt-v4 c3 || return 1
  [[ -n "$(held_by 10.207.1.0/24 c3)" ]] || { echo "c3 holds nothing"; return 1; }
  rt_container_del c3
  rt_cni node-1 del rt-v4 c3 && expect_eq "c3's allocation" "$(held_by 10.207.1.0/24 c3)" ""
}
check "conf: DEL after the container's netns is gone still frees the address" t_conf_del_gone

t_old_versions() {
  local v i=0 r
  for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0; do
    i=$((i + 1)); r=10.207.7.$((i * 16))/28
    rt_net "rt-old$i" debian conf "{\"cniVersion\":\"$v\",\"name\":\"rt-old$i\",\"type\":\"bridge\",
      \"bridge\":\"br0\",\"ipam\":{\"type\":\"allot\",\"range\":\"$r\"}}" || return 1
    attach node-1 "rt-old$i" "o$i" || { echo "ADD $v failed"; return 1; }
    expect_eq "$v: o$i eth0" "$(rt_addrs "o$i")" "$(held_by "$r" "o$i")/28" || return 1
    if [[ $v == 0.4.0 ]]; then rt_cni node-1 check "rt-old$i" "o$i" || { echo "CHECK $v failed"; return 1; }; fi
    rt_cni node-1 del "rt-old$i" "o$i" && expect_eq "$v: allocations left" "$(alloc_count "$r")" 0 || return 1
    rt_delete_pools "$r"
  done
}
check "conf: CNI 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0 through Debian's bridge (ADD, DEL; CHECK on 0.4.0)" \
  t_old_versions

# ---------------------------------- conflist, dual-stack, reference bridge, two nodes --

rt_net rt-dual ref conflist '{"cniVersion":"1.1.0","name":"rt-dual","plugins":[{"type":"bridge","bridge":"br0",
  "capabilities":{"ips":true},"ipam":{"type":"allot","ipRanges":[{"range":"10.207.2.0/24"},{"range":"fd00:207:2::/64"}]}}]}'

t_dual_add() {
  attach node-1 rt-dual d1 && attach node-2 rt-dual d2 || return 1
  local c r v4 v6
  for c in d1 d2; do
    v4=$(held_by 10.207.2.0/24 $c); v6=$(held_by fd00:207:2::/64 $c)
    [[ -n "$v4" && -n "$v6" ]] || { echo "$c: pools: $(rt_allocs 10.207.2.0/24; rt_allocs fd00:207:2::/64)"; return 1; }
    r=$(rt_addrs $c | sort | tr '\n' ' ')
    expect_eq "$c eth0" "$r" "$(printf '%s\n' "$v4/24" "$v6/64" | sort | tr '\n' ' ')" || return 1
  done
  expect_eq "nodes in the v6 pool" "$(rt_allocs fd00:207:2::/64 | awk '{print $5}' | sort | tr '\n' ' ')" \
    "node-1 node-2 "
}
check "conflist (CNI 1.1.0, reference bridge): dual-stack ADD on two nodes, both families on eth0" t_dual_add

t_dual_ping() {
  local ns
  ns=$(rt_ns d1)
  ip netns exec "$ns" ping -c1 -W2 "$(held_by 10.207.2.0/24 d2)" &&
    ip netns exec "$ns" ping -6 -c1 -W2 "$(held_by fd00:207:2::/64 d2)"
}
check "conflist: containers on different nodes ping each other over IPv4 and IPv6" t_dual_ping

check "conflist: CHECK passes on both nodes" eval 'rt_cni node-1 check rt-dual d1 && rt_cni node-2 check rt-dual d2'

t_dual_check_fails() {
  ip -n "$(rt_ns d2)" addr del "$(held_by fd00:207:2::/64 d2)/64" dev eth0 || return 1
  if rt_cni node-2 check rt-dual d2; then echo "CHECK passed without the IPv6 address"; return 1; fi
}
check "conflist: CHECK fails once the IPv6 address is removed" t_dual_check_fails

t_dual_del() {
  rt_cni node-1 del rt-dual d1 && rt_cni node-2 del rt-dual d2 || return 1
  expect_eq "IPv4 allocations left" "$(alloc_count 10.207.2.0/24)" 0 &&
    expect_eq "IPv6 allocations left" "$(alloc_count fd00:207:2::/64)" 0
}
check "conflist: DEL frees both families" t_dual_del

# Requested addresses: libcni turns CAP_ARGS into runtimeConfig.ips (the bridge declares the
# "ips" capability); IP= in CNI_ARGS is the older way.
t_requested() {
  rt_container d3 || return 1
  CAP_ARGS='{"ips":["10.207.2.50/24","fd00:207:2::50/64"]}' rt_cni node-1 add rt-dual d3 >/dev/null || return 1
  expect_eq "d3 eth0" "$(rt_addrs d3 | sort | paste -sd' ')" "10.207.2.50/24 fd00:207:2::50/64" || return 1
  expect_eq "pool holds .50 for d3" "$(held_by 10.207.2.0/24 d3)" 10.207.2.50 || return 1
  rt_container d4 || return 1
  RT_CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=rt;K8S_POD_NAME=d4;IP=10.207.2.60,fd00:207:2::60" \
    rt_cni node-1 add rt-dual d4 >/dev/null || return 1
  expect_eq "d4 eth0" "$(rt_addrs d4 | sort | paste -sd' ')" "10.207.2.60/24 fd00:207:2::60/64" || return 1
  rt_container d5 || return 1
  local err
  if err=$(CAP_ARGS='{"ips":["10.207.2.50/24"]}' rt_cni node-2 add rt-dual d5 2>&1); then
    echo "a second ADD got the taken 10.207.2.50"; return 1
  fi
  grep -q 10.207.2.50 <<<"$err" || { echo "the refusal does not name the address: $err"; return 1; }
  echo "refused: $(grep -m1 -i error <<<"$err")"
  rt_cni node-1 del rt-dual d3 && rt_cni node-1 del rt-dual d4 &&
    expect_eq "allocations left" "$(alloc_count 10.207.2.0/24)" 0
}
check "conflist: requested IPs via runtimeConfig.ips (CAP_ARGS) and IP= (CNI_ARGS); a taken one is refused" \
  t_requested

# ------------------------------------------------------- macvlan (Debian), two nodes --

rt_net rt-mv debian conflist '{"cniVersion":"1.0.0","name":"rt-mv","plugins":[{"type":"macvlan","master":"mv0",
  "mode":"bridge","ipam":{"type":"allot","range":"10.207.3.0/24"}}]}'

t_macvlan() {
  attach node-1 rt-mv m1 && attach node-2 rt-mv m2 || return 1
  local ip2
  ip2=$(held_by 10.207.3.0/24 m2)
  expect_eq "m2 eth0" "$(rt_addrs m2)" "$ip2/24" || return 1
  ip netns exec "$(rt_ns m1)" ping -c1 -W2 "$ip2" || return 1
  rt_cni node-1 check rt-mv m1 && rt_cni node-1 del rt-mv m1 && rt_cni node-2 del rt-mv m2 &&
    expect_eq "allocations left" "$(alloc_count 10.207.3.0/24)" 0
}
check "macvlan conflist (CNI 1.0.0, Debian): ADD on two nodes, ping across, CHECK, DEL" t_macvlan

# ------------------------------------------------------------------------------ GC --

gc_conf='{"cniVersion":"1.1.0","name":"rt-gc","plugins":[{"type":"bridge","bridge":"br0",
  "ipam":{"type":"allot","range":"10.207.4.0/24"}}]}'
rt_net rt-gc ref conflist "$gc_conf"

t_gc_setup() {
  attach node-1 rt-gc g1 && attach node-1 rt-gc g2 && attach node-1 rt-gc g3 && attach node-2 rt-gc g4 &&
    expect_eq "allocations" "$(alloc_count 10.207.4.0/24)" 4
}
check "GC: four attachments (three on node-1, one on node-2)" t_gc_setup

# holders RANGE: the containers (of g1..g4) holding addresses, sorted.
holders() {
  local c ids
  ids=$(rt_allocs "$1" | awk '{print $2}')
  for c in g1 g2 g3 g4; do grep -qx "$(rt_cid $c)" <<<"$ids" && printf '%s ' $c; done
  return 0
}

t_gc_libcni_cache() {
  rt_cni_gc node-1 rt-gc "$(rt_cid g1)/eth0" || return 1
  expect_eq "holders" "$(holders 10.207.4.0/24)" "g1 g4 " &&
    expect_eq "g2 eth0" "$(ip -n "$(rt_ns g2)" -o link show eth0 2>/dev/null)" ""
}
check "GC through libcni, valid=[g1] on node-1: its cached stale g2, g3 are DELeted (bridge → allot)" \
  t_gc_libcni_cache

# The reference plugins (v1.9) do not pass GC on to their IPAM plugin (bridge.go: "FIXME GC"), so
# attachments the runtime no longer knows are reclaimed only when GC reaches allot itself. That is
# what this list does: same network name, allot as the plugin; libcni sends it GC with the list.
t_gc_allot() {
  rt_cni node-1 add rt-gc g2 >/dev/null && rt_cni node-1 add rt-gc g3 >/dev/null || return 1
  expect_eq "holders before" "$(holders 10.207.4.0/24)" "g1 g2 g3 g4 " || return 1
  local d=$RT_WORK/gc-view
  mkdir -p "$d/cache"
  jq --arg kc "$ALLOT_KUBECONFIG" --arg nd "$(rt_node_dir node-1)" \
    '{cniVersion, name, plugins: [{type: "allot", ipam: (.plugins[0].ipam + {kubernetes: {kubeconfig: $kc},
      lock_dir: ($nd + "/locks"), journal_dir: ($nd + "/journal")})}]}' <<<"$gc_conf" >"$d/rt-gc.conflist"
  # An empty libcni cache: the runtime lost track of g2 and g3 (they keep their interfaces).
  local out
  out=$(RT_NETCONFPATH=$d rt_cni_gc node-1 rt-gc --cache-dir "$d/cache" "$(rt_cid g1)/eth0" 2>&1) ||
    { echo "$out"; return 1; }
  expect_eq "holders after" "$(holders 10.207.4.0/24)" "g1 g4 " || return 1
  grep -q "GC released 2 allocation" <<<"$out" || { echo "allot did not log 'GC released 2 allocation(s)': $out"; return 1; }
}
check "GC reaching allot (runtime cache lost), valid=[g1]: frees exactly g2, g3 — not node-2's g4" t_gc_allot

t_gc_cleanup() {
  rt_cni node-1 del rt-gc g1 && rt_cni node-2 del rt-gc g4 && expect_eq "allocations" "$(alloc_count 10.207.4.0/24)" 0
}
check "GC: DEL of the valid ones empties the pool" t_gc_cleanup

# -------------------------------------------------------------------------- STATUS --

rt_net rt-status ref conflist '{"cniVersion":"1.1.0","name":"rt-status","plugins":[{"type":"bridge",
  "bridge":"br0","ipam":{"type":"allot","range":"10.207.5.0/30"}}]}'

t_status() {
  rt_container s0 || return 1
  rt_cni node-1 status rt-status s0 || { echo "STATUS failed on an empty range"; return 1; }
  attach node-1 rt-status s1 && attach node-1 rt-status s2 || return 1
  local err
  if err=$(rt_cni node-1 status rt-status s0 2>&1); then echo "STATUS passed on a full range"; return 1; fi
  echo "$err"
  grep -qi exhausted <<<"$err" || { echo "STATUS error does not say exhausted"; return 1; }
  if rt_cni node-1 add rt-status s0 >/dev/null 2>&1; then echo "ADD succeeded on a full range"; return 1; fi
  expect_eq "allocations" "$(alloc_count 10.207.5.0/30)" 2 || return 1
  rt_cni node-1 del rt-status s1 || return 1
  rt_cni node-1 status rt-status s0 || { echo "STATUS failed after a DEL"; return 1; }
  rt_cni node-1 del rt-status s2
}
check "STATUS (through the reference bridge): ok, then exhausted on a full /30, ok after a DEL" t_status

# ------------------------------------------------- two nodes, each with its allot-gc --

SIDECAR=$root/build/gc-sidecar/allot-gc
sidecar_ok() {
  [[ -x "$SIDECAR" ]] || return 1
  local h
  h=$("$SIDECAR" --help 2>&1) || true
  grep -q -- --node-name <<<"$h" && grep -q -- --kubeconfig <<<"$h" && grep -q -- --namespace <<<"$h"
}

if ! sidecar_ok; then
  skip "two nodes with allot-gc: sidecar not built"
else
  # A snapshot, as for the plugin: a rebuild during the run must not pull it from under us.
  cp "$SIDECAR" "$RT_WORK/allot-gc" && SIDECAR=$RT_WORK/allot-gc
  SIDE_HELP=$("$SIDECAR" --help 2>&1)
  PODNS=$RT_PREFIX-pods
  cleanup_podns() {
    kubectl delete -n "$PODNS" --all --grace-period=0 --force --wait=false pods,network-attachment-definitions \
      >/dev/null 2>&1
    kubectl delete namespace "$PODNS" --wait=false >/dev/null 2>&1
    kubectl get namespace "$PODNS" -o json 2>/dev/null | jq '.spec.finalizers = []' |
      kubectl replace --raw "/api/v1/namespaces/$PODNS/finalize" -f - >/dev/null 2>&1
    return 0
  }
  on_exit cleanup_podns
  side_conf='{"cniVersion":"1.1.0","name":"rt-side","plugins":[{"type":"bridge","bridge":"br0",
    "ipam":{"type":"allot","range":"10.207.6.0/24","deadline_ms":2000}}]}'
  rt_net rt-side ref conflist "$side_conf"
  SIDE_PIDS=()
  stop_sidecars() { local p; for p in "${SIDE_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; SIDE_PIDS=(); }
  on_exit stop_sidecars

  start_sidecar() {  # start_sidecar NODE -> sets PORT_<n>
    local node=$1 args=(--node-name "$1" --kubeconfig "$ALLOT_KUBECONFIG" --namespace "$RT_POOL_NS") port
    port=$(free_port)
    grep -q -- --listen <<<"$SIDE_HELP" && args+=(--listen "127.0.0.1:$port")
    grep -q -- --journal-dir <<<"$SIDE_HELP" && args+=(--journal-dir "$(rt_node_dir "$node")/journal")
    grep -q -- --journal-interval <<<"$SIDE_HELP" && args+=(--journal-interval=500ms)
    # Only the pod watch is under test here; the cluster-wide repair loop would also look at
    # the pools of other suites sharing this API server.
    if grep -q -- --role= <<<"$SIDE_HELP"; then args+=(--role=agent)
    elif grep -q -- --repair= <<<"$SIDE_HELP"; then args+=(--repair=false); fi  # a release before roles
    "$SIDECAR" "${args[@]}" >"$RT_WORK/allot-gc-$node.log" 2>&1 &
    SIDE_PIDS+=($!)
    echo "$port" >"$RT_WORK/port-$node"
  }

  t_side_setup() {
    kubectl create namespace "$PODNS" >/dev/null || return 1
    jq -n --arg ns "$PODNS" --arg cfg "$(jq -c . <<<"$side_conf")" '{apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition", metadata: {name: "rt-side", namespace: $ns}, spec: {config: $cfg}}' |
      kubectl apply -f - >/dev/null || return 1
    start_sidecar node-1 && start_sidecar node-2 || return 1
    local n p
    for n in node-1 node-2; do
      p=$(cat "$RT_WORK/port-$n")
      grep -q -- --listen <<<"$SIDE_HELP" || continue
      wait_for 20 curl -sf "http://127.0.0.1:$p/readyz" ||
        { echo "allot-gc of $n not ready:"; tail -n 20 "$RT_WORK/allot-gc-$n.log"; return 1; }
    done
  }
  check "two nodes: namespace, NetworkAttachmentDefinition, an allot-gc per node (ready)" t_side_setup

  # pod_attach POD NODE: the Pod as an API object on NODE, its netns attached by cnitool as net1
  # with the pod's identity, then its network-status annotation as Multus writes it.
  pod_attach() {
    local pod=$1 node=$2 uid ip mac
    jq -n --arg ns "$PODNS" --arg pod "$pod" --arg node "$node" '{apiVersion: "v1", kind: "Pod",
      metadata: {name: $pod, namespace: $ns, annotations: {"k8s.v1.cni.cncf.io/networks": "rt-side"}},
      spec: {nodeName: $node, containers: [{name: "app", image: "registry.invalid/app:1"}]}}' |
      kubectl create -f - >/dev/null || return 1
    uid=$(kubectl get pod -n "$PODNS" "$pod" -o jsonpath='{.metadata.uid}')
    rt_container "$pod" || return 1
    RT_CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$PODNS;K8S_POD_NAME=$pod;K8S_POD_INFRA_CONTAINER_ID=$(rt_cid "$pod");K8S_POD_UID=$uid" \
      rt_cni "$node" add rt-side "$pod" net1 >"$RT_WORK/add-$pod.json" || return 1
    ip=$(jq -r '.ips[0].address | split("/")[0]' "$RT_WORK/add-$pod.json")
    mac=$(ip -n "$(rt_ns "$pod")" -o link show net1 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
    local status
    status=$(jq -cn --arg ns "$PODNS" --arg ip "$ip" --arg mac "$mac" '[
      {name: "cbr0", interface: "eth0", ips: ["10.244.1.7"], mac: "0a:58:0a:f4:01:07", default: true, dns: {}},
      {name: ($ns + "/rt-side"), interface: "net1", ips: [$ip], mac: $mac, dns: {}}]')
    kubectl annotate pod -n "$PODNS" "$pod" "k8s.v1.cni.cncf.io/network-status=$status" >/dev/null
  }

  t_side_attach() {
    pod_attach p1 node-1 && pod_attach p2 node-1 && pod_attach p3 node-2 || return 1
    expect_eq "allocations" "$(alloc_count 10.207.6.0/24)" 3 &&
      expect_eq "podrefs" "$(rt_allocs 10.207.6.0/24 | awk '{print $3 "@" $5}' | sort | tr '\n' ' ')" \
        "$PODNS/p1@node-1 $PODNS/p2@node-1 $PODNS/p3@node-2 "
  }
  check "two nodes: three Pods (API objects) attached through libcni, network-status annotated" t_side_attach

  pod_holds() { rt_allocs 10.207.6.0/24 | awk -v r="$PODNS/$1" '$3 == r { f = 1 } END { exit !f }'; }
  pod_free() { ! pod_holds "$1"; }

  # sandbox_gone POD: the pod's sandbox stops without a CNI DEL (its network namespace goes, as
  # when a runtime tears it down and the DEL is lost).
  sandbox_gone() { ip netns del "$(rt_ns "$1")"; }

  t_side_delete() {
    # While its sandbox still runs, a force-deleted pod keeps its address: freeing it would
    # hand a live interface's address to the next pod.
    kubectl delete pod -n "$PODNS" p1 --grace-period=0 --force >/dev/null 2>&1 || return 1
    sleep 3
    pod_holds p1 || { echo "p1's address freed while its network namespace still holds it"; return 1; }
    [[ -n "$(rt_addrs p1 net1)" ]] || { echo "p1's net1 lost its address"; return 1; }
    # The runtime tears p1's sandbox down later and its DEL frees the address.
    RT_CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$PODNS;K8S_POD_NAME=p1" rt_cni node-1 del rt-side p1 net1 >/dev/null ||
      { echo "p1's late DEL failed"; return 1; }
    sandbox_gone p1 || return 1
    pod_free p1 || { echo "p1's late DEL did not free it"; return 1; }
    # A sandbox gone without a CNI DEL, then the pod object deleted: allot-gc frees it.
    sandbox_gone p3 || return 1
    kubectl delete pod -n "$PODNS" p3 --grace-period=0 --force >/dev/null 2>&1 || return 1
    wait_for 30 eval 'pod_free p3' ||
      { echo "pool: $(rt_allocs 10.207.6.0/24)"; tail -n 20 "$RT_WORK"/allot-gc-node-*.log; return 1; }
    pod_holds p2 || { echo "p2 lost its address"; return 1; }
  }
  check "two nodes: a force-deleted pod keeps its address while its sandbox runs; pods whose sandboxes are gone are freed via allot-gc (no CNI DEL)" t_side_delete

  t_side_empty() {
    sandbox_gone p2 || return 1
    kubectl delete pod -n "$PODNS" p2 --grace-period=0 --force >/dev/null 2>&1 || return 1
    # shellcheck disable=SC2016 # evaluated by wait_for, at each try
    wait_for 30 eval '[[ $(alloc_count 10.207.6.0/24) == 0 ]]' || { echo "pool: $(rt_allocs 10.207.6.0/24)"; return 1; }
  }
  check "two nodes: the pool ends empty" t_side_empty

  # releases NODE: allot_releases_total{reason="pod_deleted"} on NODE's allot-gc.
  releases() {
    curl -sf "http://127.0.0.1:$(cat "$RT_WORK/port-$1")/metrics" |
      awk '/^allot_releases_total\{reason="pod_deleted"\}/ { n += $2 } END { print n + 0 }'
  }
  t_side_metrics() {
    expect_eq "node-1 releases" "$(releases node-1)" 1 && expect_eq "node-2 releases" "$(releases node-2)" 1
  }
  if grep -q -- --listen <<<"$SIDE_HELP"; then
    check "two nodes: each allot-gc counts its own node's releases in /metrics (1 and 1: p1 went by its late DEL)" t_side_metrics
  fi

  # The API server unreachable from node-1 (its relay stopped): a CNI DEL cannot reach it, so
  # allot journals the release and succeeds (pod teardown is not blocked); node-1's allot-gc,
  # which still reaches the API server, replays the journal.
  journal_files() { find "$(rt_node_dir node-1)/journal" -type f -name '*.json' | wc -l; }
  t_side_journal() {
    pod_attach p4 node-1 || return 1
    pod_holds p4 || { echo "p4 holds nothing"; return 1; }
    kill "$RT_PROXY_PID" && wait "$RT_PROXY_PID" 2>/dev/null
    RT_PROXY_PID=
    local t0=$SECONDS out
    out=$(RT_CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$PODNS;K8S_POD_NAME=p4" rt_cni node-1 del rt-side p4 net1 2>&1) ||
      { echo "DEL failed while the API server was unreachable: $out"; rt_proxy_start; return 1; }
    echo "DEL returned in $((SECONDS - t0))s"
    rt_proxy_start || return 1
    grep -q "journaled" "$(rt_node_dir node-1)/allot.log" || { echo "allot.log does not mention the journal"; return 1; }
    # shellcheck disable=SC2016 # evaluated by wait_for, at each try
    wait_for 20 eval 'pod_free p4 && [[ $(journal_files) == 0 ]]' ||
      { echo "pool: $(rt_allocs 10.207.6.0/24); journal files: $(journal_files)"; tail -n 5 "$RT_WORK/allot-gc-node-1.log"; return 1; }
    kubectl delete pod -n "$PODNS" p4 --grace-period=0 --force >/dev/null 2>&1
    expect_eq "allocations" "$(alloc_count 10.207.6.0/24)" 0
  }
  if grep -q -- --journal-dir <<<"$SIDE_HELP"; then
    check "two nodes: DEL with the API server unreachable is journaled; allot-gc replays it" t_side_journal
  fi
fi

# ------------------------------------------------------------------------ cleanliness --

t_no_root_changes() {
  [[ "$(findmnt -n -o FSTYPE /var/lib 2>/dev/null)" != overlay ]] || { echo "/var/lib overlaid in the root"; return 1; }
  local f
  for f in /var/lib/cni/results/rt-{v4,dual,mv,gc,status,side}-*; do
    [[ -e "$f" ]] && { echo "libcni wrote to the machine's /var/lib/cni: $f"; return 1; }
  done
  return 0
}
check "the machine's /var/lib is untouched (libcni's cache stayed per node)" t_no_root_changes

# The README's first command, as a user runs it: its own API server, namespaces and logs.
t_demo() {
  local out
  out=$(cd "$root" && scripts/demo 2>&1) || { tail -n 20 <<<"$out"; return 1; }
  grep -q "demo ok in" <<<"$out" || { echo "no 'demo ok' line"; tail -n 20 <<<"$out"; return 1; }
}
check "scripts/demo runs to its end" t_demo

# Tear down now (a private cluster too), so that the summary is the last line.
declare -F _allot_run_cleanups >/dev/null && _allot_run_cleanups >/dev/null 2>&1

suite_summary
((failed == 0))
