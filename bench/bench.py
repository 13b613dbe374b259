#!/usr/bin/env python3
"""The driver behind bench/run: allot against host-local and Whereabouts on one real
kube-apiserver (python3 standard library only). bench/run starts the cluster, builds the
peers and sets the environment this script reads; run that, not this.

Every plugin call is a real exec with the CNI environment and the network config on
stdin, as a container runtime makes it. Calls are spawned with posix_spawn and reaped
through pidfds, so a call's latency is spawn-to-exit, and a burst's wall time runs from
the first spawn to the last exit. API requests are counted in the API server's audit log,
per identity: allot and allot-gc use the allot ServiceAccount, Whereabouts its own
(whereabouts-bench), and this driver the admin user.
"""

import argparse
import base64
import bisect
import collections
import datetime
import http.client
import ipaddress
import json
import math
import os
import platform
import queue
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

T0 = time.monotonic()
ALLOT_USER = "system:serviceaccount:kube-system:allot"
WB_SA = "whereabouts-bench"
WB_USER = f"system:serviceaccount:kube-system:{WB_SA}"
POOL_NS = "kube-system"
# Scenario 6: allot-gc's --add-in-flight-bound, in seconds (its default, 150 s, is a pod's ADD
# that may still run; the bench deletes pods whose ADDs are older than this).
S6_ADD_BOUND_S = 5
TOOLS = ("allot", "whereabouts", "host-local")
USER_OF = {"allot": ALLOT_USER, "whereabouts": WB_USER}


def log(msg):
    el = time.monotonic() - T0
    sys.stderr.write(f"[{int(el // 60):02d}:{el % 60:04.1f}] {msg}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------ statistics ---

def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def summary_ms(seconds):
    ms = [s * 1000.0 for s in seconds]
    if not ms:
        return {"n": 0}
    return {"n": len(ms), "p50": percentile(ms, 50), "p99": percentile(ms, 99),
            "mean": sum(ms) / len(ms), "min": min(ms), "max": max(ms)}


def r(x, nd=1):
    return None if x is None else round(x, nd)


# ------------------------------------------------------------- process runner ---

# A burst is killed when the machine runs this low on memory (a Whereabouts process is a
# client-go binary: hundreds of them at once are gigabytes).
MEM_GUARD_KIB = 2 * 1048576


def mem_available_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable"):
                return int(line.split()[1])
    return 0


class Call:
    """One plugin exec."""
    __slots__ = ("tool", "verb", "path", "env", "stdin", "start", "end", "wall_start", "wall_end",
                 "rc", "rss_kb", "out", "err", "timed_out", "key")

    def __init__(self, tool, verb, path, env, stdin, key=None):
        self.tool, self.verb, self.path, self.env, self.stdin, self.key = tool, verb, path, env, stdin, key
        self.start = self.end = self.wall_start = self.wall_end = None
        self.rc, self.rss_kb, self.out, self.err, self.timed_out = None, 0, "", "", False

    @property
    def latency(self):
        return self.end - self.start

    def ok(self):
        return self.rc == 0

    def ips(self):
        if self.rc != 0 or not self.out:
            return []
        try:
            res = json.loads(self.out)
        except ValueError:
            return []
        return [ip.get("address", "").split("/")[0] for ip in res.get("ips", [])]


class Runner:
    """Spawns calls with posix_spawn (stdin from a file, stdout/stderr to files on tmpfs) and
    reaps them through pidfds, timestamping each exit as it happens."""

    def __init__(self, workdir):
        self.dir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.seq = 0
        self.memory_guard_tripped = False
        self.min_mem_kb = 1 << 60

    def _spawn(self, c):
        self.seq += 1
        base = os.path.join(self.dir, str(self.seq))
        fa = [(os.POSIX_SPAWN_OPEN, 0, c.stdin, os.O_RDONLY, 0),
              (os.POSIX_SPAWN_OPEN, 1, base + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
              (os.POSIX_SPAWN_OPEN, 2, base + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
        c.wall_start = time.time()
        c.start = time.monotonic()
        pid = os.posix_spawn(c.path, [c.path], c.env, file_actions=fa)
        return pid, base

    def _finish(self, c, pid, base, t, tw, kill=False):
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status, ru = os.wait4(pid, 0)
        c.end, c.wall_end = t, tw
        c.rc = os.waitstatus_to_exitcode(status)
        c.rss_kb = ru.ru_maxrss
        c.timed_out = kill
        for ext in (".out", ".err"):
            try:
                with open(base + ext, "r", errors="replace") as f:
                    data = f.read(200000)
                os.unlink(base + ext)
            except OSError:
                data = ""
            if ext == ".out":
                c.out = data
            else:
                c.err = data[-2000:]

    def run(self, calls, parallel=None, timeout=None):
        """Runs calls, at most `parallel` at a time (None: all at once). After `timeout`
        seconds the running ones are killed (timed_out) and the unstarted ones are left
        with rc None. Returns (wall seconds, calls)."""
        pending = collections.deque(calls)
        running = {}
        poller = select.poll()
        first = time.monotonic()
        deadline = first + timeout if timeout else None
        spawned = 0

        def reap(wait_ms):
            events = poller.poll(wait_ms)
            if not events:
                return
            t, tw = time.monotonic(), time.time()
            for fd, _ in events:
                pid, c, base = running.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                self._finish(c, pid, base, t, tw)

        while pending or running:
            while pending and (parallel is None or len(running) < parallel):
                if deadline and time.monotonic() >= deadline:
                    break
                c = pending.popleft()
                pid, base = self._spawn(c)
                fd = os.pidfd_open(pid)
                poller.register(fd, select.POLLIN)
                running[fd] = (pid, c, base)
                spawned += 1
                if spawned % 16 == 0:
                    reap(0)  # timestamp early finishers while a big burst is still spawning
            if not running:
                break
            wait_ms = 250 if len(running) > 50 else None  # big bursts: watch memory too
            if deadline:
                left = max(0, int((deadline - time.monotonic()) * 1000))
                wait_ms = left if wait_ms is None else min(wait_ms, left)
            reap(wait_ms)
            low_memory = False
            if len(running) > 50:
                m = mem_available_kb()
                self.min_mem_kb = min(self.min_mem_kb, m)
                low_memory = m < MEM_GUARD_KIB
            if low_memory:
                self.memory_guard_tripped = True
                pending.clear()
            if (low_memory or (deadline and time.monotonic() >= deadline)) and running:
                t, tw = time.monotonic(), time.time()
                for fd, (pid, c, base) in list(running.items()):
                    poller.unregister(fd)
                    os.close(fd)
                    self._finish(c, pid, base, t, tw, kill=True)
                running.clear()
                break
        last = max([c.end for c in calls if c.end is not None], default=first)
        return last - first, calls


# ------------------------------------------------------------------ REST client ---

def kubeconfig_field(text, key):
    m = re.search(r"^\s*" + re.escape(key) + r":\s*(\S+)\s*$", text, re.M)
    return m.group(1) if m else None


class Kube:
    """The admin identity over HTTPS with keep-alive connections, one per thread."""

    def __init__(self, kubeconfig, workdir):
        text = open(kubeconfig).read()
        self.server = kubeconfig_field(text, "server")
        u = urllib.parse.urlsplit(self.server)
        self.host, self.port = u.hostname, u.port or 443
        self.ca_data = kubeconfig_field(text, "certificate-authority-data")
        files = {}
        for key in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
            p = os.path.join(workdir, "admin-" + key)
            with open(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                f.write(base64.b64decode(kubeconfig_field(text, key)))
            files[key] = p
        self.ctx = ssl.create_default_context(cafile=files["certificate-authority-data"])
        self.ctx.load_cert_chain(files["client-certificate-data"], files["client-key-data"])
        self.local = threading.local()

    def _conn(self, fresh=False):
        c = getattr(self.local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self.local.conn = c
        return c

    def req(self, method, path, body=None, ctype="application/json", accept="application/json"):
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = ctype
        for attempt in range(3):
            try:
                c = self._conn(fresh=attempt > 0)
                c.request(method, path, body=data, headers=headers)
                resp = c.getresponse()
                raw = resp.read()
                return resp.status, raw
            except (http.client.HTTPException, OSError):
                if attempt == 2:
                    raise
                time.sleep(0.2)

    def json(self, method, path, body=None, ok=(200, 201), ctype="application/json",
             accept="application/json"):
        st, raw = self.req(method, path, body, ctype, accept)
        if st not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {st}: {raw[:300]!r}")
        return json.loads(raw) if raw else None

    def ensure(self, path, obj):
        st, raw = self.req("POST", path, obj)
        if st not in (200, 201, 409):
            raise RuntimeError(f"POST {path}: HTTP {st}: {raw[:300]!r}")


def pmap(fn, items, threads=8):
    """Applies fn to items on a few threads (keep-alive REST calls); re-raises the first error."""
    items = list(items)
    out = [None] * len(items)
    q = queue.Queue()
    for i, it in enumerate(items):
        q.put((i, it))
    errors = []

    def worker():
        while not errors:
            try:
                i, it = q.get_nowait()
            except queue.Empty:
                return
            try:
                out[i] = fn(it)
            except Exception as e:  # noqa: BLE001 - surfaced below
                errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(min(threads, max(1, len(items))))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return out


# ---------------------------------------------------------------------- audit ---

def parse_ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class Audit:
    def __init__(self, path):
        self.path = path

    def mark(self):
        return os.path.getsize(self.path)

    def since(self, off, users=None, settle=0.3, max_wait=5.0):
        """ResponseComplete events written after offset `off` (by `users`, if given), once the
        log has stopped growing for `settle` seconds (events land a few ms after the
        response)."""
        end = time.monotonic() + max_wait
        size = os.path.getsize(self.path)
        stable_since = time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.05)
            s = os.path.getsize(self.path)
            if s != size:
                size, stable_since = s, time.monotonic()
            elif time.monotonic() - stable_since >= settle:
                break
        out = []
        with open(self.path, "rb") as f:
            f.seek(off)
            for line in f:
                if b'"ResponseComplete"' not in line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("stage") != "ResponseComplete":
                    continue
                user = e.get("user", {}).get("username", "")
                if users and user not in users:
                    continue
                ref = e.get("objectRef", {})
                out.append({
                    "user": user, "verb": e.get("verb"), "code": e.get("responseStatus", {}).get("code"),
                    "resource": ref.get("resource", ""), "name": ref.get("name", ""),
                    "t0": parse_ts(e["requestReceivedTimestamp"]), "t1": parse_ts(e["stageTimestamp"]),
                })
        return out


def attribute(events, calls):
    """Counts events per call by time window (the calls do not overlap). Returns a list of
    counts aligned with calls, and the number of events outside every window."""
    order = sorted(range(len(calls)), key=lambda i: calls[i].wall_start)
    starts = [calls[i].wall_start for i in order]
    counts = [0] * len(calls)
    outside = 0
    for e in events:
        j = bisect.bisect_right(starts, e["t0"] + 0.0005) - 1
        if j >= 0:
            c = calls[order[j]]
            if e["t0"] <= c.wall_end + 0.0005:
                counts[order[j]] += 1
                continue
        outside += 1
    return counts, outside


def code_counts(events):
    cc = collections.Counter(e["code"] for e in events)
    return {str(k): v for k, v in sorted(cc.items(), key=lambda kv: (kv[0] is None, kv[0]))}


def verb_counts(events):
    cc = collections.Counter(f'{e["verb"]} {e["resource"]}' for e in events)
    return dict(cc.most_common())


def wait_ready(proc, port, limit_s):
    """Whether proc's /readyz on 127.0.0.1:port answered 200 within limit_s (False once it exits)."""
    t = time.monotonic()
    while time.monotonic() - t < limit_s and proc.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


# ------------------------------------------------------------------- the bench ---

class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.env = os.environ
        self.allot = self.env["ALLOT_BIN"]
        self.allot_gc = self.env.get("ALLOT_GC_BIN", "")
        self.wb = self.env.get("WHEREABOUTS_BIN", "")
        self.hl = self.env.get("HOST_LOCAL_BIN", "/usr/lib/cni/host-local")
        self.allot_kubeconfig = self.env["ALLOT_KUBECONFIG"]
        self.audit = Audit(self.env["ALLOT_AUDIT_LOG"])
        self.out = args.out
        os.makedirs(self.out, exist_ok=True)
        # The plugin reads the kubeconfig allot-gc writes on a node: JSON (parsed with RapidJSON;
        # YAML costs the plugin about 3 million instructions a call), the same identity.
        self.plugin_kubeconfig = os.path.join(self.out, "allot.kubeconfig.json")
        with open(self.plugin_kubeconfig, "w") as f:
            subprocess.run(["kubectl", "config", "view", "--raw", "--minify", "-o", "json",
                            f"--kubeconfig={self.allot_kubeconfig}"], stdout=f, check=True)
        os.chmod(self.plugin_kubeconfig, 0o600)
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.shm = tempfile.mkdtemp(prefix="allot-bench.", dir=shm)    # locks, outputs (like /run)
        self.disk = tempfile.mkdtemp(prefix="allot-bench.")             # journals, host-local data
        # The node admin's flat file: it names the bench's dirs as ones a network config may use
        # for lock_dir, journal_dir and relay_socket (allot refuses paths outside allot's own).
        self.flat = os.path.join(self.disk, "allot.conf")
        with open(self.flat, "w") as f:
            json.dump({"node_dirs": [self.shm, self.disk]}, f)
        self.kube = Kube(self.env["KUBECONFIG"], self.disk)
        self.runner = Runner(os.path.join(self.shm, "calls"))
        self.range_k = 0
        self.res = {"scenarios": {}, "notes": []}
        self.walls = []  # (label, {tool: seconds}) for the wall-time chart
        self.p = self.params()
        for kv in args.set or []:
            k, v = kv.split("=", 1)
            self.p[k] = json.loads(v)
        self.wb_cap = 60 if self.quick else 150
        self.allot_cap = 120
        self.relays = {}  # node -> (allot-gc process, relay socket)

    def params(self):
        if self.quick:
            return {"exec_n": 50, "seq_n": 20, "warmup": 2, "bursts": [10, 40], "nodes": 4, "per_node": 10,
                    "fill_levels": [0, 1000], "fill_n": 10, "gc_pods": 30, "bytes_n": 30,
                    "slice_nodes": 4, "slice_per_node": 10, "slice_burst": 20, "fill_slice_nodes": 2,
                    "slice_pairs": 5, "fill_parallel": 16}
        return {"exec_n": 500, "seq_n": 200, "warmup": 3, "bursts": [100, 500], "nodes": 4, "per_node": 100,
                "fill_levels": [0, 1000, 4000, 8000], "fill_n": 30, "gc_pods": 500, "bytes_n": 100,
                "slice_nodes": 16, "slice_per_node": 100, "slice_burst": 100, "fill_slice_nodes": 64,
                "slice_pairs": 30, "fill_parallel": 32, "slice_parts": 1}

    # ---- helpers

    def new_range(self):
        self.range_k += 1
        return f"10.{self.range_k}.0.0/16"

    @staticmethod
    def names(*args):
        # The product's own naming (test/tools/names.cpp), never re-derived here.
        names = os.environ.get("ALLOT_NAMES") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "build", "test", "allot-names")
        return subprocess.run([names, *args], check=True, capture_output=True, text=True).stdout.strip()

    @staticmethod
    def pool_name(rng, net="", node=""):
        return Bench.names("pool", rng, net, node)

    def slice_part_pools(self, pool):
        """The IPPools a node's slice is kept in: its own, then its parts (node_slice_parts)."""
        return [pool] + [Bench.names("part", pool, str(k)) for k in range(1, self.p.get("slice_parts", 1))]

    def write_json(self, path, obj):
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def node_dirs(self, step, node):
        lock = os.path.join(self.shm, step, node, "locks")
        journal = os.path.join(self.disk, step, node, "journal")
        os.makedirs(lock, exist_ok=True)
        os.makedirs(journal, exist_ok=True)
        return lock, journal

    def relay_for(self, node):
        """allot as the DaemonSet deploys it: the node's allot-gc, whose relay socket the plugin
        uses (started once per simulated node; repair and journal replay off, they are not measured
        here). None without allot-gc or with --no-relay."""
        if self.args.no_relay or not (self.allot_gc and os.access(self.allot_gc, os.X_OK)):
            return None
        if node in self.relays:
            return self.relays[node][1]
        sock = os.path.join(self.shm, "relay", node, "api.sock")
        os.makedirs(os.path.dirname(sock), exist_ok=True)
        out = open(os.path.join(self.out, f"allot-gc-relay-{node}.log"), "w")
        argv = [self.allot_gc, f"--node-name={node}", f"--kubeconfig={self.allot_kubeconfig}",
                f"--namespace={POOL_NS}", "--listen=127.0.0.1:0", "--role=agent", "--journal-dir=",
                f"--relay-socket={sock}"]
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin"})
        t = time.monotonic()
        # Ready, not only listening: its first sync's catch-up releases the entries of pods it
        # does not list, and the bench's pods are not Pod objects, so a burst started before
        # then can lose an address to it (a duplicate in S-a of a loaded quick run).
        logf = os.path.join(self.out, f"allot-gc-relay-{node}.log")
        while not (os.path.exists(sock) and "ready: first sync" in open(logf).read()):
            if proc.poll() is not None or time.monotonic() - t > 60:
                raise RuntimeError(f"allot-gc relay for {node} did not start (see allot-gc-relay-{node}.log)")
            time.sleep(0.05)
        self.relays[node] = (proc, sock)
        log(f"allot-gc relay for {node} up in {time.monotonic() - t:.2f}s")
        return sock

    def stop_relays(self):
        for proc, _ in self.relays.values():
            proc.terminate()
        for proc, _ in self.relays.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.relays = {}

    def config(self, tool, rng, step, node="node-1", name="bench", relay=True, slices=None):
        """Writes the network config for `tool` and returns its path. `slices`: (network_name,
        slice prefix length) for node-slice mode."""
        d = os.path.join(self.disk, step, node)
        os.makedirs(d, exist_ok=True)
        if tool == "allot":
            lock, journal = self.node_dirs(step, node)
            ipam = {"type": "allot", "range": rng, "kubernetes": {"kubeconfig": self.plugin_kubeconfig},
                    "lock_dir": lock, "journal_dir": journal}
            sock = self.relay_for(node) if relay else None
            # No relay: a path where nothing listens, so the plugin goes direct.
            ipam["relay_socket"] = sock or os.path.join(lock, "no-relay.sock")
            if self.p.get("allot_deadline_ms"):  # development: deadline pressure without the load
                ipam["deadline_ms"] = int(self.p["allot_deadline_ms"])
        elif tool == "whereabouts":
            ipam = {"type": "whereabouts", "range": rng, "configuration_path": self.wb_flat,
                    "kubernetes": {"kubeconfig": self.wb_kubeconfig}}
        else:
            data = os.path.join(self.disk, step, node, "host-local")
            ipam = {"type": "host-local", "ranges": [[{"subnet": rng}]], "dataDir": data}
        if slices:
            ipam.update({"node_slice_size": f"/{slices[1]}", "network_name": slices[0]})
            if tool == "allot" and self.p.get("slice_parts", 1) > 1:
                ipam["node_slice_parts"] = self.p["slice_parts"]
        conf = {"cniVersion": "1.0.0", "name": name, "type": "macvlan", "ipam": ipam}
        return self.write_json(os.path.join(d, f"{tool}.json"), conf)

    def make_node_slices(self, net, rng, length, nodes):
        """A NodeSlicePool as Whereabouts' controller (and allot-gc's) writes it: every slice of
        `rng` at /`length` listed, the first ones given to `nodes`. Returns {node: slice}."""
        cut = list(ipaddress.ip_network(rng).subnets(new_prefix=length))
        allocs = [{"nodeName": nodes[i] if i < len(nodes) else "", "sliceRange": str(c)} for i, c in enumerate(cut)]
        self.kube.json("POST", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/nodeslicepools",
                       {"apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "NodeSlicePool",
                        "metadata": {"name": net, "namespace": POOL_NS,
                                     # allot-gc's controller's label: the node relays serve its slices
                                     "labels": {"app.kubernetes.io/managed-by": "allot-gc"}},
                        "spec": {"range": rng, "sliceSize": f"/{length}"}, "status": {"allocations": allocs}})
        return {n: str(cut[i]) for i, n in enumerate(nodes)}

    def slice_pools(self, net, slices):
        """{(node, pool name): (pool object or None, its bytes)} of each node's slice pools (with
        node_slice_parts, each part's)."""
        out = {}
        for node, sl in slices.items():
            for name in self.slice_part_pools(self.pool_name(sl, net, node)):
                st, raw = self.kube.req("GET", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/{name}")
                out[(node, name)] = (json.loads(raw), len(raw)) if st == 200 else (None, 0)
        return out

    def cleanup_slices(self, net, slices):
        for node, sl in slices.items():
            for name in self.slice_part_pools(self.pool_name(sl, net, node)):
                self.kube.req("DELETE", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/{name}")
        self.kube.req("DELETE", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/nodeslicepools/{net}")
        self.kube.req("DELETE", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/"
                                "overlappingrangeipreservations")

    def path_of(self, tool):
        return {"allot": self.allot, "whereabouts": self.wb, "host-local": self.hl}[tool]

    def call(self, tool, verb, conf, cid, pod, node="node-1", ns="bench", uid=None):
        """A call as the kubelet makes it through Multus, which passes the pod's UID."""
        uid = uid or str(uuid.uuid4())
        args = (f"IgnoreUnknown=1;K8S_POD_NAMESPACE={ns};K8S_POD_NAME={pod};K8S_POD_INFRA_CONTAINER_ID={cid};"
                f"K8S_POD_UID={uid}")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CNI_COMMAND": verb, "CNI_CONTAINERID": cid,
               "CNI_NETNS": f"/var/run/netns/bench-{cid[:12]}", "CNI_IFNAME": "net1",
               "CNI_PATH": "/usr/lib/cni", "CNI_ARGS": args, "NODENAME": node, "ALLOT_FLAT_FILES": self.flat}
        return Call(tool, verb, self.path_of(tool), env, conf, key=(cid, pod, node, ns, uid))

    def undo(self, c, verb="DEL"):
        cid, pod, node, ns, uid = c.key
        return self.call(c.tool, verb, c.stdin, cid, pod, node, ns, uid)

    @staticmethod
    def cid():
        return os.urandom(32).hex()

    def available(self, tool):
        return bool(self.path_of(tool)) and os.access(self.path_of(tool), os.X_OK)

    def tools(self):
        return [t for t in ("allot", "host-local", "whereabouts") if t in self.args.tools and self.available(t)]

    def cleanup_pools(self, ranges):
        for rng in ranges:
            self.kube.req("DELETE", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/"
                                    f"{self.pool_name(rng)}")
        self.kube.req("DELETE", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/"
                                "overlappingrangeipreservations")

    def get_pool(self, rng):
        st, raw = self.kube.req("GET", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/"
                                       f"{self.pool_name(rng)}")
        if st != 200:
            return None, 0
        return json.loads(raw), len(raw)

    def failures_of(self, calls):
        fails = [c for c in calls if c.rc != 0]
        samples = []
        for c in fails[:3]:
            msg = (c.out.strip() or c.err.strip())[:240]
            samples.append(("timeout (killed): " if c.timed_out else ("not started: " if c.rc is None else
                            f"rc={c.rc}: ")) + msg)
        return len(fails), sum(1 for c in fails if c.timed_out), sum(1 for c in fails if c.rc is None), samples

    # ---- setup

    def setup_whereabouts(self):
        """Its own ServiceAccount with the rights Whereabouts' plugin uses, a token, a
        kubeconfig (context namespace kube-system, where it keeps its pools and its Lease)
        and its flat file."""
        k = self.kube
        k.ensure(f"/api/v1/namespaces/{POOL_NS}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": WB_SA}})
        rules = [
            {"apiGroups": ["whereabouts.cni.cncf.io"],
             "resources": ["ippools", "overlappingrangeipreservations", "nodeslicepools"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "verbs": ["get", "list", "watch", "create", "update", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        ]
        k.ensure("/apis/rbac.authorization.k8s.io/v1/clusterroles",
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": WB_SA}, "rules": rules})
        k.ensure("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                  "metadata": {"name": WB_SA},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": WB_SA},
                  "subjects": [{"kind": "ServiceAccount", "name": WB_SA, "namespace": POOL_NS}]})
        tok = k.json("POST", f"/api/v1/namespaces/{POOL_NS}/serviceaccounts/{WB_SA}/token",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "spec": {"expirationSeconds": 86400}})["status"]["token"]
        d = os.path.join(self.disk, "whereabouts.d")
        os.makedirs(d, exist_ok=True)
        self.wb_kubeconfig = os.path.join(d, "whereabouts.kubeconfig")
        with open(self.wb_kubeconfig, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: {k.server}
    certificate-authority-data: {k.ca_data}
users:
- name: {WB_SA}
  user:
    token: {tok}
contexts:
- name: {WB_SA}
  context:
    cluster: bench
    user: {WB_SA}
    namespace: {POOL_NS}
current-context: {WB_SA}
""")
        self.wb_flat = self.write_json(os.path.join(d, "whereabouts.conf"),
                                       {"datastore": "kubernetes", "kubernetes": {"kubeconfig": self.wb_kubeconfig}})

    def versions(self):
        v = {}
        try:
            out = subprocess.run([self.allot], input='{"cniVersion":"1.1.0"}', env={"CNI_COMMAND": "VERSION"},
                                 capture_output=True, text=True, timeout=10).stdout
            v["allot_cni_versions"] = json.loads(out).get("supportedVersions")
        except Exception:  # noqa: BLE001
            pass
        v["allot"] = self.env.get("ALLOT_VERSION", "")
        v["whereabouts"] = self.env.get("WHEREABOUTS_VERSION", "") if self.available("whereabouts") else "n/a"
        v["host-local"] = self.env.get("HOST_LOCAL_VERSION", "")
        try:
            v["kube-apiserver"] = self.kube.json("GET", "/version")["gitVersion"]
        except Exception:  # noqa: BLE001
            pass
        for k in ("ETCD_VERSION", "GO_VERSION"):
            if self.env.get(k):
                v[k.lower().replace("_version", "")] = self.env[k]
        v["python"] = platform.python_version()
        return v

    def machine(self):
        m = {"cores": os.cpu_count(), "kernel": platform.release()}
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    m["cpu"] = line.split(":", 1)[1].strip()
                    break
            for line in open("/proc/meminfo"):
                if line.startswith("MemTotal"):
                    m["memory_gib"] = round(int(line.split()[1]) / 1048576, 1)
            m["os"] = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', open("/etc/os-release").read(), re.M)).get(
                "PRETTY_NAME", "")
            m["loadavg_at_start"] = open("/proc/loadavg").read().split()[:3]
        except OSError:
            pass
        return m

    def warm_up(self):
        """The API server sets a custom resource's storage up on first use (the first IPPool
        create in a fresh cluster takes ~2 s): pay that before measuring anything."""
        base = f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}"
        for res, spec in (("ippools", {"range": "10.255.0.0/30", "allocations": {}}),
                          ("overlappingrangeipreservations", {"podref": "bench/warm-up", "containerid": "x",
                                                              "ifname": "net1"})):
            self.kube.ensure(f"{base}/{res}", {"apiVersion": "whereabouts.cni.cncf.io/v1alpha1",
                                               "kind": "IPPool" if res == "ippools" else "OverlappingRangeIPReservation",
                                               "metadata": {"name": "bench-warm-up"}, "spec": spec})
            self.kube.req("GET", f"{base}/{res}")
            self.kube.req("DELETE", f"{base}/{res}/bench-warm-up")
        if self.available("whereabouts"):
            self.kube.req("GET", f"/apis/coordination.k8s.io/v1/namespaces/{POOL_NS}/leases")

    # ---- scenario 1: exec cost

    def s1_exec(self):
        n = self.p["exec_n"]
        conf = self.write_json(os.path.join(self.disk, "version.json"), {"cniVersion": "1.0.0"})
        out = {}
        for tool in self.tools():
            log(f"S1 exec cost · {tool}: {n} × VERSION")
            calls = [Call(tool, "VERSION", self.path_of(tool), {"CNI_COMMAND": "VERSION"}, conf) for _ in range(n)]
            for c in calls[:5]:  # page cache
                self.runner.run([Call(tool, "VERSION", c.path, c.env, conf)])
            for c in calls:
                self.runner.run([c])
            s = summary_ms([c.latency for c in calls if c.ok()])
            s["failures"] = sum(1 for c in calls if not c.ok())
            out[tool] = s
        self.res["scenarios"]["1_exec"] = out

    # ---- scenario 2: sequential ADD + DEL

    def s2_sequential(self):
        n, warm = self.p["seq_n"], self.p["warmup"]
        out = {}
        walls = {}
        for tool in self.tools():
            rng = self.new_range()
            conf = self.config(tool, rng, f"s2-{tool}")
            log(f"S2 sequential · {tool}: {warm} warm-up + {n} × (ADD, DEL) on pool {rng}")
            for i in range(warm):
                a = self.call(tool, "ADD", conf, self.cid(), f"warm-{i}")
                self.runner.run([a])
                self.runner.run([self.undo(a)])
            off = self.audit.mark()
            adds, dels = [], []
            t = time.monotonic()
            for i in range(n):
                a = self.call(tool, "ADD", conf, self.cid(), f"seq-{i}")
                self.runner.run([a], timeout=self.wb_cap)
                adds.append(a)
                d = self.undo(a)
                self.runner.run([d], timeout=self.wb_cap)
                dels.append(d)
                if (i + 1) % max(1, n // 4) == 0:
                    log(f"S2 sequential · {tool}: {i + 1}/{n}")
            walls[tool] = time.monotonic() - t
            s = {"pool": rng, "wall_s": walls[tool],
                 "add": summary_ms([c.latency for c in adds if c.ok()]),
                 "del": summary_ms([c.latency for c in dels if c.ok()]),
                 "add_failures": sum(1 for c in adds if not c.ok()),
                 "del_failures": sum(1 for c in dels if not c.ok())}
            f = self.failures_of(adds + dels)
            if f[0]:
                s["failure_samples"] = f[3]
            if tool in USER_OF:
                ev = self.audit.since(off, {USER_OF[tool]})
                ca, oa = attribute(ev, adds + dels)
                add_counts = ca[:len(adds)]
                del_counts = ca[len(adds):]
                s["api_per_add"] = {"p50": percentile(add_counts, 50), "max": max(add_counts),
                                    "mean": sum(add_counts) / len(add_counts)}
                s["api_per_del"] = {"p50": percentile(del_counts, 50), "max": max(del_counts),
                                    "mean": sum(del_counts) / len(del_counts)}
                s["api_outside_calls"] = oa
                s["api_verbs"] = verb_counts(ev)
                s["api_codes"] = code_counts(ev)
                lat = [e["t1"] - e["t0"] for e in ev]
                s["api_server_latency_ms"] = summary_ms(lat)
            if tool == "allot" and self.relays:
                s["direct"] = self.sequential_direct(n, warm)
            out[tool] = s
            self.cleanup_pools([rng])
        self.res["scenarios"]["2_sequential"] = out
        self.walls.append(("S2 sequential", walls))

    def sequential_direct(self, n, warm):
        """Scenario 2 for allot without its node's allot-gc: each call loads libcurl and makes
        its own TLS connection."""
        rng = self.new_range()
        conf = self.config("allot", rng, "s2-allot-direct", node="node-direct", relay=False)
        log(f"S2 sequential · allot without allot-gc (direct): {warm} warm-up + {n} × (ADD, DEL) on pool {rng}")
        for i in range(warm):
            a = self.call("allot", "ADD", conf, self.cid(), f"warm-{i}", node="node-direct")
            self.runner.run([a])
            self.runner.run([self.undo(a)])
        adds, dels = [], []
        for i in range(n):
            a = self.call("allot", "ADD", conf, self.cid(), f"direct-{i}", node="node-direct")
            self.runner.run([a], timeout=self.allot_cap)
            adds.append(a)
            d = self.undo(a)
            self.runner.run([d], timeout=self.allot_cap)
            dels.append(d)
        self.cleanup_pools([rng])
        return {"pool": rng, "add": summary_ms([c.latency for c in adds if c.ok()]),
                "del": summary_ms([c.latency for c in dels if c.ok()]),
                "add_failures": sum(1 for c in adds if not c.ok()),
                "del_failures": sum(1 for c in dels if not c.ok())}

    # ---- scenarios 3 and 4: bursts

    def burst(self, tool, nodes, per_node, label, slice_len=None):
        rng = self.new_range()
        step = f"{label}-{tool}".replace(" ", "").replace("×", "x")
        names = [f"node-{k + 1}" for k in range(nodes)]
        net = f"slices-{self.range_k}" if slice_len else None
        slices = self.make_node_slices(net, rng, slice_len, names) if slice_len else None
        sl = (net, slice_len) if slice_len else None
        confs = {n: self.config(tool, rng, step, node=n, slices=sl) for n in names}
        total = nodes * per_node
        cap = self.wb_cap if tool == "whereabouts" else self.allot_cap
        res = {"pool": rng, "concurrency": total, "nodes": nodes, "timeout_s": cap}
        calls = []
        for i in range(per_node):  # interleave nodes so they start together
            for k in range(nodes):
                node = f"node-{k + 1}"
                calls.append(self.call(tool, "ADD", confs[node], self.cid(), f"b{k + 1}-{i}", node=node))
        log(f"{label} · {tool}: {total} concurrent ADDs ({nodes} node{'s' if nodes > 1 else ''}) on pool {rng}"
            f"{f', capped at {cap}s' if tool == 'whereabouts' else ''}")
        off = self.audit.mark() if tool in USER_OF else 0
        self.runner.memory_guard_tripped = False
        mem0 = mem_available_kb()
        self.runner.min_mem_kb = mem0
        wall, _ = self.runner.run(calls, timeout=cap)
        res["memory_used_mib"] = (mem0 - self.runner.min_mem_kb) // 1024
        if self.runner.memory_guard_tripped:
            res["memory_guard"] = (f"killed: MemAvailable fell below {MEM_GUARD_KIB // 1048576} GiB "
                                   f"(was {mem0 / 1048576:.1f} GiB)")
        ok = [c for c in calls if c.ok()]
        ips = [ip for c in ok for ip in c.ips()]
        dup = sum(v - 1 for v in collections.Counter(ips).values() if v > 1)
        nf, nto, nns, samples = self.failures_of(calls)
        res.update({"wall_s": wall, "add": summary_ms([c.latency for c in ok]),
                    "add_all": summary_ms([c.latency for c in calls if c.end is not None]),
                    "ok": len(ok), "failures": nf, "timeouts": nto, "not_started": nns,
                    "duplicates": dup})
        if samples:
            res["failure_samples"] = samples
        if tool in USER_OF:
            ev = self.audit.since(off, {USER_OF[tool]})
            codes = code_counts(ev)
            res.update({"api_requests": len(ev), "api_per_add": len(ev) / total, "http_409": codes.get("409", 0),
                        "api_codes": codes, "api_verbs": verb_counts(ev),
                        "api_server_latency_ms": summary_ms([e["t1"] - e["t0"] for e in ev])})
            if slices:
                got = self.slice_pools(net, slices).values()
                allocs = sum(len(p["spec"].get("allocations") or {}) for p, _ in got if p)
                size = max(b for _, b in got)
                outside = [ip for c in ok for ip in c.ips()
                           if ipaddress.ip_address(ip) not in ipaddress.ip_network(slices[c.key[2]])]
                res["outside_slice"] = len(outside)
            else:
                pool, size = self.get_pool(rng)
                allocs = len(pool["spec"].get("allocations") or {}) if pool else 0
            res["pool_allocations"] = allocs
            res["pool_bytes"] = size
            if allocs != len(ok):
                res["pool_mismatch"] = f"{allocs} allocations for {len(ok)} successful ADDs"
            if slices:
                self.cleanup_slices(net, slices)
            else:
                self.cleanup_pools([rng])
        log(f"{label} · {tool}: wall {wall:.2f}s, ok {len(ok)}/{total}, failures {nf} (timeouts {nto}), "
            f"409s {res.get('http_409', '-')}, duplicates {dup}")
        time.sleep(1)
        return res

    def s3_burst(self):
        out = {}
        for c in self.p["bursts"]:
            out[str(c)] = {}
            walls = {}
            for tool in self.tools():
                out[str(c)][tool] = res = self.burst(tool, 1, c, f"S3 burst {c}")
                if "wall_s" in res:
                    walls[tool] = res["wall_s"]
            self.walls.append((f"S3 burst {c}", walls))
        self.res["scenarios"]["3_burst"] = out

    def s4_nodes(self):
        nodes, per = self.p["nodes"], self.p["per_node"]
        out = {}
        walls = {}
        for tool in self.tools():
            if tool == "host-local":  # node-local: 4 nodes would hand out the same addresses
                continue
            out[tool] = res = self.burst(tool, nodes, per, f"S4 {nodes}×{per}")
            if "wall_s" in res:
                walls[tool] = res["wall_s"]
        self.res["scenarios"]["4_nodes"] = {"nodes": nodes, "per_node": per, "tools": out}
        self.walls.append((f"S4 {nodes}x{per}", walls))

    # ---- scenario 5: pool fill

    def s5_fill_pool(self, level, rng, conf):
        """Fills rng's pool with level entries shaped like the one allot writes, in one admin PUT
        (Whereabouts-shaped ones when the API server rejects that object). Returns the pool's API
        path and what the entries are: {"format", "fields"[, "rejected", "rejected_bytes"]}."""
        log(f"S5 pool fill · {level} allocations: filling pool {rng}")
        # One real ADD gives the entry format allot writes; the fill copies it.
        a = self.call("allot", "ADD", conf, self.cid(), "template")
        self.runner.run([a])
        pool, _ = self.get_pool(rng)
        tmpl = next(iter(pool["spec"]["allocations"].values()))
        allocs = {}
        for off in range(2, level + 2):
            e = dict(tmpl)
            e["id"] = f"{off:064x}"
            e["podref"] = f"fill/pod-{off}"
            if "poduid" in e:
                e["poduid"] = f"00000000-0000-4000-8000-{off:012x}"
            allocs[str(off)] = e
        self.runner.run([self.undo(a)])
        pool, _ = self.get_pool(rng)
        pool["spec"]["allocations"] = allocs
        path = (f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/"
                f"{self.pool_name(rng)}")
        entry = {"format": "allot", "fields": sorted(tmpl)}
        st, raw = self.kube.req("PUT", path, pool)
        if st != 200:
            # Too big for the API server / etcd in allot's format: say so, and measure with
            # the entries Whereabouts writes (a pool it filled before the switch).
            entry["rejected"] = f"HTTP {st}: {json.loads(raw).get('message', '')[:200] if raw else ''}"
            entry["rejected_bytes"] = len(json.dumps(pool))
            log(f"S5 pool fill · {level} allocations in allot's format rejected ({entry['rejected']}); "
                "filling with Whereabouts-format entries instead")
            for e in allocs.values():
                for key in list(e):
                    if key not in ("id", "podref", "ifname"):
                        del e[key]
            pool, _ = self.get_pool(rng)
            pool["spec"]["allocations"] = allocs
            entry["format"] = "whereabouts"
            entry["fields"] = ["id", "ifname", "podref"]
            self.kube.json("PUT", path, pool)
        return path, entry

    def s5_fill(self):
        if not self.available("allot"):
            return
        n, warm = self.p["fill_n"], self.p["warmup"]
        out = {}
        t_all = time.monotonic()
        for level in self.p["fill_levels"]:
            rng = self.new_range()
            step = f"s5-{level}"
            conf = self.config("allot", rng, step)
            path, entry = self.s5_fill_pool(level, rng, conf)
            _, size = self.get_pool(rng)
            log(f"S5 pool fill · {level} allocations ({size} bytes): {warm} warm-up + {n} × (ADD, DEL)")
            for i in range(warm):
                a = self.call("allot", "ADD", conf, self.cid(), f"warm-{i}")
                self.runner.run([a])
                self.runner.run([self.undo(a)])
            off = self.audit.mark()
            adds, dels = [], []
            for i in range(n):
                a = self.call("allot", "ADD", conf, self.cid(), f"fill-{i}")
                self.runner.run([a], timeout=self.allot_cap)
                adds.append(a)
                d = self.undo(a)
                self.runner.run([d], timeout=self.allot_cap)
                dels.append(d)
            ev = self.audit.since(off, {ALLOT_USER})
            ca, _ = attribute(ev, adds + dels)
            upd = [e["t1"] - e["t0"] for e in ev if e["verb"] == "update"]
            # The API server's own cost of writing this object: the admin PUTs it back unchanged
            # but for one annotation, from this (warm, keep-alive) client.
            floor = []
            for i in range(10):
                pool, _ = self.get_pool(rng)
                pool["metadata"].setdefault("annotations", {})["bench/touch"] = str(i)
                t = time.monotonic()
                self.kube.json("PUT", path, pool)
                floor.append(time.monotonic() - t)
            out[str(level)] = {"pool": rng, "object_bytes": size, "entries": entry, "add": summary_ms([c.latency for c in adds if c.ok()]),
                               "del": summary_ms([c.latency for c in dels if c.ok()]),
                               "failures": sum(1 for c in adds + dels if not c.ok()),
                               "api_per_add": percentile(ca[:len(adds)], 50),
                               "api_update_latency_ms": summary_ms(upd),
                               "admin_put_ms": summary_ms(floor)}
            log(f"S5 pool fill · {level}: ADD p50 {out[str(level)]['add'].get('p50', 0):.1f} ms")
            self.kube.req("DELETE", path)
        self.res["scenarios"]["5_fill"] = out
        self.walls.append(("S5 fill", {"allot": time.monotonic() - t_all}))

    # ---- scenario 7: bytes per entry, allot and Whereabouts side by side

    @staticmethod
    def entry_bytes(allocs, whereabouts_form=False):
        """Bytes of spec.allocations per entry, as compact JSON (what the object stores)."""
        if whereabouts_form:
            allocs = {k: {f: v for f, v in e.items() if f in ("id", "podref", "ifname")} for k, e in allocs.items()}
        return len(json.dumps(allocs, separators=(",", ":"))) / max(len(allocs), 1)

    def s7_bytes(self):
        n = self.p["bytes_n"]
        out = {"entries": n}
        pods = [(self.cid(), f"web-5f7d8c9b6d-{i:05d}", str(uuid.uuid4())) for i in range(n)]
        for tool in ("allot", "whereabouts"):
            if not self.available(tool) or tool not in self.args.tools:
                continue
            rng = self.new_range()
            conf = self.config(tool, rng, f"s7-{tool}")
            calls = [self.call(tool, "ADD", conf, cid, pod, uid=uid) for cid, pod, uid in pods]
            log(f"S7 bytes per entry · {tool}: {n} ADDs into {rng}")
            self.runner.run(calls, parallel=4, timeout=self.wb_cap if tool == "whereabouts" else self.allot_cap)
            pool, size = self.get_pool(rng)
            allocs = pool["spec"]["allocations"] if pool else {}
            out[tool] = {"pool": rng, "entries": len(allocs), "failures": sum(1 for c in calls if not c.ok()),
                         "object_bytes": size, "bytes_per_entry": self.entry_bytes(allocs),
                         "fields": sorted({f for e in allocs.values() for f in e})}
            self.runner.run([self.undo(c) for c in calls if c.ok()], parallel=4)
        if "allot" in out and "whereabouts" in out and out["whereabouts"]["bytes_per_entry"]:
            out["ratio"] = out["allot"]["bytes_per_entry"] / out["whereabouts"]["bytes_per_entry"]
            log(f"S7 bytes per entry at {n}: allot {out['allot']['bytes_per_entry']:.1f}, "
                f"Whereabouts {out['whereabouts']['bytes_per_entry']:.1f} (x{out['ratio']:.2f})")
        self.res["scenarios"]["7_bytes"] = out

    # ---- scenario 8: a /19 filled to 100% through real ADDs (bench/run --scenarios 8)

    def s8_prefill(self, rng, conf, n):
        """Fills offsets 1..n of `rng`'s pool the way allot leaves it at that size (entries copied
        from one a real ADD wrote; allot's optional fields kept on the lowest offsets only, as far
        as the 1.1x size policy allows), so a run can start near the end of the fill (development:
        --set fill19_prefill=8090). No reservations: the pool alone decides what is free."""
        a = self.call("allot", "ADD", conf, self.cid(), "template")
        self.runner.run([a], timeout=self.allot_cap)
        pool, _ = self.get_pool(rng)
        tmpl = next(iter(pool["spec"]["allocations"].values()))
        self.runner.run([self.undo(a)], timeout=self.allot_cap)
        base = {k: tmpl[k] for k in ("id", "podref", "ifname") if k in tmpl}
        extras = {k: v for k, v in tmpl.items() if k not in base}
        extra_bytes = len(json.dumps(extras, separators=(",", ":"))) - 1
        keep = int(0.1 * (len(json.dumps(base, separators=(",", ":"))) + 8) * n / max(extra_bytes, 1))
        allocs = {}
        for off in range(1, n + 1):
            e = dict(base, id=os.urandom(32).hex(), podref=f"bench/web-5f7d8c9b6d-p{off:05d}")
            if off <= keep:
                e.update(extras)
                if "poduid" in e:
                    e["poduid"] = str(uuid.uuid4())
            allocs[str(off)] = e
        pool, _ = self.get_pool(rng)
        pool["spec"]["allocations"] = allocs
        self.kube.json("PUT", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/ippools/"
                              f"{self.pool_name(rng)}", pool)
        return keep

    @staticmethod
    def failure_kinds(calls):
        """Every failed call's CNI error, grouped by code and message (numbers masked), most
        frequent first: {"count", "code", "msg", "example"} each."""
        kinds = collections.OrderedDict()
        for c in calls:
            if c.rc == 0:
                continue
            try:
                err = json.loads(c.out) if c.out.strip() else {}
            except ValueError:
                err = {}
            code = err.get("code", "timeout (killed)" if c.timed_out else
                           ("not started" if c.rc is None else f"rc={c.rc}, no CNI error"))
            text = err.get("msg") or (c.err.strip().splitlines() or [""])[-1]
            detail = err.get("details", "")
            key = (code, re.sub(r"\d+", "N", re.sub(r"[0-9a-f]{64}", "<id>", text)))
            k = kinds.setdefault(key, {"count": 0, "code": code, "msg": key[1],
                                       "example": f"{text} | details: {detail}"[:1500]})
            k["count"] += 1
        return sorted(kinds.values(), key=lambda k: -k["count"])

    def kubelet_retries(self, failed, res, rounds=3, pause=5.0):
        """What the kubelet and the runtime do with a pod whose sandbox's ADD failed: the runtime
        tears the sandbox's network down (DEL, same container ID), and the kubelet creates a new
        sandbox (a new container ID, same pod) after a back-off; up to `rounds` times here, `pause`
        seconds apart. Returns the retry ADDs; res gets each round's failures, so no first-try
        failure is hidden."""
        out, res["retry_rounds"] = [], []
        for k in range(rounds):
            if not failed:
                break
            self.runner.run([self.undo(c) for c in failed if c.rc is not None], parallel=64, timeout=300)
            time.sleep(pause)
            again = []
            for c in failed:
                _, pod, node, ns, uid = c.key
                again.append(self.call("allot", "ADD", c.stdin, self.cid(), pod, node, ns, uid))
            self.runner.run(again, parallel=64, timeout=300)
            out += again
            failed = [c for c in again if not c.ok()]
            res["retry_rounds"].append({"adds": len(again), "failures": len(failed),
                                        "failure_kinds": self.failure_kinds(again)})
            log(f"S8 /19 fill: retry round {k + 1} (DEL, then ADD as a new sandbox): "
                f"{len(again) - len(failed)}/{len(again)} succeeded")
        res["final_failures"] = len(failed)
        return out

    def s8_fill19(self):
        if not self.available("allot"):
            return
        rng = f"10.{200 + self.range_k % 50}.0.0/19"
        self.range_k += 1
        nodes = self.p["nodes"]
        confs = {f"node-{k + 1}": self.config("allot", rng, "s8", node=f"node-{k + 1}") for k in range(nodes)}
        total = 8190
        prefill = int(self.p.get("fill19_prefill", 0))
        res = {"pool": rng, "adds": total - prefill}
        if prefill:
            res["prefilled"] = prefill
            res["prefilled_with_optional_fields"] = self.s8_prefill(rng, confs["node-1"], prefill)
            log(f"S8 /19 fill: pre-filled {prefill} entries ({res['prefilled_with_optional_fields']} with "
                "allot's optional fields)")
        calls = [self.call("allot", "ADD", confs[f"node-{i % nodes + 1}"], self.cid(), f"web-5f7d8c9b6d-{i:05d}",
                           node=f"node-{i % nodes + 1}") for i in range(prefill, total)]
        log(f"S8 /19 fill: {len(calls)} ADDs from {nodes} nodes, 64 at a time, into {rng}")
        wall, _ = self.runner.run(calls, parallel=64, timeout=1800)
        nf, nto, nns, samples = self.failures_of(calls)
        res.update({"failures": nf, "failure_samples": samples, "failure_kinds": self.failure_kinds(calls),
                    "failed_at_s": sorted(round(c.end - calls[0].start, 1) for c in calls if c.rc not in (0, None)),
                    "entries_after_first_try": len((self.get_pool(rng)[0] or {}).get("spec", {}).get("allocations", {}))})
        # Entries no successful ADD accounts for: what failed ADDs left behind (a failed ADD
        # should leave nothing; the runtime's DEL below takes them out).
        res["left_by_failed_adds"] = res["entries_after_first_try"] - prefill - sum(1 for c in calls if c.ok())
        for k in res["failure_kinds"]:
            log(f"S8 /19 fill: {k['count']} × code {k['code']}: {k['example']}")
        if nf:
            log(f"S8 /19 fill: {nf} ADDs failed, leaving {res['left_by_failed_adds']} entries behind")
        res["wall_s"] = wall
        self.res["scenarios"]["8_fill19"] = res  # the first try's numbers, kept if the run stops later
        self.save()
        retries = self.kubelet_retries([c for c in calls if not c.ok()], res)
        ok = [c for c in calls + retries if c.ok()]
        ips = [ip for c in ok for ip in c.ips()]
        one_more = self.call("allot", "ADD", confs["node-1"], self.cid(), "one-more")
        self.runner.run([one_more], timeout=self.allot_cap)
        pool, size = self.get_pool(rng)
        allocs = pool["spec"]["allocations"] if pool else {}
        res.update({"succeeded": len(ok), "entries": len(allocs),
                    "duplicates": len(ips) - len(set(ips)), "wall_s": wall,
                    "add": summary_ms([c.latency for c in calls if c.ok()]),
                    "object_bytes": size, "bytes_per_entry": self.entry_bytes(allocs),
                    "whereabouts_form_bytes_per_entry": self.entry_bytes(allocs, whereabouts_form=True),
                    "entries_with_optional_fields": sum(1 for e in allocs.values() if "node" in e),
                    "next_add": {"rc": one_more.rc, "out": (one_more.out or "")[:300]}})
        res["ratio"] = res["bytes_per_entry"] / max(res["whereabouts_form_bytes_per_entry"], 1)
        log(f"S8 /19 fill: {len(allocs)}/{total} entries, {size} bytes, {res['bytes_per_entry']:.1f} B/entry "
            f"(Whereabouts' form of the same entries {res['whereabouts_form_bytes_per_entry']:.1f}, "
            f"x{res['ratio']:.2f}), {wall:.1f}s; ADD #8191: rc {one_more.rc}; {nf} failed the first time, "
            f"{res['final_failures']} after the kubelet's retries")
        # Recorded before the cleanup: it is not measured, and a killed cleanup lost a run's numbers.
        self.res["scenarios"]["8_fill19"] = res
        self.walls.append(("S8 /19 fill", {"allot": wall}))
        self.save()
        # 8,190 DELs of a 1.2 MB object took as long as the fill: the pool and its reservations
        # are deleted whole instead (the node's journals and locks are the bench's temp dirs).
        self.cleanup_pools([rng])

    # ---- scenario C: ADD with an IPAMClaim through the relay (issue 18); only when named:
    # bench/run --scenarios C. bench/claim-add does the work on this run's cluster (the kinds
    # interleaved round by round); its lines "LABEL: n=N p50=X ms p90=Y ms" are read back, and
    # each claim row's p50 set against the plain row's (issue 18's bar: within 1.3x).

    def sC_claims(self):
        n = 10 if self.quick else 30
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "claim-add")
        env = dict(os.environ, N=str(n))
        log(f"C · allot: {n} rounds of three ADDs: plain, empty claim, claim with status")
        r = subprocess.run([script], env=env, capture_output=True, text=True, timeout=1800)
        rows = {}
        for line in r.stdout.splitlines():
            m = re.match(r"(.+): n=(\d+) p50=([\d.]+) ms p90=([\d.]+) ms$", line)
            if m:
                rows[m.group(1)] = {"n": int(m.group(2)), "p50_ms": float(m.group(3)),
                                    "p90_ms": float(m.group(4))}
        out = {"n": n, "rows": rows, "rc": r.returncode}
        if r.returncode != 0 or len(rows) < 3:
            out["error"] = (r.stdout + r.stderr)[-2000:]
        plain = [v["p50_ms"] for k, v in rows.items() if k.startswith("plain")]
        if plain:
            base = sum(plain) / len(plain)
            out["plain_p50_ms"] = base
            out["ratio_p50"] = {k: v["p50_ms"] / base for k, v in rows.items() if k.startswith("claim")}
        self.res["scenarios"]["C_claims"] = out
        for k, v in out.get("ratio_p50", {}).items():
            log(f"C · {k}: p50 {rows[k]['p50_ms']:.1f} ms, {v:.2f}x plain ({out['plain_p50_ms']:.1f} ms)")

    # ---- scenario S: node slices (issue 17); only when named: bench/run --scenarios S

    def sS_slices(self):
        p = self.p
        out = {"slice_len": 24}
        n, per = p["slice_nodes"], p["slice_per_node"]
        a_tools = [t for t in self.tools() if t == "allot" or (t == "whereabouts" and p.get("slice_wb_a"))]
        out["a_nodes"] = {"nodes": n, "per_node": per,
                          "tools": {t: self.burst(t, n, per, f"S-a {n}×{per} slices", slice_len=24)
                                    for t in a_tools}}
        c = p["slice_burst"]
        out["c_one_node"] = {"concurrency": c, "tools": {}}
        for t in self.tools():
            if t == "host-local":
                continue
            out["c_one_node"]["tools"][t] = {"plain": self.burst(t, 1, c, f"S-c {c} plain"),
                                             "slice": self.burst(t, 1, c, f"S-c {c} slice", slice_len=24)}
        if self.available("allot"):
            out["b_fill"] = self.slice_fill(p["fill_slice_nodes"], p["slice_pairs"])
        out["loadavg"] = open("/proc/loadavg").read().split()[:3]
        self.res["scenarios"]["S_slices"] = out

    def add_del_pairs(self, conf, node, k):
        """ADD latencies of `k` sequential ADD + DEL pairs (after two warm-up pairs)."""
        return self.interleaved_pairs([(conf, node)], k)[0]

    def interleaved_pairs(self, targets, pairs):
        """ADD latencies of `pairs` ADD + DEL pairs on each (conf, node) of `targets`, alternating
        pair by pair (after two warm-up pairs each), so all see the same machine and API server."""
        lat = [[] for _ in targets]
        for i in range(pairs + 2):
            for (conf, node), into in zip(targets, lat):
                c = self.call("allot", "ADD", conf, self.cid(), f"pair-{node}-{i}", node=node)
                self.runner.run([c])
                if not c.ok():
                    raise RuntimeError(f"ADD failed: {(c.out or c.err)[:200]}")
                if i >= 2:
                    into.append(c.latency)
                self.runner.run([self.undo(c)])
        return lat

    def slice_fill(self, nodes_n, pairs):
        """A /16 in /24 slices; every node fills its slice through real ADDs (`fill_parallel` at
        a time overall); then ADD p50 on node-1's slice with one address left against a slice
        left empty (one more node's), pair by pair. The empty slice before the fill is kept
        for reference: the fill leaves the machine and the API server busier than they were."""
        rng = self.new_range()
        net = f"slices-{self.range_k}"
        nodes = [f"node-{k + 1}" for k in range(nodes_n)]
        spare = f"node-{nodes_n + 1}"
        slices = self.make_node_slices(net, rng, 24, nodes + [spare])
        confs = {n: self.config("allot", rng, "S-b-fill", node=n, slices=(net, 24)) for n in nodes + [spare]}
        res = {"range": rng, "nodes": nodes_n}
        res["add_empty_before_fill"] = summary_ms(self.add_del_pairs(confs["node-1"], "node-1", pairs))
        calls = [self.call("allot", "ADD", confs[n], self.cid(), f"f{k}-{i}", node=n)
                 for i in range(254) for k, n in enumerate(nodes)]
        log(f"S-b fill · allot: {len(calls)} ADDs, {nodes_n} nodes, {self.p['fill_parallel']} at a time")
        off = self.audit.mark()
        wall, _ = self.runner.run(calls, parallel=self.p["fill_parallel"])
        ev = self.audit.since(off, {ALLOT_USER})
        ok = [c for c in calls if c.ok()]
        ips = [ip for c in ok for ip in c.ips()]
        pools = self.slice_pools(net, slices)
        st, raw = self.kube.req("GET", f"/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/{POOL_NS}/nodeslicepools/{net}")
        nf, nto, _, samples = self.failures_of(calls)
        res.update({"adds": len(calls), "ok": len(ok), "failures": nf, "failure_samples": samples,
                    "duplicates": len(ips) - len(set(ips)), "wall_s": wall,
                    "add": summary_ms([c.latency for c in ok]), "api_per_add": len(ev) / len(calls),
                    "allocations": sum(len(p["spec"].get("allocations") or {}) for p, _ in pools.values() if p),
                    "max_pool_bytes": max(b for _, b in pools.values()),
                    "node_slice_pool_bytes": len(raw) if st == 200 else 0})
        # One address left on node-1's slice: ADD + DEL pairs take it and give it back.
        last = next(c for c in reversed(calls) if c.key[2] == "node-1" and c.ok())
        self.runner.run([self.undo(last)])
        full, empty = self.interleaved_pairs([(confs["node-1"], "node-1"), (confs[spare], spare)], pairs)
        res["add_full"], res["add_empty"] = summary_ms(full), summary_ms(empty)
        res["full_over_empty_p50"] = res["add_full"]["p50"] / res["add_empty"]["p50"]
        log(f"S-b fill · allot: {len(ok)}/{len(calls)} ok in {wall:.1f}s, max pool {res['max_pool_bytes']} B, "
            f"ADD p50 empty {res['add_empty']['p50']} ms, full {res['add_full']['p50']} ms")
        self.cleanup_slices(net, slices)
        return res

    # ---- scenario 6: reclamation by allot-gc

    def s6_setup(self, n, ns, nad, node, rng, conf):
        """S6's pods: namespace ns, NAD nad, n pods on node, each with an ADD and its network-status."""
        k = self.kube
        nconf = json.load(open(conf))
        log(f"S6 reclamation: {n} pods on {node}, pool {rng}: creating pods, ADDs, network-status")
        k.ensure("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        k.ensure(f"/apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions",
                 {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                  "metadata": {"name": nad}, "spec": {"config": json.dumps(nconf)}})

        def mkpod(i):
            return k.json("POST", f"/api/v1/namespaces/{ns}/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"gc-{i}"},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})

        pods = pmap(mkpod, range(n))
        adds = [self.call("allot", "ADD", conf, self.cid(), p["metadata"]["name"], node=node, ns=ns,
                          uid=p["metadata"]["uid"]) for p in pods]
        self.runner.run(adds, parallel=4, timeout=300)
        bad = [c for c in adds if not c.ok()]
        if bad:
            raise RuntimeError(f"S6 setup: {len(bad)} ADDs failed: {(bad[0].out or bad[0].err)[:300]}")

        def annotate(c):
            status = [{"name": f"{ns}/{nad}", "interface": "net1", "ips": c.ips(), "mac": "02:00:00:00:00:01",
                       "dns": {}}]
            k.json("PATCH", f"/api/v1/namespaces/{ns}/pods/{c.key[1]}",
                   {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": json.dumps(status)}}},
                   ctype="application/merge-patch+json")

        pmap(annotate, adds)

    def s6_wait_released(self, rng, ns, before, t0, cap):
        """Polls rng's pool until no entry of namespace ns is left, or cap seconds from t0 have
        passed; returns how many are left."""
        left = before
        last_log = t0
        while time.monotonic() - t0 < cap:
            pool, _ = self.get_pool(rng)
            left = sum(1 for e in (pool["spec"].get("allocations") or {}).values()
                       if e.get("podref", "").startswith(ns + "/"))
            if left == 0:
                break
            if time.monotonic() - last_log > 5:
                log(f"S6 reclamation: {before - left}/{before} released after {time.monotonic() - t0:.1f}s")
                last_log = time.monotonic()
            time.sleep(0.05)
        return left

    def s6_reclaim(self):
        n = self.p["gc_pods"]
        if not (self.allot_gc and os.access(self.allot_gc, os.X_OK)):
            self.res["scenarios"]["6_reclaim"] = {"skipped": "n/a (sidecar unavailable)", "pods": n}
            log("S6 reclamation: n/a (sidecar unavailable)")
            return
        k = self.kube
        ns, nad, node = f"bench-gc-{os.urandom(3).hex()}", "gcnet", "node-gc"
        rng = self.new_range()
        conf = self.config("allot", rng, "s6", node=node, name=nad, relay=False)
        self.s6_setup(n, ns, nad, node, rng, conf)
        added = time.monotonic()
        pool, size = self.get_pool(rng)
        before = sum(1 for e in pool["spec"]["allocations"].values() if e.get("podref", "").startswith(ns + "/"))
        log(f"S6 reclamation: {before} allocations ({size} bytes); starting allot-gc")

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        gclog = open(os.path.join(self.out, "allot-gc.log"), "w")
        jdir = os.path.join(self.disk, "s6", "gc-journal")
        os.makedirs(jdir, exist_ok=True)
        # A deleted pod's address is kept while its ADD may still run (the plugin's mark in
        # /run/allot/adds younger than --add-in-flight-bound, 150 s by default), then freed on
        # the node's proof. The pods here are deleted once their ADDs are older than a bound of
        # S6_ADD_BOUND_S, as a pod that has run for longer than the default bound would be.
        argv = [self.allot_gc, f"--node-name={node}", f"--kubeconfig={self.allot_kubeconfig}",
                f"--namespace={POOL_NS}", f"--listen=127.0.0.1:{port}", f"--journal-dir={jdir}",
                f"--add-in-flight-bound={S6_ADD_BOUND_S}s"]
        gc = subprocess.Popen(argv, stdout=gclog, stderr=subprocess.STDOUT, env={"PATH": "/usr/bin:/bin"})
        res = {"pods": n, "pool": rng, "pool_bytes_before": size, "argv": " ".join(argv[1:])}
        try:
            t = time.monotonic()
            ready = wait_ready(gc, port, 60)
            res["ready_s"] = time.monotonic() - t
            if not ready:
                res["error"] = "allot-gc not ready in 60s" if gc.poll() is None else f"allot-gc exited {gc.returncode}"
                log(f"S6 reclamation: {res['error']}")
                return
            rss_ready = self.rss(gc.pid)
            time.sleep(max(0.0, added + S6_ADD_BOUND_S + 1 - time.monotonic()))
            res["add_in_flight_bound_s"] = S6_ADD_BOUND_S
            log(f"S6 reclamation: allot-gc ready in {res['ready_s']:.2f}s; deleting {n} pods at once")
            off = self.audit.mark()
            t0 = time.monotonic()
            k.json("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0", ok=(200,))
            res["delete_request_s"] = time.monotonic() - t0
            cap = 60 if self.quick else 120
            left = self.s6_wait_released(rng, ns, before, t0, cap)
            res["released_s"] = time.monotonic() - t0
            res["released"] = before - left
            res["left"] = left
            res["rss"] = self.rss(gc.pid)
            res["rss_ready"] = rss_ready
            ev = self.audit.since(off, {ALLOT_USER})
            res["api_requests"] = len(ev)
            res["api_verbs"] = verb_counts(ev)
            res["api_codes"] = code_counts(ev)
            log(f"S6 reclamation: {before - left}/{before} released in {res['released_s']:.2f}s, "
                f"allot-gc VmHWM {res['rss'].get('VmHWM_kib', 0) / 1024:.1f} MiB")
        finally:
            gc.send_signal(signal.SIGTERM)
            try:
                gc.wait(10)
            except subprocess.TimeoutExpired:
                gc.kill()
                gc.wait()
            gclog.close()
            self.res["scenarios"]["6_reclaim"] = res
            self.walls.append(("S6 reclaim", {"allot": res.get("released_s", 0)}))

    @staticmethod
    def rss(pid):
        out = {}
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith(("VmHWM", "VmRSS", "Threads")):
                    key, val = line.split(":", 1)
                    out[key + ("_kib" if key.startswith("Vm") else "")] = int(val.split()[0])
        except OSError:
            pass
        return out

    # ---- all

    def run(self):
        self.res["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        self.res["mode"] = "quick" if self.quick else "full"
        self.res["params"] = self.p
        self.res["machine"] = self.machine()
        if self.available("whereabouts"):
            self.setup_whereabouts()
        self.res["versions"] = self.versions()
        self.warm_up()
        self.res["whereabouts_rbac"] = ("ServiceAccount kube-system/whereabouts-bench: ippools, "
                                        "overlappingrangeipreservations, nodeslicepools (all verbs); "
                                        "coordination.k8s.io leases (get, list, watch, create, update, patch); "
                                        "pods (get, list, watch)")
        sc = self.args.scenarios
        steps = [("1", self.s1_exec), ("2", self.s2_sequential), ("3", self.s3_burst), ("4", self.s4_nodes),
                 ("5", self.s5_fill), ("6", self.s6_reclaim), ("7", self.s7_bytes), ("8", self.s8_fill19),
                 ("S", self.sS_slices), ("C", self.sC_claims)]
        try:
            for key, fn in steps:
                if key in sc:
                    t = time.monotonic()
                    try:
                        fn()
                    except Exception as e:  # noqa: BLE001 - reported, the other scenarios still run
                        log(f"scenario {key} failed: {e!r}")
                        self.res["notes"].append(f"scenario {key} failed: {e!r}")
                    log(f"scenario {key} done in {time.monotonic() - t:.1f}s")
                    self.save()
        finally:
            self.stop_relays()
            shutil.rmtree(self.shm, ignore_errors=True)
            shutil.rmtree(self.disk, ignore_errors=True)  # configs, journals, the admin key copy
            self.save()
        return self.res

    def save(self):
        """Writes results.json as far as the run has got: after each scenario, so a run killed
        later (or in a scenario's cleanup) keeps what it measured."""
        self.res["walls"] = [{"label": lab, **w} for lab, w in self.walls]
        self.res["total_s"] = time.monotonic() - T0
        self.res["machine"]["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
        tmp = os.path.join(self.out, "results.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.res, f, indent=1, sort_keys=False, default=str)
        os.replace(tmp, os.path.join(self.out, "results.json"))


# ---------------------------------------------------------------------- report ---

def fmt_ms(s, key="p50"):
    if not s or s.get("n", 0) == 0 or s.get(key) is None:
        return "–"
    v = s[key]
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def pp(s):
    return f"{fmt_ms(s, 'p50')} / {fmt_ms(s, 'p99')}"


def fmt_s(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def verdict(ok):
    return "✅" if ok else "❌"


def speed(a, w, bound=False):
    """Whereabouts' figure over allot's, as a speed-up ("≥" when Whereabouts' is a lower bound)."""
    if not a or not w:
        return ""
    return f"{'≥' if bound else ''}{w / a:,.0f}× faster" if w / a >= 10 else f"{'≥' if bound else ''}{w / a:.1f}×"


def burst_wall(x):
    if not x:
        return "–"
    if "skipped" in x:
        return "skipped"
    t = fmt_s(x.get("wall_s"))
    if x.get("timeouts"):
        return f"{t} (capped)"
    return f"{t} ({x['failures']} failed)" if x.get("failures") else t


def burst_rate(x):
    return x["ok"] / x["wall_s"] if x and x.get("wall_s") else None


def burst_fmt_rate(x):
    v = burst_rate(x)
    return "–" if v is None else f"{v:.1f}" if v < 100 else f"{v:,.0f}"


def burst_fails(x):
    if not x or "skipped" in x:
        return "–"
    f = f"{x.get('failures', 0)}/{x.get('concurrency')}"
    if x.get("memory_guard"):
        f += f" ({x['timeouts']} killed: low memory)"
    elif x.get("timeouts"):
        f += f" ({x['timeouts']} timed out)"
    return f


def burst_dups(x):
    if not x or "skipped" in x:
        return "–"
    return str(x.get("duplicates", 0))


def burst_entries(x):
    if not x or "pool_allocations" not in x:
        return "–"
    extra = x["pool_allocations"] - x["ok"]
    return f"{x['pool_allocations']} / {x['ok']}" + (f" ({extra} left by failed ADDs)" if extra else "")


class Table:
    """results.md's table, one scenario at a time: its rows and the (target, met) pairs."""

    def __init__(self):
        self.rows = []
        self.targets = []

    def row(self, scn, metric, a="–", w="–", h="–", ratio="", target="", met=""):
        self.rows.append(f"| {scn} | {metric} | {a} | {w} | {h} | {ratio} | {target} | {met} |")

    def text(self):
        head = ["| scenario | metric | allot | Whereabouts | host-local | Whereabouts ÷ allot | target | met |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        return "\n".join(head + self.rows)

    def exec_(self, e):
        a = e.get("allot", {})
        ok = a.get("p50") is not None and a["p50"] <= 2.0
        self.targets.append(("VERSION exec p50 ≤ 2 ms", ok))
        self.row("1 exec", "VERSION p50 / p99 (ms)", pp(a), pp(e.get("whereabouts")), pp(e.get("host-local")),
                 speed(a.get("p50"), e.get("whereabouts", {}).get("p50")), "p50 ≤ 2 ms", verdict(ok))

    def sequential(self, s):
        a, w, h = s.get("allot", {}), s.get("whereabouts", {}), s.get("host-local", {})
        ok = (a.get("add", {}).get("p50") or 1e9) <= 15 and (a.get("add", {}).get("p99") or 1e9) <= 50 \
            and a.get("add_failures", 1) == 0
        self.targets.append(("uncontended ADD p50 ≤ 15 ms, p99 ≤ 50 ms", ok))
        self.row(f"2 sequential (n={a.get('add', {}).get('n', '?')})", "ADD p50 / p99 (ms)", pp(a.get("add")),
                 pp(w.get("add")), pp(h.get("add")), speed(a.get("add", {}).get("p50"), w.get("add", {}).get("p50")),
                 "≤ 15 / ≤ 50", verdict(ok))
        self.row("", "DEL p50 / p99 (ms)", pp(a.get("del")), pp(w.get("del")), pp(h.get("del")),
                 speed(a.get("del", {}).get("p50"), w.get("del", {}).get("p50")))
        if a.get("direct"):
            dr = a["direct"]
            self.row("", "allot without allot-gc (direct): ADD · DEL p50 / p99 (ms)",
                     pp(dr.get("add")) + " · " + pp(dr.get("del")), "", "",
                     speed(dr.get("add", {}).get("p50"), w.get("add", {}).get("p50")))
        api = a.get("api_per_add")
        ok2 = api is not None and api["max"] <= 2
        self.targets.append(("≤ 2 API requests per uncontended ADD", ok2))

        def apis(x):
            v = x.get("api_per_add")
            return f"{v['p50']:g} (max {v['max']})" if v else "0"
        self.row("", "API requests per ADD, median (max)", apis(a), apis(w) if w else "–", "0" if h else "–", "",
                 "≤ 2", verdict(ok2))
        self.row("", "failures (ADD + DEL)", str(a.get("add_failures", 0) + a.get("del_failures", 0)) if a else "–",
                 str(w.get("add_failures", 0) + w.get("del_failures", 0)) if w else "–",
                 str(h.get("add_failures", 0) + h.get("del_failures", 0)) if h else "–")

    def burst_rows(self, label, d, wall_target=None, tgt_name=None):
        a, w, h = d.get("allot", {}), d.get("whereabouts", {}), d.get("host-local", {})
        bound = bool(w.get("failures"))  # Whereabouts gave up on some: it would need longer
        ratio = speed(a.get("wall_s"), w.get("wall_s"), bound)
        ok = a.get("failures", 1) == 0 and a.get("duplicates", 1) == 0 and \
            (wall_target is None or (a.get("wall_s") or 1e9) <= wall_target)
        tg = (f"≤ {wall_target:g} s, 0 failures" if wall_target else "0 failures")
        if a:
            self.targets.append((f"{tgt_name}: {tg}", ok))
        self.row(label, "wall (s)", burst_wall(a), burst_wall(w), burst_wall(h), ratio, tg, verdict(ok) if a else "")
        self.row("", "ADD p50 / p99 (ms), successful", pp(a.get("add")), pp(w.get("add")), pp(h.get("add")))
        ra, rw = burst_rate(a), burst_rate(w)
        self.row("", "successful ADDs per second", burst_fmt_rate(a), burst_fmt_rate(w), burst_fmt_rate(h),
                 speed(rw, ra) if ra and rw else "")
        self.row("", "failures", burst_fails(a), burst_fails(w), burst_fails(h))
        self.row("", "HTTP 409 / API requests",
                 f"{a.get('http_409', '–')} / {a.get('api_requests', '–')}" if a else "–",
                 f"{w.get('http_409', '–')} / {w.get('api_requests', '–')}" if w and "skipped" not in w else "–", "–")
        dup_ok = a.get("duplicates", 1) == 0
        self.row("", "duplicate IPs", burst_dups(a), burst_dups(w), burst_dups(h), "", "0",
                 verdict(dup_ok) if a else "")
        if a.get("pool_allocations", a.get("ok")) != a.get("ok") or \
                w.get("pool_allocations", w.get("ok")) != w.get("ok"):
            self.row("", "pool entries / successful ADDs", burst_entries(a), burst_entries(w), "–")
        return ok

    def bursts(self, b):
        for c, d in b.items():
            c = int(c)
            wt = 1.5 if c == 100 else None
            self.burst_rows(f"3 burst, 1 node × {c}", d, wt, f"{c} concurrent ADDs, one node")
            if d.get("whereabouts", {}).get("wall_s") and d.get("allot", {}).get("wall_s"):
                w = d["whereabouts"]
                r_ = w["wall_s"] / d["allot"]["wall_s"]
                self.targets.append((f"≥ 20× Whereabouts' wall time, burst {c}", r_ >= 20))

    def nodes(self, n4):
        d = n4["tools"]
        self.burst_rows(f"4 many nodes, {n4['nodes']} × {n4['per_node']}", d, 3.0,
                        f"{n4['nodes']} nodes × {n4['per_node']} concurrent")
        if d.get("whereabouts", {}).get("wall_s") and d.get("allot", {}).get("wall_s"):
            r_ = d["whereabouts"]["wall_s"] / d["allot"]["wall_s"]
            self.targets.append(("≥ 20× Whereabouts' wall time, many nodes", r_ >= 20))

    def fill(self, f5):
        base = f5.get("0", {}).get("add", {}).get("p50")
        for lvl, x in f5.items():
            p50 = x.get("add", {}).get("p50")
            rel = f"{p50 / base:.2f}× empty" if base and p50 else ""
            tg, met = "", ""
            if lvl == str(max(int(k) for k in f5)) and int(lvl) > 0:
                tg = "p50 ≤ 3× empty"
                ok = bool(base and p50 and p50 <= 3 * base)
                met = verdict(ok)
                self.targets.append((f"ADD p50 at {lvl} allocations ≤ 3× empty", ok))
            ent = x.get("entries", {})
            fmt_note = ""
            if ent.get("rejected"):
                fmt_note = (f"; allot-format entries rejected at {ent['rejected_bytes'] / 1024:,.0f} KiB "
                            f"({ent['rejected'][:48]}), filled in Whereabouts' format")
            self.row("5 pool fill" if lvl == "0" else "",
                     f"{int(lvl):,} allocations ({x['object_bytes'] / 1024:,.0f} KiB"
                     f"{fmt_note}): ADD p50 / p99 (ms)", pp(x.get("add")), "", "", rel, tg, met)
            self.row("", "  API server: allot's update p50 · admin PUT p50 (ms)",
                     f"{fmt_ms(x.get('api_update_latency_ms'))} · {fmt_ms(x.get('admin_put_ms'))}")

    def reclaim(self, g):
        bound = g.get("add_in_flight_bound_s")
        what = f"{g['pods']} pods" + (f", ADDs older than a {bound} s in-flight bound" if bound else "")
        if "skipped" in g:
            self.row(f"6 reclamation, {g['pods']} pods", "all released, from the delete request (s; the "
                     f"request itself took {fmt_s(g.get('delete_request_s'))})", g["skipped"], "", "", "", "≤ 10 s",
                     "n/a")
            self.row("", "allot-gc RSS (MiB)", g["skipped"], "", "", "", "≤ 64 MiB", "n/a")
            return
        t = g.get("released_s")
        done = g.get("left", 1) == 0
        ok = done and t is not None and t <= 10
        self.targets.append((f"{g['pods']} pods deleted: all released ≤ 10 s", ok))
        self.row(f"6 reclamation, {what}", "all released, from the delete request (s; the "
                 f"request itself took {fmt_s(g.get('delete_request_s'))})",
                 f"{fmt_s(t)}" + ("" if done else f" ({g.get('left')} left: timeout)"), "", "", "", "≤ 10 s",
                 verdict(ok))
        hwm = g.get("rss", {}).get("VmHWM_kib")
        ok = hwm is not None and hwm <= 64 * 1024
        self.targets.append(("allot-gc RSS ≤ 64 MiB", ok))
        self.row("", "allot-gc VmHWM (MiB)", f"{hwm / 1024:.1f}" if hwm else "–", "", "", "", "≤ 64 MiB", verdict(ok))

    def bytes_(self, s7):
        a7, w7 = s7["allot"], s7.get("whereabouts", {})
        ratio = s7.get("ratio")
        self.row(f"7 bytes per entry, {s7['entries']} real ADDs", "bytes of spec.allocations per entry "
                 f"(allot: {', '.join(a7['fields'])})", f"{a7['bytes_per_entry']:.0f}",
                 f"{w7['bytes_per_entry']:.0f}" if w7 else "–", "–",
                 f"allot ÷ Whereabouts {ratio:.2f}×" if ratio else "",
                 "small pool: optional fields kept", "")

    def fill19(self, s8):
        full = s8["entries"] == 8190 and s8["duplicates"] == 0
        self.targets.append(("/19 fills to 100% in plain mode", full))
        pre = f", {s8['prefilled']:,} pre-filled" if s8.get("prefilled") else ""
        retried = (f"; {s8['failures']} ADDs failed the first time, {s8.get('final_failures', s8['failures'])} "
                   "after the kubelet's retries (DEL, new sandbox)" if s8["failures"] else "")
        self.row("8 /19 fill, plain mode", f"entries / 8,190 ({s8['object_bytes'] / 1024:,.0f} KiB, "
                 f"{s8['wall_s']:.0f} s, {s8['duplicates']} duplicates{pre}{retried})", f"{s8['entries']:,}", "", "",
                 "", "100%", verdict(full))
        ok = s8["ratio"] <= 1.1
        self.targets.append(("bytes per entry ≤ 1.1× Whereabouts' at a full /19", ok))
        self.row("", f"bytes per entry at 8,190 (Whereabouts' form of the same entries; "
                 f"{s8['entries_with_optional_fields']:,} keep allot's optional fields)",
                 f"{s8['bytes_per_entry']:.0f}", f"{s8['whereabouts_form_bytes_per_entry']:.0f}", "",
                 f"allot ÷ Whereabouts {s8['ratio']:.2f}×", "≤ 1.1×", verdict(ok))

    def claims(self, cl):
        empty = next((v for k, v in cl["ratio_p50"].items() if k.startswith("claim, empty")), None)
        ok = empty is not None and empty <= 1.3
        self.targets.append(("ADD with an empty IPAMClaim ≤ 1.3× a plain ADD via the relay (p50)", ok))
        for k, v in cl["rows"].items():
            rel = cl["ratio_p50"].get(k)
            first = k == next(iter(cl["rows"]))
            self.row(f"C IPAMClaim (n={cl['n']})" if first else "", f"ADD p50 / p90 (ms), {k}",
                     f"{v['p50_ms']:.1f} / {v['p90_ms']:.1f}", "–", "–",
                     f"{rel:.2f}× plain" if rel else "", "≤ 1.3× plain" if k.startswith("claim, empty") else "",
                     verdict(ok) if k.startswith("claim, empty") else "")


def table(res):
    """results.md's table (markdown) and the [(target, met)] of every scenario that ran."""
    sc = res["scenarios"]
    t = Table()
    if sc.get("1_exec"):
        t.exec_(sc["1_exec"])
    if sc.get("2_sequential"):
        t.sequential(sc["2_sequential"])
    t.bursts(sc.get("3_burst", {}))
    if sc.get("4_nodes"):
        t.nodes(sc["4_nodes"])
    if sc.get("5_fill"):
        t.fill(sc["5_fill"])
    if sc.get("6_reclaim"):
        t.reclaim(sc["6_reclaim"])
    s7 = sc.get("7_bytes")
    if s7 and "allot" in s7:
        t.bytes_(s7)
    if sc.get("8_fill19"):
        t.fill19(sc["8_fill19"])
    cl = sc.get("C_claims")
    if cl and cl.get("ratio_p50"):
        t.claims(cl)
    return t.text(), t.targets


def report(res, out):
    m, v = res.get("machine", {}), res.get("versions", {})
    lines = [f"allot bench, {res.get('mode')} mode, {res.get('date')}",
             f"machine: {m.get('cores')} cores ({m.get('cpu', '?')}), {m.get('memory_gib', '?')} GiB, "
             f"{m.get('os', '')}, Linux {m.get('kernel', '')}; load average at start {' '.join(m.get('loadavg_at_start', []))}"
             f", at end {' '.join(m.get('loadavg_at_end', []))}",
             "versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if k != "allot_cni_versions" and val),
             ""]
    t, targets = table(res)
    lines.append(t)
    lines.append("")
    missed = [name for name, ok in targets if not ok]
    for n in res.get("notes", []):
        lines.append(f"note: {n}")
    lines.append(f"targets: {len(targets) - len(missed)} met, {len(missed)} missed"
                 + (": " + "; ".join(missed) if missed else ""))
    lines.append(f"total bench time {res.get('total_s', 0):.0f} s; results in {out}/results.json, "
                 f"charts in {out}/latency.svg, {out}/walltime.svg (and .png)")
    res["targets"] = [{"target": n, "met": ok} for n, ok in targets]
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    text = "\n".join(lines)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text + "\n")
    return text


# ---------------------------------------------------------------------- charts ---

def latency_points(sc):
    """Per tool, the (concurrency, p50, p99) ADD latencies: on one node, and over many nodes."""
    pts = {t: [] for t in TOOLS}  # one node: (concurrency, p50, p99)
    many = {t: [] for t in TOOLS}  # many nodes
    seq = sc.get("2_sequential", {})
    for t in TOOLS:
        if seq.get(t, {}).get("add", {}).get("n"):
            pts[t].append((1, seq[t]["add"]["p50"], seq[t]["add"]["p99"]))
    for c, d in sc.get("3_burst", {}).items():
        for t in TOOLS:
            x = d.get(t, {})
            if x.get("add", {}).get("n"):
                pts[t].append((int(c), x["add"]["p50"], x["add"]["p99"]))
    n4 = sc.get("4_nodes", {})
    for t in TOOLS:
        x = n4.get("tools", {}).get(t, {})
        if x.get("add", {}).get("n"):
            many[t].append((x["concurrency"], x["add"]["p50"], x["add"]["p99"]))
    return pts, many


CHART_COLORS = {"allot": "#1f77b4", "whereabouts": "#d62728", "host-local": "#2ca02c"}


def gnuplot_script(term, ext, out, title, plots, nodes, wdat):
    colors = CHART_COLORS
    return f"""
set terminal {term}
set output '{out}/latency.{ext}'
set title "ADD latency vs concurrency ({title})"
set xlabel 'concurrent ADDs (1 = sequential; squares: spread over {nodes} nodes)'
set ylabel 'ADD latency (ms)'
set format y '%g'
set logscale xy
set grid
set key outside right top
set xrange [0.7:*]
plot {", ".join(plots) if plots else "1/0 notitle"}
set output '{out}/walltime.{ext}'
set title "Wall time per scenario ({title})"
set ylabel 'seconds (log scale)'
set xlabel ''
unset logscale x
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by -20
set key outside right top
set xrange [*:*]
set datafile missing 'NaN'
plot '{wdat}' using 2:xtic(1) title 'allot' lc rgb '{colors["allot"]}', \\
     '' using 3 title 'Whereabouts' lc rgb '{colors["whereabouts"]}', \\
     '' using 4 title 'host-local' lc rgb '{colors["host-local"]}'
"""


def charts(res, out):
    """Writes gnuplot data and scripts, and renders SVG and PNG with gnuplot."""
    gp = shutil.which("gnuplot")
    if not gp:
        log("charts: no gnuplot; skipped")
        return
    sc = res["scenarios"]
    pts, many = latency_points(sc)
    n4 = sc.get("4_nodes", {})
    for t in TOOLS:
        for suffix, data in (("", pts[t]), ("-nodes", many[t])):
            with open(os.path.join(out, f"latency-{t}{suffix}.dat"), "w") as f:
                f.write(f"# {t}{suffix}: concurrent ADDs, p50 ms, p99 ms\n")
                for c, p50, p99 in sorted(data):
                    f.write(f"{c} {p50:.3f} {p99:.3f}\n")
    walls = res.get("walls", [])
    wdat = os.path.join(out, "walltime.dat")
    with open(wdat, "w") as f:
        f.write("# scenario, seconds: allot whereabouts host-local\n")
        for w in walls:
            vals = [w.get(t) for t in TOOLS]
            f.write(f'"{w["label"]}" ' + " ".join(f"{v:.4f}" if v else "NaN" for v in vals) + "\n")
    title = f"{res.get('machine', {}).get('cores')} cores, {res.get('date')}, {res.get('mode')} mode"
    colors = CHART_COLORS
    plots = []
    for t in TOOLS:
        if pts[t]:
            dat = os.path.join(out, f"latency-{t}.dat")
            plots.append(f"'{dat}' using 1:2 with linespoints lw 2 pt 7 lc rgb '{colors[t]}' title '{t} p50'")
            plots.append(f"'{dat}' using 1:3 with linespoints lw 2 dt 2 pt 6 lc rgb '{colors[t]}' title '{t} p99'")
        if many[t]:
            dat = os.path.join(out, f"latency-{t}-nodes.dat")
            nn = n4.get("nodes", 4)
            plots.append(f"'{dat}' using 1:2 with points ps 2 pt 5 lc rgb '{colors[t]}' title '{t} p50, {nn} nodes'")
            plots.append(f"'{dat}' using 1:3 with points ps 2 pt 4 lc rgb '{colors[t]}' title '{t} p99, {nn} nodes'")
    for term, ext in (("svg size 900,560 dynamic font 'sans,12'", "svg"), ("pngcairo size 900,560 font 'sans,10'", "png")):
        script = gnuplot_script(term, ext, out, title, plots, n4.get("nodes", 4), wdat)
        p = os.path.join(out, f"charts-{ext}.gp")
        with open(p, "w") as f:
            f.write(script)
        rc = subprocess.run([gp, p], capture_output=True, text=True)
        if rc.returncode != 0:
            log(f"charts: gnuplot failed: {rc.stderr.strip()[:500]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small n: for development")
    ap.add_argument("--scenarios", default="1234567",
                    help="which scenarios to run, e.g. 12 (default 1-7; 8, the /19 fill, S, node slices, and C, IPAMClaim ADDs, only when named)")
    ap.add_argument("--tools", default="allot,host-local,whereabouts", help="peers to run (default all)")
    ap.add_argument("--set", action="append", metavar="KEY=JSON",
                    help="override a parameter, e.g. --set 'bursts=[100]' (development)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-relay", action="store_true",
                    help="allot without allot-gc's node relay: every plugin call goes to the API server itself")
    ap.add_argument("--report-only", action="store_true", help="re-render table and charts from results.json")
    args = ap.parse_args()
    args.tools = args.tools.split(",")
    if args.report_only:
        res = json.load(open(os.path.join(args.out, "results.json")))
    else:
        res = Bench(args).run()
    charts(res, args.out)
    print(report(res, args.out))


if __name__ == "__main__":
    main()
