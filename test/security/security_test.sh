#!/usr/bin/env bash
# Security checks of the plugin (build/plugin/allot) and allot-gc (build/gc-sidecar/allot-gc)
# against a real kube-apiserver and etcd (e2e/cluster): secrets never reach a log, node files
# are private, TLS verification is off only when a kubeconfig says so (and then loudly),
# hostile network-status annotations and NetworkAttachmentDefinitions free nothing of other
# pods, and every user-controlled size has a limit that fails with a clear error.
#
# Uses the cluster named by ALLOT_CLUSTER_DIR when it is up (eval "$(e2e/cluster env)");
# otherwise starts a private one and removes it at exit. Prints `ok - NAME` / `not ok - NAME`
# per check, then `security: N passed, N failed`. SEC_ONLY=REGEX runs only matching checks.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=security
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"

cluster_start >/dev/null || suite_die "cluster starts"
gc_init || suite_die "binaries and namespaces"
CHECK_DIR=$WORK
CHECK_ONLY=${SEC_ONLY:-}
CHECK_TIME=s
CHECK_TAIL=40
mode_of() { stat -c %a "$1"; }

LOGS=$WORK/logs
mkdir -p "$LOGS"
NODE='node-sec'
OTHERNS=$RUN-other
kubectl create namespace "$OTHERNS" >/dev/null
on_exit "kubectl delete -n '$OTHERNS' --all network-attachment-definitions >/dev/null 2>&1; kubectl delete namespace '$OTHERNS' --wait=false >/dev/null 2>&1; kubectl get namespace '$OTHERNS' -o json 2>/dev/null | jq '.spec.finalizers = []' | kubectl replace --raw '/api/v1/namespaces/$OTHERNS/finalize' -f - >/dev/null 2>&1"

# ------------------------------------------------------------ kubeconfigs --
# Every credential the programs hold; none of these strings may appear in any output.
KC=$WORK/kc
mkdir -p "$KC"
TOKEN=$(awk '$1 == "token:" { print $2 }' "$ALLOT_KUBECONFIG")
CERT_B64=$(awk '$1 == "client-certificate-data:" { print $2 }' "$KUBECONFIG")
KEY_B64=$(awk '$1 == "client-key-data:" { print $2 }' "$KUBECONFIG")
BAD_TOKEN=allot-sec-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
kubectl create serviceaccount nobody -n "$PODNS" >/dev/null
NORIGHTS_TOKEN=$(kubectl create token nobody -n "$PODNS" --duration=10m)
# kc_with NAME SED-EXPRESSION...: a copy of the allot kubeconfig, edited.
kc_with() {
  local name=$1; shift
  local args=() e
  for e in "$@"; do args+=(-e "$e"); done
  sed "${args[@]}" "$ALLOT_KUBECONFIG" >"$KC/$name"
  chmod 600 "$KC/$name"
}
kc_with token.kubeconfig 's#^##'
cp "$KUBECONFIG" "$KC/cert.kubeconfig"
kc_with badtoken.kubeconfig "s#token: .*#token: $BAD_TOKEN#"
kc_with norights.kubeconfig "s#token: .*#token: $NORIGHTS_TOKEN#" 's#namespace: .*#namespace: default#'
kc_with dead.kubeconfig 's#server: .*#server: https://127.0.0.1:1#'
sed 's#server: .*#server: https://127.0.0.1:1#' "$KUBECONFIG" >"$KC/dead-cert.kubeconfig"
kc_with insecure.kubeconfig 's#certificate-authority-data: .*#insecure-skip-tls-verify: true#'
kc_with insecure-ca.kubeconfig 's#\(certificate-authority-data: .*\)#\1\n    insecure-skip-tls-verify: true#'
# A CA the API server's certificate was not issued by.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$KC/other-ca.key" -out "$KC/other-ca.crt" -days 1 \
  -subj /CN=not-the-cluster-ca >/dev/null 2>&1
kc_with wrongca.kubeconfig "s#certificate-authority-data: .*#certificate-authority-data: $(base64 -w0 "$KC/other-ca.crt")#"

# secret_patterns: one fixed string per line that must never be printed: the tokens,
# the base64 credentials (whole, and a 40-character piece of each, in case a log cuts them),
# and every body line of the decoded PEM client certificate and key.
secret_patterns() {
  local s
  for s in "$TOKEN" "${TOKEN: -40}" "$BAD_TOKEN" "$NORIGHTS_TOKEN" "${NORIGHTS_TOKEN: -40}" \
           "$CERT_B64" "${CERT_B64:100:40}" "$KEY_B64" "${KEY_B64:100:40}" "${KEY_B64: -60:40}"; do
    [[ -n "$s" ]] && echo "$s"
  done
  { base64 -d <<<"$CERT_B64"; base64 -d <<<"$KEY_B64"; } | grep -v -- '-----' | grep -E '.{16,}'
}

# ---------------------------------------------------------------- helpers --
# conf KUBECONFIG RANGE: a network config for NODE with a debug log file.
conf() {
  jq -cn --arg kc "$1" --arg r "$2" --arg ns "$POOLNS" --arg d "$WORK/nodes/$NODE" --arg log "$LOGS/plugin.log" \
    '{cniVersion: "1.1.0", name: "secnet", type: "macvlan",
      ipam: ({type: "allot", namespace: $ns, kubernetes: {kubeconfig: $kc}, range: $r,
              lock_dir: ($d + "/lock"), journal_dir: ($d + "/journal"), log_file: $log, log_level: "debug",
              deadline_ms: (env.DEADLINE_MS // "5000" | tonumber)})}'
}
# pcall VERB CTR POD UID CONF: the plugin as a runtime runs it; every output is kept in LOGS.
pcall() {
  cni "$1" "$NODE" "$2" "$3" "$4" "$5"
  printf '%s\n' "$CNI_OUT" >>"$LOGS/plugin-stdout.log"
  printf '%s\n' "$CNI_ERR" >>"$LOGS/plugin-stderr.log"
}
err_code() { jq -r '.code // empty' <<<"$CNI_OUT" 2>/dev/null; }
err_msg() { jq -r '.msg // empty' <<<"$CNI_OUT" 2>/dev/null; }
# expect_fail CODE REGEX WHAT: the last call failed with CNI error CODE and a message matching REGEX.
expect_fail() {
  [[ "$CNI_RC" != 0 && "$(err_code)" == "$1" ]] || { echo "$3: want CNI error $1, got rc=$CNI_RC $CNI_OUT $CNI_ERR"; return 1; }
  grep -Eqi -- "$2" <<<"$(err_msg)" || { echo "$3: message does not match /$2/: $(err_msg)"; return 1; }
  note "$3: code $1, \"$(err_msg | cut -c1-150)\""
}

# ---------------------------------------------------------------- secrets --
t_secrets() {
  local range=10.91.0.0/24 c uid kc
  read -r _ uid < <(make_pods "$NODE" s1) || return 1
  # Every verb, with a token and with a client certificate.
  for kc in token cert; do
    c=$(conf "$KC/$kc.kubeconfig" "$range")
    pcall ADD "ctr-s1-$kc" s1 "$uid" "$c"
    [[ "$CNI_RC" == 0 ]] || { echo "ADD with the $kc kubeconfig failed: $CNI_OUT $CNI_ERR"; return 1; }
    pcall CHECK "ctr-s1-$kc" s1 "$uid" "$(jq -c --argjson r "$CNI_OUT" '. + {prevResult: $r}' <<<"$c")"
    pcall STATUS "ctr-s1-$kc" s1 "$uid" "$c"
    [[ "$CNI_RC" == 0 ]] || { echo "STATUS with the $kc kubeconfig failed: $CNI_OUT"; return 1; }
    pcall GC "ctr-s1-$kc" s1 "$uid" "$(jq -c --arg c "ctr-s1-$kc" '. + {"cni.dev/valid-attachments": [{containerID: $c, ifname: "net1"}]}' <<<"$c")"
    pcall DEL "ctr-s1-$kc" s1 "$uid" "$c"
    [[ "$CNI_RC" == 0 ]] || { echo "DEL with the $kc kubeconfig failed: $CNI_OUT"; return 1; }
  done
  # Failing: a wrong token (401), a ServiceAccount without rights (403), no server at all.
  for kc in badtoken norights dead dead-cert; do
    c=$(DEADLINE_MS=800 conf "$KC/$kc.kubeconfig" "$range")
    pcall ADD "ctr-s1-$kc" s1 "$uid" "$c"
    [[ "$CNI_RC" != 0 ]] || { echo "ADD with the $kc kubeconfig succeeded"; return 1; }
    pcall STATUS "ctr-s1-$kc" s1 "$uid" "$c"
    pcall DEL "ctr-s1-$kc" s1 "$uid" "$c"
  done
  grep -q "Unauthorized" "$LOGS/plugin.log" || { echo "no 401 seen: the bad token was not tried"; return 1; }
  grep -q "Forbidden" "$LOGS/plugin.log" || { echo "no 403 seen: the rightless token was not tried"; return 1; }
  # allot-gc: with a token and a node kubeconfig written from a ServiceAccount dir; with a bad token.
  local sa=$WORK/sa
  mkdir -p "$sa"
  cp "$KUBE_CA" "$sa/ca.crt"
  printf '%s' "$TOKEN" >"$sa/token"
  c=$(conf "$KC/token.kubeconfig" "$range")
  pcall ADD ctr-s1-gc s1 "$uid" "$c"
  # Started after the ADD: its catch-up learns the pool holding this node's entry, where a
  # deletion without network-status is looked for.
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=${ALLOT_APISERVER##*:} \
    start_gc s "$NODE" --role=agent --log-level=debug --kubeconfig="$KC/token.kubeconfig" \
      --node-kubeconfig="$WORK/node-conf/allot.kubeconfig" --service-account-dir="$sa" || return 1
  del_pods s1 >/dev/null
  wait_for 10 not pool_has_uid "$(pool_name "$range")" "$uid" || { echo "allot-gc did not release s1"; return 1; }
  stop_gc s
  GC_NOWAIT=1 start_gc sbad "$NODE" --role=agent --log-level=debug --kubeconfig="$KC/badtoken.kubeconfig"
  GC_NOWAIT=1 start_gc scert "$NODE" --role=agent --log-level=debug --kubeconfig="$KC/cert.kubeconfig"
  sleep 2
  stop_gc sbad; stop_gc scert
  grep -q "Unauthorized" "$WORK/gc-sbad.log" || { echo "allot-gc with a bad token logged no 401"; return 1; }

  secret_patterns >"$WORK/secrets"
  local n files hits
  n=$(wc -l <"$WORK/secrets")
  (( n >= 20 )) || { echo "only $n secret patterns: the kubeconfigs are not what this test expects"; return 1; }
  files=("$LOGS"/* "$WORK"/gc-*.log)
  # The node-local files the plugin keeps (locks, cache, journal) hold no credentials either.
  mapfile -t -O "${#files[@]}" files < <(find "$WORK/nodes" -type f)
  hits=$(grep -F -l -f "$WORK/secrets" "${files[@]}")
  [[ -z "$hits" ]] || { echo "secrets found in: $hits"; return 1; }
  note "$n secret strings, $(cat "${files[@]}" | wc -l) lines in ${#files[@]} files: no hit"
}

# ------------------------------------------------------------------ modes --
t_modes() {
  local range=10.92.0.0/24 d=$WORK/modes uid c f
  read -r _ uid < <(make_pods "$NODE" m1) || return 1
  c=$(jq -c --arg d "$d" '.ipam += {lock_dir: ($d + "/run/allot/locks"), journal_dir: ($d + "/var/lib/allot/journal"),
                                     log_file: ($d + "/allot.log")}' <<<"$(conf "$KC/token.kubeconfig" "$range")")
  # umask 000: modes must be the code's own choice, not the caller's umask.
  local old
  old=$(umask)
  umask 000
  pcall ADD ctr-m1 m1 "$uid" "$c"
  local add_rc=$CNI_RC add_out=$CNI_OUT
  # A DEL that cannot reach the API server is journaled.
  c=$(jq -c --arg kc "$KC/dead.kubeconfig" '.ipam.kubernetes.kubeconfig = $kc | .ipam.deadline_ms = 800' <<<"$c")
  pcall DEL ctr-m1 m1 "$uid" "$c"
  umask "$old"
  [[ "$add_rc" == 0 ]] || { echo "ADD failed: $add_out"; return 1; }
  [[ "$CNI_RC" == 0 ]] || { echo "DEL failed: $CNI_OUT"; return 1; }
  expect_eq "lock dir" "$(mode_of "$d/run/allot/locks")" 700 || return 1
  expect_eq "journal dir" "$(mode_of "$d/var/lib/allot/journal")" 700 || return 1
  expect_eq "log file" "$(mode_of "$d/allot.log")" 600 || return 1
  # Everything below them too: directories 0700, files 0600.
  local entries
  entries=$(find "$d/run/allot/locks" "$d/var/lib/allot/journal" -mindepth 1 -printf '%y %m %P\n')
  local bad
  bad=$(awk '!(($1 == "d" && $2 == "700") || ($1 == "f" && $2 == "600"))' <<<"$entries")
  [[ -z "$bad" ]] || { echo "wrong modes (type mode path): $bad"; return 1; }
  grep -q '^f 600 .*\.lock$' <<<"$entries" || { echo "no lock file: $entries"; return 1; }
  [[ -n "$(find "$d/var/lib/allot/journal" -type f)" ]] || { echo "the DEL journaled nothing"; return 1; }
  note "lock and journal dirs 700; under them: $(paste -sd, <<<"$entries" | sed 's/,/, /g'); log 600"

  # allot-gc's node kubeconfig (it holds the ServiceAccount token).
  local sa=$WORK/sa2 kc=$d/cni/net.d/allot.d/allot.kubeconfig
  mkdir -p "$sa"
  cp "$KUBE_CA" "$sa/ca.crt"
  printf '%s' "$TOKEN" >"$sa/token"
  umask 000
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=${ALLOT_APISERVER##*:} \
    start_gc mk "$NODE" --role=agent --kubeconfig="$KC/token.kubeconfig" --node-kubeconfig="$kc" \
      --service-account-dir="$sa" --journal-dir=
  local rc=$?
  umask "$old"
  (( rc == 0 )) || return 1
  wait_for 5 test -f "$kc" || { echo "no node kubeconfig written"; return 1; }
  stop_gc mk
  expect_eq "node kubeconfig" "$(mode_of "$kc")" 600 || return 1
  note "node kubeconfig 600 (dir $(mode_of "$(dirname "$kc")"))"

  # deploy/install-cni.sh, as the DaemonSet's init container runs it (its source binary is
  # /usr/local/bin/allot: a private mount namespace puts the plugin there).
  local bin=$WORK/install-src host=$d/host
  mkdir -p "$bin"
  cp "$PLUGIN" "$bin/allot"
  # shellcheck disable=SC2016 # $1..$3 are the inner sh's
  unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" /usr/local/bin &&
      umask 000 && CNI_BIN_DIR="$2/opt/cni/bin" CONF_DIR="$2/etc/cni/net.d/allot.d" NODE_NAME=node-x POD_UID=uid-x \
      sh "$3/deploy/install-cni.sh"' sh "$bin" "$host" "$root" >"$WORK/install.out" 2>&1 ||
    { echo "install-cni.sh failed: $(cat "$WORK/install.out")"; return 1; }
  expect_eq "allot.conf" "$(mode_of "$host/etc/cni/net.d/allot.d/allot.conf")" 600 || return 1
  expect_eq "allot.d" "$(mode_of "$host/etc/cni/net.d/allot.d")" 700 || return 1
  expect_eq "nodename" "$(mode_of "$host/etc/cni/net.d/allot.d/nodename")" 644 || return 1
  expect_eq "installed plugin" "$(mode_of "$host/opt/cni/bin/allot")" 755 || return 1
  jq -e '.kubernetes.kubeconfig' "$host/etc/cni/net.d/allot.d/allot.conf" >/dev/null || { echo "allot.conf is not the flat config"; return 1; }
  cmp -s "$PLUGIN" "$host/opt/cni/bin/allot" || { echo "installed plugin differs"; return 1; }
  if grep -qiE 'token|BEGIN|password' "$host/etc/cni/net.d/allot.d/allot.conf"; then echo "allot.conf holds a credential"; return 1; fi
  note "install-cni.sh (umask 000): allot.d 700, allot.conf 600, nodename 644, allot 755"
}

# -------------------------------------------------------------------- TLS --
TLS_WARNING="TLS verification of the API server is off"
t_tls() {
  local range=10.93.0.0/24 uid c
  read -r _ uid < <(make_pods "$NODE" t1) || return 1
  : >"$LOGS/plugin.log"
  # Verified: no warning.
  c=$(conf "$KC/token.kubeconfig" "$range")
  pcall ADD ctr-t1 t1 "$uid" "$c"
  [[ "$CNI_RC" == 0 ]] || { echo "ADD failed: $CNI_OUT"; return 1; }
  if grep -q "$TLS_WARNING" "$LOGS/plugin.log" - <<<"$CNI_ERR"; then echo "warning without insecure-skip-tls-verify"; return 1; fi
  pcall DEL ctr-t1 t1 "$uid" "$c"
  # A CA that did not sign the server's certificate: a clear failure, nothing sent.
  c=$(DEADLINE_MS=1500 conf "$KC/wrongca.kubeconfig" "$range")
  local t0=$EPOCHREALTIME
  pcall ADD ctr-t1 t1 "$uid" "$c"
  { [[ "$CNI_RC" != 0 ]] && grep -qi "certificate" <<<"$(err_msg)"; } || { echo "ADD with a wrong CA: rc=$CNI_RC $CNI_OUT"; return 1; }
  note "ADD with a wrong CA: code $(err_code) after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }') ms (deadline 1500): \"...$(err_msg | grep -o ': SSL.*' | cut -c3-)\""
  pcall STATUS ctr-t1 t1 "$uid" "$c"
  { [[ "$CNI_RC" != 0 ]] && grep -qi "certificate" <<<"$(err_msg)"; } || { echo "STATUS with a wrong CA: $CNI_OUT"; return 1; }
  # insecure-skip-tls-verify: works, and says so every time.
  : >"$LOGS/plugin.log"
  c=$(conf "$KC/insecure.kubeconfig" "$range")
  pcall ADD ctr-t1 t1 "$uid" "$c"
  [[ "$CNI_RC" == 0 ]] || { echo "ADD with insecure-skip-tls-verify failed: $CNI_OUT"; return 1; }
  pcall DEL ctr-t1 t1 "$uid" "$c"
  expect_eq "warnings logged for ADD and DEL" "$(grep -c "$TLS_WARNING" "$LOGS/plugin.log")" 2 || return 1
  # ... never together with a CA (kubectl refuses that too).
  c=$(conf "$KC/insecure-ca.kubeconfig" "$range")
  pcall ADD ctr-t1 t1 "$uid" "$c"
  expect_fail 7 "insecure-skip-tls-verify cannot be combined" "ADD with insecure-skip-tls-verify and a CA" || return 1
  # allot-gc: the same rules.
  start_gc tin "$NODE" --role=agent --kubeconfig="$KC/insecure.kubeconfig" --journal-dir= || return 1
  stop_gc tin
  grep -q "$TLS_WARNING" "$WORK/gc-tin.log" || { echo "allot-gc logged no warning with insecure-skip-tls-verify"; gc_log tin | head -5; return 1; }
  GC_NOWAIT=1 start_gc tca "$NODE" --role=agent --kubeconfig="$KC/wrongca.kubeconfig" --journal-dir=
  sleep 2
  local rz
  rz=$(gc_http tca /readyz)
  stop_gc tca
  expect_eq "/readyz of allot-gc with a wrong CA" "$rz" 503 || return 1
  grep -qi "certificate" "$WORK/gc-tca.log" || { echo "allot-gc with a wrong CA did not say why"; gc_log tca | head -5; return 1; }
  if grep -q "$TLS_WARNING" "$WORK/gc-tca.log" "$WORK/gc-s.log"; then echo "allot-gc warned without insecure-skip-tls-verify"; return 1; fi
  note "allot-gc with a wrong CA: \"...$(grep -i -m1 certificate "$WORK/gc-tca.log" | grep -o ': SSL.*' | cut -c3-)\""
}

# -------------------------------------------------------------- hostile --
HRANGE=10.94.0.0/24
# halloc POD: a pod on NODE with an address from net-h (PODNS); sets H_UID, H_IP.
halloc() {
  read -r _ H_UID < <(make_pods "$NODE" "$1") || return 1
  H_IP=$(add "$NODE" "ctr-$1" "$1" "$H_UID" "$(netconf net-h "{\"range\":\"$HRANGE\"}" "$NODE")") || return 1
}
# big_status POD JSON: set_network_status for annotations too long for a command line.
big_status() {
  printf '%s' "$2" >"$WORK/status.json"
  kpy '
ns, pod = os.environ["PODNS"], sys.argv[1]
st, o = api("PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, pod),
            {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": open(sys.argv[2]).read()}}},
            "application/merge-patch+json")
if st != 200: raise SystemExit("annotate %s: %s %s" % (pod, st, o))' "$1" "$WORK/status.json"
}
t_hostile() {
  local pool v_uid v_ip uids=() p
  pool=$(pool_name "$HRANGE")
  mk_nad net-h "{\"range\":\"$HRANGE\"}" || return 1
  # The same pool through a NAD in another namespace.
  jq -n --arg ns "$OTHERNS" --arg cfg "$(jq -cn --arg ns "$POOLNS" --arg r "$HRANGE" \
      '{cniVersion: "1.1.0", name: "net-o", type: "macvlan", ipam: {type: "allot", namespace: $ns, range: $r}}')" \
    '{apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinition", metadata: {name: "net-o", namespace: $ns},
      spec: {config: $cfg}}' | kubectl apply -f - >/dev/null || return 1
  start_gc h "$NODE" --role=agent --log-level=debug --journal-dir= || return 1
  halloc victim || return 1; v_uid=$H_UID; v_ip=$H_IP
  set_network_status victim "$(status_json net-h net1 "$v_ip")"

  # 1. Claims the victim's address on its own network.
  halloc forger || return 1; uids+=("$H_UID")
  set_network_status forger "$(jq -cn --arg n "$PODNS/net-h" --arg v "$v_ip" '[{name: $n, interface: "net1", ips: [$v]}]')"
  # 2. Names a NAD of another namespace (same pool) and the victim's address.
  halloc crossns || return 1; uids+=("$H_UID")
  set_network_status crossns "$(jq -cn --arg n "$OTHERNS/net-o" --arg v "$v_ip" '[{name: $n, interface: "net1", ips: [$v]}]')"
  # 3. 1 MB: the API server refuses it (annotations are at most 256 KiB); 250 KiB of entries
  #    is accepted there and over allot-gc's entry limit.
  halloc huge || return 1; uids+=("$H_UID")
  local st
  st=$(kpy '
ns, pod = os.environ["PODNS"], sys.argv[1]
big = json.dumps([{"name": ns + "/net-h", "interface": "net1", "ips": ["10.94.0.250"], "pad": "x" * 1000}] * 1000)
st, o = api("PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, pod),
            {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": big}}}, "application/merge-patch+json")
print(st, (o or {}).get("message", "")[:200])' huge)
  [[ "$st" == 422* && "$st" == *262144* ]] || { echo "a 1 MB annotation: API server answered '$st', want 422 naming 262144 bytes"; return 1; }
  note "1 MB annotation: API server $st"
  big_status huge "$(jq -cn --arg n "$PODNS/net-h" --arg v "$v_ip" '[range(2000) | {name: $n, interface: "net1", ips: [$v], mac: "02:00:00:00:00:01", dns: {}}]')" || return 1
  # 4. Nested 2000 deep.
  halloc deep || return 1; uids+=("$H_UID")
  big_status deep "[{\"name\":\"$PODNS/net-h\",\"ips\":[\"$v_ip\"],\"x\":$(printf '[%.0s' {1..2000})$(printf ']%.0s' {1..2000})}]" || return 1
  # 5. Names that are not Kubernetes names (paths, a query, a line break).
  halloc badnames || return 1; uids+=("$H_UID")
  set_network_status badnames "$(jq -cn --arg v "$v_ip" '[{name: "../kube-system", ips: [$v]}, {name: "ns/..", ips: [$v]},
      {name: "ns/.", ips: [$v]}, {name: "a/b?watch=1", ips: [$v]}, {name: "x/y\nFORGED-LOG-LINE from a name", ips: [$v]}]')" || return 1
  # 6. An IP text forging a log line.
  halloc inject || return 1; uids+=("$H_UID")
  set_network_status inject "$(jq -cn --arg v "$v_ip" '[{name: "x/y", ips: [($v + "\nFORGED-LOG-LINE released everything")]}]')" || return 1

  local t0=$SECONDS mark
  mark=$(audit_mark)
  del_pods forger crossns huge deep badnames inject >/dev/null || return 1
  for p in "${uids[@]}"; do
    wait_for 15 not pool_has_uid "$pool" "$p" || { echo "a hostile pod's own address (uid $p) was not released"; gc_log h | tail -5; return 1; }
  done
  note "${#uids[@]} hostile pods' own addresses released in $(( SECONDS - t0 )) s"
  sleep 1
  pool_has_uid "$pool" "$v_uid" || { echo "the victim lost $v_ip"; return 1; }
  res_exists "$(res_name "$v_ip")" || { echo "the victim's reservation of $v_ip is gone"; return 1; }
  kill -0 "$(gc_pid h)" 2>/dev/null || { echo "allot-gc died"; return 1; }
  expect_eq "/healthz" "$(gc_http h /healthz)" 200 || return 1
  wait_for 10 has_event MalformedNetworkStatus "more than 128 entries" || { echo "no Event naming the entry limit"; events MalformedNetworkStatus; return 1; }
  wait_for 10 has_event MalformedNetworkStatus "nested deeper than 8" || { echo "no Event naming the nesting limit"; return 1; }
  wait_for 10 has_event MalformedNetworkStatus "not namespace/name" || { echo "no Event for names that are not namespace/name"; return 1; }
  if grep -q "^FORGED" "$WORK/gc-h.log"; then echo "an annotation forged a log line:"; grep "^FORGED" "$WORK/gc-h.log"; return 1; fi
  grep -q 'FORGED-LOG-LINE' "$WORK/gc-h.log" || { echo "the forged text was not logged at all (test broken?)"; return 1; }
  # Every request allot-gc made meanwhile addressed what it meant to: the annotations' names
  # reached no request path.
  audit_settle
  local uris bad
  uris=$(tail -n "+$(( mark + 1 ))" "$ALLOT_AUDIT_LOG" | jq -r --arg ua "allot-gc/$NODE" \
    'select(.stage == "ResponseComplete" and (.userAgent // "" | startswith($ua))) | .requestURI | sub("[?].*"; "")')
  local n='[a-z0-9][a-z0-9.-]*'
  bad=$(grep -Ev "^/api/v1/pods$|^/apis/whereabouts.cni.cncf.io/v1alpha1/nodeslicepools$|^/api/v1/namespaces/$n/(pods|events)(/$n)?$|^/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/$n/(ippools|overlappingrangeipreservations|nodeslicepools)(/$n)?$|^/apis/k8s.cni.cncf.io/v1/namespaces/$n/network-attachment-definitions/$n$" <<<"$uris")
  grep -q network-attachment-definitions <<<"$uris" || { echo "allot-gc read no NAD (audit log)"; return 1; }
  [[ -z "$bad" ]] || { echo "allot-gc requested: $bad"; return 1; }
  note "$(wc -l <<<"$uris") requests by allot-gc, all well-formed; NADs read: $(grep network-attachment <<<"$uris" | sort -u | sed 's#.*/namespaces/##' | xargs)"
}

# ----------------------------------------------------------------- limits --
t_plugin_limits() {
  local range=10.95.0.0/24 c uid=uid-l1 big
  c=$(conf "$KC/token.kubeconfig" "$range")
  big=$(jq -c '. + {pad: ("x" * 1100000)}' <<<"$c")
  pcall ADD ctr-l1 l1 "$uid" "$big"
  expect_fail 6 "larger than 1 MiB" "stdin of 1.1 MB" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c '.ipam.ipRanges = [range(17) | {range: "10.96.\(.).0/24"}] | del(.ipam.range)' <<<"$c")"
  expect_fail 7 'ipRanges.*more than 16' "17 ipRanges" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c '.ipam.ipRanges = [range(16) | {range: "10.96.\(.).0/24"}]' <<<"$c")"
  expect_fail 7 'ipRanges.*limit of 16' "range + 16 ipRanges" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c '.ipam.exclude = [range(1025) | "10.95.0.\(. % 250)/32"]' <<<"$c")"
  expect_fail 7 'exclude.*more than 1024' "1025 excludes" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c --argjson deep "$(printf '[%.0s' {1..70})$(printf ']%.0s' {1..70})" '. + {x: $deep}' <<<"$c")"
  expect_fail 6 'nested deeper than 64' "JSON nested 70 deep" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c '.ipam.namespace = "../kube-system"' <<<"$c")"
  expect_fail 7 'ipam.namespace' "namespace ../kube-system" || return 1
  pcall ADD ctr-l1 l1 "$uid" "$(jq -c '.ipam.deadline_ms = 999999999' <<<"$c")"
  expect_fail 7 'deadline_ms.*180000' "deadline_ms 999999999" || return 1
  # The CNI environment.
  CNI_OUT=$(printf '%s' "$c" | env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-l1 CNI_NETNS=/var/run/netns/none CNI_IFNAME=net1 \
    CNI_PATH=/opt/cni/bin NODENAME="$NODE" CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=$(head -c 70000 /dev/zero | tr '\0' a)" \
    "$PLUGIN" 2>>"$LOGS/plugin-stderr.log")
  CNI_RC=$?
  expect_fail 4 'CNI_ARGS is longer than 64 KiB' "CNI_ARGS of 70 KB" || return 1
  IFNAME=averyveryverylongifname pcall ADD ctr-l1 l1 "$uid" "$c"
  expect_fail 4 'CNI_IFNAME' "CNI_IFNAME of 23 characters" || return 1
}

t_gc_limits() {
  # A NAD whose spec.config is over allot-gc's 1 MiB: the pod's own address is still found
  # (by a scan of this node's allocations), and the log names the limit.
  local range=10.97.0.0/24 pool uid ip st
  pool=$(pool_name "$range")
  [[ -n "$(gc_pid h 2>/dev/null)" ]] && kill -0 "$(gc_pid h)" 2>/dev/null ||
    start_gc h "$NODE" --role=agent --log-level=debug --journal-dir= || return 1
  st=$(kpy '
ns, pns, r = os.environ["PODNS"], os.environ["POOLNS"], sys.argv[1]
cfg = json.dumps({"cniVersion": "1.1.0", "name": "bignad", "type": "macvlan", "pad": "x" * 1100000,
                  "ipam": {"type": "allot", "namespace": pns, "range": r}})
st, o = api("POST", "/apis/k8s.cni.cncf.io/v1/namespaces/%s/network-attachment-definitions" % ns,
            {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
             "metadata": {"name": "bignad", "namespace": ns}, "spec": {"config": cfg}})
print(st)' "$range")
  expect_eq "creating a NAD with a 1.1 MB spec.config" "$st" 201 || return 1
  read -r _ uid < <(make_pods "$NODE" bn) || return 1
  ip=$(add "$NODE" ctr-bn bn "$uid" "$(netconf bignad "{\"range\":\"$range\"}" "$NODE")") || return 1
  set_network_status bn "$(status_json bignad net1 "$ip")"
  del_pods bn >/dev/null
  wait_for 15 not pool_has_uid "$pool" "$uid" || { echo "bn's address was not released"; gc_log h | tail -5; return 1; }
  grep -q "bignad: spec.config is larger than 1 MiB" "$WORK/gc-h.log" || { echo "allot-gc did not log the NAD size limit"; gc_log h | grep -i bignad | tail -3; return 1; }
  note "\"$(grep -m1 'spec.config is larger' "$WORK/gc-h.log" | cut -c1-150)\""
}

# A watch event over allot-gc's 4 MiB limit. etcd stores at most 1.5 MiB per object, so no
# real API server sends one: a small stand-in on plain HTTP answers the pod list and the watch.
t_watch_limit() {
  local port log=$WORK/fake-api.log pid
  port=$(free_port)
  python3 - "$port" >"$log" 2>&1 <<'PY' &
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
    def do_GET(self):
        print("GET", self.path[:120], flush=True)
        if self.path.startswith("/api/v1/pods") and "watch=true" in self.path:
            self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
            ev = {"type": "ADDED", "object": {"metadata": {"name": "p", "namespace": "n", "uid": "u", "resourceVersion": "2",
                                                           "annotations": {"pad": "x" * (5 << 20)}}}}
            self.wfile.write(json.dumps(ev).encode() + b"\n")
            return
        if "watch=true" not in self.path:  # every list (pods, pools, reservations) is empty
            body = json.dumps({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            return
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
    def do_POST(self):
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
  pid=$!
  on_exit "kill $pid 2>/dev/null"
  wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" || { echo "the stand-in server did not start: $(cat "$log")"; return 1; }
  sed -e "s#server: .*#server: http://127.0.0.1:$port#" -e '/certificate-authority-data/d' "$ALLOT_KUBECONFIG" >"$KC/fake.kubeconfig"
  start_gc w "$NODE" --role=agent --kubeconfig="$KC/fake.kubeconfig" --journal-dir= --log-level=debug || { kill "$pid"; return 1; }
  watches() { (( $(grep -c 'watch=true' "$log") >= $1 )); }
  wait_for 15 watches 2 || { echo "allot-gc did not resume its watch: $(cat "$log")"; stop_gc w; kill "$pid"; return 1; }
  local rss
  rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$(gc_pid w)/status")
  kill -0 "$(gc_pid w)" || { echo "allot-gc died"; kill "$pid"; return 1; }
  stop_gc w
  kill "$pid" 2>/dev/null
  grep -q "watch event larger than 4194304 bytes" "$WORK/gc-w.log" || { echo "no log naming the 4 MiB limit"; gc_log w | tail -5; return 1; }
  note "\"$(grep -m1 'larger than 4194304' "$WORK/gc-w.log" | cut -c1-160)\"; peak RSS $(( rss / 1024 )) MiB"
  (( rss < 64 * 1024 )) || { echo "peak RSS $(( rss / 1024 )) MiB"; return 1; }
}

# -------------------------------------------------------------------- run --
check "no token, client key or certificate in any log or output of the plugin (every verb, failing credentials, no server) or allot-gc" t_secrets
check "lock, cache and journal files 0600 in 0700 dirs, log 0600, node kubeconfig 0600, install-cni.sh's files, whatever the umask" t_modes
check "TLS: a wrong CA fails clearly; insecure-skip-tls-verify only from the kubeconfig, warned every time, never with a CA" t_tls
check "hostile network-status (another pod's IP, another namespace's NAD, 1 MB, 250 KiB, 2000 deep, path names, log forging) frees only the deleted pod's own address" t_hostile
check "plugin limits: stdin 1 MiB, 16 ranges, 1024 excludes, nesting 64, namespace name, deadline, CNI_ARGS 64 KiB, ifname: each a clear CNI error" t_plugin_limits
check "allot-gc: a NAD spec.config over 1 MiB is refused by name; the pod's address is still released" t_gc_limits
check "allot-gc: a watch event over 4 MiB is refused by name, the watch resumes, memory stays bounded" t_watch_limit

suite_summary
(( failed == 0 ))
