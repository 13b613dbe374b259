#!/usr/bin/env python3
"""Differential test: allot against Whereabouts v0.9.4 on one real kube-apiserver.

Each case is one or more IPAM configurations and a sequence of ADD/DEL calls. The same
configurations and calls go to the Whereabouts binary and to allot, each against its own fresh
pools (its own namespace, emptied before every case), and the answers are compared: accept or
reject for every call, and every returned address (with the gateway of its family). Run by
test/diff/diff_test.sh, which starts the cluster and builds Whereabouts; see there.

A mismatch is allowed only where README.md lists a deviation, and each is recognised from what
the two binaries answered, not from a table of expectations:
  p2p        a /31, /32, /127 or /128 range: where Whereabouts refuses a call ("too small"), allot
             hands out every address (checked: distinct, inside the range).
  gateway    Whereabouts hands out the gateway when it lies inside the range; allot never does.
             The case is run again on Whereabouts with the gateway added to every range's
             exclude list, and allot must match that run exactly.
  same-net   two range entries with one network: Whereabouts answers the same address twice,
             allot refuses the configuration.
  v6-offset  an IPv6 address 2^64 or more above its range's network (ranges wider than /64):
             Whereabouts truncates the pool offset to 64 bits, so after a DEL it never hands
             the address out again (its DEL frees the wrong reservation); allot keeps the full
             offset (checked: no address held twice).
Any other difference fails, and the case is printed as JSON for --replay.
"""

import argparse
import ipaddress
import json
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench import Kube  # noqa: E402  (the admin REST client the bench uses)

GROUP = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the two tools ---

class Tool:
    def __init__(self, name, binary, kubeconfig, namespace, extra_ipam, env_extra, work):
        self.name, self.binary, self.kubeconfig, self.ns = name, binary, kubeconfig, namespace
        self.extra_ipam, self.env_extra, self.work = extra_ipam, env_extra, work

    def call(self, verb, ipam, cni_version, cid, pod):
        conf = {"cniVersion": cni_version, "name": "diffnet", "type": "macvlan",
                "ipam": dict({"type": "whereabouts"}, **ipam, kubernetes={"kubeconfig": self.kubeconfig},
                             **self.extra_ipam)}
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CNI_COMMAND": verb, "CNI_CONTAINERID": cid,
               "CNI_NETNS": f"/var/run/netns/{cid}", "CNI_IFNAME": "net1", "CNI_PATH": "/usr/lib/cni",
               "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE=diff;K8S_POD_NAME={pod};"
                           f"K8S_POD_INFRA_CONTAINER_ID={cid}",
               "NODENAME": "diff-node"}
        env.update(self.env_extra)
        try:
            p = subprocess.run([self.binary], input=json.dumps(conf), env=env, capture_output=True,
                               text=True, timeout=90)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": "timed out after 90 s", "ips": []}
        if p.returncode != 0:
            msg = p.stdout.strip() or p.stderr.strip()
            try:
                msg = json.loads(p.stdout).get("msg", msg)
            except ValueError:
                pass
            return {"ok": False, "error": msg[:300], "ips": []}
        if verb != "ADD":
            return {"ok": True, "ips": []}
        try:
            res = json.loads(p.stdout)
        except ValueError:
            return {"ok": False, "error": "unreadable result: " + p.stdout[:200], "ips": []}
        ips = []
        entries = res.get("ips", [])
        for old in ("ip4", "ip6"):  # results of cniVersion 0.1.0 and 0.2.0
            if isinstance(res.get(old), dict):
                entries.append({"address": res[old].get("ip", ""), "gateway": res[old].get("gateway")})
        for ip in entries:
            addr = ip.get("address", "")
            gw = ip.get("gateway")
            fam = ipaddress.ip_interface(addr).version if addr else 0
            # Whereabouts puts the gateway on every address; compare it where its family matches.
            if gw and ipaddress.ip_address(gw).version != fam:
                gw = None
            ips.append([addr, gw])
        return {"ok": True, "ips": ips}


def empty_namespace(kube, ns):
    for res in ("ippools", "overlappingrangeipreservations"):
        st, raw = kube.req("DELETE", f"{GROUP}/{ns}/{res}")
        if st not in (200, 404):
            raise RuntimeError(f"emptying {ns}/{res}: HTTP {st} {raw[:200]!r}")


def run_case(kube, tool, case, ipam_patch=None):
    """Runs the case's calls in order on fresh pools; returns the list of answers."""
    empty_namespace(kube, tool.ns)
    gen = {}
    answers = []
    configs = case["configs"]
    if ipam_patch:
        configs = [ipam_patch(c) for c in configs]
    version = case.get("cniVersion", "1.0.0")
    for verb, ci, pod in case["ops"]:
        cid = f"{case['id']}-p{pod}-g{gen.get(pod, 0)}"
        ans = tool.call(verb, configs[ci], version, cid, f"pod{pod}")
        if verb == "ADD" and not ans["ok"]:
            # As a runtime does after a failed ADD (the CNI spec requires it): DEL the container.
            # Whether that DEL succeeds is compared too.
            cleanup = tool.call("DEL", configs[ci], version, cid, f"pod{pod}")
            ans["cleanup_ok"] = cleanup["ok"]
            if not cleanup["ok"]:
                ans["error"] += " | DEL after it: " + cleanup.get("error", "")
            verb = "DEL"
        answers.append(ans)
        if verb == "DEL":
            gen[pod] = gen.get(pod, 0) + 1  # the next ADD of this pod is a new sandbox
    return answers


# ------------------------------------------------------------------- comparison ---

def with_gateway_excluded(gw):
    def patch(ipam):
        out = json.loads(json.dumps(ipam))
        if not out.get("gateway"):
            return out  # another config on a shared pool: its own addresses include the gateway
        if out.get("range"):
            out["exclude"] = list(out.get("exclude") or []) + [gw]
        for r in out.get("ipRanges") or []:
            if isinstance(r, dict):
                r["exclude"] = list(r.get("exclude") or []) + [gw]
        return out
    return patch


def same(w, a):
    """Accept/reject and every address (with its gateway) agree; error texts may differ."""
    def key(x):
        return x["ok"], x["ips"], x.get("cleanup_ok", True)
    return [key(x) for x in w] == [key(x) for x in a]


def never_shared(case, answers):
    """No address is held by two pods at once (a pod holds from its ADD to its DEL)."""
    held = {}
    for (verb, _, pod), x in zip(case["ops"], answers):
        if verb == "ADD" and x["ok"]:
            for addr, _ in x["ips"]:
                held.setdefault(addr.split("/")[0], set()).add(pod)
        if verb == "DEL" or not x["ok"]:
            for pods in held.values():
                pods.discard(pod)
        if any(len(pods) > 1 for pods in held.values()):
            return False
    return True


def p2p_only(case, w, a):
    """p2p ranges: where Whereabouts refuses a call as "too small", allot hands out addresses
    (or has none free); every other call agrees exactly, and no address is held twice. Judged
    call by call, so a shared pool whose other config both refuse (a bad key) is recognised."""
    tiny = ["too small" in x.get("error", "") for x in w]
    if not any(tiny):
        return False
    for x, y, t in zip(w, a, tiny):
        if t and not (y["ok"] or "no free address" in y.get("error", "")):
            return False
        if not t and not same([x], [y]):
            return False
    return never_shared(case, a)


def wide_offset(addr):
    iface = ipaddress.ip_interface(addr)
    return int(iface.ip) - int(iface.network.network_address) >= 1 << 64


def judge(kube, wa, al, case):
    """Returns (verdict, detail, (whereabouts' answers, allot's answers)): verdict is "match", a
    deviation name, or "MISMATCH"."""
    w = run_case(kube, wa, case)
    a = run_case(kube, al, case)
    seen = (w, a)
    if same(w, a):
        return "match", None, seen
    # gateway handed out by Whereabouts: compare with Whereabouts told to exclude it.
    gws = {ip[1] for ans in w for ip in ans["ips"] if ip[1] and ip[0].split("/")[0] == ip[1]}
    if gws:
        w2 = run_case(kube, wa, case, with_gateway_excluded(sorted(gws)[0]))
        if same(w2, a):
            return "gateway", None, seen
        w = w2
    if p2p_only(case, w, a):
        return "p2p", None, seen
    # IPv6 offsets of 2^64 or more from the network: Whereabouts keeps offsets in 64 bits, so it
    # stores such an entry under a wrong offset and its DEL frees the wrong reservation.
    if any(wide_offset(addr) for x in w for addr, _ in x["ips"]) and never_shared(case, a):
        return "v6-offset", None, seen
    if any("same network as range entry" in x.get("error", "") for x in a):
        if all(x["ok"] for x in w if x is not None):
            return "same-net", None, seen
    return "MISMATCH", {"whereabouts": w, "allot": a}, seen


# --------------------------------------------------------------------- the cases ---

class CaseList:
    """Cases with ids d00, d01, ... in the order they are added."""

    def __init__(self):
        self.cases = []

    def next_id(self):
        return f"d{len(self.cases):02d}"

    def append(self, case):
        self.cases.append(case)

    def add(self, name, configs, n_add=4, dels=(1,), readd=True, version="1.0.0"):
        """configs ADDed n_add times, each DEL in dels, then (readd) one more ADD."""
        if isinstance(configs, dict):
            configs = [configs]
        ops = [["ADD", 0, i] for i in range(n_add)]
        for d in dels:
            if d < n_add:
                ops.append(["DEL", 0, d])
        if readd:
            ops.append(["ADD", 0, n_add])
        self.cases.append({"id": self.next_id(), "name": name, "configs": configs, "ops": ops, "cniVersion": version})


def allocate_cases(cl):
    """Whereabouts' pkg/allocate tests."""
    cl.add("allocate: IPv4 /24", {"range": "192.168.1.1/24"})
    cl.add("allocate: IPv6 no leading zeroes", {"range": "caa5::0/112"})
    cl.add("allocate: IPv6 all leading zeroes /126", {"range": "::1/126"})
    cl.add("allocate: IPv6 two leading zeroes", {"range": "fd::1/116"})
    cl.add("allocate: IPv6 leading zeroes /126", {"range": "100::2:1/126"})
    cl.add("allocate: exclude a /30", {"range": "192.168.0.0/29", "exclude": ["192.168.0.0/30"]}, n_add=5)
    cl.add("allocate: exclude a single IP", {"range": "192.168.0.0/29", "exclude": ["192.168.0.1"]}, n_add=6)
    cl.add("allocate: invalid IPv4 exclude", {"range": "192.168.0.0/29", "exclude": ["192.168.0.1/123"]})
    cl.add("allocate: IPv6 exclude /126", {"range": "100::2:1/125", "exclude": ["100::2:1/126"]}, n_add=5)
    cl.add("allocate: IPv6 exclude single", {"range": "100::2:1/125", "exclude": ["100::2:1"]}, n_add=7)
    cl.add("allocate: invalid IPv6 exclude", {"range": "100::2:1/125", "exclude": ["100::2::1"]})
    cl.add("allocate: very large IPv6 exclude", {"range": "2001:db8::/30", "exclude": ["2001:db8::0/32"]})
    cl.add("allocate: unsorted excludes", {"range": "192.168.0.0/28",
                                           "exclude": ["192.168.0.0/30", "192.168.0.6/31", "192.168.0.8/31",
                                                       "192.168.0.4/30"]}, n_add=6)
    cl.add("allocate: unsorted excludes 2", {"range": "192.168.0.0/28",
                                             "exclude": ["192.168.0.0/30", "192.168.0.14/31", "192.168.0.4/30",
                                                         "192.168.0.6/31", "192.168.0.8/31"]}, n_add=5)
    cl.add("allocate: exclude past the last free address", {"range": "192.168.0.0/29",
                                                            "exclude": ["192.168.0.4/30"]}, n_add=5)
    cl.add("allocate: IPv6 exclude the rest", {"range": "100::2:1/125", "exclude": ["100::2:4/126"]}, n_add=5)
    cl.add("allocate: range_start at the network address", {"range": "192.168.0.0/29",
                                                            "range_start": "192.168.0.0"}, n_add=7)
    cl.add("allocate: start network, end broadcast", {"range": "192.168.0.0/29", "range_start": "192.168.0.0",
                                                      "range_end": "192.168.0.8"}, n_add=7)
    cl.add("allocate: range_end inside an exclude", {"range": "192.168.0.0/28", "range_start": "192.168.0.1",
                                                     "range_end": "192.168.0.6", "exclude": ["192.168.0.4/30"]},
           n_add=5)


def config_cases(cl):
    """Whereabouts' pkg/config tests."""
    cl.add("config: basic A-B, gateway outside", {"range": "192.168.1.5-192.168.1.25/24",
                                                  "gateway": "192.168.10.1", "log_level": "debug"})
    cl.add("config: host bits, range_start below", {"range": "192.168.2.230/24", "range_start": "192.168.2.223",
                                                    "gateway": "192.168.10.1"})
    cl.add("config: overlapping ranges on", {"range": "192.168.2.230/24", "gateway": "192.168.5.5",
                                             "enable_overlapping_ranges": True})
    cl.add("config: overlapping ranges off", {"range": "192.168.2.230/24", "gateway": "192.168.5.5",
                                              "enable_overlapping_ranges": False})
    cl.add("config: leading zeroes in A-B", {"range": "00192.00168.1.5-000000192.168.1.25/24",
                                             "gateway": "192.168.10.1"})
    cl.add("config: leading zeroes in the range", {"range": "00192.00168.1.0/24", "gateway": "192.168.10.1"})
    cl.add("config: leading zeroes, range_start", {"range": "00192.00168.1.0/24", "range_start": "00192.00168.1.44",
                                                   "gateway": "192.168.10.1"})
    cl.add("config: leading zeroes, start and end", {"range": "00192.00168.1.0/24",
                                                     "range_start": "00192.00168.1.44",
                                                     "range_end": "00192.00168.01.209", "gateway": "192.168.10.1"})
    cl.add("config: A-B start outside the CIDR", {"range": "192.168.1.5-192.168.2.25/28",
                                                  "gateway": "192.168.10.1"})
    cl.add("config: ipRanges dual-stack", {"ipRanges": [{"range": "192.168.1.0/29"}, {"range": "abcd::0/125"}]},
           n_add=7)
    cl.add("config: range plus ipRanges", {"range": "192.168.1.0/29", "ipRanges": [{"range": "abcd::1/125"}]})


def iphelpers_and_more_cases(cl):
    """Whereabouts' pkg/iphelpers tests, then allot's own issues and corner cases."""
    cl.add("iphelpers: range_end before range_start", {"range": "192.168.0.0/28", "range_start": "192.168.0.10",
                                                       "range_end": "192.168.0.5"}, n_add=6)
    cl.add("iphelpers: start and end outside", {"range": "192.168.0.0/28", "range_start": "192.167.0.10",
                                                "range_end": "192.169.0.5"})
    cl.add("iphelpers: IPv6 start and end", {"range": "fd00::/120", "range_start": "fd00::10",
                                             "range_end": "fd00::12"}, n_add=4)
    cl.add("iphelpers: /31 and /32", {"ipRanges": [{"range": "10.0.0.0/31"}]})
    cl.add("iphelpers: /32", {"range": "10.0.0.9/32"})
    cl.add("iphelpers: /127", {"range": "fd00::/127"})
    cl.add("issue 14: pool is a block, router elsewhere", {"range": "10.1.0.64/26", "gateway": "10.1.0.1"})
    cl.add("issue 14: window inside a /24, router at .1", {"range": "10.1.0.0/24", "range_start": "10.1.0.100",
                                                           "range_end": "10.1.0.102", "gateway": "10.1.0.1"})
    cl.add("gateway inside the window", {"range": "10.2.0.0/29", "gateway": "10.2.0.2"}, n_add=6)
    cl.add("no range at all", {"gateway": "10.5.0.1"}, n_add=1)
    cl.add("dns and routes passed through", {"range": "10.6.0.0/29", "routes": [{"dst": "0.0.0.0/0"}],
                                             "dns": {"nameservers": ["10.6.0.53"], "search": ["x.local"]}}, n_add=2)
    cl.add("dns nameservers as a string", {"range": "10.6.0.0/29", "dns": {"nameservers": "10.6.0.53"}}, n_add=1)
    cl.add("log_level Whereabouts does not know", {"range": "10.7.0.0/29", "log_level": "LOUD"}, n_add=2)
    cl.append({"id": cl.next_id(), "name": "ADD twice for one container returns the same address",
               "configs": [{"range": "10.8.0.0/29"}], "ops": [["ADD", 0, 0], ["ADD", 0, 0], ["ADD", 0, 1]]})
    cl.add("config: cniVersion 0.2.0 dual-stack", {"ipRanges": [{"range": "10.3.0.0/29"}, {"range": "fd03::/125"}]},
           version="0.2.0")
    cl.append({"id": cl.next_id(), "name": "shared pool: two windows on one range, used in turn",
               "configs": [{"range": "10.4.0.0/28", "range_start": "10.4.0.2", "range_end": "10.4.0.5"},
                           {"range": "10.4.0.0/28", "range_start": "10.4.0.4", "range_end": "10.4.0.9",
                            "exclude": ["10.4.0.6"]}],
               "ops": [["ADD", 0, 0], ["ADD", 1, 1], ["ADD", 0, 2], ["ADD", 1, 3], ["ADD", 0, 4], ["ADD", 1, 5],
                       ["DEL", 0, 1], ["ADD", 0, 6], ["ADD", 1, 7], ["ADD", 1, 8], ["ADD", 1, 9]]})


def derived_cases():
    """The configurations of Whereabouts' own tests (pkg/allocate, pkg/config, pkg/iphelpers),
    each ADDed until exhaustion or a few times, with a DEL and a re-ADD."""
    cl = CaseList()
    allocate_cases(cl)
    config_cases(cl)
    iphelpers_and_more_cases(cl)
    return cl.cases

class Gen:
    """A seeded random generator of configurations and call sequences."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    # odd literals Whereabouts still reads (or does not: the test finds out)
    def v4_text(self, ip):
        r = self.r
        s = str(ip)
        k = r.random()
        if k < 0.12:
            return ".".join(("0" * r.randint(1, 2) + o) if r.random() < 0.5 else o for o in s.split("."))
        if k < 0.16:
            return "::ffff:" + s
        return s

    def v6_text(self, ip):
        r = self.r
        k = r.random()
        if k < 0.1:
            return ip.exploded
        if k < 0.2:
            return str(ip).upper()
        return str(ip)

    def text(self, ip):
        return self.v4_text(ip) if ip.version == 4 else self.v6_text(ip)

    def garbage(self):
        return self.r.choice(["10.0.0.256", "not-an-ip", "10.0.0", "fd00:::1", "10.0.0.1 ", "1.2.3.4/33"])

    def network(self, fam):
        r = self.r
        if fam == 4:
            plen = r.choice([22, 24, 25, 26, 27, 28, 28, 29, 29, 30, 30, 31, 32])
            base = ipaddress.ip_address(f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.0")
            return ipaddress.ip_network(f"{base}/{plen}", strict=False)
        plen = r.choice([116, 118, 120, 122, 124, 125, 126, 127, 128])
        base = ipaddress.ip_address(f"fd{r.randint(0, 255):02x}:{r.randint(0, 65535):x}::")
        return ipaddress.ip_network(f"{base}/{plen}", strict=False)

    def addr_in(self, net):
        return net.network_address + self.r.randint(0, net.num_addresses - 1)

    def addr_near(self, net):
        """Inside, or just outside, or of the other family."""
        r = self.r
        k = r.random()
        if k < 0.65:
            return self.addr_in(net)
        if k < 0.75:
            return net.network_address if r.random() < 0.5 else net.broadcast_address
        if k < 0.9:
            off = r.randint(1, 300)
            base = net.broadcast_address if r.random() < 0.5 else net.network_address
            try:
                return base + off if base == net.broadcast_address else base - off
            except ipaddress.AddressValueError:
                return net.network_address
        return ipaddress.ip_address("fd99::5") if net.version == 4 else ipaddress.ip_address("10.99.0.5")

    def range_entry(self, fam, top, net=None):
        r = self.r
        net = net or self.network(fam)
        e = {}
        if r.random() < 0.25:
            a, b = sorted([self.addr_in(net), self.addr_in(net)])
            if r.random() < 0.15:
                a, b = b, a
            e["range"] = f"{self.text(a)}-{self.text(b)}/{net.prefixlen}"
        else:
            host = self.addr_in(net) if r.random() < 0.2 else net.network_address
            plen = f"0{net.prefixlen}" if r.random() < 0.05 else str(net.prefixlen)
            e["range"] = f"{self.text(host)}/{plen}"
        for key in ("range_start", "range_end"):
            k = r.random()
            if k < 0.4:
                e[key] = self.text(self.addr_near(net))
            elif k < 0.45 and top:
                e[key] = self.garbage()  # top level: Whereabouts drops it; ipRanges: refuses it
            elif k < 0.47:
                e[key] = self.garbage()
        if r.random() < 0.45:
            ex = []
            for _ in range(r.randint(1, 3)):
                k = r.random()
                a = self.addr_near(net)
                if k < 0.45:
                    ex.append(str(a))
                elif k < 0.9:
                    plen = r.randint(max(net.prefixlen, (32 if fam == 4 else 128) - 4), 32 if fam == 4 else 128)
                    if a.version != net.version:
                        plen = 32 if a.version == 4 else 128
                    ex.append(f"{ipaddress.ip_network(f'{a}/{plen}', strict=False)}")
                elif k < 0.95:
                    ex.append(self.garbage())
                else:
                    ex.append(str(net))
            e["exclude"] = ex
        return e, net

    def config(self):
        r = self.r
        fam = 4 if r.random() < 0.7 else 6
        cfg = {}
        nets = []
        shape = r.random()
        if shape < 0.6:
            e, net = self.range_entry(fam, True)
            cfg.update(e)
            nets.append(net)
        else:
            entries = []
            fams = [fam] if shape < 0.75 else [4, 6]
            if 0.75 <= shape < 0.85:
                e, net = self.range_entry(4, True)  # top-level range plus an ipRanges entry
                cfg.update(e)
                nets.append(net)
                fams = [6]
            for f in fams:
                e, net = self.range_entry(f, False)
                entries.append(e)
                nets.append(net)
            cfg["ipRanges"] = entries
        k = r.random()
        if k < 0.25:
            cfg["gateway"] = self.text(self.addr_in(nets[0]))
        elif k < 0.45:
            n = nets[0]
            outer = ipaddress.ip_network(f"{n.network_address}/{max(n.prefixlen - 4, 8 if n.version == 4 else 64)}",
                                         strict=False)
            cfg["gateway"] = self.text(outer.network_address + 1)
        elif k < 0.5:
            cfg["gateway"] = self.text(ipaddress.ip_address("fd77::1") if nets[0].version == 4
                                       else ipaddress.ip_address("10.77.0.1"))
        elif k < 0.52:
            cfg["gateway"] = self.garbage()
        return cfg, nets

    def ops(self, n_configs, nets):
        r = self.r
        small = min(n.num_addresses for n in nets)
        n_add = min(small + 1, 8) if small <= 8 else r.randint(3, 7)
        ops, live, pod = [], [], 0
        for _ in range(n_add + r.randint(0, 3)):
            if live and r.random() < 0.25:
                p, ci = live.pop(r.randrange(len(live)))
                ops.append(["DEL", ci, p])
            else:
                ci = r.randrange(n_configs)
                ops.append(["ADD", ci, pod])
                live.append((pod, ci))
                pod += 1
        return ops

    def case(self, i):
        r = self.r
        cfg, nets = self.config()
        configs = [cfg]
        if r.random() < 0.15 and "range" in cfg and "-" not in cfg["range"]:
            # a shared pool: the same range, another window and excludes, used in turn
            other, _ = self.range_entry(nets[0].version, True, nets[0])
            other["range"] = cfg["range"]
            configs.append(other)
        version = r.choice(["1.0.0", "1.0.0", "0.4.0", "1.1.0", "0.3.1"])
        return {"id": f"r{i:04d}", "name": "random", "configs": configs, "ops": self.ops(len(configs), nets),
                "cniVersion": version}


# -------------------------------------------------------------------------- main ---

def kubeconfig_for(admin_text, namespace, path):
    """The admin kubeconfig with its context's namespace set: where each tool keeps its pools."""
    text = re.sub(r"^[ \t]*namespace:.*\n", "", admin_text, flags=re.M)
    text, n = re.subn(r"^([ \t]*)(cluster:[ \t]*\S+)[ \t]*$",
                      lambda m: f"{m.group(1)}{m.group(2)}\n{m.group(1)}namespace: {namespace}",
                      text, count=1, flags=re.M)
    if n != 1:
        raise RuntimeError("no context in the admin kubeconfig to set a namespace in")
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--whereabouts", required=True)
    ap.add_argument("--allot", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run", required=True, help="prefix of the two namespaces")
    ap.add_argument("--random", type=int, default=0, help="random cases (after the derived ones)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--no-derived", action="store_true")
    ap.add_argument("--replay", help="a case printed by an earlier run (JSON), run alone")
    args = ap.parse_args()

    kube = Kube(os.environ["KUBECONFIG"], args.work)
    admin = open(os.environ["KUBECONFIG"]).read()
    ns_wa, ns_al = f"{args.run}-wa", f"{args.run}-allot"
    for ns in (ns_wa, ns_al):
        kube.ensure("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    wa_flat = os.path.join(args.work, "whereabouts.conf")
    with open(wa_flat, "w") as f:
        json.dump({"datastore": "kubernetes"}, f)
    wa = Tool("whereabouts", args.whereabouts, kubeconfig_for(admin, ns_wa, os.path.join(args.work, "wa.kubeconfig")),
              ns_wa, {"configuration_path": wa_flat}, {}, args.work)
    # The node admin's flat file names the work dir as allot's (allot refuses paths elsewhere).
    admin_flat = os.path.join(args.work, "allot-admin.conf")
    with open(admin_flat, "w") as f:
        json.dump({"node_dirs": [args.work]}, f)
    os.makedirs(os.path.join(args.work, "locks"), exist_ok=True)
    os.makedirs(os.path.join(args.work, "journal"), exist_ok=True)
    al = Tool("allot", args.allot, kubeconfig_for(admin, ns_al, os.path.join(args.work, "allot.kubeconfig")), ns_al,
              {"lock_dir": os.path.join(args.work, "locks"), "journal_dir": os.path.join(args.work, "journal"),
               "relay_socket": os.path.join(args.work, "no-relay.sock")},
              {"ALLOT_FLAT_FILES": admin_flat}, args.work)

    if args.replay:
        cases = [json.loads(args.replay)]
    else:
        cases = [] if args.no_derived else derived_cases()
        g = Gen(args.seed)
        cases += [g.case(i) for i in range(args.random)]

    t0 = time.monotonic()
    counts = {}
    failed = []
    adds = {"whereabouts": 0, "allot": 0, "both": 0}
    for i, case in enumerate(cases):
        verdict, detail, (w, a) = judge(kube, wa, al, case)
        for (verb, _, _), x, y in zip(case["ops"], w, a):
            if verb == "ADD":
                adds["whereabouts"] += x["ok"]
                adds["allot"] += y["ok"]
                adds["both"] += x["ok"] and y["ok"]
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict == "MISMATCH":
            failed.append(case["id"])
            print(f"not ok - {case['id']} {case['name']}")
            print("# replay: test/diff/diff_test.sh --replay '" + json.dumps(case) + "'")
            for (verb, ci, pod), w, a in zip(case["ops"], detail["whereabouts"], detail["allot"]):
                mark = "  " if same([w], [a]) else "!="
                print(f"#  {mark} {verb} config {ci} pod{pod}: whereabouts {json.dumps(w)}  allot {json.dumps(a)}")
        elif len(cases) <= 80 or verdict != "match":
            got = [ip[0] if x["ok"] else "fail" for x in a for ip in (x["ips"] or [[None]])][:6]
            print(f"ok - {case['id']} {case['name']} ({verdict}; allot: {' '.join(map(str, got))})")
        if (i + 1) % 50 == 0:
            log(f"diff: {i + 1}/{len(cases)} cases, {time.monotonic() - t0:.0f}s, {counts}")
    took = time.monotonic() - t0
    dev = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k not in ("match", "MISMATCH"))
    print(f"# {len(cases)} cases in {took:.0f}s (seed {args.seed}): {counts.get('match', 0)} identical, "
          f"documented deviations: {dev or 'none'}, mismatches: {counts.get('MISMATCH', 0)}")
    total_adds = sum(1 for c in cases for op in c["ops"] if op[0] == "ADD")
    print(f"# ADD calls: {total_adds}; succeeded on Whereabouts {adds['whereabouts']}, on allot {adds['allot']}, "
          f"on both {adds['both']}")
    # A comparison of two failures says nothing: most ADDs must succeed on both, or the harness
    # itself is broken (wrong type, credentials, namespaces).
    if not args.replay and adds["both"] < total_adds // 3:
        print(f"not ok - only {adds['both']} of {total_adds} ADDs succeeded on both: the harness is broken")
        failed.append("harness")
    print(f"diff: {len(cases) - len(failed)} passed, {len(failed)} failed")
    for ns in (ns_wa, ns_al):
        kube.req("DELETE", f"/api/v1/namespaces/{ns}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
