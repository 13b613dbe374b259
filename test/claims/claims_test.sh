#!/usr/bin/env bash
# Persistent IPs (issue 18) against a real kube-apiserver and etcd (e2e/cluster), driving the
# real plugin (build/plugin/allot) as a runtime does, from simulated nodes (NODENAME and a lock
# dir each): the released-address cooldown across nodes and its yield to exhaustion, a fixed
# address as Multus delivers it, and allowPersistentIPs accepted with a warning.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up, else starts a private one.
# Prints `ok - NAME` / `not ok - NAME` per check, then `claims: N passed, N failed`.
#
#   ALLOT_CLAIMS_ONLY=REGEX       run only the checks whose name or function matches
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=claims
# shellcheck source=test/integration/lib_plugin.sh disable=SC1091
source "$root/test/integration/lib_plugin.sh"

cluster_start || suite_die "cluster starts"
plugin_init || suite_die "plugin binary present"
CHECK_DIR=$WORK
CHECK_ONLY=${ALLOT_CLAIMS_ONLY:-}
CHECK_TIME=ms
suite_start=$SECONDS

net() { echo "$RUN-$1"; }
# released_log POOL: the pool's release log annotation ({} when none).
released_log() {
  pool_json "$1" | jq -c '.metadata.annotations["allot.cni.cncf.io/released"] // "{}" | fromjson'
}

# ---------------------------------------------------------------- cooldown --

# Two addresses (.1, .2), a 600 s cooldown, two nodes: node-b never gets the address node-a
# just released while another is free; once nothing else is, it does (the oldest release).
t_cooldown_two_nodes() {
  local n r=10.181.0.0/30 pool ipam a b c
  n=$(net cool); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":600}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  expect_eq "first ADD" 10.181.0.1 "$a" || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  cni_ok "DEL c1" || return 1
  released_log "$pool" | jq -e '.keep == 600 and (.at | has("1"))' >/dev/null ||
    { echo "release not recorded: $(released_log "$pool")"; return 1; }
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "node-b passes over the cooling address" 10.181.0.2 "$b" || return 1
  c=$(add_ok node-b c3 "$(netconf node-b "$ipam")" p3) || return 1
  expect_eq "the cooldown yields when nothing else is free" 10.181.0.1 "$c" || return 1
  released_log "$pool" | jq -e '.at == {}' >/dev/null ||
    { echo "an address in use still listed: $(released_log "$pool")"; return 1; }
  cni ADD node-a c4 "$(netconf node-a "$ipam")" p4
  cni_code 100 "exhausted pool" || return 1
  cni_msg "no free address" || return 1
  expect_eq "nothing released by the failed ADD" 2 "$(pool_count "$pool")"
}

# A short cooldown passes: the lowest free address is back in turn.
t_cooldown_expires() {
  local n r=10.182.0.0/29 ipam a b
  n=$(net expire)
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":2}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  cni_ok "DEL c1" || return 1
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "inside the cooldown" 10.182.0.2 "$b" || return 1
  sleep 3
  b=$(add_ok node-b c3 "$(netconf node-b "$ipam")" p3) || return 1
  expect_eq "after the cooldown" "$a" "$b"
}

# Without the key: today's behaviour, the lowest free address at once, no annotation written.
t_cooldown_off() {
  local n r=10.183.0.0/29 pool ipam a b
  n=$(net off); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\"}"
  a=$(add_ok node-a c1 "$(netconf node-a "$ipam")" p1) || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  b=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "the released address again" "$a" "$b" || return 1
  pool_json "$pool" | jq -e '.metadata.annotations["allot.cni.cncf.io/released"] == null' >/dev/null ||
    { echo "annotation written without a cooldown"; return 1; }
}

# A writer that knows nothing of the log (Whereabouts updates the object it read, spec only)
# keeps the annotation; allot then honours it on the next ADD.
t_cooldown_foreign_writer() {
  local n r=10.184.0.0/29 pool ipam a
  n=$(net foreign); pool=$(pool_name "$r" "$n")
  ipam="{\"network_name\":\"$n\",\"range\":\"$r\",\"released_ip_cooldown_s\":600}"
  add_ok node-a c1 "$(netconf node-a "$ipam")" p1 >/dev/null || return 1
  cni DEL node-a c1 "$(netconf node-a "$ipam")" p1
  pool_json "$pool" |
    jq '.spec.allocations["5"] = {"id":"wb-ctr","podref":"itest/wb-pod","ifname":"net1"}' |
    kubectl replace -f - >/dev/null || return 1
  a=$(add_ok node-b c2 "$(netconf node-b "$ipam")" p2) || return 1
  expect_eq "the cooling .1 still passed over after the foreign write" 10.184.0.2 "$a"
}

# ------------------------------------------------------------- fixed IPs --

# The README's example as Multus delivers it: the element's `ips` become runtimeConfig.ips of a
# config that declares the `ips` capability.
t_fixed_ip_multus() {
  local n r=10.185.0.0/24 top a
  n=$(net fixed)
  top='{"capabilities":{"ips":true},"runtimeConfig":{"ips":["10.185.0.7/24"]}}'
  a=$(add_ok node-a c1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p1) || return 1
  expect_eq "the fixed address" 10.185.0.7 "$a" || return 1
  cni ADD node-b c2 "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p2
  cni_code 7 "the same fixed address for another pod" || return 1
  cni_msg "already allocated" || return 1
  top='{"capabilities":{"ips":true},"runtimeConfig":{"ips":["10.99.0.7/24"]}}'
  cni ADD node-b c3 "$(netconf node-b "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p3
  cni_code 7 "a fixed address outside the range" || return 1
  cni_msg "in no configured range"
}

# ------------------------------------------------------------- IPAMClaim --

# Not implemented yet: the key is accepted, the call warns, the address is an ordinary one.
t_persistent_ips_warns() {
  local n r=10.186.0.0/29 top
  n=$(net persist)
  top='{"allowPersistentIPs":true,"args":{"cni":{"ipam-claim-reference":"vm-a.net1"}}}'
  add_ok node-a c1 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" "$top")" p1 >/dev/null || return 1
  grep -q "allowPersistentIPs: IPAMClaim support is not implemented yet" <<<"$CNI_ERR" ||
    { echo "no warning: $CNI_ERR"; return 1; }
  cni ADD node-a c2 "$(netconf node-a "{\"network_name\":\"$n\",\"range\":\"$r\"}" '{"allowPersistentIPs":"yes"}')" p2
  cni_code 7 "allowPersistentIPs not a boolean" || return 1
  cni_msg allowPersistentIPs
}

check "cooldown across two nodes: not handed out while another is free; yields to exhaustion" t_cooldown_two_nodes
check "a 2 s cooldown expires: the address is handed out again" t_cooldown_expires
check "no cooldown key: Whereabouts' behaviour, no annotation" t_cooldown_off
check "a write that knows nothing of the log (Whereabouts') keeps it" t_cooldown_foreign_writer

check "a fixed address through Multus' ips capability (runtimeConfig.ips)" t_fixed_ip_multus
check "allowPersistentIPs: accepted with a warning (IPAMClaim not implemented yet); a non-boolean is code 7" t_persistent_ips_warns

suite_summary "($((SECONDS - suite_start)) s)"
(( failed == 0 ))
