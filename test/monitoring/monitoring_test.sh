#!/usr/bin/env bash
# The monitoring suite: allot-gc's metrics and the alerts in deploy/monitoring/, checked with
# Prometheus' own promtool (built from its pinned Go module by e2e/build-promtool) and a real
# kube-apiserver + etcd (e2e/cluster):
#   - the PrometheusRule's rules parse (promtool check rules), and every alert fires on its
#     signal and stays quiet without it (promtool test rules test/monitoring/alerts_test.yaml);
#   - a live allot-gc's /metrics, after ADDs through its relay and a repair pass, passes
#     `promtool check metrics`, and every metric family it serves is documented in
#     docs/operations.md;
#   - with a pool filled to 95 % by the real plugin, the alert rules evaluated over that live
#     scrape fire AllotPoolNearlyFull for that pool.
# Prints `ok - NAME` / `not ok - NAME` per check, then `monitoring: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=monitoring
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"

PROMTOOL=$("$root/e2e/build-promtool") || suite_die "promtool builds (e2e/build-promtool)"
cluster_start || suite_die "cluster starts"
gc_init || suite_die "binaries and namespaces"
CHECK_DIR=$WORK
CHECK_ONLY=${MONITORING_ONLY:-}
CHECK_TIME=s

# The PrometheusRule's spec is a plain rule file, two spaces in.
rules_file() {
  awk 'f { sub(/^  /, ""); print } /^spec:/ { f = 1 }' "$root/deploy/monitoring/prometheusrule.yaml" >"$1"
}

t_rules() {
  rules_file "$WORK/rules.yaml"
  cp "$root/test/monitoring/alerts_test.yaml" "$WORK/alerts_test.yaml"
  "$PROMTOOL" check rules "$WORK/rules.yaml" || return 1
  "$PROMTOOL" test rules "$WORK/alerts_test.yaml" || return 1
  local n
  n=$(awk '$2 == "alert:"' "$WORK/rules.yaml" | wc -l)
  # Every alert has a test that expects it to fire.
  local a
  while read -r a; do
    grep -q "alertname: $a\$" "$WORK/alerts_test.yaml" || { echo "no test for alert $a"; return 1; }
    grep -q "^### $a\$" "$root/docs/operations.md" || { echo "no runbook entry '### $a' in docs/operations.md"; return 1; }
  done < <(awk '$2 == "alert:" { print $3 }' "$WORK/rules.yaml")
  note "$n alerts checked and unit-tested; each has a runbook entry"
}

RANGE=10.77.0.0/27
NET=mon-net

# ADDs through node-1's relay until the pool is 95 % used; sets POOL, USED and SIZE.
fill_pool() {
  local ipam i
  ipam=$(jq -cn --arg r "$RANGE" --arg s "$WORK/nodes/node-1/relay.sock" '{range: $r, relay_socket: $s}')
  CONF=$(netconf "$NET" "$ipam" node-1)
  POOL=$(pool_name "$RANGE")
  add node-1 ctr-0 pod-0 uid-0 "$CONF" >/dev/null || return 1
  wait_for 20 gc_has_pool_size || { echo "no allot_pool_size for $POOL"; return 1; }
  SIZE=$(pool_gauge allot_pool_size)
  USED=$(( (SIZE * 95 + 99) / 100 ))
  for (( i = 1; i < USED; i++ )); do
    add node-1 "ctr-$i" "pod-$i" "uid-$i" "$CONF" >/dev/null || return 1
  done
}
pool_gauge() { gc_metric m "$1{namespace=\"$POOLNS\",pool=\"$POOL\"}"; }
gc_has_pool_size() { [[ -n "$(pool_gauge allot_pool_size)" ]]; }
pool_used_is() { [[ "$(pool_gauge allot_pool_used)" == "$1" ]]; }

t_live() {
  start_gc m node-1 --repair-interval=1s --relay-socket="$WORK/nodes/node-1/relay.sock" || return 1
  fill_pool || return 1
  local used=$USED size=$SIZE
  wait_for 20 pool_used_is "$used" || { echo "allot_pool_used $(pool_gauge allot_pool_used), want $used"; return 1; }
  gc_metrics m >"$WORK/metrics.txt"
  # promtool prints nothing and exits 0 on clean metrics; any finding is a failure.
  local lint
  lint=$("$PROMTOOL" check metrics <"$WORK/metrics.txt" 2>&1) || { echo "$lint"; return 1; }
  [[ -z "$lint" ]] || { echo "promtool check metrics: $lint"; return 1; }
  local adds
  adds=$(awk -v s="allot_cni_request_duration_seconds_count{command=\"ADD\",network=\"$NET\",outcome=\"ok\"}" \
    '$1 == s { print $2 }' "$WORK/metrics.txt")
  expect_eq "ADDs the relay was told of" "$adds" "$used" || return 1
  local fam missing=()
  while read -r fam; do
    grep -q "\`$fam\`" "$root/docs/operations.md" || missing+=("$fam")
  done < <(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$WORK/metrics.txt")
  (( ${#missing[@]} == 0 )) || { echo "not in docs/operations.md: ${missing[*]}"; return 1; }
  note "$used of $size addresses used; promtool check metrics clean over $(grep -c '^# TYPE' "$WORK/metrics.txt") families"
}

# The alert rules over the live scrape, held for 15 minutes: AllotPoolNearlyFull fires for the
# pool filled above, with the summary Prometheus would render.
t_live_alert() {
  [[ -s "$WORK/metrics.txt" ]] || { echo "no live scrape (the check before failed)"; return 1; }
  rules_file "$WORK/rules.yaml"
  python3 - "$WORK/metrics.txt" "$POOLNS" "$POOL" >"$WORK/live_test.yaml" <<'EOF' || return 1
import re, sys
scrape, ns, pool = sys.argv[1:]
series, used, size = [], None, None
for line in open(scrape):
    if line.startswith("#") or not line.strip():
        continue
    name, value = line.rsplit(" ", 1)
    value = float(value)
    labels = name[name.index("{") + 1:-1] + "," if "{" in name else ""
    metric = name.split("{")[0]
    series.append((f"{metric}{{{labels}instance=\"live\"}}", value))
    if name == f'allot_pool_used{{namespace="{ns}",pool="{pool}"}}':
        used = value
    if name == f'allot_pool_size{{namespace="{ns}",pool="{pool}"}}':
        size = value
assert used is not None and size, "no gauges for the pool in the scrape"
q = lambda s: "'" + s.replace("'", "''") + "'"
print("rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:\n- interval: 1m\n  input_series:")
for s, v in series:
    print(f"  - {{series: {q(s)}, values: '{v:g}x15'}}")
pct = "%.4g%%" % (100 * used / size)
print("  alert_rule_test:")
print("  - eval_time: 10m")
print("    alertname: AllotPoolNearlyFull")
print("    exp_alerts:")
print(f"    - exp_labels: {{severity: warning, namespace: {ns}, pool: {pool}}}")
print("      exp_annotations:")
print(f'        summary: "IPPool {ns}/{pool} is {pct} used"')
print('        description: "New pods on its network fail with CNI code 100 once it is full."')
EOF
  "$PROMTOOL" test rules "$WORK/live_test.yaml" || return 1
  note "AllotPoolNearlyFull fires for $POOLNS/$POOL over the live scrape"
}

check "the alert rules parse, and each fires on its signal and stays quiet without it" t_rules
check "a live allot-gc's /metrics passes promtool check metrics; ADDs counted per network; every family documented" t_live
check "a pool filled to 95 % by the real plugin fires AllotPoolNearlyFull over the live metrics" t_live_alert

suite_summary
(( failed == 0 ))
