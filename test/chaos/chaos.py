#!/usr/bin/env python3
"""Chaos driver for allot (issue #8), run by test/chaos/chaos_test.sh.

N ADD/DEL operations from several simulated nodes at a fixed concurrency against one real
kube-apiserver, while plugin processes are SIGKILLed at random points, the API server is
restarted, etcd is paused (SIGSTOP/SIGCONT) for longer than the plugin's deadline, and the
nodes' allot-gc processes are killed and restarted. Every successful ADD is recorded with its
interval of life; the invariants are checked at the end (see check_* below).

How a "container" lives (as kubelet + Multus drive it):
  - its pod is created in the API with spec.nodeName = its node (a few are made ahead, as a
    scheduler binds pods before the kubelet runs their sandboxes);
  - ADD through the plugin, with that node's NODENAME, lock dir and journal dir;
  - on success the network-status annotation is written as Multus writes it, and the
    container is live from the moment the plugin exited successfully;
  - on failure (a CNI error or our SIGKILL) the container never lived, but the runtime calls
    DEL for a failed ADD (the CNI spec requires the runtime to; kubelet does it when it tears
    the failed sandbox down), so the driver runs DEL for it, retried until it succeeds as
    kubelet retries it; then either a new sandbox (new container ID, same pod) is tried, or
    the pod is deleted;
  - a live container ends either by DEL through the plugin (retried until success, then its
    pod object is deleted) or by deleting its pod object only, leaving the release to the
    node's allot-gc (network-status annotation). Its life ends when that DEL or that pod
    deletion starts (the first attempt).

Only the standard library is used.
"""

import argparse
import collections
import http.client
import ipaddress
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

IFNAME = "net1"
CNI_CODES = {"1": "incompatible version", "2": "unsupported field", "3": "unknown container",
             "4": "invalid environment", "5": "I/O failure", "6": "decode failure",
             "7": "invalid network config", "11": "try again later", "100": "addresses exhausted",
             "101": "access denied", "102": "check failed", "103": "internal"}
POD_IMAGE = "registry.k8s.io/pause:3.10"


def now():
    return time.time()


def ts(t):
    """Wall time with milliseconds, for evidence lines."""
    return time.strftime("%H:%M:%S", time.localtime(t)) + ".%03d" % int((t % 1) * 1000)


# ------------------------------------------------------------------------------ API client --

class Api:
    """Admin client to the API server: one keep-alive connection per thread."""

    def __init__(self, server, ca, cert, key):
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)
        self.local = threading.local()

    def once(self, method, path, body=None, ctype="application/json", timeout=10):
        """One attempt. Returns (status, obj); status 0 when no answer arrived."""
        c = getattr(self.local, "c", None)
        if c is None or getattr(self.local, "timeout", None) != timeout:
            c = self.local.c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                           timeout=timeout)
            self.local.timeout = timeout
        try:
            data = None if body is None else json.dumps(body)
            c.request(method, path, body=data, headers={"Content-Type": ctype} if data else {})
            r = c.getresponse()
            raw = r.read()
            try:
                obj = json.loads(raw) if raw else None
            except ValueError:
                obj = None
            return r.status, obj
        except (OSError, http.client.HTTPException):
            try:
                c.close()
            except Exception:
                pass
            self.local.c = None
            return 0, None

    def call(self, method, path, body=None, ctype="application/json", done=(200, 201),
             total=240, stop=None, on_send=None):
        """Retries through outages (no answer, 429, 5xx) until a status in `done` or another
        definite answer; gives up after `total` seconds with status 0. on_send(t) is called
        before each attempt."""
        deadline = now() + total
        delay = 0.1
        while True:
            if on_send:
                on_send(now())
            st, obj = self.once(method, path, body, ctype)
            if st in done or (st != 0 and st != 429 and st < 500):
                return st, obj
            if now() >= deadline or (stop is not None and stop.is_set()):
                return st, obj
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


# --------------------------------------------------------------------------- records --

class Container:
    __slots__ = ("cid", "pod", "uid", "node", "net", "ip", "t_add0", "t_ok", "t_end", "end_mode",
                 "attempt", "last_msg")

    def __init__(self, pod, uid, node, net, attempt):
        self.cid = uuid.uuid4().hex + uuid.uuid4().hex  # 64 hex digits, as runtimes make them
        self.pod, self.uid, self.node, self.net = pod, uid, node, net
        self.ip = None
        self.t_add0 = self.t_ok = self.t_end = None
        self.end_mode = None
        self.attempt = attempt
        self.last_msg = ""

    def brief(self):
        return "%s (pod %s, node %s, network %s, ADD ok %s, end %s by %s)" % (
            self.cid[:12], self.pod, self.node, self.net.nad, ts(self.t_ok) if self.t_ok else "-",
            ts(self.t_end) if self.t_end else "never", self.end_mode or "-")


def pool_name(cidr, network_name=""):
    """The IPPool name the product derives for cidr (test/tools/names.cpp; test/lib.sh exports
    ALLOT_NAMES), so that this driver never re-derives Whereabouts' naming rules."""
    names = os.environ.get("ALLOT_NAMES") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "test", "allot-names")
    return subprocess.run([names, "pool", cidr, network_name], check=True, capture_output=True,
                          text=True).stdout.strip()


class Network:
    """One NetworkAttachmentDefinition: its range and IPPool. Several networks with overlapping
    ranges share addresses, and only the OverlappingRangeIPReservations keep them apart."""

    def __init__(self, spec):
        self.nad, self.range = spec.split("=", 1)
        self.cidr = ipaddress.ip_network(self.range)
        self.pool = pool_name(self.range)

    def offset(self, ip):
        return str(int(ipaddress.ip_address(ip)) - int(self.cidr.network_address))


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = 0                 # plugin ADD/DEL execs + pod deletions, main phase
        self.teardown_ops = 0
        self.counts = collections.Counter()   # (verb, outcome) -> n
        self.kills = collections.Counter()    # verb -> SIGKILLs sent and effective
        self.crashes = []            # plugin died of a signal we did not send, or hung
        self.del_given_up = []       # containers whose DEL never succeeded
        self.pod_ops_failed = []     # pod create/annotate/delete that never got through
        self.live_checks = 0
        self.live_checked = 0
        self.live_violations = []
        self.events = []             # (t, text) fault-injection log
        self.gc_unexpected = []      # allot-gc exits we did not cause


# ------------------------------------------------------------------------------ driver --

class Chaos:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.rng_lock = threading.Lock()
        self.api = Api(os.environ["ALLOT_APISERVER"], os.environ["KUBE_CA"],
                       os.environ["KUBE_CERT"], os.environ["KUBE_KEY"])
        self.nodes = ["%s-node%d" % (a.run, i) for i in range(a.nodes)]
        self.nets = [Network(x) for x in a.networks.split(",")]
        self.stats = Stats()
        self.lock = threading.Lock()
        self.live = []               # live containers (not being torn down)
        self.containers = {}         # cid -> Container, every ADD that succeeded
        self.stop_launch = threading.Event()
        self.stop_all = threading.Event()
        self.chaos_done = threading.Event()
        self.kill_enabled = True
        self.pods_q = collections.deque()
        self.pods_cv = threading.Condition()
        self.pod_seq = 0
        self.outstanding_pods = set()  # created pods not yet deleted (name)
        self.opslog = open(os.path.join(a.work, "ops.jsonl"), "w")
        self.opslog_lock = threading.Lock()
        self.confs = {}
        for i, n in enumerate(self.nodes):
            d = os.path.join(a.work, "nodes", n)
            os.makedirs(os.path.join(d, "journal"), exist_ok=True)
            # Every other node sends its pool requests through its allot-gc's relay (as the
            # DaemonSet runs it), so the relay's failures (allot-gc killed, the API server
            # restarted, etcd paused) are part of the load; the others go direct.
            relay = os.path.join(d, "api.sock") if i % 2 == 0 else os.path.join(d, "no-relay.sock")
            for net in self.nets:
                self.confs[(n, net.nad)] = json.dumps({
                    "cniVersion": "1.1.0", "name": net.nad, "type": "macvlan",
                    "ipam": {"type": "allot", "namespace": a.poolns,
                             "kubernetes": {"kubeconfig": os.environ["ALLOT_KUBECONFIG"]},
                             "lock_dir": os.path.join(d, "lock"), "journal_dir": os.path.join(d, "journal"),
                             "relay_socket": relay,
                             "deadline_ms": a.deadline_ms, "range": net.range}}).encode()
        self.gcs = {}
        # One node agent per node, and two controller replicas (one leads), as deployed.
        self.controllers = ["controller-0", "controller-1"]
        self.gc_names = list(self.nodes) + self.controllers
        self.gc_lock = threading.Lock()
        self.pool_state = {}         # pool -> {offset: container id}, as last seen
        self.pool_hist = collections.defaultdict(list)  # cid -> [(t, add|del, pool, offset, relist)]
        self.watch_relists = 0
        self.failed_adds = []        # (cid, time the failed ADD returned, outcome)

    # ---------------------------------------------------------------- helpers --

    def rand(self):
        with self.rng_lock:
            return self.rng.random()

    def choice(self, seq):
        with self.rng_lock:
            return self.rng.choice(seq)

    def uniform(self, lo, hi):
        with self.rng_lock:
            return self.rng.uniform(lo, hi)

    def log_op(self, rec):
        with self.opslog_lock:
            self.opslog.write(json.dumps(rec) + "\n")

    def event(self, text):
        t = now()
        self.stats.events.append((t, text))
        self.log_op({"t": t, "event": text})
        print("# %s %s" % (ts(t), text), flush=True)

    def count_op(self):
        with self.stats.lock:
            if self.stop_launch.is_set():
                self.stats.teardown_ops += 1
            else:
                self.stats.ops += 1
                # The run ends at N operations, but never before every planned fault is done.
                if self.stats.ops >= self.a.ops and self.chaos_done.is_set():
                    self.stop_launch.set()

    # ------------------------------------------------------------------ plugin --

    def plugin(self, verb, c):
        """Runs the plugin once as a runtime does. Returns (ok, code, result, killed); the
        error message of the last failure is in c.last_msg."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CNI_COMMAND": verb, "CNI_CONTAINERID": c.cid,
            "CNI_NETNS": "/var/run/netns/allot-chaos-none", "CNI_IFNAME": IFNAME,
            "CNI_PATH": "/opt/cni/bin", "NODENAME": c.node,
            "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;K8S_POD_UID=%s" % (
                self.a.podns, c.pod, c.uid),
            "ALLOT_FLAT_FILES": os.environ.get("ALLOT_FLAT_FILES", ""),
        }
        kill_after = None
        if self.kill_enabled and self.rand() < self.a.kill_prob:
            # Early (before or during the first request), mid-call, or late (in retries).
            band = self.choice([(0.0, 0.03), (0.03, 0.25), (0.25, 1.5)])
            kill_after = self.uniform(*band)
        self.count_op()
        t0 = now()
        p = subprocess.Popen([self.a.plugin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, close_fds=True)
        killed = hung = False
        try:
            out, err = p.communicate(self.confs[(c.node, c.net.nad)], timeout=kill_after if kill_after is not None
                                     else self.a.hang_s)
        except subprocess.TimeoutExpired:
            if kill_after is None:
                hung = True
            p.kill()
            out, err = p.communicate()
        t1 = now()
        rc = p.returncode
        killed = rc == -signal.SIGKILL and not hung
        code, result = None, None
        outcome = "ok"
        if killed:
            outcome = "killed"
            with self.stats.lock:
                self.stats.kills[verb] += 1
        elif hung:
            outcome = "hung"
            self.stats.crashes.append("%s %s on %s hung for %ss (killed): stderr %s" % (
                verb, c.cid[:12], c.node, self.a.hang_s, err.decode(errors="replace")[-400:]))
        elif rc < 0:
            outcome = "signal %d" % -rc
            self.stats.crashes.append("%s %s on %s died of signal %d at %s: stderr %s" % (
                verb, c.cid[:12], c.node, -rc, ts(t1), err.decode(errors="replace")[-400:]))
        elif rc != 0:
            try:
                code = json.loads(out).get("code")
            except (ValueError, AttributeError):
                code = None
            outcome = "code %s" % code if code is not None else "rc %d (no CNI error)" % rc
            try:
                c.last_msg = json.loads(out).get("msg", "")
            except (ValueError, AttributeError):
                c.last_msg = out.decode(errors="replace")[-300:]
        else:
            if verb == "ADD":
                try:
                    result = json.loads(out)
                except ValueError:
                    outcome = "rc 0 but no result"
        with self.stats.lock:
            self.stats.counts[(verb, outcome)] += 1
        rec = {"t0": t0, "t1": t1, "verb": verb, "node": c.node, "net": c.net.nad, "cid": c.cid,
               "pod": c.pod, "rc": rc, "outcome": outcome}
        if kill_after is not None:
            rec["kill_after"] = round(kill_after, 4)
        if result:
            rec["ips"] = [x.get("address") for x in result.get("ips", [])]
        if outcome != "ok" or self.a.verbose:
            rec["stdout"] = out.decode(errors="replace")[-2000:]
            rec["stderr"] = err.decode(errors="replace")[-1500:]
        self.log_op(rec)
        return outcome == "ok" and (verb != "ADD" or result is not None), code, result, killed

    def del_until_ok(self, c):
        """DEL, retried the way kubelet retries a failed teardown."""
        delay = 0.2
        deadline = now() + self.a.del_give_up_s
        while True:
            ok, _, _, _ = self.plugin("DEL", c)
            if ok:
                return True
            if now() >= deadline:
                self.stats.del_given_up.append(c)
                return False
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    # -------------------------------------------------------------------- pods --

    def pod_path(self, name=""):
        return "/api/v1/namespaces/%s/pods%s" % (self.a.podns, "/" + name if name else "")

    def create_pod(self, name, node):
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": self.a.podns, "labels": {"chaos": self.a.run}},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": POD_IMAGE}]}}
        st, o = self.api.call("POST", self.pod_path(), body, done=(201, 409), stop=self.stop_all)
        if st == 409:  # an earlier attempt went through without its answer
            st, o = self.api.call("GET", self.pod_path(name), done=(200,), stop=self.stop_all)
        if st not in (200, 201):
            self.stats.pod_ops_failed.append("create pod %s: status %s" % (name, st))
            return None
        return o["metadata"]["uid"]

    def delete_pod(self, name):
        """Deletes a pod (grace 0, as the kubelet finally does). Returns the time the first
        attempt was sent."""
        first = []
        st, _ = self.api.call("DELETE", self.pod_path(name), {"gracePeriodSeconds": 0},
                              done=(200, 404), on_send=lambda t: first.append(t))
        if st not in (200, 404):
            self.stats.pod_ops_failed.append("delete pod %s: status %s" % (name, st))
        with self.lock:
            self.outstanding_pods.discard(name)
        return first[0]

    def annotate(self, c):
        status = [{"name": "cbr0", "interface": "eth0", "ips": ["10.244.0.9"], "default": True},
                  {"name": "%s/%s" % (self.a.podns, c.net.nad), "interface": IFNAME,
                   "ips": [c.ip], "mac": "02:00:00:00:00:01", "dns": {}}]
        st, _ = self.api.call("PATCH", self.pod_path(c.pod),
                              {"metadata": {"annotations": {
                                  "k8s.v1.cni.cncf.io/network-status": json.dumps(status)}}},
                              ctype="application/merge-patch+json", done=(200,))
        if st != 200:
            self.stats.pod_ops_failed.append("annotate pod %s: status %s" % (c.pod, st))

    def producer(self):
        while not self.stop_launch.is_set():
            with self.pods_cv:
                while len(self.pods_q) >= self.a.pod_buffer and not self.stop_launch.is_set():
                    self.pods_cv.wait(0.5)
                if self.stop_launch.is_set():
                    return
                self.pod_seq += 1
                seq = self.pod_seq
            name = "c%05d" % seq
            node = self.nodes[seq % len(self.nodes)]
            net = self.nets[(seq // len(self.nodes)) % len(self.nets)]
            with self.lock:
                self.outstanding_pods.add(name)
            uid = self.create_pod(name, node)
            if uid is None:
                with self.lock:
                    self.outstanding_pods.discard(name)
                continue
            with self.pods_cv:
                self.pods_q.append((name, uid, node, net))
                self.pods_cv.notify()

    def take_pod(self):
        with self.pods_cv:
            while not self.pods_q:
                if self.stop_launch.is_set():
                    return None
                self.pods_cv.wait(0.5)
            p = self.pods_q.popleft()
            self.pods_cv.notify()
            return p

    # --------------------------------------------------------------- lifecycles --

    def lifecycle_add(self):
        p = self.take_pod()
        if p is None:
            return
        name, uid, node, net = p
        attempt = 0
        while True:
            c = Container(name, uid, node, net, attempt)
            c.t_add0 = now()
            ok, code, result, killed = self.plugin("ADD", c)
            if ok:
                c.t_ok = now()
                c.ip = result["ips"][0]["address"].split("/")[0]
                with self.lock:
                    self.containers[c.cid] = c
                self.annotate(c)  # as Multus does once the pod's networks are up
                with self.lock:
                    self.live.append(c)
                return
            # A failed ADD: the runtime calls DEL for it before giving the sandbox up.
            self.failed_adds.append((c.cid, now(), "killed" if killed else "code %s" % code,
                                     "" if killed else c.last_msg))
            self.del_until_ok(c)
            attempt += 1
            if attempt >= 3 or self.stop_launch.is_set() or self.rand() < 0.5:
                self.delete_pod(name)
                return
            # else: kubelet makes a new sandbox (new container ID) for the same pod.

    def teardown(self, c):
        mode = "DEL" if self.rand() < 0.5 else "pod-delete"
        c.end_mode = mode
        if mode == "DEL":
            c.t_end = now()
            self.del_until_ok(c)
            self.delete_pod(c.pod)
        else:
            # The pod object goes; allot-gc on its node releases the address.
            c.t_end = now()
            self.count_op()
            self.delete_pod(c.pod)

    def worker(self):
        while not self.stop_launch.is_set() and not self.stop_all.is_set():
            c = None
            with self.lock:
                n = len(self.live)
                if n >= self.a.live_max or (n > self.a.live_min and self.rand() < 0.45):
                    c = self.live.pop(int(self.rand() * n))
            try:
                if c is not None:
                    self.teardown(c)
                else:
                    self.lifecycle_add()
            except Exception as e:  # a driver bug must not pass silently
                self.stats.pod_ops_failed.append("worker exception: %r" % e)
                import traceback
                traceback.print_exc()

    # ------------------------------------------------------------------ allot-gc --

    def free_port(self):
        while True:
            p = 20000 + int(self.rand() * 12000)
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
                return p
            except OSError:
                continue
            finally:
                s.close()

    def gc_start(self, name):
        """Starts allot-gc NAME: a node's agent (NAME is the node) or a controller replica."""
        a = self.a
        port = self.free_port()
        logf = open(os.path.join(a.work, "gc-%s.log" % name), "ab")
        kc = os.environ["ALLOT_CONTROLLER_KUBECONFIG" if name in self.controllers else "ALLOT_KUBECONFIG"]
        common = [a.gc, "--kubeconfig=" + kc, "--namespace=" + a.poolns, "--listen=127.0.0.1:%d" % port,
                  "--lease-namespace=kube-system", "--request-timeout=5s", "--log-level=info"]
        if name in self.controllers:
            node = self.nodes[self.controllers.index(name) % len(self.nodes)]
            args = common + ["--role=controller", "--node-name=" + node,
                             "--lease-name=%s-lease" % a.run, "--repair-interval=1s", "--resync-interval=1s",
                             "--leak-passes=3", "--leak-grace=%ds" % a.leak_grace_s,
                             "--lease-duration=3s", "--lease-renew-interval=1s"]
        else:
            args = common + ["--role=agent", "--node-name=" + name,
                             "--journal-dir=" + os.path.join(a.work, "nodes", name, "journal"),
                             "--relay-socket=" + os.path.join(a.work, "nodes", name, "api.sock"),
                             "--journal-interval=500ms", "--node-sweep-interval=2s"]
        logf.write(("=== %s start: %s\n" % (ts(now()), " ".join(args[1:]))).encode())
        logf.flush()
        p = subprocess.Popen(args, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        logf.close()
        with open(os.path.join(a.work, "gc.pids"), "a") as f:
            f.write("%d\n" % p.pid)
        with self.gc_lock:
            self.gcs[name] = {"proc": p, "port": port, "expected": False}
        return p

    def gc_stop(self, node, sig):
        with self.gc_lock:
            g = self.gcs.get(node)
            if not g:
                return
            g["expected"] = True
        p = g["proc"]
        if p.poll() is None:
            p.send_signal(sig)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        with open(os.path.join(self.a.work, "gc-%s.log" % node), "ab") as f:
            f.write(("=== %s stopped by signal %d (exit %s)\n" % (ts(now()), sig, p.returncode)).encode())

    def gc_http(self, node, path):
        g = self.gcs.get(node)
        if not g:
            return None, ""
        try:
            c = http.client.HTTPConnection("127.0.0.1", g["port"], timeout=3)
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        except (OSError, http.client.HTTPException):
            return None, ""

    def gc_monitor(self):
        while not self.stop_all.is_set():
            with self.gc_lock:
                items = list(self.gcs.items())
            for node, g in items:
                rc = g["proc"].poll()
                if rc is not None and not g["expected"]:
                    self.stats.gc_unexpected.append("allot-gc of %s exited with %s at %s" % (node, rc, ts(now())))
                    self.event("allot-gc of %s exited unexpectedly (%s): restarting it" % (node, rc))
                    self.gc_start(node)
            self.stop_all.wait(0.5)

    def gc_metrics_sum(self):
        tot = collections.Counter()
        for node in self.gc_names:
            st, body = self.gc_http(node, "/metrics")
            if st != 200:
                continue
            for line in body.splitlines():
                if line.startswith("allot_releases_total{"):
                    k, v = line.rsplit(" ", 1)
                    tot[k[len("allot_releases_total"):]] += float(v)
        return tot

    # ------------------------------------------------------------------- faults --

    def cluster(self, *args):
        t0 = now()
        r = subprocess.run([self.a.cluster, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return r.returncode, now() - t0, r.stdout.decode(errors="replace")

    def wait_progress(self, frac):
        while not self.stop_all.is_set():
            with self.stats.lock:
                if self.stats.ops >= frac * self.a.ops:
                    return True
            time.sleep(0.1)
        return False

    def restart_gc_later(self, nodes, after):
        def go():
            time.sleep(after)
            for n in nodes:
                self.gc_start(n)
            self.event("allot-gc restarted on %s" % ", ".join(nodes))
        t = threading.Thread(target=go, daemon=True)
        t.start()
        return t

    def chaos(self):
        plan = [
            (0.12, "restart-apiserver"),
            (0.22, "kill-gc-leader"),
            (0.35, "pause-etcd"),
            (0.50, "term-gc"),
            (0.62, "restart-apiserver"),
            (0.78, "kill-all-gc"),
        ]
        restarts = []
        for frac, what in plan:
            if not self.wait_progress(frac):
                break
            if what == "restart-apiserver":
                self.event("kube-apiserver: restart (e2e/cluster restart-apiserver)")
                rc, secs, out = self.cluster("restart-apiserver")
                self.fault_counts["apiserver_restarts"] += rc == 0
                self.event("kube-apiserver: back after %.1fs (rc %d)%s" % (secs, rc, "" if rc == 0 else ": " + out[-300:]))
            elif what == "pause-etcd":
                rc, _, out = self.cluster("pid", "etcd")
                if rc != 0:
                    self.event("etcd pid unknown: %s" % out.strip())
                    continue
                pid = int(out.strip().splitlines()[-1])
                with open(os.path.join(self.a.work, "etcd.paused"), "w") as f:
                    f.write("%d\n" % pid)
                self.event("etcd: SIGSTOP (pid %d) for %.1fs (plugin deadline %d ms)" % (
                    pid, self.a.etcd_pause_s, self.a.deadline_ms))
                t0 = now()
                os.kill(pid, signal.SIGSTOP)
                try:
                    self.stop_all.wait(self.a.etcd_pause_s)
                finally:
                    os.kill(pid, signal.SIGCONT)
                    os.unlink(os.path.join(self.a.work, "etcd.paused"))
                self.fault_counts["etcd_pause_s"] = now() - t0
                self.event("etcd: SIGCONT after %.1fs" % (now() - t0))
            elif what == "kill-gc-leader":
                leader = None
                for n in self.controllers:
                    st, body = self.gc_http(n, "/metrics")
                    if st == 200 and "\nallot_is_leader 1" in "\n" + body:
                        leader = n
                node = leader or self.controllers[0]
                self.event("allot-gc of %s (%s): SIGKILL" % (node, "repair leader" if leader else "leader unknown"))
                self.gc_stop(node, signal.SIGKILL)
                self.fault_counts["gc_kills"] += 1
                restarts.append(self.restart_gc_later([node], 3.0))
            elif what == "term-gc":
                nodes = self.nodes[1:3]
                self.event("allot-gc of %s: SIGTERM" % ", ".join(nodes))
                for n in nodes:
                    self.gc_stop(n, signal.SIGTERM)
                    self.fault_counts["gc_kills"] += 1
                restarts.append(self.restart_gc_later(nodes, 5.0))
            elif what == "kill-all-gc":
                self.event("allot-gc of every node and every controller: SIGKILL")
                for n in self.gc_names:
                    self.gc_stop(n, signal.SIGKILL)
                    self.fault_counts["gc_kills"] += 1
                restarts.append(self.restart_gc_later(self.gc_names, 4.0))
        for t in restarts:
            t.join()
        self.chaos_done.set()
        with self.stats.lock:
            if self.stats.ops >= self.a.ops:
                self.stop_launch.set()

    # ---------------------------------------------------------------- checks --

    def pool_get(self, net, total):
        st, o = self.api.call("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/ippools/%s" % (
            self.a.poolns, net.pool), done=(200, 404), total=total)
        return st, o

    def check_live_in_pool(self, final=False):
        """Every container live throughout a pool read holds its address in its pool."""
        with self.lock:
            snap = list(self.live)
        ok = True
        for net in self.nets:
            mine = [c for c in snap if c.net is net]
            if not mine:
                continue
            st, o = self.pool_get(net, 240 if final else 3)
            t1 = now()
            if st != 200:
                if final:
                    self.stats.live_violations.append("final read of IPPool %s failed: status %s" % (net.pool, st))
                ok = False
                continue
            allocs = (o.get("spec") or {}).get("allocations") or {}
            with self.stats.lock:
                self.stats.live_checks += 1
            for c in mine:
                if c.t_end is not None and c.t_end <= t1:
                    continue  # teardown began during the read
                self.stats.live_checked += 1
                e = allocs.get(net.offset(c.ip))
                if not e or e.get("id") != c.cid or e.get("ifname") != IFNAME:
                    self.stats.live_violations.append(
                        "%s: live container %s; IPPool %s read at %s (rv %s) has %s" % (
                            c.ip, c.brief(), net.pool, ts(t1), o["metadata"].get("resourceVersion"),
                            json.dumps(e)))
        return ok

    # --------------------------------------------------------------- pool history --

    def pool_watch(self):
        """Records every change of every IPPool entry as the API server reports it (a list, then
        a watch resumed from the last resourceVersion through outages; a relist on 410 Gone).
        Times are when the change was seen, never earlier than when it was made."""
        base = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/ippools" % self.a.poolns
        rv = None

        def apply(pool, allocs, t, relist=False):
            old = self.pool_state.get(pool, {})
            new = {off: (e or {}).get("id", "") for off, e in (allocs or {}).items()}
            for off, cid in old.items():
                if new.get(off) != cid:
                    self.pool_hist[cid].append((t, "del", pool, off, relist))
            for off, cid in new.items():
                if old.get(off) != cid:
                    self.pool_hist[cid].append((t, "add", pool, off, relist))
            self.pool_state[pool] = new

        while not self.stop_all.is_set():
            if rv is None:
                st, o = self.api.once("GET", base, timeout=10)
                if st != 200:
                    self.stop_all.wait(0.5)
                    continue
                t = now()
                seen = set()
                for p in o.get("items", []):
                    seen.add(p["metadata"]["name"])
                    apply(p["metadata"]["name"], (p.get("spec") or {}).get("allocations"), t, True)
                for pool in list(self.pool_state):
                    if pool not in seen:
                        apply(pool, {}, t, True)
                rv = o["metadata"]["resourceVersion"]
                self.watch_relists += 1
            try:
                c = http.client.HTTPSConnection(self.api.host, self.api.port, context=self.api.ctx, timeout=40)
                c.request("GET", base + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=" + rv)
                r = c.getresponse()
                if r.status == 410:
                    rv = None
                    continue
                if r.status != 200:
                    r.read()
                    self.stop_all.wait(0.5)
                    continue
                while not self.stop_all.is_set():
                    line = r.readline()
                    if not line:
                        break
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    o = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        if o.get("code") == 410:
                            rv = None
                        break
                    rv = o.get("metadata", {}).get("resourceVersion", rv)
                    if ev.get("type") == "BOOKMARK":
                        continue
                    name = o["metadata"]["name"]
                    allocs = {} if ev["type"] == "DELETED" else (o.get("spec") or {}).get("allocations")
                    apply(name, allocs, now())
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                self.stop_all.wait(0.5)

    def history_checks(self):
        """(violations, leftovers): live containers whose pool entry was seen removed while they
        lived; failed ADDs whose entry was still in the pool 1 s after they returned."""
        violations, leftovers = [], []
        by_pool = {n.pool: n for n in self.nets}
        for c in self.containers.values():
            off = c.net.offset(c.ip)
            end = c.t_end if c.t_end is not None else float("inf")
            for t, kind, pool, o, relist in self.pool_hist.get(c.cid, []):
                if kind == "del" and pool == c.net.pool and o == off and t < end:
                    violations.append("%s: live container %s; its entry in IPPool %s was seen gone at %s%s" % (
                        c.ip, c.brief(), pool, ts(t), " (on a relist)" if relist else ""))
        for cid, t1, outcome, msg in self.failed_adds:
            held = set()
            for t, kind, pool, o, _ in sorted(self.pool_hist.get(cid, [])):
                if t > t1 + 1.0:
                    break
                if kind == "add":
                    held.add((pool, o))
                else:
                    held.discard((pool, o))
            if not held:
                continue
            pool, o = sorted(held)[0]
            gone_at = next((t for t, kind, p, x, _ in sorted(self.pool_hist[cid])
                            if t > t1 + 1.0 and kind == "del" and (p, x) == (pool, o)), None)
            net = by_pool.get(pool)
            ip = str(net.cidr.network_address + int(o)) if net else "offset " + o
            leftovers.append((outcome, cid, t1, gone_at, pool, ip, msg))
        return violations, leftovers

    def fault_windows(self):
        """[start, end] of each API server restart and etcd pause, extended by the longest an
        ADD started inside one can last (deadline + cleanup grace)."""
        out, start = [], None
        for t, text in self.stats.events:
            if text.startswith("kube-apiserver: restart") or text.startswith("etcd: SIGSTOP"):
                start = t
            elif start is not None and (text.startswith("kube-apiserver: back") or text.startswith("etcd: SIGCONT")):
                out.append((start, t + self.a.deadline_ms / 1000.0 + 4))
                start = None
        return out

    def checker(self):
        while not self.stop_launch.is_set():
            self.stop_launch.wait(self.a.check_interval_s)
            if self.stop_launch.is_set():
                break
            self.check_live_in_pool()

    def duplicates(self):
        by_ip = collections.defaultdict(list)
        for c in self.containers.values():
            by_ip[c.ip].append(c)
        dups = []
        for ip, cs in by_ip.items():
            cs.sort(key=lambda c: c.t_ok)
            for i, a in enumerate(cs):
                for b in cs[i + 1:]:
                    a_end = a.t_end if a.t_end is not None else float("inf")
                    b_end = b.t_end if b.t_end is not None else float("inf")
                    if a.t_ok < b_end and b.t_ok < a_end:
                        dups.append((ip, a, b))
        return dups, len(by_ip)

    def leftovers(self):
        """(allocations, reservations, journal entries, stray tmp files) now; None on no answer."""
        base = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/%s/" % self.a.poolns
        st, pools = self.api.call("GET", base + "ippools", done=(200,), total=10)
        st2, res = self.api.call("GET", base + "overlappingrangeipreservations", done=(200,), total=10)
        if st != 200 or st2 != 200:
            return None
        allocs = []
        for p in pools.get("items", []):
            for off, e in ((p.get("spec") or {}).get("allocations") or {}).items():
                allocs.append((p["metadata"]["name"], off, e))
        resv = [(r["metadata"]["name"], r.get("spec")) for r in res.get("items", [])]
        journal, tmp = [], []
        for n in self.nodes:
            d = os.path.join(self.a.work, "nodes", n, "journal")
            for f in (os.listdir(d) if os.path.isdir(d) else []):
                (journal if f.endswith(".json") else tmp).append("%s/%s" % (n, f))
        return allocs, resv, journal, tmp

    # ------------------------------------------------------------------- run --

    def start_sidecars(self):
        """An agent per node and the controllers (waited for, up to 30 s), their monitor and the
        pool watch."""
        for n in self.gc_names:
            self.gc_start(n)
        deadline = now() + 30
        while now() < deadline and not all(self.gc_http(n, "/readyz")[0] == 200 for n in self.gc_names):
            time.sleep(0.2)
        monitor = threading.Thread(target=self.gc_monitor, daemon=True)
        monitor.start()
        watcher = threading.Thread(target=self.pool_watch, daemon=True)
        watcher.start()

    def run_workload(self):
        """The producers, workers, fault injector and checker until the workers are done;
        returns (start, end) of the run."""
        a = self.a
        producers = [threading.Thread(target=self.producer, daemon=True) for _ in range(a.producers)]
        for t in producers:
            t.start()
        workers = [threading.Thread(target=self.worker, daemon=True) for _ in range(a.concurrency)]
        chaos = threading.Thread(target=self.chaos, daemon=True)
        checker = threading.Thread(target=self.checker, daemon=True)
        t_run0 = now()
        for t in workers:
            t.start()
        chaos.start()
        checker.start()
        last = 0
        while any(t.is_alive() for t in workers):
            time.sleep(0.5)
            if now() - last >= 10:
                last = now()
                with self.stats.lock:
                    ops = self.stats.ops
                print("# %s progress: %d/%d ops, %d live, %d ADDs ok" % (
                    ts(now()), ops, a.ops, len(self.live), len(self.containers)), flush=True)
        t_run1 = now()
        self.stop_launch.set()
        chaos.join()
        checker.join()
        for t in producers:
            t.join(60)
        return t_run0, t_run1

    def teardown_all(self):
        """Every remaining container goes, mixed DEL / pod deletion; pods made ahead that never
        ran a sandbox are deleted as well."""
        a = self.a
        self.event("teardown: %d live containers, %d unused pods" % (len(self.live), len(self.pods_q)))
        td = []
        with self.lock:
            rest, self.live = self.live, []
        chunks = [rest[i::a.concurrency] for i in range(a.concurrency)]
        unused = [p[0] for p in self.pods_q]
        self.pods_q.clear()

        def tear(chunk, pods):
            for c in chunk:
                self.teardown(c)
            for p in pods:
                self.delete_pod(p)
        for i in range(a.concurrency):
            t = threading.Thread(target=tear, args=(chunks[i], unused[i::a.concurrency]), daemon=True)
            t.start()
            td.append(t)
        for t in td:
            t.join()
        with self.lock:
            orphans = sorted(self.outstanding_pods)
        for p in orphans:  # none expected
            self.delete_pod(p)

    def converge(self, t_td):
        """Waits (a.converge_s at most from t_td) until nothing is allocated, reserved or
        journaled; returns (leftovers(), seconds it took or None)."""
        a = self.a
        left = None
        t_conv = None
        while now() - t_td < a.converge_s:
            left = self.leftovers()
            if left is not None and not left[0] and not left[1] and not left[2]:
                t_conv = now()
                break
            time.sleep(0.5)
        if left is None:
            left = self.leftovers()
        conv = (t_conv - t_td) if t_conv else None
        self.event("converged in %.1fs" % conv if conv is not None else "not converged after %ds" % a.converge_s)
        return left, conv

    def stop_sidecars(self):
        """Stops the pool watch and allot-gc, writes pool-history.jsonl; returns history_checks()."""
        time.sleep(1.0)  # the last changes reach the pool watch
        self.stop_all.set()
        for n in self.gc_names:
            self.gc_stop(n, signal.SIGTERM)
        hist_violations, leftovers = self.history_checks()
        with open(os.path.join(self.a.work, "pool-history.jsonl"), "w") as f:
            for cid, evs in self.pool_hist.items():
                for t, kind, pool, off, relist in evs:
                    f.write(json.dumps({"t": t, "cid": cid, "change": kind, "pool": pool, "offset": off,
                                        "relist": relist}) + "\n")
        return hist_violations, leftovers

    def gc_log_anomalies(self):
        """Counter of the anomaly kinds the controllers' repair loop logged."""
        anomalies = collections.Counter()
        for n in self.controllers:
            try:
                with open(os.path.join(self.a.work, "gc-%s.log" % n), errors="replace") as f:
                    for line in f:
                        i = line.find(" pool anomaly ")
                        if i >= 0:
                            anomalies[line[i + 14:].split(":", 1)[0]] += 1
            except OSError:
                pass
        return anomalies

    def report_ops(self, run_s, dups, ips_used, hist_violations):
        """The report's first half: operations, failures by code, faults, duplicates, the watch."""
        a, s = self.a, self.stats
        print("operations: %d in %.1fs (%.1f/s) from %d nodes at concurrency %d, +%d in the teardown" % (
            s.ops, run_s, s.ops / max(run_s, 1e-9), a.nodes, a.concurrency, s.teardown_ops))
        for verb in ("ADD", "DEL"):
            tot = sum(v for (vb, _), v in s.counts.items() if vb == verb)
            parts = ["%s %d" % (o, v) for (vb, o), v in sorted(s.counts.items()) if vb == verb]
            print("  %s: %d execs: %s" % (verb, tot, ", ".join(parts)))
        print("  pod deletions as the end of a live container (allot-gc reclaims): %d" %
              sum(1 for c in self.containers.values() if c.end_mode == "pod-delete"))
        fails = collections.Counter()
        for (vb, o), v in s.counts.items():
            if o.startswith("code"):
                code = o.split()[1]
                fails["%s %s (%s)" % (vb, code, CNI_CODES.get(code, "?"))] += v
        print("failures by CNI error code: %s" % (", ".join("%s: %d" % kv for kv in sorted(fails.items())) or "none"))
        print("plugin processes SIGKILLed: ADD %d, DEL %d" % (s.kills["ADD"], s.kills["DEL"]))
        print("faults: kube-apiserver restarts %d, etcd paused %.1fs (deadline %d ms), allot-gc kills/stops %d, "
              "unexpected allot-gc exits %d" % (self.fault_counts["apiserver_restarts"],
                                                self.fault_counts["etcd_pause_s"], a.deadline_ms,
                                                self.fault_counts["gc_kills"], len(s.gc_unexpected)))
        print("containers that lived: %d on %d distinct addresses; live-in-pool checks: %d reads, %d containers checked" % (
            len(self.containers), ips_used, s.live_checks, s.live_checked))
        print("duplicates: %d" % len(dups))
        print("pool history (watch, %d list(s)): %d entry changes seen; live containers' entries seen removed while "
              "they lived: %d" % (self.watch_relists, sum(len(v) for v in self.pool_hist.values()), len(hist_violations)))

    def report_leftovers(self, left, conv, metrics, leftovers):
        """The report's second half: failed ADDs' entries, leaks, convergence, allot-gc's view."""
        a = self.a
        allocs, resv, journal, tmp = left if left else ([], [], [], [])
        windows = self.fault_windows()
        in_fault = lambda t: any(a0 <= t <= a1 for a0, a1 in windows)
        lo = collections.Counter("%s (%s)" % ("killed" if o == "killed" else "failed with " + o,
                                              "API server restart or etcd pause" if in_fault(t1) else "no outage")
                                 for o, _, t1, *_ in leftovers)
        print("failed ADDs (of %d) whose pool entry outlived them by > 1 s, left for the runtime's DEL: %s" % (
            len(self.failed_adds), ", ".join("%s %d" % kv for kv in sorted(lo.items())) or "none"))
        for o, cid, t1, gone, pool, ip, msg in [x for x in leftovers if x[0] != "killed" and not in_fault(x[2])][:5]:
            print("#   %s of container %s (ADD %s at %s, no outage: %s) stayed in IPPool %s until %s" % (
                ip, cid[:12], o, ts(t1), msg[:160], pool, ts(gone) if gone else "the end"))
        print("leaks after convergence: %d allocations, %d reservations, %d journal entries%s" % (
            len(allocs), len(resv), len(journal), " (+%d stray temp files)" % len(tmp) if tmp else ""))
        print("time to converge: %s" % ("%.1fs" % conv if conv is not None else "not within %ds" % a.converge_s))
        anomalies = self.gc_log_anomalies()
        print("allot-gc repair-loop anomaly reports (log lines): %s" % (
            ", ".join("%s %d" % kv for kv in sorted(anomalies.items())) or "none"))
        if metrics:
            print("allot-gc releases (running sidecars' counters since their last start): %s" % ", ".join(
                "%s %d" % (k, v) for k, v in sorted(metrics.items())))

    def verdict(self, left, dups, hist_violations):
        """The checks, one line each, and `chaos: N passed, N failed`; whether all passed."""
        a, s = self.a, self.stats
        allocs, resv, journal, _ = left if left else ([], [], [], [])
        results = []

        def check(name, ok, details=()):
            results.append((name, ok, list(details)))

        check("faults injected: 2 API server restarts, etcd paused past the deadline, plugin and allot-gc kills",
              self.fault_counts["apiserver_restarts"] == 2 and
              self.fault_counts["etcd_pause_s"] * 1000 > a.deadline_ms and
              s.kills["ADD"] + s.kills["DEL"] > 0 and self.fault_counts["gc_kills"] > 0,
              ["apiserver restarts %d, etcd pause %.1fs, plugin kills %d, gc kills %d" % (
                  self.fault_counts["apiserver_restarts"], self.fault_counts["etcd_pause_s"],
                  s.kills["ADD"] + s.kills["DEL"], self.fault_counts["gc_kills"])])
        check("the workload ran: %d operations, at least one container in 40 operations lived" % a.ops,
              s.ops >= a.ops and len(self.containers) >= max(20, s.ops / 40),
              ["ops %d, containers that lived %d" % (s.ops, len(self.containers))])
        check("no address held by two live containers at overlapping times", not dups,
              ["%s: %s and %s" % (ip, x.brief(), y.brief()) for ip, x, y in dups[:20]])
        check("every live container's address is in its pool (pool reads during the run and at the end)",
              not s.live_violations and s.live_checks > 0, s.live_violations[:20] or
              ([] if s.live_checks else ["no pool read succeeded"]))
        check("no live container's pool entry was ever seen removed while it lived (pool watch)",
              not hist_violations and self.pool_hist, hist_violations[:20] or
              ([] if self.pool_hist else ["the pool watch saw nothing"]))
        check("every DEL succeeded eventually (retried as kubelet does)", not s.del_given_up,
              [c.brief() for c in s.del_given_up[:20]])
        check("no plugin process crashed or hung", not s.crashes, s.crashes[:20])
        check("no allot-gc process exited unexpectedly", not s.gc_unexpected, s.gc_unexpected)
        check("the driver's pod operations all went through", not s.pod_ops_failed, s.pod_ops_failed[:20])
        check("after convergence: no allocation left in any IPPool", left is not None and not allocs,
              ["%s %s: %s" % (p, off, json.dumps(e)) for p, off, e in allocs[:20]] or
              ([] if left is not None else ["API unreachable"]))
        check("after convergence: no OverlappingRangeIPReservation left", left is not None and not resv,
              ["%s: %s" % (n, json.dumps(sp)) for n, sp in resv[:20]])
        check("after convergence: no journal entry left in any node's journal dir", left is not None and not journal,
              journal[:20])
        passed = sum(1 for _, ok, _ in results if ok)
        for name, ok, details in results:
            print("%s - %s" % ("ok" if ok else "not ok", name))
            if not ok:
                for d in details:
                    print("#   " + d)
        print("chaos: %d passed, %d failed" % (passed, len(results) - passed))
        return passed == len(results)

    def run(self):
        a = self.a
        self.fault_counts = collections.Counter()
        t_start = now()
        print("# chaos: %d ops, concurrency %d, %d nodes, networks %s, deadline %d ms, seed %s" % (
            a.ops, a.concurrency, a.nodes, a.networks, a.deadline_ms, a.seed), flush=True)
        self.start_sidecars()
        t_run0, t_run1 = self.run_workload()

        # Every still-live container holds its address (read until the API answers).
        self.check_live_in_pool(final=True)
        self.teardown_all()
        t_td = now()
        self.event("teardown done; waiting for the sidecars to converge (at most %ds)" % a.converge_s)
        # Convergence: nothing allocated, reserved or journaled.
        left, conv = self.converge(t_td)
        metrics = self.gc_metrics_sum()
        hist_violations, leftovers = self.stop_sidecars()

        dups, ips_used = self.duplicates()
        print()
        self.report_ops(t_run1 - t_run0, dups, ips_used, hist_violations)
        self.report_leftovers(left, conv, metrics, leftovers)
        print("wall: %.1fs" % (now() - t_start))
        print()
        return self.verdict(left, dups, hist_violations)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=600)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--seed", default=None)
    ap.add_argument("--networks", default="chaosnet-a=10.90.0.0/23,chaosnet-b=10.90.0.0/24",
                    help="NAD=RANGE,...: the NetworkAttachmentDefinitions (made by chaos_test.sh)")
    ap.add_argument("--deadline-ms", type=int, default=10000)
    ap.add_argument("--etcd-pause-s", type=float, default=12.0)
    ap.add_argument("--leak-grace-s", type=int, default=16,
                    help="allot-gc --leak-grace: longer than an ADD can last (deadline + cleanup)")
    ap.add_argument("--kill-prob", type=float, default=0.08)
    ap.add_argument("--live-min", type=int, default=30)
    ap.add_argument("--live-max", type=int, default=150)
    ap.add_argument("--pod-buffer", type=int, default=60)
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--check-interval-s", type=float, default=4.0)
    ap.add_argument("--converge-s", type=int, default=90)
    ap.add_argument("--del-give-up-s", type=float, default=180.0)
    ap.add_argument("--hang-s", type=float, default=60.0)
    ap.add_argument("--verbose", action="store_true")
    for k in ("work", "plugin", "gc", "podns", "poolns", "run", "cluster"):
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()
    if a.seed is None:
        a.seed = str(random.randrange(1 << 30))
    ch = Chaos(a)

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        ok = ch.run()
    except KeyboardInterrupt:
        ok = False
        print("chaos: interrupted", flush=True)
    finally:
        ch.stop_all.set()
        ch.stop_launch.set()
        p = os.path.join(a.work, "etcd.paused")
        if os.path.exists(p):
            try:
                os.kill(int(open(p).read()), signal.SIGCONT)
            except (OSError, ValueError):
                pass
        for n in list(ch.gcs):
            g = ch.gcs[n]
            g["expected"] = True
            if g["proc"].poll() is None:
                g["proc"].kill()
        ch.opslog.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
