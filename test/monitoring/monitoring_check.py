#!/usr/bin/env python3
"""Checks of allot's monitoring objects for test/monitoring/monitoring_test.sh (needs PyYAML).

    monitoring_check.py chart HELM_OUTPUT LABEL=VALUE...
        the PodMonitor and the PrometheusRule of `helm template` output carry each LABEL=VALUE
        (the values' selector labels) and allot's own; the PodMonitor's endpoints keep allot's
        labels (honorLabels) and its job is "allot"; the dashboard ConfigMap is labelled
        grafana_dashboard "1" and holds the chart's dashboard JSON.
    monitoring_check.py rules HELM_OUTPUT OUT
        writes the PrometheusRule's spec as a plain rule file (promtool's input) to OUT.
    monitoring_check.py same RENDERED HELM_OUTPUT KIND
        the object of KIND in the rendered file equals the one in `helm template` output.
    monitoring_check.py queries DASHBOARD_JSON OUT
        writes each dashboard query, Grafana's variables replaced, as a recording rule to OUT
        (promtool check rules parses them); prints the number of queries.
    monitoring_check.py names SCRAPE FILE ALLOWED...
        every metric a PromQL expression in FILE (a dashboard's JSON or a rule file) names is a
        family of the live scrape SCRAPE (histograms with _bucket, _sum, _count) or one of
        ALLOWED; prints the names, exits 1 naming any other.
"""

import json
import re
import sys

import yaml

# PromQL words that are not metric names: keywords, aggregation modifiers, set operators.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "atan2"}
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def fail(msg):
    print(msg)
    sys.exit(1)


def objects(helm_output):
    with open(helm_output) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def one(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    if len(found) != 1:
        fail("%d objects of kind %s in the output, want 1" % (len(found), kind))
    return found[0]


def chart(helm_output, pairs):
    docs = objects(helm_output)
    want = dict(p.split("=", 1) for p in pairs)
    want["app.kubernetes.io/name"] = "allot"
    for kind in ("PodMonitor", "PrometheusRule"):
        labels = one(docs, kind)["metadata"].get("labels") or {}
        for k, v in want.items():
            if labels.get(k) != v:
                fail("%s label %s is %r, want %r (labels: %s)" % (kind, k, labels.get(k), v, labels))
    pm = one(docs, "PodMonitor")["spec"]
    if pm.get("jobLabel") != "app.kubernetes.io/name":
        fail("PodMonitor jobLabel %r: the alerts' up{job=\"allot\"} needs the pods' name" % pm.get("jobLabel"))
    for ep in pm["podMetricsEndpoints"]:
        if ep.get("honorLabels") is not True:
            fail("PodMonitor endpoint %s without honorLabels: true" % ep)
    cm = one(docs, "ConfigMap")
    if (cm["metadata"].get("labels") or {}).get("grafana_dashboard") != "1":
        fail("dashboard ConfigMap labels %s lack grafana_dashboard: \"1\"" % cm["metadata"].get("labels"))
    dash = json.loads(cm["data"]["allot.json"])
    print("PodMonitor and PrometheusRule labelled %s; dashboard %r with %d panels"
          % (", ".join("%s=%s" % kv for kv in sorted(want.items())), dash["title"], len(dash["panels"])))


def rules(helm_output, out):
    spec = one(objects(helm_output), "PrometheusRule")["spec"]
    with open(out, "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False, width=1000)


def same(rendered, helm_output, kind):
    with open(rendered) as f:
        a = [d for d in yaml.safe_load_all(f) if d]
    b = one(objects(helm_output), kind)
    if a != [b]:
        fail("%s is not the chart's %s: run scripts/render-deploy" % (rendered, kind))


def dashboard_exprs(path):
    with open(path) as f:
        dash = json.load(f)
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return out


def grafana_free(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return re.sub(r"\$\{?[A-Za-z_]\w*\}?", ".*", expr)


def queries(dashboard, out):
    exprs = dashboard_exprs(dashboard)
    recs = [{"record": "allot_dashboard:query_%d" % i, "expr": grafana_free(e)}
            for i, (_, e) in enumerate(exprs)]
    with open(out, "w") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recs}]}, f, sort_keys=False, width=1000)
    print(len(recs))


def metric_names(expr):
    expr = re.sub(r'"(\\.|[^"\\])*"', '""', grafana_free(expr))  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    # Label lists after by/without/on/ignoring/group_left/group_right.
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word, rest = m.group(0), expr[m.end():].lstrip()
        if word.lower() in KEYWORDS or rest.startswith("("):
            continue
        if m.start() > 0 and (expr[m.start() - 1].isdigit() or expr[m.start() - 1] == "."):
            continue  # a number's exponent or a duration's unit
        names.add(word)
    return names


def scrape_names(scrape):
    names = set()
    with open(scrape) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[:2] == ["#", "TYPE"]:
                names.add(parts[2])
                if parts[3] == "histogram":
                    names.update(parts[2] + s for s in ("_bucket", "_sum", "_count"))
    return names


def file_exprs(path):
    if path.endswith(".json"):
        return dashboard_exprs(path)
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [(r.get("alert") or r.get("record"), r["expr"]) for g in doc["groups"] for r in g["rules"]]


def names(scrape, path, allowed):
    known = scrape_names(scrape) | set(allowed)
    used, bad = set(), []
    for title, expr in file_exprs(path):
        found = metric_names(expr)
        if not found:
            bad.append("%s: names no metric: %s" % (title, expr))
        used |= found
        bad += ["%s: %s is no metric allot exports" % (title, n) for n in sorted(found - known)]
    if bad:
        fail("\n".join(bad))
    print(" ".join(sorted(used)))


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "chart":
        chart(args[0], args[1:])
    elif cmd == "rules":
        rules(args[0], args[1])
    elif cmd == "same":
        same(args[0], args[1], args[2])
    elif cmd == "queries":
        queries(args[0], args[1])
    elif cmd == "names":
        names(args[0], args[1], args[2:])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
