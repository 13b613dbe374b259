#!/usr/bin/env bash
# kubectl-allot (issue 19) against a real kube-apiserver and etcd (e2e/cluster), in pools the
# real plugin (build/plugin/allot) wrote, plus pools and reservations written through the API
# in Whereabouts' form and as seeded anomalies: each command's output, JSON shape and exit
# codes; `check` on 5,000 healthy allocations with one of each anomaly kind seeded (every one
# found, nothing else, timed); `release` through allot-gc's path with its Event; `lint`; and
# `kubectl allot` found on PATH as a kubectl plugin.
#
#   test/cli/cli_test.sh [KUBECTL_ALLOT]     default build/cli/kubectl-allot
#   CLI_BIG=N                                healthy allocations for the check (default 5000)
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up, else starts a private one.
# Prints `ok - NAME` / `not ok - NAME` per check, then `cli: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=cli
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"

cluster_start || suite_die "cluster starts"
gc_init || suite_die "plugin binary present"
CHECK_DIR=$WORK
CHECK_TIME=ms
mkdir -p "$WORK/bin"
CLI_BUILT=${1:-$root/build/cli/kubectl-allot}
cp "$CLI_BUILT" "$WORK/bin/kubectl-allot" || suite_die "kubectl-allot binary present"
CLI=$WORK/bin/kubectl-allot
BIG=${CLI_BIG:-5000}
# The check's namespace: BIG pods and the pools of the check (gc_cleanup empties BIGNS).
BIGNS=$RUN-check
kubectl create namespace "$BIGNS" >/dev/null || suite_die "namespace $BIGNS"
# One collection delete per kind (gc_cleanup, which runs after this, deletes one by one).
on_exit "kpy 'for r in (\"ippools\", \"overlappingrangeipreservations\"):
    api(\"DELETE\", \"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/%s\" % (sys.argv[1], r))' '$BIGNS' >/dev/null 2>&1"

# ka ARGS...: kubectl-allot as the admin (KUBECONFIG), on the suite's pool namespace.
ka() { "$CLI" --pool-namespace "$POOLNS" "$@"; }
# rc_of CMD...: the exit status, output to $WORK/out (stdout) and $WORK/err.
rc_of() { "$@" >"$WORK/out" 2>"$WORK/err"; echo $?; }
expect_json() {  # expect_json WHAT JQ-BOOLEAN (over $WORK/out)
  jq -e "$2" "$WORK/out" >/dev/null 2>&1 && return 0
  echo "$1: output does not satisfy $2:"; head -c 3000 "$WORK/out"; echo; cat "$WORK/err"
  return 1
}
set_phase() {  # set_phase POD PHASE (no kubelet runs: the status is written by hand)
  kubectl patch pod -n "$PODNS" "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"$2\"}}" >/dev/null
}
uid_of() { awk -v n="$1" '$1 == n { print $2 }' "$WORK/pods"; }

# ---------------------------------------------------------------- setup --

R=10.141.0.0/24
NET=$RUN-a
mk_nad "$NET" "{\"range\":\"$R\"}" || suite_die "NAD $NET"
mk_node node-a True || suite_die "Node node-a"  # it exists: its sandboxes may hold addresses
make_pods node-a a1 a2 a3 >"$WORK/pods" || suite_die "pods"
CONF=$(netconf "$NET" "{\"range\":\"$R\"}" node-a)
IP1=$(add node-a ctr-a1 a1 "$(uid_of a1)" "$CONF") || suite_die "ADD a1"
IP2=$(add node-a ctr-a2 a2 "$(uid_of a2)" "$CONF") || suite_die "ADD a2"
IP3=$(add node-a ctr-a3 a3 "$(uid_of a3)" "$CONF") || suite_die "ADD a3"
POOL=$(pool_name "$R")
set_phase a1 Running

# ------------------------------------------------------------- commands --

t_help_and_usage() {
  local c
  for c in pools who pod check release lint; do
    "$CLI" "$c" --help | grep -q "Usage: kubectl allot $c" || { echo "$c --help"; return 1; }
  done
  expect_eq "no command" "$(rc_of "$CLI")" 2 || return 1
  expect_eq "unknown flag" "$(rc_of "$CLI" pools --bogus)" 2 || return 1
  grep -q 'unknown flag --bogus' "$WORK/err" || return 1
  expect_eq "bad output" "$(rc_of "$CLI" pools -o xml)" 2 || return 1
  grep -q '"xml" is not a format: want table, wide, json or yaml' "$WORK/err" || { cat "$WORK/err"; return 1; }
  # -n is the pods' namespace now: a command that names no pod says where the pools' went.
  expect_eq "pools -n" "$(rc_of "$CLI" -n "$POOLNS" pools)" 2 || return 1
  grep -q -- '--pool-namespace' "$WORK/err" || { cat "$WORK/err"; return 1; }
  expect_eq "missing kubeconfig" "$(rc_of "$CLI" --kubeconfig "$WORK/none" pools)" 3 || return 1
  grep -q "$WORK/none" "$WORK/err" || { cat "$WORK/err"; return 1; }
  [[ ! -s "$WORK/out" ]] || { echo "stdout on error:"; cat "$WORK/out"; return 1; }
}

t_pools() {
  expect_eq "pools rc" "$(rc_of ka pools -o json)" 0 || return 1
  expect_json "pool" "(.namespace == \"$POOLNS\") and ([.pools[] | select(.name == \"$POOL\")] | length == 1)" || return 1
  expect_json "use" ".pools[] | select(.name == \"$POOL\") | .range == \"$R\" and .size == 254 and .used == 3 and .free == 251 and .percentUsed == 1.2 and .node == \"\"" || return 1
  expect_json "networks" ".pools[] | select(.name == \"$POOL\") | .networks == [\"$PODNS/$NET\"]" || return 1
  expect_eq "table rc" "$(rc_of ka pools)" 0 || return 1
  grep -Eq "^POOL +RANGE +SIZE +USED +FREE +USED% +NODE +NETWORKS$" "$WORK/out" || { cat "$WORK/out"; return 1; }
  grep -Eq "^$POOL +$R +254 +3 +251 +1.2 +- +$PODNS/$NET$" "$WORK/out" || { cat "$WORK/out"; return 1; }
  expect_eq "yaml rc" "$(rc_of ka pools -o yaml)" 0 || return 1
  grep -q "\"name\": \"$POOL\"" "$WORK/out" || { cat "$WORK/out"; return 1; }
  expect_eq "wide rc" "$(rc_of ka pools -o wide)" 0 || return 1
  grep -Eq "^$POOLNS +$POOL +$R +254 +3 +251 +1.2 +- +$PODNS/$NET$" "$WORK/out" || { cat "$WORK/out"; return 1; }
}

t_who() {
  expect_eq "who rc" "$(rc_of ka who "$IP1" "$IP2" -o json)" 0 || return 1
  expect_json "who a1" ".results[0] | .ip == \"$IP1\" and .held and .pool == \"$POOL\" and .podRef == \"$PODNS/a1\" and .containerID == \"ctr-a1\" and .interface == \"net1\" and .node == \"node-a\" and .podUID == \"$(uid_of a1)\" and .podState == \"running\" and .network == \"$NET\"" || return 1
  expect_json "reservation" ".results[0].reservation | .exists and .agrees and .name == \"$(res_name "$IP1")\" and .podRef == \"$PODNS/a1\"" || return 1
  expect_json "who a2" ".results[1] | .podRef == \"$PODNS/a2\" and .podState == \"pending\"" || return 1
  expect_eq "free rc" "$(rc_of ka who 10.141.0.250 -o json)" 4 || return 1
  expect_json "free" ".results == [{\"ip\": \"10.141.0.250\", \"held\": false}]" || return 1
  expect_eq "not an IP" "$(rc_of ka who 10.141.0.999)" 2 || return 1
  expect_eq "table rc" "$(rc_of ka who "$IP1")" 0 || return 1
  grep -Eq "^$IP1 +$POOL +$PODNS/a1 +running +net1 +node-a +ctr-a1 " "$WORK/out" || { cat "$WORK/out"; return 1; }
  expect_eq "wide rc" "$(rc_of ka who "$IP1" -o wide)" 0 || return 1
  { grep -Eq " +NETWORK +OFFSET$" "$WORK/out" && grep -Eq " +$NET +${IP1##*.}$" "$WORK/out"; } || { cat "$WORK/out"; return 1; }
}

t_pod() {
  expect_eq "pod rc" "$(rc_of ka pod "$PODNS/a3" -o json)" 0 || return 1
  expect_json "pod" ".pod == \"$PODNS/a3\" and .podUID == \"$(uid_of a3)\" and .podState == \"pending\" and ([.addresses[].ip] == [\"$IP3\"])" || return 1
  expect_eq "none rc" "$(rc_of ka pod "$PODNS/nobody")" 4 || return 1
  # As in kubectl: -n names the pod's namespace.
  expect_eq "pod -n rc" "$(rc_of ka pod -n "$PODNS" a3 -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "pod -n" ".pod == \"$PODNS/a3\" and ([.addresses[].ip] == [\"$IP3\"])" || return 1
  expect_eq "pod -n other rc" "$(rc_of ka pod -n default a3)" 4 || return 1
  expect_eq "pod list rc" "$(rc_of ka pod -n "$PODNS" -o json)" 0 || return 1
  expect_json "pod list" "[.addresses[].ip] | sort == ([\"$IP1\", \"$IP2\", \"$IP3\"] | sort)" || return 1
  expect_eq "pod -A rc" "$(rc_of ka pod -A a2 -o json)" 0 || return 1
  expect_json "pod -A" "[.addresses[].podRef] == [\"$PODNS/a2\"]" || return 1
}

# A context whose namespace is an app's: pod NAME is looked up there, and the pools are still
# the pools' namespace's (never the context's).
t_context_namespace() {
  local kc=$WORK/app.kubeconfig
  cp "$KUBECONFIG" "$kc" && kubectl --kubeconfig "$kc" config set-context --current --namespace "$PODNS" >/dev/null || return 1
  expect_eq "pod rc" "$(ALLOT_POOL_NAMESPACE=$POOLNS rc_of "$CLI" --kubeconfig "$kc" pod a1 -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "pod" ".pod == \"$PODNS/a1\" and ([.addresses[].ip] == [\"$IP1\"])" || return 1
  expect_eq "pools rc" "$(ALLOT_POOL_NAMESPACE=$POOLNS rc_of "$CLI" --kubeconfig "$kc" pools -o json)" 0 || return 1
  expect_json "pools" "(.namespace == \"$POOLNS\") and ([.pools[] | select(.name == \"$POOL\")] | length == 1)" || return 1
  expect_eq "pools default rc" "$(env -u ALLOT_POOL_NAMESPACE "$CLI" --kubeconfig "$kc" pools -o json >"$WORK/out" 2>"$WORK/err"; echo $?)" 0 || return 1
  expect_json "kube-system, not the context's" '.namespace == "kube-system"' || return 1
}

# A pool as Whereabouts writes it (no node, poduid or network on the entries).
t_whereabouts_pool() {
  kubectl apply -f - >/dev/null <<EOF || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata: {name: 10.142.0.0-24, namespace: $POOLNS}
spec:
  range: 10.142.0.0/24
  allocations:
    "5": {id: wb-ctr, podref: $PODNS/wb-pod, ifname: net1}
EOF
  expect_eq "who rc" "$(rc_of ka who 10.142.0.5 -o json)" 0 || return 1
  expect_json "who" ".results[0] | .pool == \"10.142.0.0-24\" and .containerID == \"wb-ctr\" and .podRef == \"$PODNS/wb-pod\" and .podUID == \"\" and .node == \"\" and .podState == \"gone\" and (.reservation.exists | not)" || return 1
  expect_eq "pools rc" "$(rc_of ka pools -o json)" 0 || return 1
  expect_json "pools" ".pools[] | select(.name == \"10.142.0.0-24\") | .used == 1 and .size == 254" || return 1
  kubectl delete ippool -n "$POOLNS" 10.142.0.0-24 >/dev/null
}

# A pool the Whereabouts binary itself wrote (bench/build-whereabouts; cached by the diff suite).
t_whereabouts_binary() {
  local wa=$1 kc=$WORK/wa.kubeconfig conf ip
  cp "$KUBECONFIG" "$kc" && kubectl --kubeconfig "$kc" config set-context --current --namespace "$POOLNS" >/dev/null || return 1
  echo '{"datastore":"kubernetes"}' >"$WORK/wa.conf"
  conf=$(jq -cn --arg kc "$kc" --arg flat "$WORK/wa.conf" '{cniVersion: "0.3.1", name: "wanet", type: "macvlan",
    ipam: {type: "whereabouts", range: "10.143.0.0/24", kubernetes: {kubeconfig: $kc}, configuration_path: $flat}}')
  make_pods node-w wa1 >>"$WORK/pods" || return 1
  ip=$(printf '%s' "$conf" | env CNI_COMMAND=ADD CNI_CONTAINERID=wa-ctr CNI_NETNS=/var/run/netns/none CNI_IFNAME=net1 \
    CNI_PATH=/opt/cni/bin "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=$PODNS;K8S_POD_NAME=wa1" "$wa" 2>"$WORK/wa.err" |
    jq -r '.ips[0].address | sub("/.*"; "")') || return 1
  [[ "$ip" == 10.143.0.* ]] || { echo "Whereabouts ADD: $ip"; cat "$WORK/wa.err"; return 1; }
  expect_eq "who rc" "$(rc_of ka who "$ip" -o json)" 0 || return 1
  expect_json "who" ".results[0] | .pool == \"10.143.0.0-24\" and .containerID == \"wa-ctr\" and .podRef == \"$PODNS/wa1\" and .podState == \"pending\" and .reservation.exists and .reservation.agrees" || return 1
  expect_eq "pools rc" "$(rc_of ka pools -o json)" 0 || return 1
  expect_json "pools" ".pools[] | select(.name == \"10.143.0.0-24\") | .used == 1" || return 1
  kubectl delete ippool -n "$POOLNS" 10.143.0.0-24 >/dev/null
  kubectl delete overlappingrangeipreservation -n "$POOLNS" "$ip" >/dev/null
}

# Through kubectl's plugin mechanism: kubectl-allot on PATH is `kubectl allot`.
t_kubectl_plugin() {
  PATH=$WORK/bin:$PATH kubectl allot --pool-namespace "$POOLNS" who "$IP1" -o json >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; return 1; }
  expect_json "kubectl allot who" ".results[0].podRef == \"$PODNS/a1\"" || return 1
  PATH=$WORK/bin:$PATH kubectl allot pod -n "$PODNS" a1 --pool-namespace "$POOLNS" -o json >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; return 1; }
  expect_json "kubectl allot pod -n" "[.addresses[].ip] == [\"$IP1\"]" || return 1
}

check "help, usage errors and exit codes" t_help_and_usage
check "pools: size, use, networks (table, JSON, YAML)" t_pools
check "who: pool, pod, state and reservation; exit 4 for a free address" t_who
check "pod: every address of a pod; -n the pod's namespace, no name lists, -A every namespace" t_pod
check "a context namespace set to an app's: pod NAME is found there, pools stay the pools'" t_context_namespace
check "who and pools read a pool written in Whereabouts' form" t_whereabouts_pool
if wa_bin=$("$root/bench/build-whereabouts" --print 2>/dev/null); then
  check "who and pools read a pool the Whereabouts binary wrote" t_whereabouts_binary "$wa_bin"
else
  skip "who and pools on a pool the Whereabouts binary wrote (no cached build: bench/build-whereabouts)"
fi
check "kubectl allot works as a kubectl plugin" t_kubectl_plugin

# ----------------------------------------------------- exec credentials --

# kubectl's exec credential plugins (client.authentication.k8s.io/v1), as managed clusters log
# in: scripts this test writes into EXEC_DIR, each handing out what a cloud's plugin would.
EXEC_DIR=$WORK/exec
EXEC_SA=$RUN-exec
EXEC_HINT="Install allot-login: see https://example.com/allot-login"

# exec_kubeconfig FILE PLUGIN: a kubeconfig of this cluster whose user runs PLUGIN.
exec_kubeconfig() {
  local server ca
  server=$(kubectl config view --minify --flatten -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --minify --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: plugin-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $2
      args: [--audience, allot]
      env: [{name: EXEC_TEST_DIR, value: "$EXEC_DIR"}]
      interactiveMode: Never
      provideClusterInfo: true
      installHint: "$EXEC_HINT"
contexts:
- {name: c, context: {cluster: c, user: plugin-user}}
current-context: c
EOF
}

# exec_plugin NAME < BODY: an executable shell script EXEC_DIR/NAME.
exec_plugin() {
  { echo '#!/bin/sh'; cat; } >"$EXEC_DIR/$1" && chmod +x "$EXEC_DIR/$1"
}

exec_setup() {
  mkdir -p "$EXEC_DIR" || return 1
  # A ServiceAccount that may read what `pools` reads: the pools and the NADs.
  kubectl create serviceaccount "$EXEC_SA" -n "$POOLNS" >/dev/null || return 1
  on_exit "kubectl delete clusterrole,clusterrolebinding $EXEC_SA --ignore-not-found >/dev/null 2>&1"
  kubectl create clusterrole "$EXEC_SA" --verb=get,list \
    --resource=ippools.whereabouts.cni.cncf.io,nodeslicepools.whereabouts.cni.cncf.io,network-attachment-definitions.k8s.cni.cncf.io >/dev/null || return 1
  kubectl create clusterrolebinding "$EXEC_SA" --clusterrole="$EXEC_SA" \
    --serviceaccount="$POOLNS:$EXEC_SA" >/dev/null || return 1
  kubectl create token "$EXEC_SA" -n "$POOLNS" --duration=1h >"$EXEC_DIR/token" || return 1
  # Each run appends its args to `runs` and keeps KUBERNETES_EXEC_INFO, then prints the
  # ExecCredential, as aws eks get-token or gke-gcloud-auth-plugin do.
  exec_plugin token.sh <<'EOF' || return 1
echo "$*" >>"$EXEC_TEST_DIR/runs"
printf %s "$KUBERNETES_EXEC_INFO" >"$EXEC_TEST_DIR/info"
jq -n --rawfile t "$EXEC_TEST_DIR/token" --arg e "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" \
  '{apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential",
    status: {token: ($t | rtrimstr("\n")), expirationTimestamp: $e}}'
EOF
  # The admin's client certificate and key, as a plugin of a cluster with certificates does.
  exec_plugin cert.sh <<EOF || return 1
jq -n --rawfile c "$KUBE_CERT" --rawfile k "$KUBE_KEY" \
  '{apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential",
    status: {clientCertificateData: \$c, clientKeyData: \$k}}'
EOF
  exec_plugin fail.sh <<'EOF'
echo "allot-login: no session; run allot-login auth first" >&2
exit 1
EOF
}

t_exec_token() {
  local kc=$EXEC_DIR/token.kubeconfig mark server
  exec_kubeconfig "$kc" "$EXEC_DIR/token.sh"
  mark=$(audit_mark)
  expect_eq "pools rc" "$(rc_of "$CLI" --kubeconfig "$kc" --pool-namespace "$POOLNS" pools -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "pools" "[.pools[] | select(.name == \"$POOL\")] | length == 1" || return 1
  # One run for all the command's requests, with the kubeconfig's args and the cluster asked for.
  expect_eq "runs" "$(cat "$EXEC_DIR/runs")" "--audience allot" || return 1
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  jq -e --arg s "$server" '.apiVersion == "client.authentication.k8s.io/v1" and .spec.interactive == false
    and .spec.cluster.server == $s and (.spec.cluster["certificate-authority-data"] | length > 0)' \
    "$EXEC_DIR/info" >/dev/null || { echo "KUBERNETES_EXEC_INFO:"; cat "$EXEC_DIR/info"; return 1; }
  # The API server saw the ServiceAccount, not the admin.
  audit_settle
  (( $(audit_since "$mark" ".user.username == \"system:serviceaccount:$POOLNS:$EXEC_SA\" and .objectRef.resource == \"ippools\"") > 0 )) ||
    { echo "no IPPool request as the ServiceAccount"; return 1; }
  # Through kubectl itself, as an operator runs it.
  PATH=$WORK/bin:$PATH KUBECONFIG=$kc kubectl allot --pool-namespace "$POOLNS" pools >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; return 1; }
  grep -q "^$POOL " "$WORK/out" || { cat "$WORK/out"; return 1; }
}

t_exec_cert() {
  local kc=$EXEC_DIR/cert.kubeconfig
  exec_kubeconfig "$kc" "$EXEC_DIR/cert.sh"
  expect_eq "pools rc" "$(rc_of "$CLI" --kubeconfig "$kc" --pool-namespace "$POOLNS" pools -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "pools" "[.pools[] | select(.name == \"$POOL\")] | length == 1" || return 1
}

t_exec_fails() {
  local kc=$EXEC_DIR/fail.kubeconfig
  exec_kubeconfig "$kc" "$EXEC_DIR/fail.sh"
  expect_eq "failing plugin rc" "$(rc_of "$CLI" --kubeconfig "$kc" --pool-namespace "$POOLNS" pools)" 3 || return 1
  grep -qF "exec plugin \"$EXEC_DIR/fail.sh\" exited with status 1" "$WORK/err" || { cat "$WORK/err"; return 1; }
  grep -qF "its stderr ended: allot-login: no session; run allot-login auth first" "$WORK/err" || { cat "$WORK/err"; return 1; }
  grep -qF "install hint: $EXEC_HINT" "$WORK/err" || { cat "$WORK/err"; return 1; }
  [[ ! -s "$WORK/out" ]] || { echo "stdout on error:"; cat "$WORK/out"; return 1; }
  exec_kubeconfig "$kc" allot-login-not-installed
  expect_eq "missing plugin rc" "$(rc_of "$CLI" --kubeconfig "$kc" --pool-namespace "$POOLNS" pools)" 3 || return 1
  grep -qF "exec plugin \"allot-login-not-installed\" is not on PATH; install hint: $EXEC_HINT" "$WORK/err" || { cat "$WORK/err"; return 1; }
}

exec_setup || suite_die "exec credential plugins and their ServiceAccount"
check "exec credential plugin: pools as the ServiceAccount whose token the plugin hands out" t_exec_token
check "exec credential plugin: pools with the client certificate the plugin hands out" t_exec_cert
check "exec credential plugin that fails or is missing: exit 3 naming it, its stderr and installHint" t_exec_fails

# ---------------------------------------------------------------- check --

# BIG pods in BIGNS, one IPPool (a /19) with an entry for each, each entry with its reservation:
# written through the API (the plugin would need BIG execs of a growing pool).
seed_big() {
  kpy '
ns, n = sys.argv[1], int(sys.argv[2])
def mk(i):
    st, o = api("POST", "/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "b-%d" % i, "namespace": ns},
        "spec": {"nodeName": "node-b", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
    if st != 201: raise SystemExit("pod %d: %s %s" % (i, st, o))
    return o["metadata"]["uid"]
uids = pmap(mk, list(range(n)), 16)
def ip(k): return "10.160.%d.%d" % ((k + 1) // 256, (k + 1) % 256)
entries = {str(k + 1): {"id": "ctr-b-%d" % k, "podref": "%s/b-%d" % (ns, k), "ifname": "net1",
                        "poduid": uids[k], "node": "node-b", "network": "bignet"} for k in range(n)}
st, o = api("POST", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/ippools" % ns,
            {"apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "IPPool",
             "metadata": {"name": "10.160.0.0-19", "namespace": ns},
             "spec": {"range": "10.160.0.0/19", "allocations": entries}})
if st != 201: raise SystemExit("pool: %s %s" % (st, o))
def res(k):
    st, o = api("POST", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/overlappingrangeipreservations" % ns,
                {"apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "OverlappingRangeIPReservation",
                 "metadata": {"name": ip(k), "namespace": ns},
                 "spec": {"containerid": "ctr-b-%d" % k, "podref": "%s/b-%d" % (ns, k), "ifname": "net1"}})
    if st != 201: raise SystemExit("reservation %s: %s" % (ip(k), st))
pmap(res, list(range(n)), 16)
' "$BIGNS" "$BIG"
}

# The check's findings, "kind[/reason]" sorted, leaving out other runs' broken NADs (NADs are
# cluster-wide; a shared cluster may hold some).
findings() {
  jq -r --arg run "$RUN" '.findings[] | select(.kind != "bad_nad_config" or (.message | contains($run)))
    | .kind + (if .reason != "" then "/" + .reason else "" end)' "$WORK/out" | sort
}
# timed_check: check -o json on BIGNS, its rc in CHECK_RC and wall time (ms) in CHECK_MS.
timed_check() {
  local t0=$EPOCHREALTIME
  "$CLI" --pool-namespace "$BIGNS" check -o json >"$WORK/out" 2>"$WORK/err"
  CHECK_RC=$?
  CHECK_MS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
}

t_check_healthy() {
  local t0=$SECONDS i worst=0 all=""
  seed_big || return 1
  note "seeded $BIG pods, $BIG allocations and $BIG reservations through the API in $(( SECONDS - t0 )) s"
  for i in 1 2 3; do
    timed_check
    # A report (-o json) exits 0 with findings or without; the table exits 1 on findings.
    expect_eq "check rc" "$CHECK_RC" 0 || { cat "$WORK/err"; return 1; }
    all+=" $CHECK_MS"
    (( CHECK_MS > worst )) && worst=$CHECK_MS
  done
  expect_eq "findings" "$(findings)" "" || return 1
  expect_json "counted" ".allocations == $BIG and .reservations == $BIG" || return 1
  # A figure, not an assertion: this suite runs beside other builds on a shared machine
  # (the 2 s target is read from these lines; see README's kubectl allot section).
  note "check of $BIG healthy allocations: wall ms per run:$all (target < 2000, worst $worst)"
}

# One of each anomaly kind, made through the plugin and the API, beside the healthy pool.
# shellcheck disable=SC2154 # SEED_s_* are set by the printf -v below
seed_anomalies() {
  local conf ip uid
  conf=$(netconf "$RUN-s" '{"range":"10.170.0.0/24","namespace":"'"$BIGNS"'"}' node-s)
  make_pods node-s s-ok s-gone s-again s-done s-nores s-dup s-far >>"$WORK/pods" || return 1
  for p in s-ok s-gone s-again s-done s-nores; do
    ip=$(add node-s "ctr-$p" "$p" "$(uid_of "$p")" "$conf") || return 1
    printf -v "SEED_${p//-/_}" '%s' "$ip"
  done
  del_pods s-gone s-again >/dev/null || return 1                      # leaked/no_pod
  make_pods node-s s-again >/dev/null || return 1                      # leaked/other_uid
  set_phase s-done Succeeded || return 1                               # leaked/terminal
  kubectl delete overlappingrangeipreservation -n "$BIGNS" "$(res_name "$SEED_s_nores")" >/dev/null || return 1
  uid=$(pod_uid s-dup)                                                 # duplicate_ip
  kubectl apply -f - >/dev/null <<EOF || return 1
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata: {name: 10.170.0.0-25, namespace: $BIGNS}
spec:
  range: 10.170.0.0/25
  allocations:
    "${SEED_s_ok##*.}": {id: ctr-dup, podref: $PODNS/s-dup, ifname: net1, poduid: "$uid"}
---
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata: {name: 10.171.0.0-30, namespace: $BIGNS}
spec:
  range: 10.171.0.0/30
  allocations:
    "9": {id: ctr-far, podref: $PODNS/s-far, ifname: net1, poduid: "$(pod_uid s-far)"}
---
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: OverlappingRangeIPReservation
metadata: {name: 10.170.0.200, namespace: $BIGNS}
spec: {containerid: ctr-orphan, podref: $PODNS/orphan, ifname: net1}
EOF
  mk_nad "$RUN-bad" '{"range":"10.172.0.0/33"}'                      # bad_nad_config
}

t_check_seeded() {
  seed_anomalies || return 1
  timed_check
  expect_eq "check -o json rc" "$CHECK_RC" 0 || { cat "$WORK/err"; return 1; }
  expect_eq "findings" "$(findings | tr '\n' ' ')" \
    "allocation_without_reservation bad_nad_config duplicate_ip leaked/no_pod leaked/other_uid leaked/terminal out_of_range reservation_without_allocation " || return 1
  # shellcheck disable=SC2154 # set by seed_anomalies (printf -v)
  expect_json "leak ip" "[.findings[] | select(.reason == \"no_pod\") | .ip] == [\"$SEED_s_gone\"]" || return 1
  expect_json "bad NAD message" ".findings[] | select(.kind == \"bad_nad_config\" and (.message | contains(\"$RUN-bad\"))) | .message | contains(\"range\")" || return 1
  note "check of $BIG healthy + 8 seeded anomalies: $CHECK_MS ms wall, $(jq -r .seconds "$WORK/out") s inside (target < 2000)"
  "$CLI" --pool-namespace "$BIGNS" check >"$WORK/table" 2>&1
  expect_eq "check (table) rc" "$?" 1 || return 1
  grep -q '^leaked +no_pod' "$WORK/table" -E || { cat "$WORK/table"; return 1; }
  # Read-only: the leaked entry is still there.
  expect_eq "still held" "$(rc_of "$CLI" --pool-namespace "$BIGNS" who "$SEED_s_gone")" 0
}

# An IPPool that cannot take another entry even in Whereabouts' form (10,038 entries of ~156
# bytes): check reports pool_object_full on it, as the repair loop does with a Warning Event.
t_check_full() {
  local ns=$RUN-full
  kubectl create namespace "$ns" >/dev/null || return 1
  kpy '
ns = sys.argv[1]
allocs = {str(i): {"id": "%064x" % (i * 2654435761), "podref": "default/web-5f7d8c9b6d-%d%s" % (i, "x" * 20),
                   "ifname": "net1"} for i in range(1, 10039)}
st, o = api("POST", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/ippools" % ns,
            {"apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "IPPool",
             "metadata": {"name": "10.104.0.0-17", "namespace": ns},
             "spec": {"range": "10.104.0.0/17", "allocations": allocs}})
if st != 201: raise SystemExit("pool: %s %s" % (st, o))
' "$ns" || return 1
  "$CLI" --pool-namespace "$ns" check -o json >"$WORK/out" 2>"$WORK/err"
  expect_json "one pool_object_full finding, on the pool, saying what ADDs get" \
    '[.findings[] | select(.kind == "pool_object_full")] | length == 1 and .[0].pool == "10.104.0.0-17" and (.[0].message | contains("code 11"))' || return 1
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

check "check: $BIG healthy allocations, no finding (timed)" t_check_healthy
check "check: each seeded anomaly kind found once, nothing else" t_check_seeded
check "check: a pool object that cannot grow is pool_object_full" t_check_full

# -------------------------------------------------------------- release --

t_release() {
  expect_eq "alive rc" "$(rc_of ka release "$IP1")" 5 || return 1
  grep -q -- '--force' "$WORK/err" || { cat "$WORK/err"; return 1; }
  pool_has_podref "$POOL" a1 || { echo "a1 lost its address on a refused release"; return 1; }
  del_pods a2 >/dev/null || return 1
  # A gone pod's sandbox may run on: only its node's proof, or the operator's --force.
  expect_eq "gone rc without --force" "$(rc_of ka release "$IP2")" 5 || return 1
  grep -q 'may still run on' "$WORK/err" || { cat "$WORK/err"; return 1; }
  pool_has_podref "$POOL" a2 || { echo "a2's address went on a refused release"; return 1; }
  expect_eq "gone rc" "$(rc_of ka release "$IP2" --force -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "released" ".released and .podState == \"gone\" and .podRef == \"$PODNS/a2\" and .eventRecorded and .reservationCleared" || return 1
  ! pool_has_podref "$POOL" a2 || { echo "a2 still holds"; return 1; }
  ! res_exists "$(res_name "$IP2")" || { echo "reservation of $IP2 left"; return 1; }
  wait_for 5 has_event AddressReleased "$IP2" || { echo "no AddressReleased Event"; events AddressReleased; return 1; }
  events AddressReleased | grep "$IP2" | grep -q 'kubectl-allot' || return 1
  expect_eq "forced rc" "$(rc_of ka release "$IP1" --force)" 0 || { cat "$WORK/err"; return 1; }
  ! pool_has_podref "$POOL" a1 || { echo "a1 still holds after --force"; return 1; }
  expect_eq "free rc" "$(rc_of ka release "$IP1")" 4 || return 1
  pool_has_podref "$POOL" a3 || { echo "a3 lost its address"; return 1; }
}
check "release: refused without --force (a live pod, or a gone pod whose sandbox may run on); --force frees with its reservation and an Event" t_release

# Seeded leaks (entries whose pods do not exist) beside live entries, in a pool namespace of
# their own. Three leaks name node-lgone, whose Node object is deleted (the machine is gone):
# that is proof enough, so the release needs no --force. One leak names node-l, which exists:
# its sandbox may still run there, so only --force frees it. check's JSON report is what
# release --from-report reads; --dry-run lists every leak and changes nothing.
t_release_from_report() {
  local ns=$RUN-leaks uid1 uid2 off pod gone='["10.150.0.10","10.150.0.11","10.150.0.12"]'
  local all='["10","11","12","13","2","3"]'
  kubectl create namespace "$ns" >/dev/null || return 1
  mk_node node-l True || return 1
  # node-lgone's allot-gc reported its Node before the Node was deleted: the proof that the name
  # was a Node. (A name no Node is known to have had frees nothing without --force.)
  kubectl apply -f - >/dev/null <<'EOF' || return 1
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: allot-node-node-lgone
  namespace: kube-system
  labels: {allot.cni.dev/node-report: "true"}
  annotations: {allot.cni.dev/node-uid: uid-of-node-lgone, allot.cni.dev/probe: complete}
spec: {holderIdentity: node-lgone}
EOF
  make_pods node-l l-live1 l-live2 >>"$WORK/pods" || return 1
  uid1=$(uid_of l-live1) uid2=$(uid_of l-live2)
  {
    cat <<EOF
apiVersion: whereabouts.cni.cncf.io/v1alpha1
kind: IPPool
metadata: {name: 10.150.0.0-24, namespace: $ns}
spec:
  range: 10.150.0.0/24
  allocations:
    "2": {id: ctr-l-live1, podref: $PODNS/l-live1, ifname: net1, poduid: "$uid1", node: node-l}
    "3": {id: ctr-l-live2, podref: $PODNS/l-live2, ifname: net1, poduid: "$uid2", node: node-l}
    "10": {id: ctr-l-gone1, podref: $PODNS/l-gone1, ifname: net1, poduid: u1, node: node-lgone}
    "11": {id: ctr-l-gone2, podref: $PODNS/l-gone2, ifname: net1, poduid: u2, node: node-lgone}
    "12": {id: ctr-l-gone3, podref: $PODNS/l-gone3, ifname: net1, poduid: u3, node: node-lgone}
    "13": {id: ctr-l-held, podref: $PODNS/l-held, ifname: net1, poduid: u4, node: node-l}
EOF
    for off in 2:l-live1 3:l-live2 10:l-gone1 11:l-gone2 12:l-gone3 13:l-held; do
      pod=${off#*:}
      printf -- '---\napiVersion: whereabouts.cni.cncf.io/v1alpha1\nkind: OverlappingRangeIPReservation\n'
      printf 'metadata: {name: 10.150.0.%s, namespace: %s}\n' "${off%%:*}" "$ns"
      printf 'spec: {containerid: ctr-%s, podref: %s/%s, ifname: net1}\n' "$pod" "$PODNS" "$pod"
    done
  } | kubectl apply -f - >/dev/null || return 1
  entries() { kubectl get ippool -n "$ns" 10.150.0.0-24 -o json | jq -c '.spec.allocations | keys | sort'; }
  # The commands as an operator types them.
  (cd "$WORK" && "$CLI" --pool-namespace "$ns" check -o json > r.json &&
    "$CLI" release --from-report r.json --dry-run -o json) >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; return 1; }
  # NADs are cluster-wide: bad_nad_config findings of other checks are not this pool's.
  jq -e '[.findings[] | select(.kind != "bad_nad_config") | .kind + "/" + .reason + " " + .ip] | sort == ["leaked/no_pod 10.150.0.10", "leaked/no_pod 10.150.0.11", "leaked/no_pod 10.150.0.12", "leaked/no_pod 10.150.0.13"]' "$WORK/r.json" >/dev/null ||
    { echo "report:"; head -c 3000 "$WORK/r.json"; return 1; }
  jq -e ".findings[] | select(.ip == \"10.150.0.10\") | .poolNamespace == \"$ns\" and .pool == \"10.150.0.0-24\" and .offset == 10 and .containerID == \"ctr-l-gone1\" and .podRef == \"$PODNS/l-gone1\" and .node == \"node-lgone\"" "$WORK/r.json" >/dev/null ||
    { echo "report fields:"; head -c 3000 "$WORK/r.json"; return 1; }
  expect_json "dry run lists exactly the leaks: the deleted Node's to release, the other refused" \
    "([.results[] | select(.action == \"would_release\") | .ip] | sort) == $gone and ([.results[] | select(.action == \"refused\") | .ip]) == [\"10.150.0.13\"] and (.results | length) == 4" || return 1
  expect_eq "entries after dry run" "$(entries)" "$all" || return 1
  expect_eq "release rc (one refused)" "$(cd "$WORK" && rc_of "$CLI" release --from-report r.json -o json)" 5 || { cat "$WORK/err"; return 1; }
  expect_json "released exactly the leaks of the deleted Node" "([.results[] | select(.action == \"released\") | .ip] | sort) == $gone" || return 1
  grep -q -- '--force' "$WORK/err" || { cat "$WORK/err"; return 1; }
  expect_eq "the live entries and the held one stay" "$(entries)" '["13","2","3"]' || return 1
  expect_eq "--force rc" "$(rc_of "$CLI" release --from-report "$WORK/r.json" --force -o json)" 0 || { cat "$WORK/err"; return 1; }
  expect_json "--force frees the held one" "([.results[] | select(.action == \"released\") | .ip]) == [\"10.150.0.13\"]" || return 1
  expect_eq "live entries stay" "$(entries)" '["2","3"]' || return 1
  expect_eq "reservations" "$(kubectl get overlappingrangeipreservations -n "$ns" -o json | jq -c '[.items[].metadata.name] | sort')" '["10.150.0.2","10.150.0.3"]' || return 1
  # The same report again: nothing is a leak any more, nothing more goes.
  expect_eq "again rc" "$(rc_of "$CLI" release --from-report "$WORK/r.json" --force -o json)" 0 || return 1
  expect_json "again" ".counts.released == 0 and .counts.skipped == 4" || return 1
  kubectl delete ippool -n "$ns" --all >/dev/null
  kubectl delete overlappingrangeipreservations -n "$ns" --all >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
  kubectl delete lease -n kube-system allot-node-node-lgone >/dev/null
}
check "release --from-report: a check report's leaks, exactly (dry run; a deleted Node's freed, the rest only with --force); live entries stay" t_release_from_report

# ----------------------------------------------------------------- lint --

t_lint() {
  cat >"$WORK/nads.yaml" <<EOF
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: good, namespace: default}
spec:
  config: '{"cniVersion":"1.0.0","name":"g","type":"macvlan","ipam":{"type":"allot","range":"10.141.0.0/25","network_name":"other"}}'
EOF
  expect_eq "good rc" "$(rc_of ka lint "$WORK/nads.yaml" -o json)" 0 || return 1
  expect_json "overlap" ".errors == 0 and .configs[0].valid and .configs[0].networks[0].ranges[0].pool == \"other-10.141.0.0-25\" and .configs[0].networks[0].ranges[0].overlaps == [{\"pool\": \"$POOL\", \"range\": \"$R\"}]" || return 1
  cat >>"$WORK/nads.yaml" <<EOF
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: bad}
spec:
  config: '{"cniVersion":"1.0.0","name":"b","type":"macvlan","ipam":{"type":"whereabouts","range":"10.9.0.0/24","exclude":["10.9.0.300"]}}'
EOF
  expect_eq "bad rc" "$(rc_of ka lint "$WORK/nads.yaml" -o json)" 1 || return 1
  expect_json "bad" ".errors == 1 and (.configs[1].valid | not) and (.configs[1].problems[0].message | contains(\"exclude\"))" || return 1
  expect_eq "stdin rc" "$(echo '{"cniVersion":"1.0.0","name":"c","plugins":[{"type":"bridge","ipam":{"type":"allot","range":"10.9.9.0/24","range_start":"10.9.8.1"}}]}' | rc_of ka lint - --offline -o json)" 0 || return 1
  expect_json "stdin" ".configs[0].kind == \"CNI conflist\" and .warnings == 1" || return 1
  # Every problem, each naming its key, not only the first.
  expect_eq "many rc" "$(echo '{"cniVersion":"1.0.0","name":"m","type":"bridge","ipam":{"type":"allot","range":"10.9.0.0/24","gateway":"x","network_name":"UPPER","node_slice_size":"abc","deadline_ms":"1"}}' | rc_of ka lint - --offline -o json)" 1 || return 1
  expect_json "many" ".errors == 4 and ([.configs[0].problems[].message] | (.[0] | contains(\"deadline_ms\")) and (.[1] | contains(\"gateway\")) and (.[2] | contains(\"network_name\")) and (.[3] | contains(\"node_slice_size\")))" || return 1
  expect_eq "bad yaml rc" "$(printf 'a: [\n' | rc_of ka lint -)" 3 || return 1
}
check "lint: the plugin's parser, overlaps with existing pools, stdin" t_lint

# ----------------------------------------------------------------- krew --

# scripts/krew-package: a tarball, and a manifest naming its real sha256 whose bin runs.
t_krew_package() {
  local bin_dir manifest tarball sha bin got
  bin_dir=$(cd "$(dirname "$CLI_BUILT")/.." && pwd)
  manifest=$("$root/scripts/krew-package" --build "$bin_dir" --out "$WORK/krew" --check) || return 1
  grep -qx 'apiVersion: krew.googlecontainertools.github.com/v1alpha2' "$manifest" || { cat "$manifest"; return 1; }
  { grep -qx 'kind: Plugin' "$manifest" && grep -qx '  name: allot' "$manifest"; } || { cat "$manifest"; return 1; }
  grep -qx '        os: linux' "$manifest" || { cat "$manifest"; return 1; }
  [[ $(uname -m) != x86_64 ]] || grep -qx '        arch: amd64' "$manifest" || { cat "$manifest"; return 1; }
  ! grep -q '@' "$manifest" || { echo "unfilled placeholder:"; grep '@' "$manifest"; return 1; }
  tarball=$WORK/krew/$(awk '$1 == "uri:" { n = split($2, p, "/"); print p[n] }' "$manifest")
  sha=$(awk '$1 == "sha256:" { print $2 }' "$manifest")
  bin=$(awk '$1 == "bin:" { print $2 }' "$manifest")
  expect_eq "sha256" "$sha" "$(sha256sum "$tarball" | cut -d' ' -f1)" || return 1
  mkdir -p "$WORK/krew/unpacked" && tar -C "$WORK/krew/unpacked" -xzf "$tarball" || return 1
  expect_eq "files" "$(tar -tzf "$tarball" | sort | tr '\n' ' ')" "LICENSE kubectl-allot " || return 1
  got=$("$WORK/krew/unpacked/$bin" version --client) || return 1
  expect_eq "bin runs" "$got" "$("$CLI" version --client)" || return 1
  grep -qx "  version: v$("$CLI" version --client -o json | jq -r .client.version)" "$manifest" || { cat "$manifest"; return 1; }
}
check "krew: the manifest's sha256 is the tarball's, and its bin runs version --client" t_krew_package

suite_summary
(( failed == 0 ))
