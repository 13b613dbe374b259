#!/usr/bin/env bash
# Integration tests of the allot CNI plugin (build/plugin/allot) against a real kube-apiserver
# and etcd (e2e/cluster): every verb, single- and dual-stack, multiple ranges and rollback,
# requested IPs, idempotency, podref handover, CHECK in a real network namespace, concurrency
# stress from several simulated nodes, API-server outage, RBAC and token failures, and
# interoperation with pools written by Whereabouts.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up (eval "$(e2e/cluster env)");
# otherwise starts a private one and removes it at exit. Needs root (ip netns, veth).
# Prints `ok - NAME` / `not ok - NAME` per check, then `plugin-integration: N passed, N failed`.
#
#   ALLOT_ITEST_ONLY=REGEX        run only the checks whose function name matches
#   ALLOT_ITEST_STRICT_DEL=1      fail the stress check when any of its DELs was journaled
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=plugin-integration
# shellcheck source=test/integration/lib_plugin.sh disable=SC1091
source "$root/test/integration/lib_plugin.sh"

cluster_start || suite_die "cluster starts"
plugin_init || suite_die "plugin binary present"
CHECK_DIR=$WORK
CHECK_ONLY=${ALLOT_ITEST_ONLY:-}
CHECK_TIME=ms
CHECK_TAIL=30
suite_start=$SECONDS

elapsed_ms() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
# expect_json WHAT JSON JQ-BOOLEAN
expect_json() {
  jq -e "$3" >/dev/null 2>&1 <<<"$2" && return 0
  echo "$1: $2 does not satisfy $3"
  return 1
}
no_dups() {  # no_dups WHAT < lines
  local d
  d=$(sort | uniq -d)
  [[ -z "$d" ]] || { echo "$1: duplicates: $d"; return 1; }
}

# A unique network name per case: pools and reservations of different cases never meet.
net() { echo "$RUN-$1"; }

# ------------------------------------------------------------------- verbs --

t_version() {
  cni VERSION node-a "" '{"cniVersion":"1.1.0"}'
  cni_ok VERSION || return 1
  expect_json VERSION "$CNI_OUT" \
    '.cniVersion == "1.1.0" and (.supportedVersions | contains(["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]))'
}

t_single_stack_verbs() {
  local POOL_NS=kube-system  # the kubeconfig context's namespace: the default
  local n r=10.101.0.0/24 pool conf prev ns=${RUN}-single
  n=$(net single); pool=$(pool_name "$r" "$n")
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\",\"gateway\":\"10.101.0.1\"}")

  cni STATUS node-a "" "$conf"
  cni_ok "STATUS before the pool exists" || return 1

  cni ADD node-a c1 "$conf" p1
  cni_ok "ADD c1" || return 1
  expect_json "ADD result" "$CNI_OUT" \
    '.cniVersion == "1.1.0" and .ips == [{"address":"10.101.0.2/24","gateway":"10.101.0.1"}]' || return 1
  prev=$CNI_OUT
  expect_eq "allocation" "$(pool_allocs "$pool" | jq -cS '.["2"]')" \
    "$(as_stored "{\"id\":\"c1\",\"ifname\":\"net1\",\"network\":\"$n\",\"node\":\"node-a\",\"podref\":\"$POD_NS/p1\",\"poduid\":\"uid-p1\"}")" || return 1
  expect_eq "reservation" "$(res_json "$(res_name 10.101.0.2 "$n")" | jq -cS .spec)" \
    "{\"containerid\":\"c1\",\"ifname\":\"net1\",\"podref\":\"$POD_NS/p1\"}" || return 1

  cni STATUS node-a "" "$conf"
  cni_ok "STATUS" || return 1

  # CHECK in a real namespace whose net1 carries the address.
  netns_with_iface "$ns" net1 || return 1
  ip -n "$ns" addr add 10.101.0.2/24 dev net1 || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\",\"gateway\":\"10.101.0.1\"}" "{\"prevResult\":$prev}")" p1
  cni_ok "CHECK c1" || return 1

  cni ADD node-a c2 "$conf" p2
  cni_ok "ADD c2" || return 1
  expect_eq "second address" "$(result_ip)" 10.101.0.3 || return 1

  # GC: only this node's allocations of this network, absent from the valid attachments.
  local gc_top='{"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]}'
  cni GC node-b "" "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"$r\",\"gateway\":\"10.101.0.1\"}" "$gc_top")"
  cni_ok "GC from another node" || return 1
  expect_eq "allocations after GC from node-b" "$(pool_count "$pool")" 2 || return 1
  cni GC node-a "" "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\",\"gateway\":\"10.101.0.1\"}" \
    "$(jq -c '. + {name:"othernet"}' <<<"$gc_top")")"
  cni_ok "GC of another network" || return 1
  expect_eq "allocations after GC of another network" "$(pool_count "$pool")" 2 || return 1
  cni GC node-a "" "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\",\"gateway\":\"10.101.0.1\"}" "$gc_top")"
  cni_ok "GC" || return 1
  if entry_fields_pruned; then
    # No entry names its node or network: GC cannot tell this node's from another's, and keeps them.
    expect_eq "allocations after GC" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"c1","3":"c2"}' || return 1
    cni DEL node-a c2 "$conf" p2
    cni_ok "DEL c2" || return 1
  else
    expect_eq "allocations after GC" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"c1"}' || return 1
  fi
  res_exists "$(res_name 10.101.0.3 "$n")" && { echo "GC left c2's reservation"; return 1; }
  res_exists "$(res_name 10.101.0.2 "$n")" || { echo "GC removed c1's reservation"; return 1; }

  cni DEL node-a c1 "$conf" p1
  cni_ok "DEL c1" || return 1
  expect_eq "allocations after DEL" "$(pool_allocs "$pool")" '{}' || return 1
  res_exists "$(res_name 10.101.0.2 "$n")" && { echo "DEL left the reservation"; return 1; }
  return 0
}

t_dual_stack_verbs() {
  local n ipam conf prev p4 p6 ns=${RUN}-dual
  n=$(net dual)
  ipam="{\"network_name\":\"$n\",\"ipRanges\":[{\"range\":\"10.102.0.0/24\"},{\"range\":\"fd00:102::/64\"}]}"
  conf=$(netconf node-a "$ipam")
  p4=$(pool_name 10.102.0.0/24 "$n"); p6=$(pool_name fd00:102::/64 "$n")
  expect_eq "IPv6 pool name" "$p6" "$n-fd00-102---64" || return 1

  cni ADD node-a c1 "$conf" p1
  cni_ok "ADD" || return 1
  expect_json "ADD result" "$CNI_OUT" '[.ips[].address] == ["10.102.0.1/24","fd00:102::1/64"]' || return 1
  prev=$CNI_OUT
  expect_eq "v4 pool" "$(pool_allocs "$p4" | jq -c 'map_values(.id)')" '{"1":"c1"}' || return 1
  expect_eq "v6 pool" "$(pool_allocs "$p6" | jq -c 'map_values(.id)')" '{"1":"c1"}' || return 1
  expect_eq "v6 pool range" "$(pool_json "$p6" | jq -r .spec.range)" "fd00:102::/64" || return 1
  res_exists "$(res_name 10.102.0.1 "$n")" || { echo "no v4 reservation"; return 1; }
  res_exists "$(res_name fd00:102::1 "$n")" || { echo "no v6 reservation $(res_name fd00:102::1 "$n")"; return 1; }

  cni STATUS node-a "" "$conf"
  cni_ok STATUS || return 1

  netns_with_iface "$ns" net1 || return 1
  ip -n "$ns" addr add 10.102.0.1/24 dev net1 || return 1
  ip -n "$ns" addr add fd00:102::1/64 dev net1 nodad || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$(netconf node-a "$ipam" "{\"prevResult\":$prev}")" p1
  cni_ok "CHECK, both addresses present" || return 1
  ip -n "$ns" addr del fd00:102::1/64 dev net1 || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$(netconf node-a "$ipam" "{\"prevResult\":$prev}")" p1
  cni_code 102 "CHECK without the IPv6 address" || return 1

  cni ADD node-a c2 "$conf" p2
  cni_ok "ADD c2" || return 1
  expect_json "ADD c2 result" "$CNI_OUT" '[.ips[].address] == ["10.102.0.2/24","fd00:102::2/64"]' || return 1
  cni GC node-a "" "$(netconf node-a "$ipam" '{"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]}')"
  cni_ok GC || return 1
  if entry_fields_pruned; then
    # No entry names its node or network: GC keeps them (as in the single-stack check).
    expect_eq "v4 pool after GC" "$(pool_allocs "$p4" | jq -c 'map_values(.id)')" '{"1":"c1","2":"c2"}' || return 1
    cni DEL node-a c2 "$conf" p2
    cni_ok "DEL c2" || return 1
  fi
  expect_eq "v4 pool after GC" "$(pool_allocs "$p4" | jq -c 'map_values(.id)')" '{"1":"c1"}' || return 1
  expect_eq "v6 pool after GC" "$(pool_allocs "$p6" | jq -c 'map_values(.id)')" '{"1":"c1"}' || return 1
  res_exists "$(res_name fd00:102::2 "$n")" && { echo "GC left c2's v6 reservation"; return 1; }

  cni DEL node-a c1 "$conf" p1
  cni_ok DEL || return 1
  expect_eq "v4 pool after DEL" "$(pool_allocs "$p4")" '{}' || return 1
  expect_eq "v6 pool after DEL" "$(pool_allocs "$p6")" '{}' || return 1
  expect_eq "reservations after DEL" "$(res_names_with "$n-" | wc -l)" 0
}

t_result_formats() {
  # One allocation, re-ADDed in each result format (idempotent), dual-stack.
  local n conf v
  n=$(net formats)
  for v in 0.2.0 0.3.1 0.4.0 1.0.0 1.1.0; do
    conf=$(netconf node-a "{\"network_name\":\"$n\",\"ipRanges\":[{\"range\":\"10.103.9.0/24\"},{\"range\":\"fd00:103:9::/64\"}]}" \
      "{\"cniVersion\":\"$v\"}")
    cni ADD node-a c1 "$conf" p1
    cni_ok "ADD $v" || return 1
    case $v in
      0.2.0) expect_json "$v" "$CNI_OUT" '.cniVersion == "0.2.0" and .ip4.ip == "10.103.9.1/24" and .ip6.ip == "fd00:103:9::1/64"' ;;
      0.*) expect_json "$v" "$CNI_OUT" "
           .cniVersion == \"$v\" and .ips == [{\"version\":\"4\",\"address\":\"10.103.9.1/24\"},{\"version\":\"6\",\"address\":\"fd00:103:9::1/64\"}]" ;;
      *) expect_json "$v" "$CNI_OUT" "
           .cniVersion == \"$v\" and .ips == [{\"address\":\"10.103.9.1/24\"},{\"address\":\"fd00:103:9::1/64\"}]" ;;
    esac || return 1
  done
}

t_multiple_ranges() {
  local n conf
  n=$(net multi)
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"ipRanges\":[
      {\"range\":\"10.103.0.0/24\",\"range_start\":\"10.103.0.10\",\"range_end\":\"10.103.0.20\",\"exclude\":[\"10.103.0.10/31\"]},
      {\"range\":\"10.103.1.0/24\"},
      {\"range\":\"fd00:103::/120\",\"exclude\":[\"fd00:103::1\"]}]}")
  cni ADD node-a c1 "$conf" p1
  cni_ok ADD || return 1
  expect_json "ADD result" "$CNI_OUT" \
    '[.ips[].address] == ["10.103.0.12/24","10.103.1.1/24","fd00:103::2/120"]' || return 1
  local p
  for p in "$(pool_name 10.103.0.0/24 "$n")" "$(pool_name 10.103.1.0/24 "$n")" "$(pool_name fd00:103::/120 "$n")"; do
    expect_eq "$p holder" "$(pool_allocs "$p" | jq -r '[.[].id] | join(",")')" c1 || return 1
  done
  expect_eq "reservations" "$(res_names_with "$n-" | sort | tr '\n' ' ')" \
    "$n-10.103.0.12 $n-10.103.1.1 $n-fd00-103--2 " || return 1
  cni DEL node-a c1 "$conf" p1
  cni_ok DEL || return 1
  for p in "$(pool_name 10.103.0.0/24 "$n")" "$(pool_name 10.103.1.0/24 "$n")" "$(pool_name fd00:103::/120 "$n")"; do
    expect_eq "$p after DEL" "$(pool_allocs "$p")" '{}' || return 1
  done
  expect_eq "reservations after DEL" "$(res_names_with "$n-" | wc -l)" 0
}

t_rollback() {
  # The second range holds exactly one address: the second pod's ADD must fail with
  # "exhausted" and give back what it took in the first range.
  local n conf p1
  n=$(net rollback)
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"ipRanges\":[{\"range\":\"10.104.0.0/24\"},
      {\"range\":\"10.104.1.0/24\",\"range_start\":\"10.104.1.7\",\"range_end\":\"10.104.1.7\"}]}")
  p1=$(pool_name 10.104.0.0/24 "$n")
  cni ADD node-a ca "$conf" pa
  cni_ok "ADD ca" || return 1
  expect_json "ADD ca" "$CNI_OUT" '[.ips[].address] == ["10.104.0.1/24","10.104.1.7/24"]' || return 1
  cni ADD node-a cb "$conf" pb
  cni_code 100 "ADD cb, second range exhausted" || return 1
  cni_msg '10\.104\.1\.0/24' || return 1
  expect_eq "first pool after rollback" "$(pool_allocs "$p1" | jq -c 'map_values(.id)')" '{"1":"ca"}' || return 1
  res_exists "$(res_name 10.104.0.2 "$n")" && { echo "rolled-back reservation 10.104.0.2 remains"; return 1; }
  expect_eq "reservations" "$(res_names_with "$n-" | sort | tr '\n' ' ')" "$n-10.104.0.1 $n-10.104.1.7 " || return 1
  cni STATUS node-a "" "$conf"
  cni_code 50 "STATUS with an exhausted pool" || return 1
  # Once ca is gone, cb gets both ranges.
  cni DEL node-a ca "$conf" pa
  cni_ok "DEL ca" || return 1
  cni ADD node-a cb "$conf" pb
  cni_ok "ADD cb after DEL ca" || return 1
  expect_json "ADD cb" "$CNI_OUT" '[.ips[].address] == ["10.104.0.1/24","10.104.1.7/24"]'
}

# ------------------------------------------------------- addresses & owners --

t_requested_ips() {
  local n conf pool
  n=$(net req)
  pool=$(pool_name 10.105.0.0/24 "$n")
  local ipam="{\"network_name\":\"$n\",\"range\":\"10.105.0.0/24\"}"
  cni ADD node-a c1 "$(netconf node-a "$ipam" '{"runtimeConfig":{"ips":["10.105.0.50/24"]}}')" p1
  cni_ok "runtimeConfig.ips" || return 1
  expect_eq "runtimeConfig.ips" "$(result_ip)" 10.105.0.50 || return 1
  cni ADD node-a c2 "$(netconf node-a "$ipam" '{"args":{"cni":{"ips":["10.105.0.51"]}}}')" p2
  cni_ok "args.cni.ips" || return 1
  expect_eq "args.cni.ips" "$(result_ip)" 10.105.0.51 || return 1
  EXTRA_ARGS=";IP=10.105.0.52" cni ADD node-a c3 "$(netconf node-a "$ipam")" p3
  cni_ok "CNI_ARGS IP=" || return 1
  expect_eq "CNI_ARGS IP=" "$(result_ip)" 10.105.0.52 || return 1
  expect_eq "pool" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"50":"c1","51":"c2","52":"c3"}' || return 1
  # A requested address held by another pod is refused, and stays with its holder.
  cni ADD node-b c4 "$(netconf node-b "$ipam" '{"runtimeConfig":{"ips":["10.105.0.50"]}}')" p4
  cni_code 7 "requesting a taken address" || return 1
  cni_msg '10\.105\.0\.50' || return 1
  expect_eq "holder of .50" "$(pool_holder "$pool" 50)" c1 || return 1
  # An address outside every range is refused.
  cni ADD node-a c5 "$(netconf node-a "$ipam" '{"runtimeConfig":{"ips":["10.99.0.1"]}}')" p5
  cni_code 7 "requesting an address in no range" || return 1
  # Without a request, the lowest free address.
  cni ADD node-a c6 "$(netconf node-a "$ipam")" p6
  cni_ok "unrequested" || return 1
  expect_eq "unrequested" "$(result_ip)" 10.105.0.1 || return 1
  # Dual-stack request: one address per range.
  local n2
  n2=$(net req2)
  cni ADD node-a c7 "$(netconf node-a "{\"network_name\":\"$n2\",\"ipRanges\":[{\"range\":\"10.105.1.0/24\"},{\"range\":\"fd00:105::/64\"}]}" \
    '{"runtimeConfig":{"ips":["10.105.1.9/24","fd00:105::9/64"]}}')" p7
  cni_ok "dual-stack runtimeConfig.ips" || return 1
  expect_json "dual-stack request" "$CNI_OUT" '[.ips[].address] == ["10.105.1.9/24","fd00:105::9/64"]'
}

t_idempotent_add() {
  local n conf pool ip1 before after
  n=$(net idem)
  pool=$(pool_name 10.106.0.0/24 "$n")
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.106.0.0/24\"}")
  cni ADD node-a c1 "$conf" p1; cni_ok "ADD" || return 1
  ip1=$(result_ip)
  cni ADD node-a c2 "$conf" p2; cni_ok "ADD c2" || return 1
  before=$(pool_json "$pool" | jq -cS '{rv: .metadata.resourceVersion, a: .spec.allocations}')
  cni ADD node-a c1 "$conf" p1; cni_ok "re-ADD" || return 1
  expect_eq "re-ADD address" "$(result_ip)" "$ip1" || return 1
  # From another node too (no local cache there).
  cni ADD node-b c1 "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"10.106.0.0/24\"}")" p1
  cni_ok "re-ADD from another node" || return 1
  expect_eq "re-ADD address from node-b" "$(result_ip)" "$ip1" || return 1
  after=$(pool_json "$pool" | jq -cS '{rv: .metadata.resourceVersion, a: .spec.allocations}')
  expect_eq "pool (resourceVersion and allocations) after re-ADD" "$after" "$before"
}

t_podref_handover() {
  local n conf pool ip1 ip2
  n=$(net handover)
  pool=$(pool_name 10.107.0.0/24 "$n")
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.107.0.0/24\"}")
  POD_UID=uid-old cni ADD node-a old "$conf" web-0; cni_ok "ADD old sandbox" || return 1
  ip1=$(result_ip)
  cni ADD node-a other "$conf" web-1; cni_ok "ADD other pod" || return 1
  # The pod is re-created under the same name (another UID): its old sandbox may still run, so
  # it gets another address and the old entry stays the old sandbox's.
  POD_UID=uid-new cni ADD node-a renamed "$conf" web-0; cni_ok "ADD re-created pod" || return 1
  ip2=$(result_ip)
  [[ "$ip2" != "$ip1" ]] || { echo "the re-created pod took $ip1 from the old sandbox"; return 1; }
  expect_eq "old entry" "$(pool_holder "$pool" "${ip1##*.}")" old || return 1
  POD_UID=uid-new cni DEL node-a renamed "$conf" web-0; cni_ok "DEL re-created" || return 1
  # A new sandbox of the same pod (same UID): the address is handed over. Where the schema
  # dropped the old entry's pod UID, it is handed over only while this node's pool cache still
  # holds the UID it wrote; handed over or not, the old sandbox's late DEL frees nothing of the
  # new one's.
  POD_UID=uid-old cni ADD node-a new "$conf" web-0; cni_ok "ADD new sandbox" || return 1
  if entry_fields_pruned; then
    local ip3
    ip3=$(result_ip)
    POD_UID=uid-old cni DEL node-a old "$conf" web-0; cni_ok "DEL old" || return 1
    expect_eq "holder of $ip3 after the old DEL" "$(pool_holder "$pool" "${ip3##*.}")" new || return 1
    POD_UID=uid-old cni DEL node-a new "$conf" web-0; cni_ok "DEL new" || return 1
    expect_eq "allocations after both DELs" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"other"}'
    return
  fi
  expect_eq "handed-over address" "$(result_ip)" "$ip1" || return 1
  expect_eq "allocation" "$(pool_allocs "$pool" | jq -c --arg o "${ip1##*.}" '.[$o] | {id, podref, poduid}')" \
    "{\"id\":\"new\",\"podref\":\"$POD_NS/web-0\",\"poduid\":\"uid-old\"}" || return 1
  # The old sandbox's DEL (it comes late) frees nothing.
  POD_UID=uid-old cni DEL node-a old "$conf" web-0; cni_ok "DEL old" || return 1
  expect_eq "holder after old DEL" "$(pool_holder "$pool" "${ip1##*.}")" new || return 1
  expect_eq "allocations after old DEL" "$(pool_count "$pool")" 2 || return 1
  res_exists "$(res_name "$ip1" "$n")" || { echo "old DEL removed the reservation of $ip1"; return 1; }
  POD_UID=uid-old cni DEL node-a new "$conf" web-0; cni_ok "DEL new" || return 1
  expect_eq "allocations after new DEL" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"other"}' || return 1
  res_exists "$(res_name "$ip1" "$n")" && { echo "reservation of $ip1 left after DEL of its holder"; return 1; }
  return 0
}

t_del_twice_and_without_prevresult() {
  local n conf pool
  n=$(net del)
  pool=$(pool_name 10.108.0.0/24 "$n")
  local ipam="{\"network_name\":\"$n\",\"range\":\"10.108.0.0/24\"}"
  conf=$(netconf node-a "$ipam")
  # DEL for a network never used: no pool exists. Success, and no pool is created.
  cni DEL node-a c0 "$conf" p0; cni_ok "DEL before any pool" || return 1
  [[ -z "$(pool_json "$pool")" ]] || { echo "DEL created the pool"; return 1; }
  cni ADD node-a c1 "$conf" p1; cni_ok "ADD c1" || return 1
  local prev=$CNI_OUT
  cni ADD node-a c2 "$conf" p2; cni_ok "ADD c2" || return 1
  # DEL with prevResult, twice.
  cni DEL node-a c1 "$(netconf node-a "$ipam" "{\"prevResult\":$prev}")" p1; cni_ok "DEL c1 (prevResult)" || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam" "{\"prevResult\":$prev}")" p1; cni_ok "DEL c1 again" || return 1
  expect_eq "after DEL c1" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"c2"}' || return 1
  # DEL without prevResult, from another node (no cache there), then again on node-a.
  cni DEL node-b c2 "$(netconf node-b "$ipam")" p2; cni_ok "DEL c2 (no prevResult)" || return 1
  cni DEL node-a c2 "$conf" p2; cni_ok "DEL c2 again (stale node cache)" || return 1
  expect_eq "after DEL c2" "$(pool_allocs "$pool")" '{}' || return 1
  expect_eq "reservations" "$(res_names_with "$n-" | wc -l)" 0 || return 1
  # A container that never had an address.
  cni DEL node-a never "$conf" nobody; cni_ok "DEL of an unknown container" || return 1
  # The freed addresses are handed out again.
  cni ADD node-a c3 "$conf" p3; cni_ok "ADD c3" || return 1
  expect_eq "address reused" "$(result_ip)" 10.108.0.1 || return 1
  # Two interfaces of one container on one network: DEL of one leaves the other.
  IFNAME=net2 cni ADD node-a c3 "$conf" p3; cni_ok "ADD c3 net2" || return 1
  expect_eq "second interface's address" "$(result_ip)" 10.108.0.2 || return 1
  cni DEL node-a c3 "$conf" p3; cni_ok "DEL c3 net1" || return 1
  expect_eq "after DEL of net1" "$(pool_allocs "$pool" | jq -c 'map_values("\(.id)/\(.ifname)")')" '{"2":"c3/net2"}' || return 1
  res_exists "$(res_name 10.108.0.2 "$n")" || { echo "DEL of net1 removed net2's reservation"; return 1; }
  IFNAME=net2 cni DEL node-a c3 "$conf" p3; cni_ok "DEL c3 net2" || return 1
  expect_eq "after DEL of net2" "$(pool_allocs "$pool")" '{}'
}

t_log_file() {
  # log_file at debug level: every line names the container and pod; no secret appears.
  local n conf log="$WORK/plugin.log" token
  n=$(net log)
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.108.9.0/24\",\"log_file\":\"$log\",\"log_level\":\"debug\"}")
  cni ADD node-a logc1 "$conf" logp1; cni_ok ADD || return 1
  local err=$CNI_ERR
  cni DEL node-a logc1 "$conf" logp1; cni_ok DEL || return 1
  err+=$CNI_ERR
  [[ -s "$log" ]] || { echo "log_file $log is empty"; return 1; }
  local bad
  bad=$(grep -v "container=logc1 pod=$POD_NS/logp1" "$log")
  [[ -z "$bad" ]] || { echo "log lines without container and pod:"; echo "$bad" | head -n 5; return 1; }
  grep -q "ADD allocated 10.108.9.1" "$log" || { echo "no ADD line:"; cat "$log"; return 1; }
  token=$(awk '$1 == "token:" {print $2}' "$ALLOT_KUBECONFIG")
  if grep -qF -- "${token:0:40}" "$log"; then echo "the bearer token is in log_file"; return 1; fi
  if grep -qF -- "${token:0:40}" <<<"$err"; then echo "the bearer token is on stderr"; return 1; fi
  return 0
}

t_name_collision() {
  # An IPPool already named like this network's pool but holding another range.
  local n pool
  n=$(net collide)
  pool=$(pool_name 10.118.0.0/24 "$n")
  jq -n --arg name "$pool" '{apiVersion: "whereabouts.cni.cncf.io/v1alpha1", kind: "IPPool",
      metadata: {name: $name}, spec: {range: "10.119.0.0/24", allocations: {}}}' |
    kubectl create -n "$POOL_NS" -f - >/dev/null || return 1
  cni ADD node-a c1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.118.0.0/24\"}")" p1
  cni_code 7 "ADD into a pool holding another range" || return 1
  cni_msg 'collision|10\.119\.0\.0/24' || return 1
  expect_eq "foreign pool untouched" "$(pool_json "$pool" | jq -cS .spec)" '{"allocations":{},"range":"10.119.0.0/24"}'
}

t_check_netns() {
  local n ipam conf prev ns=${RUN}-check
  n=$(net check)
  ipam="{\"network_name\":\"$n\",\"range\":\"10.109.0.0/24\"}"
  cni ADD node-a c1 "$(netconf node-a "$ipam")" p1; cni_ok ADD || return 1
  prev=$CNI_OUT
  conf=$(netconf node-a "$ipam" "{\"prevResult\":$prev}")
  netns_with_iface "$ns" eth1 || return 1
  ip -n "$ns" addr add 10.109.0.1/24 dev eth1 || return 1
  # The address is there, but not on CNI_IFNAME.
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$conf" p1
  cni_code 102 "CHECK when net1 does not exist in the netns" || return 1
  ip -n "$ns" link set eth1 down && ip -n "$ns" link set eth1 name net1 && ip -n "$ns" link set net1 up || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$conf" p1
  cni_ok "CHECK with the address on net1" || return 1
  ip -n "$ns" addr del 10.109.0.1/24 dev net1 || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$conf" p1
  cni_code 102 "CHECK after the address was removed" || return 1
  cni_msg '10\.109\.0\.1' || return 1
  ip -n "$ns" addr add 10.109.0.1/24 dev net1 || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$conf" p1
  cni_ok "CHECK with the address back" || return 1
  # A prevResult naming another address fails too.
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 \
    "$(netconf node-a "$ipam" '{"prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.109.0.77/24"}]}}')" p1
  cni_code 102 "CHECK against a wrong prevResult" || return 1
  # After DEL, CHECK fails: the pool no longer holds the address.
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1; cni_ok DEL || return 1
  NETNS=/var/run/netns/$ns cni CHECK node-a c1 "$conf" p1
  cni_code 102 "CHECK after DEL" || return 1
}

# ------------------------------------------------------------------ stress --

# launch VERB PREFIX NODE COUNT CONF: COUNT concurrent calls in the background, container
# IDs PREFIX-NODE-I, each leaving rc and stdout in $WORK/runs/PREFIX-NODE-I.{rc,out}.
launch() {
  local verb=$1 prefix=$2 node=$3 count=$4 conf=$5 i id
  mkdir -p "$WORK/runs"
  printf '%s' "$conf" >"$WORK/runs/$prefix-$node.conf"
  for (( i = 0; i < count; i++ )); do
    id=$prefix-$node-$i
    # shellcheck disable=SC2016  # expanded by the inner sh
    env CNI_COMMAND="$verb" CNI_CONTAINERID="$id" CNI_NETNS=/var/run/netns/allot-itest-none \
      CNI_IFNAME=net1 CNI_PATH=/opt/cni/bin NODENAME="$node" \
      CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$POD_NS;K8S_POD_NAME=$id;K8S_POD_UID=uid-$id" \
      sh -c '"$0" <"$1" >"$2.out" 2>"$2.err"; echo $? >"$2.rc"' \
      "$ALLOT_BIN" "$WORK/runs/$prefix-$node.conf" "$WORK/runs/$verb-$id" &
  done
}

# collect VERB PREFIX: "id ip" lines of successful ADDs; failures listed in $WORK/failures.
collect() {
  local verb=$1 prefix=$2 f id
  : >"$WORK/failures"
  for f in "$WORK/runs/$verb-$prefix"-*.rc; do
    id=${f##*/"$verb"-}; id=${id%.rc}
    if [[ "$(<"$f")" != 0 ]]; then
      echo "$id rc=$(<"$f") $(<"${f%.rc}.out") $(tail -n 2 "${f%.rc}.err")" >>"$WORK/failures"
    elif [[ "$verb" == ADD ]]; then
      echo "$id $(result_ip "$(<"${f%.rc}.out")")"
    fi
  done
}

# pool_id_ips POOL: "id ip" lines of an IPv4 pool's allocations.
pool_id_ips() {
  pool_json "$1" | jq -r '
    def ip2n: split(".") | map(tonumber) | .[0]*16777216 + .[1]*65536 + .[2]*256 + .[3];
    def n2ip: [(./16777216|floor)%256, (./65536|floor)%256, (./256|floor)%256, .%256] | map(tostring) | join(".");
    (.spec.range | split("/")[0] | ip2n) as $net
    | (.spec.allocations // {}) | to_entries[] | "\(.value.id) \(.key | tonumber + $net | n2ip)"'
}

t_stress_four_nodes() {
  local n pool r=10.110.0.0/24 node mark t0 results conflicts creates409 total
  n=$(net stress)
  pool=$(pool_name "$r" "$n")
  # deadline_ms as in production (the default, 60 s; DEL caps it at 10 s).
  stress_conf() { netconf "$1" "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":60000}"; }
  # Warm-up, one node after the other: each node's cache then holds the pool as that node last
  # wrote it, so nodes 1-3 start the burst with a stale copy and their first write must meet
  # a 409 (one node's batches rarely overlap another's by chance on this small machine).
  for node in node-1 node-2 node-3 node-4; do
    cni ADD "$node" "warm-$node" "$(stress_conf "$node")" "warm-$node"; cni_ok "warm-up ADD" || return 1
    cni DEL "$node" "warm-$node" "$(stress_conf "$node")" "warm-$node"; cni_ok "warm-up DEL" || return 1
  done
  audit_settle
  mark=$(audit_mark)
  t0=$EPOCHREALTIME
  for node in node-1 node-2 node-3 node-4; do
    launch ADD s "$node" 50 "$(stress_conf "$node")"
  done
  wait
  note "200 concurrent ADDs from 4 nodes: $(elapsed_ms "$t0") ms"
  results=$(collect ADD s | sort)
  if [[ -s "$WORK/failures" ]]; then
    echo "$(wc -l <"$WORK/failures") ADDs failed:"; head -n 5 "$WORK/failures"; return 1
  fi
  expect_eq "successful ADDs" "$(wc -l <<<"$results")" 200 || return 1
  awk '{print $2}' <<<"$results" | no_dups "addresses" || return 1
  expect_eq "distinct addresses" "$(awk '{print $2}' <<<"$results" | sort -u | wc -l)" 200 || return 1
  # The pool holds exactly the results: same addresses, each for the container that got it.
  local inpool
  inpool=$(pool_id_ips "$pool" | sort)
  if [[ "$inpool" != "$results" ]]; then
    echo "pool allocations differ from the ADD results:"
    diff <(echo "$results") <(echo "$inpool") | head -n 10
    return 1
  fi
  # One reservation per address.
  expect_eq "reservations" "$(res_names_with "$n-" | sort)" \
    "$(awk -v p="$n-" '{print p $2}' <<<"$results" | sort)" || return 1
  # Every allocation records its node.
  entry_fields_pruned ||
    expect_eq "allocations per node" "$(pool_allocs "$pool" | jq -r '[.[].node] | group_by(.) | map("\(.[0])=\(length)") | join(" ")')" \
      "node-1=50 node-2=50 node-3=50 node-4=50" || return 1

  audit_settle
  local who=".user.username == \"$ALLOT_USER\""
  conflicts=$(audit_since "$mark" "$who and .responseStatus.code == 409")
  creates409=$(audit_since "$mark" "$who and .responseStatus.code == 409 and .verb == \"create\"")
  total=$(audit_since "$mark" "$who")
  note "409 Conflict responses during the 4-node run: $conflicts ($((conflicts - creates409)) pool updates, $creates409 reservation creates) of $total allot requests"
  # Conflicts happened and every ADD survived them.
  (( conflicts > 0 )) || { echo "no 409 seen: the run did not exercise conflicts"; return 1; }

  t0=$EPOCHREALTIME
  for node in node-1 node-2 node-3 node-4; do
    launch DEL s "$node" 50 "$(stress_conf "$node")"
  done
  wait
  note "200 concurrent DELs from 4 nodes: $(elapsed_ms "$t0") ms"
  collect DEL s >/dev/null
  if [[ -s "$WORK/failures" ]]; then
    echo "$(wc -l <"$WORK/failures") DELs failed:"; head -n 5 "$WORK/failures"; return 1
  fi
  # A DEL that cannot finish within its deadline (10 s at most) journals the release for
  # allot-gc and succeeds. No release may be lost: whatever the pool still holds must be in a
  # journal. (A journaled release may also have reached the pool: a write whose response came
  # too late.)
  local journaled left lost
  # (Container IDs alone where the schema drops the entry's node: they are unique here.)
  local by='"\(.node) \(.id)"'
  entry_fields_pruned && by='"\(.id)"'
  journaled=$(cat "$WORK"/nodes/node-*/journal/*.json 2>/dev/null | jq -r "{node, id: .containerID} | $by" | sort)
  left=$(pool_allocs "$pool" | jq -r ".[] | $by" | sort)
  lost=$(comm -23 <(echo "$left") <(echo "$journaled") | grep .)
  [[ -z "$lost" ]] || { echo "allocations neither released nor journaled: $lost"; return 1; }
  if [[ -n "$journaled" ]]; then
    note "$(wc -l <<<"$journaled") of 200 DELs were journaled (deadline passed), $(grep -c . <<<"$left") allocations left for allot-gc; the API server was up"
    if [[ -n "${ALLOT_ITEST_STRICT_DEL:-}" ]]; then echo "journaled DELs (ALLOT_ITEST_STRICT_DEL)"; return 1; fi
    # Replay them as allot-gc would: DEL again, one at a time per node.
    for node in node-1 node-2 node-3 node-4; do
      (
        conf=$(stress_conf "$node")
        awk -v n="$node" '$1 == n {print $2}' <<<"$journaled" | while read -r id; do
          cni DEL "$node" "$id" "$conf" "$id"
          [[ "$CNI_RC" == 0 ]] || echo "replayed DEL $id failed: $CNI_OUT"
        done
      ) &
    done
    wait
  fi
  expect_eq "allocations after DEL of all" "$(pool_allocs "$pool")" '{}' || return 1
  local stray
  stray=$(kubectl get overlappingrangeipreservations -n "$POOL_NS" -o json |
    jq -r --arg p "$n-" '.items[] | select(.metadata.name | startswith($p)) | "\(.metadata.name) \(.spec.containerid)"')
  if [[ -n "$stray" ]]; then
    echo "$(grep -c . <<<"$stray") reservations left after DEL of all (the pool holds nothing):"
    local name id
    while read -r name id; do
      echo "  $name of $id: DEL $(grep -q " $id\$" <<<"$journaled" && echo journaled || echo "returned released"):" \
        "$(tail -n 1 "$WORK/runs/DEL-$id.err" | cut -c1-200)"
    done <<<"$stray"
    return 1
  fi
}

t_hundred_one_node() {
  local n pool r=10.111.0.0/24 t0 ms results
  n=$(net hundred)
  pool=$(pool_name "$r" "$n")
  t0=$EPOCHREALTIME
  launch ADD h node-h 100 "$(netconf node-h "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":30000}")"
  wait
  ms=$(elapsed_ms "$t0")
  results=$(collect ADD h | sort)
  note "100 concurrent ADDs on one node, plugin alone (no allot-gc relay): wall time $ms ms (the 1500 ms bar is for allot as deployed: see the relay check)"
  if [[ -s "$WORK/failures" ]]; then
    echo "$(wc -l <"$WORK/failures") ADDs failed:"; head -n 5 "$WORK/failures"; return 1
  fi
  expect_eq "successful ADDs" "$(wc -l <<<"$results")" 100 || return 1
  awk '{print $2}' <<<"$results" | no_dups "addresses" || return 1
  expect_eq "pool equals results" "$(pool_id_ips "$pool" | sort | md5sum)" "$(md5sum <<<"$results")"
}

# Through allot-gc's node relay (relay_socket), as the DaemonSet runs it: the pool requests are
# made by allot-gc's connection, 100 concurrent ADDs are timed again, and with allot-gc gone
# the plugin goes direct on its own.
t_relay() {
  local n r=10.118.0.0/24 pool sock="$WORK/relay/api.sock" gcpid conf mark t0 ms results ua
  n=$(net relay)
  pool=$(pool_name "$r" "$n")
  mkdir -p "$WORK/relay"
  # Started from a subshell, so that the `wait`s below (for the plugin runs) do not wait for it.
  ( "$ALLOT_PLUGIN_ROOT/build/gc-sidecar/allot-gc" --node-name=node-relay --kubeconfig="$ALLOT_KUBECONFIG" \
      --namespace="$POOL_NS" --listen=127.0.0.1:0 --role=agent --journal-dir= \
      --relay-socket="$sock" >"$WORK/relay/gc.log" 2>&1 &
    echo $! >"$WORK/relay/gc.pid" )
  gcpid=$(<"$WORK/relay/gc.pid")
  on_exit "kill $gcpid 2>/dev/null"
  local i
  for (( i = 0; i < 200; i++ )); do [[ -S "$sock" ]] && break; sleep 0.1; done
  [[ -S "$sock" ]] || { echo "allot-gc made no relay socket:"; tail -n 5 "$WORK/relay/gc.log"; kill "$gcpid"; return 1; }
  expect_eq "relay socket mode" "$(stat -c %a "$sock")" 600 || { kill "$gcpid"; return 1; }
  conf=$(netconf node-relay "{\"network_name\":\"$n\",\"range\":\"$r\",\"relay_socket\":\"$sock\",\"deadline_ms\":30000}")
  audit_settle
  mark=$(audit_mark)
  cni ADD node-relay one "$conf" one; cni_ok "ADD through the relay" || { kill "$gcpid"; return 1; }
  audit_settle
  ua=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" | jq -r --arg p "$pool" \
    'select(.stage == "ResponseComplete" and (.objectRef.name == $p or .objectRef.resource == "overlappingrangeipreservations")) | .userAgent' | sort | uniq -c | tr -s ' ')
  note "user agents of that ADD's requests: $ua"
  [[ "$ua" == *allot-gc/node-relay* && "$ua" != *" allot"$'\n'* && "$ua" != *" allot" ]] ||
    { echo "the ADD's requests did not all come from allot-gc: $ua"; kill "$gcpid"; return 1; }

  t0=$EPOCHREALTIME
  audit_settle
  mark=$(audit_mark)
  launch ADD rl node-relay 100 "$conf"
  wait
  ms=$(elapsed_ms "$t0")
  results=$(collect ADD rl | sort)
  note "100 concurrent ADDs on one node through the relay: wall time $ms ms (bar: 1500 ms)$( ((ms > 1500)) && echo ' -- OVER THE BAR')"
  if [[ -s "$WORK/failures" ]]; then
    echo "$(wc -l <"$WORK/failures") ADDs failed:"; head -n 5 "$WORK/failures"; kill "$gcpid"; return 1
  fi
  # A burst queued at a healthy relay does not fall back: no pool request of it went direct.
  audit_settle
  local direct
  direct=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" | jq -r --arg p "$pool" \
    'select(.stage == "ResponseComplete" and (.objectRef.name == $p or .objectRef.resource == "overlappingrangeipreservations")) | .userAgent' |
    grep -vc '^allot-gc/')
  note "pool and reservation requests of the burst that went direct: $direct"
  expect_eq "requests of the burst that bypassed the relay" "$direct" 0 || { kill "$gcpid"; return 1; }
  expect_eq "successful ADDs" "$(wc -l <<<"$results")" 100 || { kill "$gcpid"; return 1; }
  awk '{print $2}' <<<"$results" | no_dups "addresses" || { kill "$gcpid"; return 1; }

  # allot-gc stops: the next calls go direct and still work.
  kill -TERM "$gcpid"
  for (( i = 0; i < 100; i++ )); do kill -0 "$gcpid" 2>/dev/null || break; sleep 0.1; done
  [[ ! -e "$sock" ]] || { echo "relay socket left behind after SIGTERM"; return 1; }
  cni ADD node-relay two "$conf" two; cni_ok "ADD with allot-gc gone" || return 1
  cni DEL node-relay one "$conf" one; cni_ok "DEL with allot-gc gone" || return 1
  launch DEL rl node-relay 100 "$conf"
  wait
  collect DEL rl >/dev/null
  [[ ! -s "$WORK/failures" ]] || { echo "DELs failed:"; head -n 3 "$WORK/failures"; return 1; }
  expect_eq "pool after DEL of all but one" "$(pool_allocs "$pool" | jq -r '[.[].id] | join(",")')" two
}

# Two configs on one pool (same range): disjoint range_start/range_end windows and excludes on
# one of them, 80 concurrent ADDs each way (direct, then through allot-gc's relay): every
# address inside its own config's window, none excluded, no duplicates (issue 21, item 1).
t_shared_pool_windows() {
  local n r=10.121.0.0/24 pool ipam_a ipam_b sock="$WORK/relay-windows/api.sock" all="" mark ua
  n=$(net windows)
  pool=$(pool_name "$r" "$n")
  ipam_a="{\"network_name\":\"$n\",\"range\":\"$r\",\"range_start\":\"10.121.0.10\",\"range_end\":\"10.121.0.99\",\"exclude\":[\"10.121.0.8/30\",\"10.121.0.50/31\"],\"deadline_ms\":30000}"
  ipam_b="{\"network_name\":\"$n\",\"range\":\"$r\",\"range_start\":\"10.121.0.150\",\"range_end\":\"10.121.0.239\",\"deadline_ms\":30000}"
  # in_window PREFIX LO HI: every ADD of PREFIX succeeded with an address in [LO, HI], not .50/.51.
  in_window() {
    local lines ip o bad=0
    lines=$(collect ADD "$1")
    [[ ! -s "$WORK/failures" ]] || { echo "ADDs of $1 failed:"; head -n 3 "$WORK/failures"; return 1; }
    expect_eq "successful ADDs of $1" "$(wc -l <<<"$lines")" 40 || return 1
    while read -r _ ip; do
      o=${ip##*.}
      if [[ "$ip" != 10.121.0.* ]] || (( o < $2 || o > $3 || o == 50 || o == 51 )); then
        echo "$1 got $ip, outside its window $2-$3 or excluded"; bad=1
      fi
    done <<<"$lines"
    all+=$lines$'\n'
    return $bad
  }
  launch ADD wa node-w 40 "$(netconf node-w "$ipam_a")"
  launch ADD wb node-w 40 "$(netconf node-w "$ipam_b")"
  wait
  in_window wa 12 99 || return 1
  in_window wb 150 239 || return 1

  relay_start node-wr "$sock" || return 1
  audit_settle
  mark=$(audit_mark)
  launch ADD ra node-wr 40 "$(netconf node-wr "$(jq -c --arg s "$sock" '. + {relay_socket: $s}' <<<"$ipam_a")")"
  launch ADD rb node-wr 40 "$(netconf node-wr "$(jq -c --arg s "$sock" '. + {relay_socket: $s}' <<<"$ipam_b")")"
  wait
  kill "$RELAY_PID" 2>/dev/null
  in_window ra 12 99 || return 1
  in_window rb 150 239 || return 1
  audit_settle
  ua=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" | jq -r --arg p "$pool" \
    'select(.stage == "ResponseComplete" and .objectRef.name == $p and .verb == "update") | .userAgent' | sort | uniq -c | tr -s ' ')
  note "pool writes of the relayed burst by user agent: $ua"
  [[ "$ua" == *allot-gc/node-wr* ]] || { echo "no pool write of the burst went through the relay: $ua"; return 1; }
  awk 'NF {print $2}' <<<"$all" | no_dups "addresses" || return 1
  expect_eq "pool equals results" "$(pool_id_ips "$pool" | sort | md5sum)" "$(grep . <<<"$all" | sort | md5sum)"
}

# DEL never blocks teardown (issue 21, item 4): with a kubeconfig that does not exist, with a
# token the API server refuses (403), and on a pool holding an entry allot cannot decode, DEL
# exits 0 and journals the release; allot-gc replays the journal and the addresses are freed.
t_del_never_blocks() {
  local n r=10.122.0.0/24 pool conf jdir kc="$WORK/del-norights.kubeconfig" token i left
  n=$(net delblock)
  pool=$(pool_name "$r" "$n")
  jdir="$(node_dir node-j)/journal"
  conf=$(netconf node-j "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":3000}")
  for i in 1 2 3; do cni ADD node-j "j$i" "$conf" "j$i"; cni_ok "ADD j$i" || return 1; done

  # 1. The kubeconfig is gone.
  cni DEL node-j j1 "$(KUBECONFIG_FOR_PLUGIN=$WORK/no-such.kubeconfig netconf node-j "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":3000}")" j1
  cni_ok "DEL with a kubeconfig that does not exist" || return 1
  # 2. A 403: a ServiceAccount without rights.
  kubectl get serviceaccount norights -n kube-system >/dev/null 2>&1 ||
    kubectl create serviceaccount norights -n kube-system >/dev/null || return 1
  token=$(kubectl create token norights -n kube-system --duration=1h) || return 1
  kubeconfig_with_token "$token" "$kc"
  cni DEL node-j j2 "$(KUBECONFIG_FOR_PLUGIN=$kc netconf node-j "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":3000}")" j2
  cni_ok "DEL answered 403" || return 1
  # 3. Another writer left an entry without "id" in the pool (Whereabouts' own schema, which
  # requires one, refuses that write: there j3's DEL goes through as usual).
  local odd='{"spec":{"allocations":{"200":{"podref":"other/writer"}}}}'
  if entry_fields_pruned; then
    ! kubectl patch ippool -n "$POOL_NS" "$pool" --type=merge -p "$odd" >/dev/null 2>&1 ||
      { echo "Whereabouts' schema took an entry without id"; return 1; }
  else
    kubectl patch ippool -n "$POOL_NS" "$pool" --type=merge -p "$odd" >/dev/null || return 1
  fi
  local t0 ms
  t0=$EPOCHREALTIME
  cni DEL node-j j3 "$conf" j3
  ms=$(elapsed_ms "$t0")
  cni_ok "DEL on a pool with an undecodable entry" || return 1
  (( ms <= 5000 )) || { echo "DEL took $ms ms"; return 1; }
  note "journal after the three DELs: $(find "$jdir" -type f -name '*.json' 2>/dev/null | wc -l) file(s)"
  [[ -n "$(find "$jdir" -type f -name '*.json' 2>/dev/null)" ]] || { echo "nothing journaled in $jdir"; return 1; }
  # No address was freed by a DEL that could not reach its pool.
  [[ -n "$(pool_holder "$pool" 1)" && -n "$(pool_holder "$pool" 2)" ]] ||
    { echo "j1/j2 released without the API server's word?"; pool_allocs "$pool"; return 1; }

  # allot-gc replays the journal it was told about; the pool entry of the other writer must
  # first be repaired for an old codec, so take it out as its writer would.
  entry_fields_pruned ||
    kubectl patch ippool -n "$POOL_NS" "$pool" --type=json -p '[{"op":"remove","path":"/spec/allocations/200"}]' >/dev/null || return 1
  relay_start node-j "$WORK/gc-j.sock" --journal-dir="$jdir" --journal-interval=300ms || return 1
  for (( i = 0; i < 100; i++ )); do
    left=$(pool_allocs "$pool" | jq -r '[.[] | select(.id == "j1" or .id == "j2" or .id == "j3")] | length')
    [[ "$left" == 0 ]] && break
    sleep 0.2
  done
  kill "$RELAY_PID" 2>/dev/null
  expect_eq "allocations of j1-j3 left after allot-gc's replay" "$left" 0 || { tail -n 5 "$WORK/gc-node-j/gc.log"; return 1; }
  expect_eq "journal files left" "$(find "$jdir" -type f -name '*.json' | wc -l)" 0
}

# A relay that can fail (issue 21, item 5): one that accepts and never answers, and one that
# closes mid-request. ADD and DEL each finish correctly in at most 5 s.
t_relay_failures() {
  local n r=10.123.0.0/24 pool conf sock mode t0 ms pypid
  n=$(net relayfail)
  pool=$(pool_name "$r" "$n")
  for mode in hang close; do
    sock="$WORK/bad-relay-$mode/api.sock"
    mkdir -p "$(dirname "$sock")"
    python3 - "$sock" "$mode" <<'PY' &
import os, socket, sys, threading
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o600)
s.listen(64)
def serve(c):
    try:
        c.recv(65536)
        if mode == "hang":
            while c.recv(65536):
                pass
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
    pypid=$!
    on_exit "kill $pypid 2>/dev/null"
    for (( i = 0; i < 50; i++ )); do [[ -S "$sock" ]] && break; sleep 0.1; done
    conf=$(netconf node-bad "{\"network_name\":\"$n\",\"range\":\"$r\",\"relay_socket\":\"$sock\"}")
    t0=$EPOCHREALTIME
    cni ADD node-bad "$mode" "$conf" "$mode"
    ms=$(elapsed_ms "$t0")
    cni_ok "ADD with a relay that does '$mode'" || { kill "$pypid"; return 1; }
    note "relay that does '$mode': ADD in $ms ms"
    (( ms <= 5000 )) || { echo "ADD took $ms ms"; kill "$pypid"; return 1; }
    [[ -n "$(pool_allocs "$pool" | jq -r --arg c "$mode" '.[] | select(.id == $c) | .id')" ]] ||
      { echo "ADD $mode is not in the pool"; kill "$pypid"; return 1; }
    t0=$EPOCHREALTIME
    cni DEL node-bad "$mode" "$conf" "$mode"
    ms=$(elapsed_ms "$t0")
    cni_ok "DEL with a relay that does '$mode'" || { kill "$pypid"; return 1; }
    note "relay that does '$mode': DEL in $ms ms"
    (( ms <= 5000 )) || { echo "DEL took $ms ms"; kill "$pypid"; return 1; }
    [[ -z "$(pool_allocs "$pool" | jq -r --arg c "$mode" '.[] | select(.id == $c) | .id')" ]] ||
      { echo "DEL $mode left its entry"; kill "$pypid"; return 1; }
    kill "$pypid" 2>/dev/null
  done

  # allot-gc's relay while its API server is down: it refuses at once (the plugin goes direct,
  # and DEL journals within its deadline), and serves again once the server is back.
  sock="$WORK/relay-down/api.sock"
  relay_start node-down "$sock" || return 1
  conf=$(netconf node-down "{\"network_name\":\"$n\",\"range\":\"$r\",\"relay_socket\":\"$sock\",\"deadline_ms\":2000}")
  cni ADD node-down d1 "$conf" d1; cni_ok "ADD through the relay" || return 1
  "$ALLOT_CLUSTER" stop-apiserver >/dev/null 2>&1 || { echo "stop-apiserver failed"; return 1; }
  apiserver_down=1
  on_exit "(( apiserver_down )) && '$ALLOT_CLUSTER' start-apiserver >/dev/null 2>&1"
  t0=$EPOCHREALTIME
  cni DEL node-down d1 "$conf" d1
  ms=$(elapsed_ms "$t0")
  cni_ok "DEL through a relay whose API server is down" || return 1
  note "relay with its API server down: DEL journaled in $ms ms"
  (( ms <= 5000 )) || { echo "DEL took $ms ms"; return 1; }
  t0=$EPOCHREALTIME
  cni ADD node-down d2 "$conf" d2
  ms=$(elapsed_ms "$t0")
  cni_code 11 "ADD through a relay whose API server is down" || return 1
  (( ms <= 5000 )) || { echo "ADD took $ms ms"; return 1; }
  grep -q "cannot reach the API server" <<<"$CNI_ERR$CNI_OUT" ||
    note "(the relay's refusal is not in the plugin's last message: $(jq -r .msg <<<"$CNI_OUT"))"
  "$ALLOT_CLUSTER" start-apiserver >/dev/null 2>&1 || { echo "start-apiserver failed"; return 1; }
  apiserver_down=0
  sleep 2  # the relay's probe runs every second
  audit_settle
  local mark ua
  mark=$(audit_mark)
  cni ADD node-down d3 "$conf" d3; cni_ok "ADD through the relay once the server is back" || return 1
  audit_settle
  ua=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" | jq -r 'select(.stage == "ResponseComplete" and .objectRef.resource == "ippools") | .userAgent' | sort -u | tr '\n' ' ')
  [[ "$ua" == *allot-gc/node-down* ]] || { echo "after the outage the relay did not serve the ADD: $ua"; return 1; }
  kill "$RELAY_PID" 2>/dev/null
}

# Node paths from a network config (issue 21, item 2): a log_file that is a symlink is never
# written through, and ADD succeeds; lock_dir and journal_dir under /etc create nothing.
t_node_paths() {
  local n r=10.124.0.0/24 conf d="$WORK/paths" etc="/etc/allot-itest-$RUN"
  n=$(net paths)
  mkdir -p "$d"
  echo precious >"$d/target"
  ln -s "$d/target" "$d/allot.log"
  conf=$(netconf node-p "{\"network_name\":\"$n\",\"range\":\"$r\",\"log_file\":\"$d/allot.log\",\"log_level\":\"debug\"}")
  cni ADD node-p p1 "$conf" p1; cni_ok "ADD with a symlinked log_file" || return 1
  expect_eq "symlink target" "$(cat "$d/target")" precious || return 1
  [[ "$CNI_ERR" == *"log_file"* ]] || { echo "no word on stderr about the refused log_file: $CNI_ERR"; return 1; }
  for key in lock_dir journal_dir; do
    conf=$(netconf node-p "{\"network_name\":\"$n\",\"range\":\"$r\",\"$key\":\"$etc/x\"}")
    cni ADD node-p "p-$key" "$conf" "p-$key"
    cni_code 7 "ADD with $key under /etc" || return 1
    cni_msg "$key" || return 1
    [[ ! -e "$etc" ]] || { echo "$etc was created"; rm -rf "$etc"; return 1; }
  done
  note "lock_dir under /etc: $(jq -r .msg <<<"$CNI_OUT")"
  # log_file outside every root: stderr instead, ADD succeeds, nothing created.
  conf=$(netconf node-p "{\"network_name\":\"$n\",\"range\":\"$r\",\"log_file\":\"$etc.log\"}")
  cni ADD node-p p2 "$conf" p2; cni_ok "ADD with log_file under /etc" || return 1
  [[ ! -e "$etc.log" ]] || { echo "$etc.log was created"; rm -f "$etc.log"; return 1; }
}

t_requests_per_add() {
  local n conf mark reqs verbs
  n=$(net reqs)
  conf=$(netconf node-r "{\"network_name\":\"$n\",\"range\":\"10.112.0.0/24\"}")
  cni ADD node-r warm "$conf" warm; cni_ok "warm-up ADD" || return 1
  audit_settle
  mark=$(audit_mark)
  cni ADD node-r one "$conf" one; cni_ok "ADD" || return 1
  audit_settle
  local who=".user.username == \"$ALLOT_USER\""
  reqs=$(audit_since "$mark" "$who")
  verbs=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" |
    jq -r "select(.stage == \"ResponseComplete\" and $who) | \"\(.verb) \(.objectRef.resource)\"" | tr '\n' ',')
  note "API requests for one uncontended ADD: $reqs ($verbs)"
  (( reqs >= 1 && reqs <= 2 )) || { echo "requests per ADD: $reqs ($verbs), want at most 2"; return 1; }
  # DEL and STATUS, for the record.
  local verb
  for verb in DEL STATUS; do
    mark=$(audit_mark)
    cni "$verb" node-r one "$conf" one; cni_ok "$verb" || return 1
    audit_settle
    reqs=$(audit_since "$mark" "$who")
    verbs=$(tail -n "+$((mark + 1))" "$ALLOT_AUDIT_LOG" |
      jq -r "select(.stage == \"ResponseComplete\" and $who) | \"\(.verb) \(.objectRef.resource)\"" | tr '\n' ',')
    note "API requests for one uncontended $verb: $reqs ($verbs)"
  done
}

t_latency() {
  # p50/p99 of 100 sequential uncontended ADDs (informational: the bar, p50 <= 15 ms over 200
  # calls, is bench/'s to measure on a quiet machine).
  local n conf i t0 f="$WORK/lat"
  n=$(net latency)
  conf=$(netconf node-l "{\"network_name\":\"$n\",\"range\":\"10.113.0.0/24\"}")
  : >"$f"
  for (( i = 0; i < 100; i++ )); do
    t0=$EPOCHREALTIME
    printf '%s' "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID=l$i CNI_NETNS=/x CNI_IFNAME=net1 NODENAME=node-l \
      CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$POD_NS;K8S_POD_NAME=l$i" "$ALLOT_BIN" >/dev/null 2>&1 ||
      { echo "ADD l$i failed"; return 1; }
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", (b - a) * 1000 }' >>"$f"
  done
  sort -n "$f" -o "$f"
  note "100 sequential uncontended ADDs: p50 $(sed -n 50p "$f") ms, p99 $(sed -n 99p "$f") ms (spawn to exit; load average $(cut -d' ' -f1 /proc/loadavg))"
}

# ----------------------------------------------------------------- failures --

# 1 while t_apiserver_down has the API server stopped: the exit handler starts it again.
export apiserver_down=0
t_apiserver_down() {
  local n ipam conf pool rv_before t0 ms jdir
  n=$(net down)
  pool=$(pool_name 10.114.0.0/24 "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"10.114.0.0/24\",\"deadline_ms\":2000}"
  conf=$(netconf node-a "$ipam")
  jdir="$(node_dir node-a)/journal"
  cni ADD node-a a1 "$conf" a1; cni_ok "ADD a1" || return 1
  cni ADD node-a a2 "$conf" a2; cni_ok "ADD a2" || return 1
  rv_before=$(pool_rv "$pool")

  "$ALLOT_CLUSTER" stop-apiserver >/dev/null 2>&1 || { echo "stop-apiserver failed"; return 1; }
  apiserver_down=1
  on_exit "(( apiserver_down )) && '$ALLOT_CLUSTER' start-apiserver >/dev/null 2>&1"

  t0=$EPOCHREALTIME
  cni ADD node-a a3 "$conf" a3
  ms=$(elapsed_ms "$t0")
  cni_code 11 "ADD with the API server down" || return 1
  note "ADD with the API server down: code 11 after $ms ms (deadline_ms 2000)"
  (( ms <= 2000 + 1000 )) || { echo "ADD took $ms ms, deadline_ms is 2000"; return 1; }

  t0=$EPOCHREALTIME
  cni STATUS node-a "" "$conf"
  ms=$(elapsed_ms "$t0")
  cni_code 50 "STATUS with the API server down" || return 1
  note "STATUS with the API server down: code 50 after $ms ms"

  t0=$EPOCHREALTIME
  cni DEL node-a a1 "$conf" a1
  ms=$(elapsed_ms "$t0")
  cni_ok "DEL with the API server down" || return 1
  note "DEL with the API server down: success after $ms ms, journaled"
  (( ms <= 2000 + 1000 )) || { echo "DEL took $ms ms, deadline_ms is 2000"; return 1; }
  local jfiles
  jfiles=$(find "$jdir" -type f ! -name '*.tmp*' 2>/dev/null)
  [[ -n "$jfiles" ]] || { echo "no journal file in $jdir"; ls -la "$jdir" 2>&1; return 1; }
  # shellcheck disable=SC2086
  grep -q '"a1"' $jfiles || { echo "journal does not name container a1:"; cat $jfiles; return 1; }

  "$ALLOT_CLUSTER" start-apiserver >/dev/null 2>&1 || { echo "start-apiserver failed"; return 1; }
  apiserver_down=0

  # The failed ADD wrote nothing.
  expect_eq "pool resourceVersion across the outage" "$(pool_rv "$pool")" "$rv_before" || return 1
  [[ -z "$(pool_allocs "$pool" | jq -r '.[] | select(.id == "a3") | .id')" ]] || { echo "a3 allocated"; return 1; }
  [[ -z "$(kubectl get overlappingrangeipreservations -n "$POOL_NS" -o json |
      jq -r '.items[] | select(.spec.containerid == "a3") | .metadata.name')" ]] || { echo "a3 reserved"; return 1; }

  # New ADDs (both nodes, a3 retried) never get an address held by another container.
  local r node ctr results=""
  for r in "node-a a3" "node-a a4" "node-b b1" "node-a a5"; do
    read -r node ctr <<<"$r"
    cni ADD "$node" "$ctr" "$(netconf "$node" "$ipam")" "$ctr"; cni_ok "ADD $ctr after restart" || return 1
    results+="$ctr $(result_ip)"$'\n'
  done
  awk 'NF {print $2}' <<<"$results" | no_dups "addresses after restart" || return 1
  pool_id_ips "$pool" | awk '{print $2}' | no_dups "pool" || return 1
  local want
  want=$(pool_id_ips "$pool" | sort)
  while read -r id ipaddr; do
    [[ -z "$id" ]] && continue
    grep -qx "$id $ipaddr" <<<"$want" || { echo "$id got $ipaddr, pool says: $want"; return 1; }
  done <<<"$results"
  # a1's release is pending in the journal (replayed by allot-gc): its address is not reused.
  grep -q " $(pool_id_ips "$pool" | awk '$1 == "a1" {print $2}')\$" <<<"$results" &&
    { echo "a1's address handed out while its release is only journaled"; return 1; }
  return 0
}

t_deadline_leaves_no_reservation() {
  # ADDs that run out of deadline_ms at every point of their work (reading, reserving, writing
  # a large pool), each followed by the runtime's DEL, as kubelet does after a failed ADD.
  # Afterwards every reservation of the network must belong to an allocation in the pool:
  # an orphaned reservation blocks its address for every later ADD.
  local n r=10.120.0.0/23 pool d failures=0 ipam
  n=$(net deadline)
  pool=$(pool_name "$r" "$n")
  jq -n --arg name "$pool" --arg r "$r" '{apiVersion: "whereabouts.cni.cncf.io/v1alpha1", kind: "IPPool",
      metadata: {name: $name}, spec: {range: $r, allocations: ([range(1; 401)]
        | map({key: tostring, value: {id: "big\(.)", podref: "ns/big\(.)", ifname: "net1"}}) | from_entries)}}' |
    kubectl create -n "$POOL_NS" -f - >/dev/null || return 1
  cni ADD node-d warm "$(netconf node-d "{\"network_name\":\"$n\",\"range\":\"$r\"}")" warm
  cni_ok "warm-up ADD" || return 1
  for d in 10 14 18 22 26 30 35 40 50 60 80 100; do
    ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":$d}"
    cni ADD node-d "t$d" "$(netconf node-d "$ipam")" "t$d"
    [[ "$CNI_RC" == 0 ]] && continue
    failures=$((failures + 1))
    cni_code 11 "ADD with deadline_ms $d" || return 1
    cni DEL node-d "t$d" "$(netconf node-d "{\"network_name\":\"$n\",\"range\":\"$r\"}")" "t$d"
    cni_ok "DEL after the failed ADD t$d" || return 1
  done
  local resv alloc orphans
  resv=$(res_names_with "$n-" | sed "s/^$n-//" | sort)
  alloc=$(pool_ips "$pool" | sort)
  orphans=$(comm -23 <(echo "$resv") <(echo "$alloc") | grep .)
  note "ADDs failed at their deadline: $failures of 12; reservations left without an allocation: $(grep -c . <<<"$orphans")"
  if [[ -n "$orphans" ]]; then
    echo "reservations without an allocation after failed ADD + DEL:"
    local ip
    for ip in $orphans; do echo "  $n-$ip $(res_json "$n-$ip" | jq -c .spec)"; done
    return 1
  fi
}

# kubeconfig_with_token TOKEN FILE: the allot kubeconfig with another bearer token.
kubeconfig_with_token() {
  awk -v t="$1" '$1 == "token:" { sub(/token:.*/, "token: " t) } { print }' "$ALLOT_KUBECONFIG" >"$2"
  chmod 600 "$2"
}

t_no_rights() {
  local n token kc="$WORK/norights.kubeconfig"
  n=$(net norights)
  kubectl get serviceaccount norights -n kube-system >/dev/null 2>&1 ||
    kubectl create serviceaccount norights -n kube-system >/dev/null || return 1
  token=$(kubectl create token norights -n kube-system --duration=1h) || return 1
  kubeconfig_with_token "$token" "$kc"
  local conf
  conf=$(KUBECONFIG_FOR_PLUGIN=$kc netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.115.0.0/24\"}")
  cni ADD node-a c1 "$conf" p1
  cni_code 101 "ADD without RBAC rights" || return 1
  cni_msg 'ippools' || return 1
  cni_msg 'system:serviceaccount:kube-system:norights' || return 1
  note "no-rights ADD: $(jq -r .msg <<<"$CNI_OUT")"
  [[ -z "$(pool_json "$(pool_name 10.115.0.0/24 "$n")")" ]] || { echo "a pool was created"; return 1; }
  return 0
}

t_garbage_token() {
  local n kc="$WORK/garbage.kubeconfig" conf
  n=$(net garbage)
  kubeconfig_with_token "not-a-real-token-0123456789" "$kc"
  conf=$(KUBECONFIG_FOR_PLUGIN=$kc netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.116.0.0/24\"}")
  cni ADD node-a c1 "$conf" p1
  cni_code 101 "ADD with a garbage token" || return 1
  cni_msg '401|unauthori[sz]ed' || return 1
  note "garbage-token ADD: $(jq -r .msg <<<"$CNI_OUT")"
  if grep -q 'not-a-real-token' <<<"$CNI_OUT$CNI_ERR"; then echo "the token leaks into the output"; return 1; fi
  cni STATUS node-a "" "$conf"
  cni_code 50 "STATUS with a garbage token"
}

# jwt CLAIMS_JSON: a ServiceAccount token signed with the cluster's ServiceAccount key.
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt() {
  local key="$ALLOT_CLUSTER_DIR/pki/sa.key" kid header body sig
  kid=$(openssl pkey -in "$key" -pubout -outform DER 2>/dev/null | openssl dgst -sha256 -binary | b64url)
  header=$(printf '{"alg":"RS256","kid":"%s"}' "$kid" | b64url)
  body=$(printf '%s' "$1" | b64url)
  sig=$(printf '%s.%s' "$header" "$body" | openssl dgst -sha256 -sign "$key" -binary | b64url)
  printf '%s.%s.%s' "$header" "$body" "$sig"
}

t_expired_token() {
  local n uid now kc_valid="$WORK/valid.kubeconfig" kc="$WORK/expired.kubeconfig" conf
  n=$(net expired)
  uid=$(kubectl get serviceaccount allot -n kube-system -o jsonpath='{.metadata.uid}') || return 1
  now=$(date +%s)
  claims() {  # claims IAT EXP
    jq -cn --arg uid "$uid" --argjson iat "$1" --argjson exp "$2" '{
      aud: ["https://kubernetes.default.svc"], iss: "https://kubernetes.default.svc",
      iat: $iat, nbf: $iat, exp: $exp, sub: "system:serviceaccount:kube-system:allot",
      "kubernetes.io": {namespace: "kube-system", serviceaccount: {name: "allot", uid: $uid}}}'
  }
  # The same token, unexpired, is accepted: so the expired one fails for expiry alone.
  kubeconfig_with_token "$(jwt "$(claims $((now - 60)) $((now + 3600)))")" "$kc_valid"
  cni ADD node-a c1 "$(KUBECONFIG_FOR_PLUGIN=$kc_valid netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.117.0.0/24\"}")" p1
  cni_ok "ADD with a freshly minted token" || return 1
  kubeconfig_with_token "$(jwt "$(claims $((now - 7200)) $((now - 3600)))")" "$kc"
  conf=$(KUBECONFIG_FOR_PLUGIN=$kc netconf node-a "{\"network_name\":\"$n\",\"range\":\"10.117.0.0/24\"}")
  cni ADD node-a c2 "$conf" p2
  cni_code 101 "ADD with an expired token" || return 1
  cni_msg '401|unauthori[sz]ed' || return 1
  note "expired-token ADD: $(jq -r .msg <<<"$CNI_OUT")"
  expect_eq "pool" "$(pool_allocs "$(pool_name 10.117.0.0/24 "$n")" | jq -c 'map_values(.id)')" '{"1":"c1"}'
}

# ------------------------------------------------------------------ interop --

t_whereabouts_interop() {
  local POOL_NS=kube-system  # where Whereabouts keeps its pools by default
  # A pool and reservation exactly as Whereabouts writes them (no network_name, no allot
  # fields), in a range only this run uses.
  local x=$(( 0x${RUN#it} % 200 + 20 )) range pool conf
  range=10.$x.0.0/24
  pool=$(pool_name "$range")
  extra_objects+=("ippool/$pool" "overlappingrangeipreservation/10.$x.0.1"
                  "overlappingrangeipreservation/10.$x.0.2" "overlappingrangeipreservation/10.$x.0.3"
                  "ippool/$(pool_name "10.$x.0.0/25")")
  kubectl delete -n "$POOL_NS" --ignore-not-found "${extra_objects[@]: -5}" >/dev/null 2>&1
  kubectl create -n "$POOL_NS" -f - >/dev/null <<EOF || return 1
{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
 "metadata":{"name":"$pool","namespace":"$POOL_NS"},
 "spec":{"range":"$range","allocations":{"1":{"id":"wb-ctr","podref":"ns/wb-pod","ifname":"net1"}}}}
EOF
  kubectl create -n "$POOL_NS" -f - >/dev/null <<EOF || return 1
{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"OverlappingRangeIPReservation",
 "metadata":{"name":"10.$x.0.1","namespace":"$POOL_NS"},
 "spec":{"containerid":"wb-ctr","podref":"ns/wb-pod","ifname":"net1"}}
EOF
  local wb='{"id":"wb-ctr","ifname":"net1","podref":"ns/wb-pod"}'
  conf=$(netconf node-a "{\"range\":\"$range\"}" '{"name":"wbnet"}')
  cni ADD node-a c1 "$conf" p1; cni_ok "ADD beside a Whereabouts allocation" || return 1
  expect_eq "address" "$(result_ip)" "10.$x.0.2" || return 1
  cni ADD node-a c2 "$conf" p2 ; cni_ok "ADD c2" || return 1
  expect_eq "address" "$(result_ip)" "10.$x.0.3" || return 1
  cni ADD node-b c3 "$(netconf node-b "{\"range\":\"$range\"}" '{"name":"wbnet"}' | jq -c '.runtimeConfig = {ips: ["'"10.$x.0.1"'"]}')" p3
  cni_code 7 "requesting the Whereabouts-held address" || return 1
  expect_eq "Whereabouts allocation" "$(pool_allocs "$pool" | jq -cS '.["1"]')" "$wb" || return 1
  # DEL of unrelated containers leaves it alone.
  cni DEL node-a c2 "$conf" p2; cni_ok "DEL c2" || return 1
  cni DEL node-a unrelated "$conf" nobody; cni_ok "DEL unrelated" || return 1
  expect_eq "Whereabouts allocation after DELs" "$(pool_allocs "$pool" | jq -cS '.["1"]')" "$wb" || return 1
  expect_eq "Whereabouts reservation after DELs" "$(res_json "10.$x.0.1" | jq -cS .spec)" \
    '{"containerid":"wb-ctr","ifname":"net1","podref":"ns/wb-pod"}' || return 1
  # An overlapping range in another pool skips addresses reserved through the first one.
  cni ADD node-a c4 "$(netconf node-a "{\"range\":\"10.$x.0.0/25\"}" '{"name":"wbnet2"}')" p4
  cni_ok "ADD in an overlapping range" || return 1
  expect_eq "overlapping-range address" "$(result_ip)" "10.$x.0.3" || return 1
  cni DEL node-a c4 "$(netconf node-a "{\"range\":\"10.$x.0.0/25\"}" '{"name":"wbnet2"}')" p4; cni_ok "DEL c4" || return 1
  # allot's DEL of the Whereabouts container releases it (drop-in replacement).
  POD_NS=ns cni DEL node-a wb-ctr "$conf" wb-pod; cni_ok "DEL wb-ctr" || return 1
  expect_eq "pool after DEL wb-ctr" "$(pool_allocs "$pool" | jq -c 'map_values(.id)')" '{"2":"c1"}' || return 1
  res_exists "10.$x.0.1" && { echo "Whereabouts reservation left after DEL of its holder"; return 1; }
  return 0
}

# ------------------------------------------------- other writers, capacity --

# An entry allot cannot decode and a field it does not know, both written by another writer:
# ADD, STATUS, GC and DEL work around them and leave them exactly as they were.
t_undecodable_entry() {
  local POOL_NS=kube-system n r=10.102.0.0/24 pool conf before
  n=$(net bad); pool=$(pool_name "$r" "$n")
  kubectl create -n "$POOL_NS" -f - >/dev/null <<EOF || return 1
{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
 "metadata":{"name":"$pool","namespace":"$POOL_NS"},
 "spec":{"range":"$r","allocations":{
   "1":{"podref":"other/writer","ifname":"net1"},
   "2":{"id":7,"podref":"other/typed"},
   "3":{"id":"wb-ctr","podref":"ns/wb-pod","ifname":"net1","ipamclaimref":"ns/claim-1"}}}}
EOF
  others() { pool_allocs "$pool" | jq -cS '{"1":.["1"],"2":.["2"],"3":.["3"]}'; }
  before=$(others)
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}")
  cni ADD node-a c1 "$conf" p1; cni_ok "ADD beside undecodable entries" || return 1
  expect_eq "address" "$(result_ip)" 10.102.0.4 || return 1
  cni ADD node-a c2 "$conf" p2; cni_ok "ADD c2" || return 1
  expect_eq "address" "$(result_ip)" 10.102.0.5 || return 1
  expect_eq "other writers' entries after ADD" "$(others)" "$before" || return 1
  cni STATUS node-a "" "$conf"; cni_ok "STATUS" || return 1
  cni GC node-a "" "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" \
    '{"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]}')"
  cni_ok "GC" || return 1
  expect_eq "pool after GC" "$(pool_allocs "$pool" | jq -c 'keys')" '["1","2","3","4"]' || return 1
  cni DEL node-a c1 "$conf" p1; cni_ok "DEL c1" || return 1
  expect_eq "other writers' entries after GC and DEL" "$(others)" "$before" || return 1
  expect_eq "pool after DEL" "$(pool_allocs "$pool" | jq -c 'keys')" '["1","2","3"]' || return 1
  return 0
}

# whereabouts_pool POOL RANGE N [PAD]: an IPPool in Whereabouts' format with N entries (offsets
# 1..N) of the size Whereabouts writes (64-hex container ID, a Deployment pod name); PAD adds
# that many characters to each podref.
whereabouts_pool() {
  python3 - "$POOL_NS" "$1" "$2" "$3" "${4:-0}" >"$WORK/bigpool.json" <<'PY' || return 1
import json, sys
ns, name, rng, n, pad = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
allocs = {str(i): {"id": "%064x" % (i * 2654435761), "podref": "default/web-5f7d8c9b6d-%d%s" % (i, "x" * pad),
                   "ifname": "net1"} for i in range(1, n + 1)}
print(json.dumps({"apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "IPPool",
                  "metadata": {"name": name, "namespace": ns}, "spec": {"range": rng, "allocations": allocs}},
                 separators=(",", ":")))
PY
  kubectl create -f "$WORK/bigpool.json" >/dev/null
}

t_whereabouts_9000() {
  local POOL_NS=kube-system n r=10.103.0.0/18 pool conf sum
  n=$(net wb9k); pool=$(pool_name "$r" "$n")
  whereabouts_pool "$pool" "$r" 9000 || return 1
  sum=$(pool_allocs "$pool" | sha256sum)
  note "Whereabouts-format pool: 9000 entries, $(pool_json "$pool" | jq -c . | wc -c) bytes as stored"
  # A 1.2 MB object's write takes seconds on a loaded 2-core machine: the default deadline.
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\",\"deadline_ms\":60000}")
  cni ADD node-a c1 "$conf" p1; cni_ok "ADD into the 9000-entry pool" || return 1
  expect_eq "address" "$(result_ip)" 10.103.35.41 || return 1  # offset 9001
  expect_eq "entries" "$(pool_count "$pool")" 9001 || return 1
  cni DEL node-a c1 "$conf" p1; cni_ok "DEL from the 9000-entry pool" || return 1
  expect_eq "Whereabouts' 9000 entries after allot's ADD and DEL" "$(pool_allocs "$pool" | sha256sum)" "$sum" || return 1
  return 0
}

# A pool whose entries in Whereabouts' form already fill the object: ADD is refused with code 11
# and a message saying the pool is full, nothing is sent; a DEL still goes through.
t_pool_full() {
  local POOL_NS=kube-system n r=10.104.0.0/17 pool conf rv mark cid
  n=$(net full); pool=$(pool_name "$r" "$n")
  # 10,038 entries of ~156 bytes: 1,564,000 bytes, past allot's limit (1,560,576) and under
  # etcd's (1,572,864).
  whereabouts_pool "$pool" "$r" 10038 20 || return 1
  note "full pool: $(pool_json "$pool" | jq -c . | wc -c) bytes as stored"
  rv=$(pool_rv "$pool")
  conf=$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}")
  mark=$(audit_mark)
  cni ADD node-a c1 "$conf" p1
  cni_code 11 "ADD into a full pool" || return 1
  cni_msg "IPPool .*$pool is full" || return 1
  cni_msg "node_slice_size" || return 1
  note "message: $(jq -r .msg <<<"$CNI_OUT")"
  expect_eq "pool version after the refused ADD" "$(pool_rv "$pool")" "$rv" || return 1
  audit_settle
  expect_eq "pool writes sent" "$(audit_since "$mark" ".verb == \"update\" and .objectRef.name == \"$pool\"")" 0 || return 1
  cid=$(printf '%064x' $((5 * 2654435761)))
  POD_NS=default cni DEL node-a "$cid" "$conf" "web-5f7d8c9b6d-5$(printf "x%.0s" {1..20})"
  cni_ok "DEL from the full pool" || return 1
  expect_eq "entries after DEL" "$(pool_count "$pool")" 10037 || return 1
  return 0
}

check "VERSION lists 0.3.0 to 1.1.0" t_version
check "single-stack: STATUS, ADD, CHECK, GC (node and network scoped), DEL" t_single_stack_verbs
check "dual-stack ipRanges: ADD, STATUS, CHECK (pass and fail), GC, DEL" t_dual_stack_verbs
check "result formats 0.2.0 to 1.1.0" t_result_formats
check "three ipRanges with range_start/range_end/exclude" t_multiple_ranges
check "second range exhausted: code 100, first range rolled back, STATUS 50" t_rollback
check "requested IPs: runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=" t_requested_ips
check "re-ADD is idempotent and writes nothing" t_idempotent_add
check "a new sandbox of the same pod (UID) keeps the address, a re-created pod (other UID) gets another; the old sandbox's DEL frees nothing" t_podref_handover
check "DEL twice, DEL without prevResult, DEL of unknown" t_del_twice_and_without_prevresult
check "CHECK in a real netns: passes with the address, 102 without" t_check_netns
check "log_file: every line names container and pod, no token" t_log_file
check "a pool name taken by another range is an error, not an overwrite" t_name_collision
check "200 concurrent ADDs from 4 nodes, then 200 DELs" t_stress_four_nodes
check "100 concurrent ADDs from one node" t_hundred_one_node
check "through allot-gc's node relay: pool requests, 100 concurrent ADDs, direct when it is gone" t_relay
check "two configs on one pool: 80 concurrent ADDs direct and 80 through the relay stay in their windows" t_shared_pool_windows
check "DEL never blocks: no kubeconfig, a 403, an undecodable entry -> journaled, replayed by allot-gc" t_del_never_blocks
check "a relay that hangs, closes mid-request, or has lost its API server: ADD and DEL each within 5 s" t_relay_failures
check "node paths: symlinked log_file not written through; lock_dir/journal_dir under /etc refused" t_node_paths
check "uncontended ADD makes at most 2 API requests" t_requests_per_add
check "latency of sequential uncontended ADDs" t_latency
check "API server down: ADD code 11, STATUS 50, DEL journals; no duplicates after restart" t_apiserver_down
check "an ADD failing at its deadline leaves no reservation behind" t_deadline_leaves_no_reservation
check "kubeconfig without RBAC rights: code 101 naming resource and identity" t_no_rights
check "garbage token: code 101 (401)" t_garbage_token
check "expired token: code 101 (401)" t_expired_token
check "Whereabouts-written pool and reservation are respected" t_whereabouts_interop
if entry_fields_pruned; then
  skip "entries allot cannot decode and unknown fields: Whereabouts' own schema refuses or prunes them"
else
  check "entries allot cannot decode and unknown fields: ADD, STATUS, GC, DEL leave them unchanged" t_undecodable_entry
fi
check "a 9000-entry pool in Whereabouts' format takes allot's ADD and DEL" t_whereabouts_9000
check "a pool full in Whereabouts' form: ADD code 11 'is full', nothing written; DEL works" t_pool_full

suite_summary "($((SECONDS - suite_start)) s)"
(( failed == 0 ))
