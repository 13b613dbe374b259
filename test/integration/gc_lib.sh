# shellcheck shell=bash
# Helpers for allot-gc's integration tests (test/integration/gc_test.sh): pods, NADs and
# pools on the real API server of e2e/cluster, the real plugin for allocations, and allot-gc
# processes in the background. Source after test/lib.sh and cluster_start, then call gc_init.

GC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# gc_init: work dir, run id, a namespace for pods/NADs and one for pools, binary snapshots.
gc_init() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/allot-gc-itest.XXXXXX")
  RUN=gc$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
  PODNS=$RUN-pods
  POOLNS=$RUN-pools
  POOLNS2=$RUN-pools2  # a second pool namespace, named only by a NAD's IPAM `namespace` key
  export WORK RUN PODNS POOLNS POOLNS2
  on_exit gc_cleanup
  # Snapshots: a rebuild during the run must not pull a binary from under us.
  local b i
  local dir=$GC_ROOT/${GC_BUILD_DIR:-build}  # GC_BUILD_DIR=build-asan: the sanitizer build
  for b in plugin/allot gc-sidecar/allot-gc; do
    [[ -x "$dir/$b" ]] || { echo "missing $dir/$b: run scripts/build" >&2; return 1; }
    for (( i = 0; i < 20; i++ )); do  # a link in progress leaves a partial file: try again
      cp "$dir/$b" "$WORK/${b##*/}" 2>/dev/null && probe_bin "$WORK/${b##*/}" && break
      sleep 1
    done
    (( i < 20 )) || { echo "cannot run a copy of build/$b" >&2; return 1; }
  done
  PLUGIN=$WORK/allot
  GC=$WORK/allot-gc
  # Keep any flat file on this machine out of the tests: the network config says everything.
  # The admin's flat file names the work dir as one a network config may use for its node
  # files (lock_dir, journal_dir, log_file, relay_socket): allot refuses others.
  mkdir -p "$WORK/admin"
  jq -cn --arg w "$WORK" '{node_dirs: [$w]}' >"$WORK/admin/allot.conf"
  export ALLOT_FLAT_FILES=$WORK/admin/allot.conf
  kubectl create namespace "$PODNS" >/dev/null || return 1
  kubectl create namespace "$POOLNS" >/dev/null || return 1
  kubectl create namespace "$POOLNS2" >/dev/null || return 1
  KUBE_CA=$ALLOT_CLUSTER_DIR/pki/ca.crt
  KUBE_CERT=$ALLOT_CLUSTER_DIR/pki/admin.crt
  KUBE_KEY=$ALLOT_CLUSTER_DIR/pki/admin.key
  export KUBE_CA KUBE_CERT KUBE_KEY
}

probe_bin() {
  if [[ "$1" == */allot ]]; then
    echo '{"cniVersion":"1.1.0"}' | CNI_COMMAND=VERSION "$1" >/dev/null 2>&1
  else
    "$1" --help >/dev/null 2>&1
  fi
}

gc_cleanup() {
  local pid
  for pid in "${gc_pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  kubectl delete nodes -l "allot-test=$RUN" --wait=false >/dev/null 2>&1
  # No namespace controller runs: empty the namespaces, then finalize them by hand.
  local ns
  if [[ -n "${BIGNS:-}" ]]; then  # thousands of objects: one collection delete each
    kpy 'api("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % sys.argv[1])' "$BIGNS" >/dev/null 2>&1
  fi
  kpy '
for ns in sys.argv[1:]:
    for r in ("ippools", "overlappingrangeipreservations"):
        api("DELETE", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/%s" % (ns, r))' "$POOLNS" "$POOLNS2" >/dev/null 2>&1
  for ns in "$PODNS" "$POOLNS" "$POOLNS2" ${BIGNS:+"$BIGNS"}; do
    kubectl delete -n "$ns" --all --grace-period=0 --force --wait=false \
      pods,ippools,overlappingrangeipreservations,network-attachment-definitions,events >/dev/null 2>&1
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    kubectl get namespace "$ns" -o json 2>/dev/null | jq '.spec.finalizers = []' |
      kubectl replace --raw "/api/v1/namespaces/$ns/finalize" -f - >/dev/null 2>&1
  done
  kubectl delete lease -n kube-system "$RUN-lease" "$RUN-big-lease" --ignore-not-found >/dev/null 2>&1
  [[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}

# kpy SCRIPT [ARGS...]: runs python3 with `api(method, path, body=None) -> (status, obj)` bound
# to the API server as admin (one keep-alive connection per thread), and `pmap(fn, items, n)`.
kpy() {
  local script=$1; shift
  local f
  f=$(mktemp "$WORK/kpy.XXXXXX.py")
  cat >"$f" <<PY
import json, os, ssl, sys, threading, time, http.client, urllib.parse
from concurrent.futures import ThreadPoolExecutor
_u = urllib.parse.urlparse(os.environ["ALLOT_APISERVER"])
_ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
_ctx.load_cert_chain(os.environ["KUBE_CERT"], os.environ["KUBE_KEY"])
_local = threading.local()
def api(method, path, body=None, ctype="application/json"):
    for attempt in range(5):
        c = getattr(_local, "c", None)
        if c is None:
            c = _local.c = http.client.HTTPSConnection(_u.hostname, _u.port, context=_ctx, timeout=30)
        try:
            data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
            c.request(method, path, body=data, headers={"Content-Type": ctype} if data is not None else {})
            r = c.getresponse()
            raw = r.read()
            try:
                obj = json.loads(raw) if raw else None
            except ValueError:
                obj = None
            if r.status == 429 or r.status >= 500:
                time.sleep(0.1 * (attempt + 1)); continue
            return r.status, obj
        except (OSError, http.client.HTTPException):
            _local.c = None
            time.sleep(0.1 * (attempt + 1))
    return 0, None
def pmap(fn, items, n=16):
    with ThreadPoolExecutor(n) as ex:
        return list(ex.map(fn, items))
$script
PY
  python3 "$f" "$@"
  local rc=$?
  rm -f "$f"
  return $rc
}

# make_pods NODE NAME... : creates pods bound to NODE; prints "name uid" lines. HOST_NETWORK=1:
# hostNetwork pods.
make_pods() {
  local node=$1; shift
  kpy '
ns, node, names = os.environ["PODNS"], sys.argv[1], sys.argv[2:]
def mk(name):
    st, o = api("POST", "/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"nodeName": node, "hostNetwork": os.environ.get("HOST_NETWORK") == "1",
                 "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    if st != 201: raise SystemExit("create pod %s: %s %s" % (name, st, o))
    return "%s %s" % (name, o["metadata"]["uid"])
print("\n".join(pmap(mk, names)))
' "$node" "$@"
}

# pod_uid NAME: the uid of pod NAME ("" when absent).
pod_uid() { kubectl get pod -n "$PODNS" "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null; }

# del_pods NAME...: deletes the pods at once (grace period 0), in parallel; prints
# "name epoch-seconds" with the time each delete request was answered.
del_pods() {
  kpy '
ns = os.environ["PODNS"]
def rm(name):
    st, o = api("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, name), {"gracePeriodSeconds": 0})
    if st not in (200, 404): raise SystemExit("delete pod %s: %s" % (name, st))
    return "%s %.6f" % (name, time.time())
print("\n".join(pmap(rm, sys.argv[1:], 32)))
' "$@"
}

# set_network_status POD JSON: the annotation Multus writes after the pod's networks are up.
set_network_status() {
  kubectl annotate -n "$PODNS" pod "$1" --overwrite "k8s.v1.cni.cncf.io/network-status=$2" >/dev/null
}

# mk_nad NAME IPAM_JSON: a NetworkAttachmentDefinition in PODNS; its ipam section is
# IPAM_JSON + {type: allot, namespace: POOLNS}.
mk_nad() { mk_nad_in "$PODNS" "$@"; }

# mk_nad_in NS NAME IPAM_JSON: the same in namespace NS (created or replaced).
mk_nad_in() {
  local cfg
  cfg=$(jq -cn --arg name "$2" --arg ns "$POOLNS" --argjson ipam "$3" \
    '{cniVersion: "1.1.0", name: $name, type: "macvlan", master: "eth0",
      ipam: ({type: "allot", namespace: $ns} + $ipam)}')
  jq -n --arg name "$2" --arg ns "$1" --arg cfg "$cfg" \
    '{apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition",
      metadata: {name: $name, namespace: $ns}, spec: {config: $cfg}}' | kubectl apply -f - >/dev/null
}

# netconf NAD IPAM_JSON NODE: the network config the runtime hands the plugin on NODE.
netconf() {
  jq -cn --arg name "$1" --arg ns "$POOLNS" --argjson ipam "$2" --arg kc "${PLUGIN_KUBECONFIG:-$ALLOT_KUBECONFIG}" \
    --arg d "$WORK/nodes/$3" \
    '{cniVersion: "1.1.0", name: $name, type: "macvlan",
      ipam: ({type: "allot", namespace: $ns, kubernetes: {kubeconfig: $kc}, lock_dir: ($d + "/lock"),
              journal_dir: ($d + "/journal"), deadline_ms: (env.DEADLINE_MS // "5000" | tonumber)} + $ipam)}'
}

# cni VERB NODE CTR POD UID CONF: runs the plugin as a runtime would; sets CNI_RC, CNI_OUT, CNI_ERR.
cni() {
  local err=$WORK/cni.err
  CNI_OUT=$(printf '%s' "$6" | env CNI_COMMAND="$1" CNI_CONTAINERID="$3" CNI_NETNS=/var/run/netns/allot-gc-none \
    CNI_IFNAME="${IFNAME:-net1}" CNI_PATH=/opt/cni/bin NODENAME="$2" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$PODNS;K8S_POD_NAME=$4;K8S_POD_UID=$5" "$PLUGIN" 2>"$err")
  CNI_RC=$?
  CNI_ERR=$(<"$err")
  # Which sandboxes a pod UID had: pool_has_uid finds its entries by them where the API server
  # prunes `poduid` (Whereabouts' own CRDs).
  if [[ "$1" == ADD && "$CNI_RC" == 0 ]]; then echo "$5 $3" >>"$WORK/uid-ctr"; fi
}

# add NODE CTR POD UID CONF: ADD that must succeed; prints the address.
add() {
  cni ADD "$@"
  if [[ "$CNI_RC" != 0 ]]; then
    echo "ADD $2 for $3 failed: rc=$CNI_RC $CNI_OUT $CNI_ERR" >&2
    return 1
  fi
  jq -r '.ips[0].address | sub("/.*"; "")' <<<"$CNI_OUT"
}

# status_json NAD IFNAME IP: a network-status annotation naming PODNS/NAD with IP.
status_json() {
  jq -cn --arg n "$PODNS/$1" --arg i "$2" --arg ip "$3" \
    '[{name: "cbr0", interface: "eth0", ips: ["10.244.0.9"], default: true},
      {name: $n, interface: $i, ips: [$ip], mac: "02:00:00:00:00:01", dns: {}}]'
}

pool_json() { kubectl get ippool -n "$POOLNS" "$1" -o json 2>/dev/null; }
# pool_podrefs POOL: "podref uid" per allocation.
pool_holders() { pool_json "$1" | jq -r '(.spec.allocations // {})[] | "\(.podref) \(.poduid // "")"'; }
pool_has_podref() { pool_json "$1" | jq -e --arg p "$PODNS/$2" '[(.spec.allocations // {})[] | select(.podref == $p)] | length > 0' >/dev/null; }
# pool_has_uid POOL UID: an entry of pod UID: its `poduid`, or, where a schema pruned that, the
# container ID of one of its ADDs (cni above).
pool_has_uid() {
  local ctrs
  ctrs=$(awk -v u="$2" '$1 == u { print $2 }' "$WORK/uid-ctr" 2>/dev/null | jq -R . | jq -sc .)
  pool_json "$1" | jq -e --arg u "$2" --argjson c "$ctrs" \
    '[(.spec.allocations // {})[] | select(.poduid == $u or (.poduid == null and (.id as $i | any($c[]; . == $i))))] | length > 0' >/dev/null
}
pool_count() { pool_json "$1" | jq '(.spec.allocations // {}) | length'; }
res_exists() { kubectl get overlappingrangeipreservation -n "$POOLNS" "$1" >/dev/null 2>&1; }
# in_pools2 COMMAND...: a pool helper above on POOLNS2 instead of POOLNS.
in_pools2() { POOLNS=$POOLNS2 "$@"; }


# mk_node NAME READY [SECONDS]: a Node object (no kubelet behind it) whose Ready condition is
# READY (True or False) since SECONDS ago (default 0). Removed at the end of the run.
mk_node() {
  local since
  since=$(date -u -d "@$(( $(date +%s) - ${3:-0} ))" +%Y-%m-%dT%H:%M:%SZ)
  jq -n --arg n "$1" --arg r "$RUN" '{apiVersion: "v1", kind: "Node",
      metadata: {name: $n, labels: {"allot-test": $r}}}' | kubectl create -f - >/dev/null || return 1
  kubectl patch node "$1" --subresource=status --type=merge -p "$(jq -cn --arg s "$2" --arg t "$since" \
    '{status: {conditions: [{type: "Ready", status: $s, reason: "Test", message: "set by the test",
       lastTransitionTime: $t, lastHeartbeatTime: $t}]}}')" >/dev/null
}

# start_gc NAME NODE [FLAGS...]: runs allot-gc in the background as the allot ServiceAccount
# (allot-controller with --role=controller);
# sets GC_PORT_<NAME> and GC_PID_<NAME>; waits until /readyz answers 200.
gc_pids=()
start_gc() {
  local name=$1 node=$2; shift 2
  local port kc=$ALLOT_KUBECONFIG
  # A controller runs as the controller's identity, as its Deployment does.
  [[ " $* " == *" --role=controller "* ]] && kc=$ALLOT_CONTROLLER_KUBECONFIG
  port=$(free_port)
  "$GC" --node-name="$node" --kubeconfig="$kc" --namespace="$POOLNS" \
    --listen="127.0.0.1:$port" --lease-name="$RUN-lease" --lease-namespace=kube-system \
    --journal-dir="$WORK/nodes/$node/journal" --journal-interval=500ms "$@" \
    >>"$WORK/gc-$name.log" 2>&1 &
  local pid=$!
  gc_pids+=("$pid")
  printf -v "GC_PORT_$name" '%s' "$port"
  printf -v "GC_PID_$name" '%s' "$pid"
  [[ -n "${GC_NOWAIT:-}" ]] && return 0
  wait_for 20 gc_ready "$name" || { echo "allot-gc $name not ready:"; tail -n 20 "$WORK/gc-$name.log"; return 1; }
}
gc_port() { local v="GC_PORT_$1"; echo "${!v}"; }
gc_pid() { local v="GC_PID_$1"; echo "${!v}"; }
gc_ready() { [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(gc_port "$1")/readyz")" == 200 ]]; }
gc_http() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$(gc_port "$1")$2"; }
gc_metrics() { curl -s --max-time 5 "http://127.0.0.1:$(gc_port "$1")/metrics"; }
# gc_metric NAME SERIES: the value of one series ("allot_is_leader", 'allot_releases_total{reason="leak"}').
gc_metric() { gc_metrics "$1" | awk -v s="$2" '$1 == s { print $2; found=1 } END { if (!found) print "" }'; }
# stop_gc NAME: SIGTERM, wait for the exit; prints the exit status.
stop_gc() {
  local pid
  pid=$(gc_pid "$1")
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
gc_log() { cat "$WORK/gc-$1.log"; }

# events REASON: "involvedObject-name message" of Events with REASON in PODNS and POOLNS.
events() {
  local ns
  for ns in "$PODNS" "$POOLNS"; do
    kubectl get events -n "$ns" -o json | jq -r --arg r "$1" '.items[] | select(.reason == $r) | "\(.involvedObject.name) \(.message)"'
  done
}
# ns_has_event NS REASON TEXT: an Event in namespace NS with REASON whose message contains TEXT.
ns_has_event() {
  kubectl get events -n "$1" -o json | jq -e --arg r "$2" --arg t "$3" \
    '[.items[] | select(.reason == $r and (.message | contains($t)))] | length > 0' >/dev/null
}
# has_event REASON TEXT: an Event with REASON whose line contains TEXT.
has_event() { events "$1" | grep -q -- "$2"; }

# annotate_many NAD IFNAME LINES-FILE: writes each pod's network-status ("name ip" lines), in
# parallel, as Multus does once the pod's networks are up.
annotate_many() {
  kpy '
ns, nad, ifname = os.environ["PODNS"], sys.argv[1], sys.argv[2]
lines = [l.split() for l in open(sys.argv[3]).read().splitlines() if l.strip()]
def ann(x):
    name, ip = x
    status = [{"name": "cbr0", "interface": "eth0", "ips": ["10.244.0.9"], "default": True},
              {"name": ns + "/" + nad, "interface": ifname, "ips": [ip], "mac": "02:00:00:00:00:01", "dns": {}}]
    st, o = api("PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, name),
                {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": json.dumps(status)}}},
                "application/merge-patch+json")
    if st != 200: raise SystemExit("annotate %s: %s" % (name, st))
pmap(ann, lines)
' "$1" "$2" "$3"
}

# release_latency POOL PODS-FILE: deletes all the pods ("name uid" lines) at once and watches
# POOL until each one's allocation is gone. Prints "p50 p99 max send-spread" in seconds (delete
# request sent -> the pool write without the allocation seen on a watch of the pool), or fails
# after 60 s.
release_latency() {
  kpy '
ns, pns, pool = os.environ["PODNS"], os.environ["POOLNS"], sys.argv[1]
pods = [l.split() for l in open(sys.argv[2]).read().splitlines() if l.strip()]
want = {uid: name for name, uid in pods}
sent, gone = {}, {}
base = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/ippools" % pns
st, o = api("GET", base + "/" + pool)
if st != 200: raise SystemExit("get pool: %s" % st)
ready = threading.Event()
def watch():
    # A watch, not polling: exact times, and no load on the API server beyond the events.
    c = http.client.HTTPSConnection(_u.hostname, _u.port, context=_ctx, timeout=60)
    c.request("GET", base + "?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s" % (pool, o["metadata"]["resourceVersion"]))
    r = c.getresponse()
    ready.set()
    while len(gone) < len(want):
        line = r.readline()
        if not line: return
        t = time.time()
        if not line.strip(): continue
        ev = json.loads(line)
        # By podref: a schema may prune poduid (the Whereabouts CRDs).
        held = {a.get("podref") for a in (ev["object"].get("spec", {}).get("allocations") or {}).values()}
        for uid, name in want.items():
            if ns + "/" + name not in held and uid not in gone: gone[uid] = t
th = threading.Thread(target=watch, daemon=True); th.start()
ready.wait(10)
def rm(p):
    name, uid = p
    sent[uid] = time.time()
    st, o = api("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, name), {"gracePeriodSeconds": 0})
    if st not in (200, 404): raise SystemExit("delete %s: %s" % (name, st))
pmap(rm, pods, 16)
th.join(60)
if len(gone) != len(want):
    raise SystemExit("%d of %d allocations not released within 60 s" % (len(want) - len(gone), len(want)))
lat = sorted(gone[u] - sent[u] for u in want)
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print("%.3f %.3f %.3f %.3f" % (pick(0.5), pick(0.99), lat[-1], max(sent.values()) - min(sent.values())))
' "$1" "$2"
}

# make_host_pods NODE NAME...: like make_pods, with spec.hostNetwork (no network-status).
make_host_pods() { HOST_NETWORK=1 make_pods "$@"; }

# mark_stopped POD...: the kubelet's last status before its final delete: every container
# terminated (what allot-gc takes as proof that the sandbox is gone).
# set_phase POD PHASE: the pod's status.phase, as its kubelet would report it.
set_phase() {
  kubectl patch pod -n "$PODNS" "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"$2\"}}" >/dev/null
}

mark_stopped() {
  kpy '
ns = os.environ["PODNS"]
def stop(name):
    st, o = api("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (ns, name),
                {"status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": False,
                 "restartCount": 0, "image": "registry.k8s.io/pause:3.10", "imageID": "",
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}},
                "application/merge-patch+json")
    if st != 200: raise SystemExit("status of %s: %s %s" % (name, st, o))
pmap(stop, sys.argv[1:])
' "$@"
}

# ippool_lists_since MARK: IPPool LIST requests in the audit log after line MARK.
ippool_lists_since() {
  tail -n "+$(( $1 + 1 ))" "$ALLOT_AUDIT_LOG" |
    jq -c 'select(.stage == "ResponseComplete" and .verb == "list" and .objectRef.resource == "ippools")' | wc -l
}
