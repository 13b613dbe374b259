#!/usr/bin/env bash
# The monitoring suite: allot-gc's metrics, and the chart's PodMonitor, PrometheusRule and
# Grafana dashboard (deploy/helm/allot; rendered into deploy/monitoring/), checked with
# Prometheus' own promtool (built from its pinned Go module by e2e/build-promtool), helm
# (e2e/build-helm) and a real kube-apiserver + etcd (e2e/cluster):
#   - with kube-prometheus-stack's selector labels set through the values, `helm template`'s
#     PodMonitor and PrometheusRule carry them, the PodMonitor keeps allot's labels
#     (honorLabels), and deploy/monitoring/ is the chart's rendering;
#   - the PrometheusRule's rules parse (promtool check rules), and every alert fires on its
#     signal and stays quiet without it (promtool test rules test/monitoring/alerts_test.yaml),
#     the availability alerts included (allot-gc not scraped, down, DaemonSet unavailable);
#   - a live allot-gc's /metrics, after ADDs through its relay and a repair pass, passes
#     `promtool check metrics`, and every metric family it serves is documented in
#     docs/operations.md;
#   - with a pool filled to 95 % by the real plugin, the alert rules evaluated over that live
#     scrape fire AllotPoolNearlyFull for that pool;
#   - every PromQL query of the dashboard parses (promtool check rules, each as a recording
#     rule), and it and the alerts name only metrics the live allot-gc exports (the alerts also
#     `up` and kube-state-metrics' DaemonSet series).
# Prints `ok - NAME` / `not ok - NAME` per check, then `monitoring: N passed, N failed`.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME=monitoring
# shellcheck source=test/integration/gc_lib.sh disable=SC1091
source "$root/test/integration/gc_lib.sh"

PROMTOOL=$("$root/e2e/build-promtool") || suite_die "promtool builds (e2e/build-promtool)"
HELM=$("$root/e2e/build-helm") || suite_die "helm builds (e2e/build-helm)"
python3 -c 'import yaml' 2>/dev/null || suite_die "python3 with PyYAML (python3-yaml; scripts/deps)"
cluster_start || suite_die "cluster starts"
gc_init || suite_die "binaries and namespaces"
CHECK_DIR=$WORK
CHECK_ONLY=${MONITORING_ONLY:-}
CHECK_TIME=s

CHART=$root/deploy/helm/allot
# The chart's kubeVersion refuses helm's default (1.20): the version the suites run.
KUBE_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$root/e2e/k8s/go.mod")
MCHECK=$root/test/monitoring/monitoring_check.py
# helm_monitoring OUT [HELM ARGS...]: the chart's monitoring objects, every one enabled.
helm_monitoring() {
  local out=$1; shift
  "$HELM" template allot "$CHART" --namespace kube-system --kube-version "$KUBE_VERSION" --set metrics.podMonitor.enabled=true \
    --set metrics.prometheusRule.enabled=true --set metrics.dashboard.enabled=true \
    --show-only templates/podmonitor.yaml --show-only templates/prometheusrule.yaml \
    --show-only templates/dashboard.yaml "$@" >"$out"
}
# The rule file: the chart's PrometheusRule's spec, as helm renders it.
rules_file() {
  helm_monitoring "$WORK/helm-monitoring.yaml" || return 1
  python3 "$MCHECK" rules "$WORK/helm-monitoring.yaml" "$1"
}

# kube-prometheus-stack selects monitors and rules by its release label; the chart's values put
# it (and any other) on both, and the PodMonitor keeps allot's namespace label. Off by default;
# deploy/monitoring/ is the default rendering.
t_chart() {
  local out=$WORK/kps.yaml
  helm_monitoring "$out" --set metrics.podMonitor.labels.release=kube-prometheus-stack \
    --set metrics.prometheusRule.labels.release=kube-prometheus-stack \
    --set-string metrics.podMonitor.labels.team=net --set-string metrics.prometheusRule.labels.team=net || return 1
  local said
  said=$(python3 "$MCHECK" chart "$out" release=kube-prometheus-stack team=net) || { echo "$said"; return 1; }
  note "$said"
  # Nothing monitoring-related without the values (the Operator's CRDs may be absent).
  "$HELM" template allot "$CHART" --namespace kube-system --kube-version "$KUBE_VERSION" >"$WORK/default.yaml" || return 1
  ! grep -Eq '^kind: (PodMonitor|PrometheusRule)$|name: allot-dashboard$' "$WORK/default.yaml" ||
    { echo "monitoring objects rendered with default values"; return 1; }
  "$HELM" template allot "$CHART" --namespace kube-system --kube-version "$KUBE_VERSION" --set metrics.podMonitor.enabled=true \
    --set metrics.podMonitor.honorLabels=false --show-only templates/podmonitor.yaml >"$WORK/nohonor.yaml" || return 1
  grep -q 'honorLabels: false' "$WORK/nohonor.yaml" || { echo "metrics.podMonitor.honorLabels=false not rendered"; return 1; }
  helm_monitoring "$WORK/default-mon.yaml" || return 1
  local pair
  for pair in podmonitor.yaml:PodMonitor prometheusrule.yaml:PrometheusRule dashboard.yaml:ConfigMap; do
    python3 "$MCHECK" same "$root/deploy/monitoring/${pair%%:*}" "$WORK/default-mon.yaml" "${pair#*:}" || return 1
  done
  cmp -s "$CHART/files/dashboard.json" "$root/deploy/monitoring/allot-dashboard.json" ||
    { echo "deploy/monitoring/allot-dashboard.json is not the chart's: run scripts/render-deploy"; return 1; }
}

t_rules() {
  rules_file "$WORK/rules.yaml" || return 1
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
  # node-1's agent (its relay counts the plugin's ADDs) and the controller (the pool gauges).
  start_gc ma node-1 --role=agent --relay-socket="$WORK/nodes/node-1/relay.sock" || return 1
  start_gc m node-1 --role=controller --repair-interval=1s --resync-interval=1s || return 1
  fill_pool || return 1
  local used=$USED size=$SIZE
  wait_for 20 pool_used_is "$used" || { echo "allot_pool_used $(pool_gauge allot_pool_used), want $used"; return 1; }
  gc_metrics m >"$WORK/metrics.txt"
  gc_metrics ma >"$WORK/metrics-agent.txt"
  # promtool prints nothing and exits 0 on clean metrics; any finding is a failure.
  local lint f
  for f in metrics.txt metrics-agent.txt; do
    lint=$("$PROMTOOL" check metrics <"$WORK/$f" 2>&1) || { echo "$lint"; return 1; }
    [[ -z "$lint" ]] || { echo "promtool check metrics ($f): $lint"; return 1; }
  done
  local adds
  adds=$(awk -v s="allot_cni_request_duration_seconds_count{command=\"ADD\",network=\"$NET\",outcome=\"ok\"}" \
    '$1 == s { print $2 }' "$WORK/metrics-agent.txt")
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
  rules_file "$WORK/rules.yaml" || return 1
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

# Every query of the dashboard parses as PromQL, and names only what allot-gc exports (the live
# scrape of t_live); the alerts too, beside up and kube-state-metrics' DaemonSet series.
t_dashboard() {
  [[ -s "$WORK/metrics.txt" ]] || { echo "no live scrape (the check before failed)"; return 1; }
  local n used
  n=$(python3 "$MCHECK" queries "$CHART/files/dashboard.json" "$WORK/dashboard_rules.yaml") || { echo "$n"; return 1; }
  "$PROMTOOL" check rules "$WORK/dashboard_rules.yaml" || return 1
  used=$(python3 "$MCHECK" names "$WORK/metrics.txt" "$CHART/files/dashboard.json") || { echo "$used"; return 1; }
  rules_file "$WORK/rules.yaml" || return 1
  python3 "$MCHECK" names "$WORK/metrics.txt" "$WORK/rules.yaml" up kube_daemonset_status_desired_number_scheduled \
    kube_daemonset_status_number_ready kube_daemonset_status_number_unavailable >/dev/null || return 1
  note "$n dashboard queries parse; they name $(wc -w <<<"$used") of allot's metrics: $used"
}

check "with kube-prometheus-stack's selector labels in the values, the PodMonitor and PrometheusRule carry them; deploy/monitoring/ is the chart's rendering" t_chart
check "the alert rules parse, and each fires on its signal and stays quiet without it" t_rules
check "a live node agent's and controller's /metrics pass promtool check metrics; ADDs counted per network; every family documented" t_live
check "a pool filled to 95 % by the real plugin fires AllotPoolNearlyFull over the live metrics" t_live_alert
check "every dashboard query parses, and it and the alerts name only metrics allot-gc exports" t_dashboard

suite_summary
(( failed == 0 ))
