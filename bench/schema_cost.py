#!/usr/bin/env python3
"""What the IPPool CRD's schema costs the API server per write of a large pool.

Run by bench/schema-cost (which starts a private cluster); not on its own. For each schema
variant it installs that CRD, creates a pool of N entries in allot's format, and times the
admin's PUT of that pool with one entry added or removed (the write an ADD or DEL makes),
over a warm keep-alive connection. The variants:

  shipped      deploy/crds as shipped: allocation entries carry no schema
  per-entry    each entry typed: properties id/podref/ifname/... with id and podref
               required (Whereabouts' own CRD has this shape)

With --answers, the shipped schema only: the same PUT at N entries and at none, answered with
the whole object (Accept: application/json) and with its metadata only (PartialObjectMetadata,
the Accept allot's plugin sends for a pool write, k8s::kAcceptMetadata): the API server's
share of an ADD at a full pool against an empty one.
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Kube, percentile  # noqa: E402

GROUP = "whereabouts.cni.cncf.io"
POOLS = f"/apis/{GROUP}/v1alpha1/namespaces/kube-system/ippools"
CRD = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ippools.{GROUP}"
ENTRY_SCHEMA = {
    "type": "object",
    "required": ["id", "podref"],
    "properties": {k: {"type": "string"} for k in
                   ("id", "podref", "ifname", "ipamclaimref", "node", "poduid", "network")},
}


def entry(off):
    return {"id": f"{off:064x}", "podref": f"fill/pod-{off}", "ifname": "net1", "node": "node-1",
            "poduid": f"00000000-0000-4000-8000-{off:012x}", "network": "net"}


def install(kube, shipped, variant):
    crd = copy.deepcopy(shipped)
    allocs = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["allocations"]
    if variant == "per-entry":
        allocs.pop("x-kubernetes-preserve-unknown-fields", None)
        allocs["additionalProperties"] = ENTRY_SCHEMA
    live = kube.json("GET", CRD)
    crd["metadata"] = {"name": live["metadata"]["name"],
                       "resourceVersion": live["metadata"]["resourceVersion"]}
    kube.json("PUT", CRD, crd)
    # The new schema is served once the CRD handler has reloaded: wait until a probe pool with
    # an unknown entry field is pruned (per-entry) or kept (shipped).
    probe = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "IPPool", "metadata": {"name": "schema-probe"},
             "spec": {"range": "10.250.0.0/30", "allocations": {"1": {"id": "a", "podref": "", "zz": "y"}}}}
    for _ in range(100):
        kube.req("DELETE", f"{POOLS}/schema-probe")
        st, raw = kube.req("POST", POOLS, probe)
        if st == 201:
            kept = "zz" in json.loads(raw)["spec"]["allocations"]["1"]
            if kept == (variant == "shipped"):
                kube.req("DELETE", f"{POOLS}/schema-probe")
                return
        time.sleep(0.2)
    raise RuntimeError(f"the {variant} schema was not served within 20 s")


ACCEPT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"


def measure(kube, entries, writes, accept="application/json"):
    name = f"schema-cost-{entries}"
    kube.req("DELETE", f"{POOLS}/{name}")
    pool = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "IPPool", "metadata": {"name": name},
            "spec": {"range": "10.64.0.0/16", "allocations": {str(o): entry(o) for o in range(2, entries + 2)}}}
    cur = kube.json("POST", POOLS, pool)
    size = len(json.dumps(cur))
    times = []
    for i in range(writes):
        allocs = cur["spec"]["allocations"]
        if "1" in allocs:
            del allocs["1"]
        else:
            allocs["1"] = entry(1)
        t = time.monotonic()
        got = kube.json("PUT", f"{POOLS}/{name}", cur, accept=accept)
        times.append((time.monotonic() - t) * 1000)
        if got.get("kind") == "PartialObjectMetadata":
            cur["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"]
        else:
            cur = got
    kube.req("DELETE", f"{POOLS}/{name}")
    return size, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=6000)
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--crd", required=True, help="the shipped IPPool CRD (YAML)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--answers", action="store_true", help="time the answer forms, not schemas")
    a = ap.parse_args()
    kube = Kube(os.environ["KUBECONFIG"], a.workdir)
    shipped = json.loads(subprocess.check_output(
        ["python3", "-c", "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", a.crd]))
    if a.answers:
        print("| entries | object bytes | answer | PUT p50 (ms) | min | max |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in (0, a.entries):
            for label, accept in (("object", "application/json"), ("metadata only", ACCEPT_METADATA)):
                size, t = measure(kube, n, a.writes, accept)
                print(f"| {n} | {size} | {label} | {percentile(t, 50):.1f} | {min(t):.1f} | {max(t):.1f} |",
                      flush=True)
        return
    print(f"| CRD allocation schema | entries | object bytes | PUT p50 (ms) | min | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    try:
        for variant in ("per-entry", "shipped"):
            install(kube, shipped, variant)
            size, t = measure(kube, a.entries, a.writes)
            print(f"| {variant} | {a.entries} | {size} | {percentile(t, 50):.0f} | {min(t):.0f} | {max(t):.0f} |",
                  flush=True)
    finally:
        install(kube, shipped, "shipped")


if __name__ == "__main__":
    main()
