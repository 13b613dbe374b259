#!/usr/bin/env bash
# Node slices on the real API server (issue 17): allot-gc's leader as the node-slice controller
# against real Node and NetworkAttachmentDefinition objects, and the real plugin allocating in
# slice mode from the slices it assigned. Nodes are plain Node objects (no kubelet runs); pods
# are ADDed by running the plugin as a runtime does, with NODENAME naming the node.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up (eval "$(e2e/cluster env)");
# otherwise starts a private one. Prints `ok - NAME` / `not ok - NAME` per check, then
# `slices: N passed, N failed`. SLICES_ONLY=REGEX runs only the matching checks.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=slices
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"
# shellcheck source=test/slices/slices_lib.sh disable=SC1091
source "$root/test/slices/slices_lib.sh"

cluster_start || suite_die "cluster starts"
gc_init || suite_die "binaries and namespaces"
slices_init || suite_die "RBAC for the slice controller"
CHECK_DIR=$WORK
mkdir -p "$WORK/bin"
cp "$root/${GC_BUILD_DIR:-build}/cli/kubectl-allot" "$WORK/bin/" || suite_die "kubectl-allot binary present"
CLI=$WORK/bin/kubectl-allot
CHECK_ONLY=${SLICES_ONLY:-}
CHECK_TIME=s
CHECK_TAIL=40

NA=$RUN-node-a
NB=$RUN-node-b
NC=$RUN-node-c

t_start() {
  mk_node "$NA" && mk_node "$NB" || return 1
  start_gc s "$NA" --role=controller --slice-interval=300ms --repair-interval=1h --resync-interval=300ms --log-level=debug || return 1
  wait_for 30 is_leader s || { echo "allot-gc never led"; gc_log s | tail; return 1; }
}

# Whereabouts' objects: name = network_name, spec from the NAD, every Node a slice, the NAD
# (in the pool namespace) the controller owner.
NET1=$RUN-blue
IPAM1='{"range":"10.71.0.0/16","node_slice_size":"/24","network_name":"'$NET1'"}'
t_assign() {
  mk_nad_in "$POOLNS" blue "$IPAM1" || return 1
  wait_for 10 has_slice "$NET1" "$NA" || { echo "no slice for $NA"; nsp_json "$NET1"; gc_log s | tail; return 1; }
  wait_for 5 has_slice "$NET1" "$NB" || { echo "no slice for $NB"; return 1; }
  local j
  j=$(nsp_json "$NET1")
  expect_eq spec.range "$(jq -r .spec.range <<<"$j")" 10.71.0.0/16 || return 1
  expect_eq spec.sliceSize "$(jq -r .spec.sliceSize <<<"$j")" /24 || return 1
  expect_eq "slices listed" "$(jq '.status.allocations | length' <<<"$j")" 256 || return 1
  expect_eq "Nodes without a slice" "$(unassigned_nodes "$NET1" | wc -l)" 0 || return 1
  expect_eq "slices given twice" "$(jq '[.status.allocations[] | select(.nodeName != "") | .sliceRange] | (length - (unique | length))' <<<"$j")" 0 || return 1
  local uid
  uid=$(kubectl get network-attachment-definitions -n "$POOLNS" blue -o jsonpath='{.metadata.uid}')
  expect_eq ownerReferences "$(jq -c '.metadata.ownerReferences' <<<"$j")" \
    "[{\"apiVersion\":\"k8s.cni.cncf.io/v1\",\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"NetworkAttachmentDefinition\",\"name\":\"blue\",\"uid\":\"$uid\"}]" || return 1
  note "$NA: $(slice_of "$NET1" "$NA"), $NB: $(slice_of "$NET1" "$NB")"
}

# The plugin in slice mode on node a: an address inside a's slice, in a's own pool.
t_plugin() {
  local ip slice pool
  ip=$(slice_add "$NA" p1 "$IPAM1") || return 1
  slice=$(slice_of "$NET1" "$NA")
  in_cidr "$ip" "$slice" || { echo "$ip is not in $NA's slice $slice"; return 1; }
  pool=$(pool_name "$slice" "$NET1" "$NA")
  expect_eq "allocations in $pool" "$(pool_count "$pool")" 1 || return 1
  note "$NA got $ip from $pool"
}

# A node without a slice: ADD fails with CNI code 11 naming the NodeSlicePool and the node.
t_no_slice() {
  cni ADD "$RUN-ghost" ctr-ghost ghost uid-ghost "$(slice_conf "$RUN-ghost" "$IPAM1")"
  [[ "$CNI_RC" != 0 ]] || { echo "ADD on a node with no slice succeeded: $CNI_OUT"; return 1; }
  expect_eq "CNI code" "$(jq -r .code <<<"$CNI_OUT")" 11 || return 1
  local msg
  msg=$(jq -r '.msg + " " + (.details // "")' <<<"$CNI_OUT")
  [[ "$msg" == *"NodeSlicePool $NET1"* && "$msg" == *"$RUN-ghost"* ]] || { echo "message: $msg"; return 1; }
  note "$(jq -r .msg <<<"$CNI_OUT")"
}

# A removed Node keeps its slice while its pool holds an address; freed once it is empty.
t_node_removed() {
  local slice pool
  slice_add "$NB" q1 "$IPAM1" >/dev/null || return 1
  slice=$(slice_of "$NET1" "$NB")
  pool=$(pool_name "$slice" "$NET1" "$NB")
  kubectl delete node "$NB" >/dev/null || return 1
  never_for 3 not has_slice "$NET1" "$NB" || { echo "slice of $NB freed while $pool holds an address"; return 1; }
  slice_del "$NB" q1 "$IPAM1" || return 1
  expect_eq "allocations in $pool" "$(pool_count "$pool")" 0 || return 1
  wait_for 10 not has_slice "$NET1" "$NB" || { echo "slice of $NB not freed after its pool emptied"; return 1; }
  expect_eq "slice $slice after" "$(nsp_json "$NET1" | jq -r --arg s "$slice" '.status.allocations[] | select(.sliceRange == $s) | .nodeName')" "" || return 1
  # A new Node takes the lowest free slice.
  mk_node "$NC" || return 1
  wait_for 10 has_slice "$NET1" "$NC" || { echo "no slice for new node $NC"; return 1; }
  note "$NB's $slice freed; $NC got $(slice_of "$NET1" "$NC")"
}

# A smaller slice size: a's busy /24 stays, a new node gets a /25, a's moves once empty.
IPAM1B='{"range":"10.71.0.0/16","node_slice_size":"/25","network_name":"'$NET1'"}'
t_resize() {
  local ipam=$IPAM1B old
  old=$(slice_of "$NET1" "$NA")
  mk_nad_in "$POOLNS" blue "$ipam" || return 1
  wait_for 10 nsp_field "$NET1" .spec.sliceSize /25 || { echo "spec.sliceSize not /25"; nsp_json "$NET1" | jq .spec; return 1; }
  expect_eq "$NA's slice (busy) after the resize" "$(slice_of "$NET1" "$NA")" "$old" || return 1
  local nd=$RUN-node-d
  mk_node "$nd" || return 1
  wait_for 10 has_slice "$NET1" "$nd" || { echo "no slice for $nd"; return 1; }
  [[ "$(slice_of "$NET1" "$nd")" == */25 ]] || { echo "new node got $(slice_of "$NET1" "$nd")"; return 1; }
  slice_del "$NA" p1 "$IPAM1" || return 1
  wait_for 10 slice_is "$NET1" "$NA" '/25$' || { echo "$NA kept $(slice_of "$NET1" "$NA") after its pool emptied"; return 1; }
  local ip
  ip=$(slice_add "$NA" p2 "$ipam") || return 1
  in_cidr "$ip" "$(slice_of "$NET1" "$NA")" || { echo "$ip outside $NA's new slice"; return 1; }
  note "$NA: $old -> $(slice_of "$NET1" "$NA") (got $ip); $nd: $(slice_of "$NET1" "$nd")"
}

# IPv6 slices, and dual-stack: one NodeSlicePool per range, both families allocated.
NET6=$RUN-six
IPAM6='{"range":"fd00:71::/64","node_slice_size":"/76","network_name":"'$NET6'"}'
t_ipv6() {
  mk_nad_in "$POOLNS" six "$IPAM6" || return 1
  wait_for 10 has_slice "$NET6" "$NA" || { echo "no IPv6 slice for $NA"; nsp_json "$NET6"; return 1; }
  expect_eq "IPv6 slices" "$(nsp_json "$NET6" | jq '.status.allocations | length')" 4096 || return 1
  local ip
  ip=$(slice_add "$NA" v6 "$IPAM6") || return 1
  in_cidr "$ip" "$(slice_of "$NET6" "$NA")" || { echo "$ip outside $(slice_of "$NET6" "$NA")"; return 1; }
  note "$NA: slice $(slice_of "$NET6" "$NA"), got $ip; NodeSlicePool $(nsp_json "$NET6" | jq -c . | wc -c) bytes as compact JSON"
}

NETD=$RUN-ds
IPAMD='{"ipRanges":[{"range":"10.72.0.0/16"},{"range":"fd00:72::/64"}],"node_slice_size":"/24","network_name":"'$NETD'"}'
t_dual_stack() {
  mk_nad_in "$POOLNS" ds "$IPAMD" || return 1
  local v6name
  v6name=$NETD-fd00-72---64
  { wait_for 10 has_slice "$NETD" "$NA" && wait_for 10 has_slice "$v6name" "$NA"; } ||
    { echo "no dual-stack slices for $NA"; kubectl get nodeslicepools -n "$POOLNS"; return 1; }
  expect_eq "IPv6 sliceSize" "$(nsp_json "$v6name" | jq -r .spec.sliceSize)" /72 || return 1
  local conf out
  conf=$(slice_conf "$NA" "$IPAMD")
  cni ADD "$NA" ctr-ds ds uid-ds "$conf"
  [[ "$CNI_RC" == 0 ]] || { echo "ADD failed: $CNI_OUT $CNI_ERR"; return 1; }
  out=$(jq -r '.ips[].address | sub("/.*"; "")' <<<"$CNI_OUT")
  in_cidr "$(sed -n 1p <<<"$out")" "$(slice_of "$NETD" "$NA")" || { echo "IPv4 $out"; return 1; }
  in_cidr "$(sed -n 2p <<<"$out")" "$(slice_of "$v6name" "$NA")" || { echo "IPv6 $out"; return 1; }
  note "$NA got $(tr '\n' ' ' <<<"$out")"
}

# More Nodes than slices: the Nodes left over are counted, and evented on Node and pool.
NETX=$RUN-small
t_exhausted() {
  mk_nad_in "$POOLNS" small '{"range":"10.73.0.0/23","node_slice_size":"/24","network_name":"'"$NETX"'"}' || return 1
  wait_for 10 nsp_json "$NETX" >/dev/null || return 1
  local nodes
  nodes=$(kubectl get nodes -o name | wc -l)
  (( nodes > 2 )) || { echo "only $nodes Nodes"; return 1; }
  wait_for 10 metric_is s "allot_nodes_without_slice{namespace=\"$POOLNS\",pool=\"$NETX\"}" $(( nodes - 2 )) ||
    { echo "allot_nodes_without_slice: $(gc_metric s "allot_nodes_without_slice{namespace=\"$POOLNS\",pool=\"$NETX\"}"), want $(( nodes - 2 ))"; return 1; }
  expect_eq allot_node_slices "$(gc_metric s "allot_node_slices{namespace=\"$POOLNS\",pool=\"$NETX\"}")" 2 || return 1
  expect_eq allot_node_slices_free "$(gc_metric s "allot_node_slices_free{namespace=\"$POOLNS\",pool=\"$NETX\"}")" 0 || return 1
  local left
  left=$(unassigned_nodes "$NETX" | head -1)
  wait_for 10 node_event "$left" NodeSlicesExhausted || { echo "no Warning Event on Node $left"; return 1; }
  wait_for 10 has_event NodeSlicesExhausted "no free slice for node $left" || { echo "no Event on the NodeSlicePool"; return 1; }
  cni ADD "$left" ctr-x x uid-x "$(slice_conf "$left" '{"range":"10.73.0.0/23","node_slice_size":"/24","network_name":"'"$NETX"'"}')"
  expect_eq "CNI code on $left" "$(jq -r .code <<<"$CNI_OUT")" 11 || return 1
  note "$(( nodes - 2 )) of $nodes Nodes without a slice; e.g. $left"
}

# Two NADs on one network: the pool stays while one is left, and goes with the last.
t_nad_removed() {
  mk_nad_in "$PODNS" blue-too "$IPAM1B" || return 1
  sleep 1
  kubectl delete network-attachment-definitions -n "$POOLNS" blue >/dev/null || return 1
  never_for 2 not nsp_json "$NET1" || { echo "NodeSlicePool deleted while another NAD wants it"; return 1; }
  expect_eq "owners once the NAD in its namespace is gone" "$(nsp_json "$NET1" | jq -c '.metadata.ownerReferences // []')" "[]" || return 1
  kubectl delete network-attachment-definitions -n "$PODNS" blue-too >/dev/null || return 1
  wait_for 10 not nsp_json "$NET1" || { echo "NodeSlicePool $NET1 left after its last NAD went"; return 1; }
}

# mixed NAD NET IPAM [ENV...]: Whereabouts v0.9.4's plugin and allot's at once on nodes a and c,
# on the slices allot's controller assigned for NAD (of type whereabouts) NET; both_plugins
# checks, with ENV added to its environment.
mixed() {
  local nad=$1 net=$2 ipam=$3 wa out
  shift 3
  wa=$("$root/bench/build-whereabouts" 2>"$WORK/wa-build.log") || { cat "$WORK/wa-build.log"; return 1; }
  mk_nad_in "$POOLNS" "$nad" "$ipam" || return 1
  { wait_for 10 has_slice "$net" "$NA" && wait_for 10 has_slice "$net" "$NC"; } || { echo "no slices"; return 1; }
  wa_setup || return 1
  # ENV... are NAME=VALUE words; ALLOT_NAMES is exported already (test/lib.sh).
  # shellcheck disable=SC2163
  out=$(export "$@" WA="$wa" NETW="$net" IPAMW="$ipam" PLUGIN="$PLUGIN"
        both_plugins "$NA" "$NC") || { echo "$out"; return 1; }
  echo "$out"
}

# Every ADD succeeds, no address twice, each in its node's slice.
NETW=$RUN-mixed
IPAMW='{"type":"whereabouts","range":"10.74.0.0/16","node_slice_size":"/24","network_name":"'$NETW'"}'
t_whereabouts() {
  local out
  out=$(mixed mixed "$NETW" "$IPAMW") || { echo "$out"; return 1; }
  note "$out"
}

# The same network with an allot NAD asking for its slices in parts (node_slice_parts 4 of a
# /27) beside the Whereabouts NAD, which asks for none. Whereabouts' plugin reads only part 0,
# and after losing a reservation race its DEL deletes the reservation whoever holds it, so
# parts are refused on the network: the slice controller's annotation on the NodeSlicePool and a
# Warning Event name the Whereabouts NAD, every ADD of allot's with parts fails with code 7 naming
# the network and that NAD, and Whereabouts' pods all get their addresses, no duplicate.
NETWP=$RUN-mixedp
IPAMWP='{"type":"whereabouts","range":"10.78.0.0/16","node_slice_size":"/27","network_name":"'$NETWP'"}'
nsp_refused() { nsp_json "$1" | jq -r '.metadata.annotations["allot.cni.cncf.io/node-slice-parts-refused"] // ""'; }
refusal_names() { [[ "$(nsp_refused "$1")" == *"$2"* ]]; }
t_whereabouts_parts() {
  local out p1 wanad="$POOLNS/mixedp (whereabouts)"
  mk_nad_in "$POOLNS" mixedp "$IPAMWP" &&
    mk_nad_in "$POOLNS" mixedp-allot "$(jq -c '. + {type: "allot", node_slice_parts: 4}' <<<"$IPAMWP")" || return 1
  wait_for 10 refusal_names "$NETWP" "$wanad" ||
    { echo "NodeSlicePool $NETWP not refusing parts for $wanad"; nsp_json "$NETWP" | jq .metadata; gc_log s | tail; return 1; }
  [[ "$(nsp_refused "$NETWP")" != *mixedp-allot* ]] || { echo "the allot NAD named: $(nsp_refused "$NETWP")"; return 1; }
  wait_for 10 has_event NodeSlicePartsRefused "$wanad" ||
    { echo "no NodeSlicePartsRefused Event naming $wanad"; events NodeSlicePartsRefused; return 1; }
  out=$(mixed mixedp "$NETWP" "$IPAMWP" SLICE_N=10 SLICE_PARTS=4 SLICE_REFUSED="$wanad") || { echo "$out"; return 1; }
  p1=$("$ALLOT_NAMES" part "$(pool_name "$(slice_of "$NETWP" "$NA")" "$NETWP" "$NA")" 1)
  [[ -z "$(pool_json "$p1")" ]] || { echo "part 1 ($p1) written on a network refusing parts"; return 1; }
  note "$out; $p1 never made"
}

# The fast path (issue 17, item 3): a node's allot-gc serves its slices through the node relay
# from a watch of the NodeSlicePools, so an ADD reads no NodeSlicePool; without the relay every
# ADD reads it. A slice pool the controller seals (before it takes the slice away) takes no
# claim until a NodeSlicePool read newer than the seal still gives the node that slice; a
# resize moves the node to its new slice, and its old pool stays sealed and empty.
NETF=$RUN-fast
NF=$RUN-node-f
IPAMF='{"range":"10.76.0.0/16","node_slice_size":"/24","network_name":"'$NETF'"}'
nsp_gets() { audit_since "$1" '.objectRef.resource == "nodeslicepools" and .verb == "get"'; }
# pool_requests MARK: the plugin's requests since MARK (pools, reservations, NodeSlicePool reads).
pool_requests() {
  audit_since "$1" '.objectRef.resource == "ippools" or .objectRef.resource == "overlappingrangeipreservations" or (.objectRef.resource == "nodeslicepools" and .verb == "get")'
}
fast_adds() {  # PREFIX CONF: five sequential ADDs
  local k
  for k in 1 2 3 4 5; do add "$NF" "ctr-$1$k" "$1$k" "uid-$1$k" "$2" >/dev/null || return 1; done
}
t_fastpath() {
  local sock=$WORK/nodes/$NF/relay/api.sock relayed direct mark slice pool rv ipam nr tr nd td
  mk_node "$NF" && mk_nad_in "$POOLNS" fast "$IPAMF" || return 1
  start_gc f "$NF" --role=agent --relay-socket="$sock" || return 1
  wait_for 10 has_slice "$NETF" "$NF" || { echo "no slice for $NF"; return 1; }
  ipam=$(jq -c --arg s "$sock" '. + {relay_socket: $s}' <<<"$IPAMF")
  relayed=$(slice_conf "$NF" "$ipam")
  direct=$(slice_conf "$NF" "$IPAMF")
  add "$NF" ctr-w0 w0 uid-w0 "$relayed" >/dev/null || return 1  # creates the pool
  audit_settle; mark=$(audit_mark)
  fast_adds r "$relayed" || return 1
  audit_settle
  nr=$(nsp_gets "$mark")
  tr=$(pool_requests "$mark")
  mark=$(audit_mark)
  fast_adds d "$direct" || return 1
  audit_settle
  nd=$(nsp_gets "$mark")
  td=$(pool_requests "$mark")
  note "5 ADDs through the relay: $nr NodeSlicePool reads, $tr API requests; 5 without: $nd reads, $td requests"
  expect_eq "NodeSlicePool reads of 5 ADDs through the relay" "$nr" 0 || return 1
  expect_eq "NodeSlicePool reads of 5 ADDs without it" "$nd" 5 || return 1
  # A seal the controller wrote, its NodeSlicePool write not made yet: no claim (code 11).
  slice=$(slice_of "$NETF" "$NF")
  pool=$(pool_name "$slice" "$NETF" "$NF")
  rv=$(nsp_json "$NETF" | jq -r .metadata.resourceVersion)
  kubectl annotate ippool -n "$POOLNS" "$pool" "allot.cni.cncf.io/slice-sealed=$rv" >/dev/null || return 1
  cni ADD "$NF" ctr-s1 s1 uid-s1 "$relayed"
  expect_eq "ADD into a sealed pool, NodeSlicePool unchanged: code" "$(jq -r .code <<<"$CNI_OUT")" 11 || { echo "$CNI_OUT"; return 1; }
  [[ "$(jq -r .msg <<<"$CNI_OUT")" == *sealed* ]] || { echo "message: $CNI_OUT"; return 1; }
  # The NodeSlicePool moved on and still gives the node this slice: claimed in, seal lifted.
  kubectl label nodeslicepool -n "$POOLNS" "$NETF" allot-test/touched=1 >/dev/null || return 1
  add "$NF" ctr-s2 s2 uid-s2 "$relayed" >/dev/null || return 1
  expect_eq "seal after a claim confirmed on a newer NodeSlicePool" \
    "$(pool_json "$pool" | jq -r '.metadata.annotations["allot.cni.cncf.io/slice-sealed"] // ""')" "" || return 1
  # Resize: the emptied pool is sealed before the node gets its /25; the next ADD lands there.
  local p
  for p in w0 r1 r2 r3 r4 r5 d1 d2 d3 d4 d5 s2; do cni DEL "$NF" "ctr-$p" "$p" "uid-$p" "$relayed"; done
  expect_eq "allocations in $pool" "$(pool_count "$pool")" 0 || return 1
  mk_nad_in "$POOLNS" fast "$(jq -c '.node_slice_size = "/25"' <<<"$IPAMF")" || return 1
  wait_for 10 slice_is "$NETF" "$NF" '/25$' || { echo "$NF kept $(slice_of "$NETF" "$NF")"; return 1; }
  local ip
  ip=$(add "$NF" ctr-n1 n1 uid-n1 "$(slice_conf "$NF" "$(jq -c '.node_slice_size = "/25"' <<<"$ipam")")") || return 1
  in_cidr "$ip" "$(slice_of "$NETF" "$NF")" || { echo "$ip outside $NF's new slice $(slice_of "$NETF" "$NF")"; return 1; }
  expect_eq "old pool $pool sealed" "$(pool_json "$pool" | jq -r '.metadata.annotations["allot.cni.cncf.io/slice-sealed"] // "" | length > 0')" true || return 1
  expect_eq "allocations in the old pool" "$(pool_count "$pool")" 0 || return 1
  note "$NF: $slice -> $(slice_of "$NETF" "$NF") (got $ip); $pool sealed"
}

# The repair loop on slice pools (allot-gc restarted with a short repair interval and grace):
# - a leak in a node's slice pool is released as in any pool, a live pod's address is kept;
# - a Node deleted while its pool holds addresses: slice_node_gone, then its addresses go by the
#   leak rules (a pod gone; a pod whose Node is gone, which this allot-gc never listed: the
#   NodeSlicePool names it), then the controller frees the slice;
# - a live pod on node c holding an address of node a's slice: outside_node_slice, not freed.
# `kubectl allot check` reports both anomalies from the same scan.
NETR=$RUN-rep
IPAMR='{"range":"10.75.0.0/16","node_slice_size":"/24","network_name":"'$NETR'"}'
NE=$RUN-node-e
rep_add() {  # NODE POD UID
  add "$1" "ctr-$2" "$2" "$3" "$(slice_conf "$1" "$IPAMR")"
}
pod_uid_of() { awk -v p="$2" '$1 == p { print $2 }' <<<"$1"; }
t_repair() {
  kubectl get node "$NC" >/dev/null 2>&1 || mk_node "$NC" || return 1
  mk_node "$NE" && mk_nad_in "$POOLNS" rep "$IPAMR" || return 1
  node_ready "$NA" && node_ready "$NC" && node_ready "$NE" || return 1
  { wait_for 10 has_slice "$NETR" "$NA" && wait_for 10 has_slice "$NETR" "$NE"; } || { echo "no slices"; return 1; }
  local pods pa pe pl
  pods=$(make_pods "$NA" home && make_pods "$NC" away && make_pods "$NE" live-e) || return 1
  local home away live gone leak
  home=$(rep_add "$NA" home "$(pod_uid_of "$pods" home)") &&
    away=$(rep_add "$NA" away "$(pod_uid_of "$pods" away)") &&
    leak=$(rep_add "$NA" leak-a uid-leak-a) &&
    live=$(rep_add "$NE" live-e "$(pod_uid_of "$pods" live-e)") &&
    gone=$(rep_add "$NE" gone-e uid-gone-e) || return 1
  pa=$(pool_name "$(slice_of "$NETR" "$NA")" "$NETR" "$NA")
  pe=$(pool_name "$(slice_of "$NETR" "$NE")" "$NETR" "$NE")
  kubectl delete node "$NE" >/dev/null || return 1
  "$CLI" --pool-namespace "$POOLNS" check -o json >"$WORK/check.json" 2>"$WORK/check.err"
  expect_eq "kubectl allot check -o json exit (a report)" "$?" 0 || { cat "$WORK/check.err"; return 1; }
  pl=$(jq -r '.findings[] | select(.kind == "slice_node_gone" or .kind == "outside_node_slice") | "\(.kind) \(.pool)"' "$WORK/check.json" | sort | tr '\n' ' ')
  expect_eq "check's slice findings" "$pl" "outside_node_slice $pa slice_node_gone $pe " || { jq -c ".findings[] | select(.pool == \"$pa\")" "$WORK/check.json"; kubectl get pods -n "$PODNS" -o wide; return 1; }
  stop_gc s
  start_gc r "$NA" --role=controller --slice-interval=300ms --repair-interval=500ms --resync-interval=300ms --leak-grace=2s --leak-passes=2 || return 1
  wait_for 30 is_leader r || { echo "allot-gc r never led"; return 1; }
  wait_for 15 has_event PoolAnomaly "slice_node_gone: IPPool $POOLNS/$pe (node $NE's slice pool" ||
    { echo "no slice_node_gone Event"; events PoolAnomaly; return 1; }
  wait_for 15 has_event PoolAnomaly "outside_node_slice: $away in IPPool $POOLNS/$pa (node $NA's slice pool) is held by pod $PODNS/away net1, which runs on node $NC" ||
    { echo "no outside_node_slice Event"; events PoolAnomaly; return 1; }
  wait_for 5 metric_is r 'allot_anomalies_total{kind="outside_node_slice"}' 1 || { gc_metrics r | grep anomal; return 1; }
  # leak-a's Node exists: the controller holds it for that node's agent, which frees it.
  start_gc ra "$NA" --role=agent --node-sweep-interval=1s || return 1
  wait_for 20 not pool_has_podref "$pa" leak-a || { echo "leak $leak in $pa not released"; return 1; }
  # shellcheck disable=SC2016 # evaluated by wait_for, at each try
  wait_for 20 eval '[[ "$(pool_count "$pe")" == 0 ]]' || { echo "$pe still holds $(pool_holders "$pe")"; return 1; }
  wait_for 10 not has_slice "$NETR" "$NE" || { echo "slice of $NE not freed after its pool emptied"; return 1; }
  never_for 2 not pool_has_podref "$pa" away || { echo "live pod away lost $away"; return 1; }
  pool_has_podref "$pa" home || { echo "live pod home lost $home"; gc_log r | grep -E "released|anomaly"; return 1; }
  note "released $leak (no pod) in $pa, $gone (no pod) and $live (Node gone) in $pe; $away (pod on $NC) kept and reported"
}

# node_slice_parts: a node's slice kept in several IPPools, part 0 the slice's own pool (the
# one Whereabouts' plugin reads), each part one block of the slice's addresses with the whole
# slice as its range. A removed Node's slice is freed only once every part is empty, every
# part sealed first.
NETP=$RUN-parts
NP=$RUN-node-p
IPAMP='{"range":"10.77.0.0/16","node_slice_size":"/27","node_slice_parts":4,"network_name":"'$NETP'"}'
nth_of() { python3 -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[int(sys.argv[2])])' "$1" "$2"; }
sealed_by() { pool_json "$1" | jq -r '.metadata.annotations["allot.cni.cncf.io/slice-sealed"] // ""'; }
t_parts() {
  mk_node "$NP" && mk_nad_in "$POOLNS" parts "$IPAMP" || return 1
  wait_for 10 has_slice "$NETP" "$NP" || { echo "no slice for $NP"; return 1; }
  local slice pool p1 ip k part
  slice=$(slice_of "$NETP" "$NP")
  pool=$(pool_name "$slice" "$NETP" "$NP")
  p1=$("$ALLOT_NAMES" part "$pool" 1)
  for k in 1 2 3 4 5 6 7 8 9; do ip=$(slice_add "$NP" "pp$k" "$IPAMP") || return 1; done
  expect_eq "the 9th address" "$ip" "$(nth_of "$slice" 9)" || return 1
  expect_eq "allocations in part 0, $pool" "$(pool_count "$pool")" 7 || return 1
  expect_eq "allocations in part 1, $p1" "$(pool_count "$p1")" 2 || return 1
  expect_eq "spec.range of $p1" "$(pool_json "$p1" | jq -r .spec.range)" "$slice" || return 1
  kubectl delete node "$NP" >/dev/null || return 1
  for k in 1 2 3 4 5 6 7; do slice_del "$NP" "pp$k" "$IPAMP" || return 1; done
  expect_eq "allocations in $pool" "$(pool_count "$pool")" 0 || return 1
  never_for 3 not has_slice "$NETP" "$NP" || { echo "slice of $NP freed while $p1 holds addresses"; return 1; }
  slice_del "$NP" pp8 "$IPAMP" && slice_del "$NP" pp9 "$IPAMP" || return 1
  wait_for 10 not has_slice "$NETP" "$NP" || { echo "slice of $NP not freed after its parts emptied"; return 1; }
  for k in 0 1 2 3; do
    part=$("$ALLOT_NAMES" part "$pool" "$k")
    [[ -n "$(sealed_by "$part")" ]] || { echo "part $k, $part, not sealed"; pool_json "$part" | jq .metadata; return 1; }
  done
  note "$NP's $slice: 7 addresses in $pool, 2 in $p1; freed once both emptied, its 4 parts sealed"
}

check "allot-gc leads" t_start
check "a NAD with node_slice_size gets Whereabouts' NodeSlicePool, every Node a slice" t_assign
check "the plugin allocates in slice mode from the controller's slice" t_plugin
check "ADD on a node without a slice fails with code 11 naming the pool and node" t_no_slice
check "a removed Node's slice is freed only once its pool is empty" t_node_removed
check "a slice size change renumbers no live pod; new nodes get the new size" t_resize
check "IPv6 slices" t_ipv6
check "dual-stack: a NodeSlicePool per range, an address of each family" t_dual_stack
check "more Nodes than slices: metrics, Warning Events, code 11" t_exhausted
check "Whereabouts' plugin and allot's allocate at once on allot's slices, no duplicate" t_whereabouts
check "node_slice_parts beside a Whereabouts NAD: refused with code 7 naming it; Whereabouts' pods work, no duplicate" t_whereabouts_parts
check "the fast path: ADDs through the relay read no NodeSlicePool; seals guard a stale slice" t_fastpath
check "node_slice_parts: a slice in several IPPools, freed only once every part is empty" t_parts
check "the NodeSlicePool goes with its last NAD" t_nad_removed
check "repair: slice pool leaks, a gone Node's pool, an address outside its node's slice" t_repair
suite_summary
(( failed == 0 ))
