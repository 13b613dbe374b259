# shellcheck shell=bash
# Helpers of test/slices/slices_test.sh: Node and NAD objects, NodeSlicePools, and the plugin
# in slice mode. Source after test/integration/gc_lib.sh; call slices_init after gc_init.

# slices_init: the RBAC of this tree (the slice controller's verbs), and cleanup at exit.
slices_init() {
  SLICE_NODES=()
  on_exit slices_cleanup
  kubectl apply -f "$GC_ROOT/deploy/rbac.yaml" >/dev/null || return 1
  # The slice controller runs as the suites' controller identity (e2e/cluster).
  ctl_can() { kubectl --kubeconfig="$ALLOT_CONTROLLER_KUBECONFIG" auth can-i "$@" >/dev/null 2>&1; }
  wait_for 30 ctl_can create nodeslicepools.whereabouts.cni.cncf.io -n "$POOLNS" &&
    wait_for 30 ctl_can list network-attachment-definitions.k8s.cni.cncf.io --all-namespaces
}

slices_cleanup() {
  local pid n
  # shellcheck disable=SC2154 # gc_pids: test/integration/gc_lib.sh's, sourced first
  for pid in "${gc_pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  kubectl delete nodeslicepools -n "$POOLNS" --all --wait=false >/dev/null 2>&1
  for n in "${SLICE_NODES[@]}"; do
    kubectl delete node "$n" --wait=false >/dev/null 2>&1
    kubectl delete events -n default --field-selector "involvedObject.name=$n" >/dev/null 2>&1
  done
}

# mk_node NAME: a Node object (no kubelet behind it).
mk_node() {
  SLICE_NODES+=("$1")
  jq -n --arg n "$1" '{apiVersion: "v1", kind: "Node", metadata: {name: $n}}' | kubectl create -f - >/dev/null
}

# node_ready NAME: the Node reports Ready (as a kubelet would), so its pods count as running.
node_ready() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch node "$1" --subresource=status --type=merge -p \
    '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"'"$now"'","lastTransitionTime":"'"$now"'"}]}}' >/dev/null
}

nsp_json() { kubectl get nodeslicepool -n "$POOLNS" "$1" -o json 2>/dev/null; }
# slice_of NSP NODE: the node's first slice (what a plugin reads), "" when none.
slice_of() {
  nsp_json "$1" | jq -r --arg n "$2" '[.status.allocations[] | select(.nodeName == $n)][0].sliceRange // ""'
}
has_slice() { [[ -n "$(slice_of "$1" "$2")" ]]; }
# slice_is NSP NODE REGEX
slice_is() { [[ "$(slice_of "$1" "$2")" =~ $3 ]]; }
# nsp_field NSP JQ-PATH VALUE
nsp_field() { [[ "$(nsp_json "$1" | jq -r "$2")" == "$3" ]]; }
# unassigned_nodes NSP: Nodes with no slice in it.
unassigned_nodes() {
  local j
  j=$(nsp_json "$1")
  kubectl get nodes -o name | sed 's|^node/||' | while read -r n; do
    jq -e --arg n "$n" '[.status.allocations[] | select(.nodeName == $n)] | length == 0' <<<"$j" >/dev/null && echo "$n"
  done
}

# in_cidr IP CIDR
in_cidr() { python3 -c 'import ipaddress, sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }

is_leader() { [[ "$(gc_metric "$1" allot_is_leader)" == 1 ]]; }
# metric_is NAME SERIES VALUE
metric_is() { [[ "$(gc_metric "$1" "$2")" == "$3" ]]; }
# node_event NODE REASON: an Event with REASON about Node NODE (stored in "default").
node_event() {
  kubectl get events -n default -o json |
    jq -e --arg n "$1" --arg r "$2" '[.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == $n and .reason == $r and .type == "Warning")] | length > 0' >/dev/null
}

# slice_conf NODE IPAM_JSON: the network config a runtime hands the plugin on NODE.
slice_conf() { netconf "$RUN-net" "$2" "$1"; }
# slice_add NODE POD IPAM_JSON: ADD that must succeed; prints the first address.
slice_add() { add "$1" "ctr-$2" "$2" "uid-$2" "$(slice_conf "$1" "$3")"; }
# slice_del NODE POD IPAM_JSON: DEL that must succeed.
slice_del() {
  cni DEL "$1" "ctr-$2" "$2" "uid-$2" "$(slice_conf "$1" "$3")"
  [[ "$CNI_RC" == 0 ]] || { echo "DEL $2 on $1 failed: $CNI_OUT $CNI_ERR"; return 1; }
}

# wa_setup: Whereabouts' kubeconfig (admin, context namespace POOLNS: where it keeps pools and
# reads NodeSlicePools) and its flat file.
wa_setup() {
  mkdir -p "$WORK/wa"
  python3 - "$KUBECONFIG" "$POOLNS" "$WORK/wa/kubeconfig" <<'PY' || return 1
import re, sys
text = re.sub(r"^[ \t]*namespace:.*\n", "", open(sys.argv[1]).read(), flags=re.M)
text, n = re.subn(r"^([ \t]*)(cluster:[ \t]*\S+)[ \t]*$", lambda m: f"{m.group(1)}{m.group(2)}\n{m.group(1)}namespace: {sys.argv[2]}",
                  text, count=1, flags=re.M)
if n != 1: sys.exit("no context in the admin kubeconfig")
open(sys.argv[3], "w").write(text)
PY
  echo '{"datastore":"kubernetes"}' >"$WORK/wa/whereabouts.conf"
}

# both_plugins NODE...: on each NODE, SLICE_N ADDs through Whereabouts ($WA) and as many through
# allot, all at once; checks every ADD succeeded, no address twice, each inside its node's slice.
# SLICE_PARTS=N: allot's config sets node_slice_parts N. SLICE_REFUSED=TEXT: the network refuses
# parts (Whereabouts reads only part 0): every ADD of allot's must fail with code 7, its message
# naming the network and TEXT (the offending NAD), and every one of Whereabouts' succeed.
both_plugins() {
  local n=${SLICE_N:-8}
  python3 - "$n" "$@" <<'PY'
import json, os, subprocess, sys, ipaddress, time
from concurrent.futures import ThreadPoolExecutor
n, nodes = int(sys.argv[1]), sys.argv[2:]
parts = int(os.environ.get("SLICE_PARTS", "1"))
work, net, pns = os.environ["WORK"], os.environ["NETW"], os.environ["POOLNS"]
ipam = json.loads(os.environ["IPAMW"])
def conf(tool, node):
    i = dict(ipam)
    if tool == "wa":
        i.update(kubernetes={"kubeconfig": work + "/wa/kubeconfig"}, configuration_path=work + "/wa/whereabouts.conf")
        i.pop("namespace", None)
    else:
        i.update(type="allot", namespace=pns, kubernetes={"kubeconfig": os.environ["ALLOT_KUBECONFIG"]},
                 lock_dir=f"{work}/nodes/{node}/lock", journal_dir=f"{work}/nodes/{node}/journal")
        if parts > 1: i["node_slice_parts"] = parts
    return json.dumps({"cniVersion": "0.3.1", "name": os.environ["RUN"] + "-net", "type": "macvlan", "ipam": i})
def add(job):
    tool, node, k = job
    pod = f"{tool}-{node[-6:]}-{k}"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "ctr-" + pod,
           "CNI_NETNS": "/var/run/netns/none", "CNI_IFNAME": "net1", "CNI_PATH": "/opt/cni/bin", "NODENAME": node,
           "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE={os.environ['PODNS']};K8S_POD_NAME={pod}"}
    if tool == "allot": env["ALLOT_FLAT_FILES"] = os.environ["ALLOT_FLAT_FILES"]
    t0 = time.time()
    p = subprocess.run([os.environ["WA"] if tool == "wa" else os.environ["PLUGIN"]], input=conf(tool, node),
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return tool, node, None, p.stdout + "\n" + p.stderr, time.time() - t0
    return tool, node, json.loads(p.stdout)["ips"][0]["address"].split("/")[0], "", time.time() - t0
refused_by = os.environ.get("SLICE_REFUSED", "")
def refused_as_said(r):  # code 7, naming the network and the offending NAD
    try:
        e = json.JSONDecoder().raw_decode(r[3])[0]  # stdout's error, before stderr's log
    except ValueError:
        return False
    return e.get("code") == 7 and f"network {net}" in e.get("msg", "") and refused_by in e.get("msg", "")
slices = {}
for node in nodes:
    out = subprocess.run(["kubectl", "get", "nodeslicepool", "-n", pns, net, "-o", "json"], capture_output=True, text=True).stdout
    slices[node] = next(a["sliceRange"] for a in json.loads(out)["status"]["allocations"] if a["nodeName"] == node)
jobs = [(t, node, k) for k in range(n) for node in nodes for t in ("wa", "allot")]
t0 = time.time()
with ThreadPoolExecutor(len(jobs)) as ex:
    res = list(ex.map(add, jobs))
wall = time.time() - t0
refused = [r for r in res if refused_by and r[0] == "allot" and r[2] is None and refused_as_said(r)]
bad = [r for r in res if r[2] is None and r not in refused]
for r in bad: print("ADD failed:", r[0], r[1], r[3][-600:])
not_refused = [r for r in res if refused_by and r[0] == "allot" and r[2]]
for r in not_refused: print("allot ADD with parts not refused:", r[1], r[2])
ips = [r[2] for r in res if r[2]]
dups = len(ips) - len(set(ips))
outside = [r for r in res if r[2] and ipaddress.ip_address(r[2]) not in ipaddress.ip_network(slices[r[1]])]
for r in outside: print("outside its slice:", r[0], r[1], r[2], slices[r[1]])
# Each node's pool holds exactly the addresses its ADDs returned: no write lost another's entry.
lost = 0
for node in nodes:
    names = os.environ["ALLOT_NAMES"]
    pool = subprocess.run([names, "pool", slices[node], net, node], capture_output=True, text=True).stdout.strip()
    held = set()
    for k in range(parts):
        name = subprocess.run([names, "part", pool, str(k)], capture_output=True, text=True).stdout.strip()
        out = subprocess.run(["kubectl", "get", "ippool", "-n", pns, name, "-o", "json"], capture_output=True, text=True).stdout
        if not out: continue
        rng = ipaddress.ip_network(json.loads(out)["spec"]["range"])
        held |= {str(rng.network_address + int(k)) for k in json.loads(out)["spec"].get("allocations", {})}
    want = {r[2] for r in res if r[1] == node and r[2]}
    if held != want:
        lost += len(want - held)
        print(f"pool {pool}: holds {sorted(held)}, ADDs returned {sorted(want)}")
slow = {t: max(r[4] for r in res if r[0] == t) for t in ("wa", "allot")}
print(f"{len(jobs)} ADDs ({n} Whereabouts + {n} allot on each of {len(nodes)} nodes) in {wall:.1f} s: "
      f"{len(bad)} failed, {len(refused)} of allot's refused (code 7), {dups} duplicates, {len(outside)} outside their slice, {lost} missing from the pools; "
      f"slowest whereabouts {slow['wa']:.1f} s, allot {slow['allot']:.1f} s")
if refused: print("refused as:", json.JSONDecoder().raw_decode(refused[0][3])[0]["msg"])
sys.exit(1 if bad or not_refused or dups or outside or lost else 0)
PY
}
