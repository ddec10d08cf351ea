#!/usr/bin/env python3
"""make demo-cluster: rankd serving a feed from a Redis Cluster while one of its masters is killed.

Starts a Redis Cluster of 3 masters with a replica each on loopback ports in a temporary folder,
writes the demo dataset into it with `rankd datagen --redis cluster:...`, compiles the example
plans against a copy of the registry whose `test` endpoints are that cluster (replica reads on
unless --replica-reads off), starts `rankd serve` and shows a ranked feed. Then the drill: it
measures the most the service answers (closed loop), offers half of that, open loop, with
rankd's paced client (bench/load/paced_client.cpp), SIGKILLs one master a few seconds in,
watches the cluster promote its replica, starts the killed node again (it rejoins as a replica)
and prints a table per second: requests answered, 200s, degraded answers, errors by code,
p50/p99, whether GET /readyz answered 200 (polled every 50 ms) and which node serves the killed
master's slots. It stops everything it started when it
ends, fails or is interrupted (Ctrl-C, SIGTERM).

cluster-node-timeout is 1000 ms: the other masters mark a silent master failed after it and its
replica is promoted about a second later, so reads that must go to a master (replica reads off)
are refused for about 2 s. A shorter timeout would risk failing over a node that is only slow (a
loaded 2-core machine can stall a process for a few hundred ms); a longer one stretches the
window in which its slots have no master.

  PYTHONPATH=python scripts/demo_cluster.py [--rankd PATH] [--client PATH]
                                            [--seconds 16] [--kill-at 4] [--restart-at 10]
                                            [--replica-reads on|off] [--load 0.5]
                                            [--deadline-ms 100] [--command-timeout-ms 50]
                                            [--json FILE]

Standard library only (Debian's python3); imports rankd_harness from python/
(scripts/demo_cluster.sh sets PYTHONPATH).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from rankd_harness.demo_common import Stop, on_sigterm, print_top, request, start_serve, step
from rankd_harness.processes import stop_process
from rankd_harness.redis_cluster import LocalCluster
from rankd_harness.resp_client import call

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NODE_TIMEOUT_MS = 1000
USERS = 2000  # the demo dataset's
BODY = '{"plan": "feed", "viewer_id": {viewer}, "deadline_ms": %d}'
CHECKED_VIEWERS = range(7, USERS, 97)  # whose rankings are compared before, during and after




def cluster_registry(folder, seeds, replica_reads, command_timeout_ms):
    """A copy of registry/ whose `test` endpoints are the cluster."""
    registry = os.path.join(folder, "registry")
    shutil.copytree(os.path.join(ROOT, "registry"), registry)
    path = os.path.join(registry, "endpoints.toml")
    with open(path) as f:
        text = f.read()
    for name in ("graph", "features"):
        table = ('[endpoints.%s.test]\nmode = "cluster"\nseeds = [%s]\nread_from_replicas = %s\n'
                 'pool_size = 2\nconnect_timeout_ms = 200\ncommand_timeout_ms = %d\n'
                 % (name, ", ".join('"%s"' % s for s in seeds), "true" if replica_reads else "false",
                    command_timeout_ms))
        text, n = re.subn(r"\[endpoints\.%s\.test\]\n(?:[^\[\n][^\n]*\n)*" % name,
                          lambda _: table, text)
        if n != 1:
            raise SystemExit("demo-cluster: registry/endpoints.toml has no [endpoints.%s.test]" % name)
    with open(path, "w") as f:
        f.write(text)
    return registry


class SlotWatch:
    """Polls the cluster every 50 ms from the live nodes: who serves `slot`, and when the master
    serving it changes; when `victim`, once killed and started again, is a replica in sync with
    its master; and rankd's GET /readyz on `port`. Thread: its own; read its results after
    stop()."""

    def __init__(self, cluster, slot, victim, port, t0):
        self.cluster, self.slot, self.victim, self.port, self.t0 = cluster, slot, victim, port, t0
        self.samples = []  # (seconds since t0, address serving the slot or None)
        self.readyz = []  # (seconds since t0, HTTP status of GET /readyz, or 0 when unanswered)
        self.restarted = False  # set by the drill once it started the victim again
        self.rejoined_at = None  # seconds since t0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            try:
                views = self.cluster.view()
                live = [v for v in views if v.serves(self.slot) and not v.failed]
                owner = live[0].address if live else None
            except RuntimeError:
                owner = None
            now = time.monotonic() - self.t0
            self.samples.append((now, owner))
            self.readyz.append((now, self.ready_status()))
            if self.restarted and self.rejoined_at is None and self.in_sync():
                self.rejoined_at = now
            self.stopping.wait(0.05)

    def ready_status(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
        try:
            conn.request("GET", "/readyz")
            response = conn.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            return 0
        finally:
            conn.close()

    def not_ready_during(self, second):
        """How many of the /readyz polls during [second, second + 1) were not 200."""
        return sum(1 for t, status in self.readyz if second <= t < second + 1 and status != 200)

    def in_sync(self):
        try:
            info = call(self.victim.port, "INFO", "replication", timeout=0.5)
        except OSError:
            return False
        return "role:slave" in info and "master_link_status:up" in info

    def wait_rejoined(self, seconds):
        deadline = time.monotonic() + seconds
        while self.rejoined_at is None and time.monotonic() < deadline:
            self.stopping.wait(0.05)
        return self.rejoined_at

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def owner_during(self, second):
        """The addresses that served the slot during [second, second + 1)."""
        seen = []
        for t, owner in self.samples:
            if second <= t < second + 1 and owner not in seen:
                seen.append(owner)
        return seen

    def first_time_served_by_other(self, address, after):
        for t, owner in self.samples:
            if t >= after and owner is not None and owner != address:
                return t
        return None


class DemoCluster:
    def __init__(self, args):
        self.args = args
        self.folder = tempfile.mkdtemp(prefix="rankd-demo-cluster-")
        self.cluster = None
        self.serve = None
        self.port = None
        self.log = None
        self.clients = []  # the paced load clients started

    def start_cluster(self):
        step("a Redis Cluster: 3 masters, a replica each (cluster-node-timeout %d ms; data in %s)"
             % (NODE_TIMEOUT_MS, self.folder))
        self.cluster = LocalCluster(self.folder, masters=3, replicas=1,
                                    node_timeout_ms=NODE_TIMEOUT_MS)
        for v in sorted(self.cluster.view(), key=lambda v: (not v.master, v.address)):
            role = "master %s" % " ".join("%d-%d" % r for r in v.slots) if v.master else \
                "replica of %s" % next(m.address for m in self.cluster.view() if m.id == v.master_id)
            print("  %s  pid %d  %s" % (v.address, self.cluster.node_at(v.address).proc.pid, role))

    def load_data(self):
        step("the demo dataset, written into the cluster (rankd datagen --redis cluster:...)")
        subprocess.run([self.args.rankd, "datagen", "--dataset", "demo", "--redis",
                        self.cluster.endpoint(), "--flush"], check=True)

    def compile_plans(self):
        step("the example plans, compiled by rankc against a registry whose test endpoints are "
             "the cluster (read_from_replicas = %s)" % ("true" if self.replica_reads else "false"))
        self.registry = cluster_registry(self.folder, self.cluster.seeds(), self.replica_reads,
                                         self.args.command_timeout_ms)
        self.plans = os.path.join(self.folder, "plans")
        if not self.args.rankc_built:
            subprocess.run(["npm", "run", "build", "--silent"], cwd=ROOT, check=True)
        subprocess.run(["node", "dsl/bin/rankc.js", "build", "plans", "--out", self.plans,
                        "--registry", self.registry], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)

    @property
    def replica_reads(self):
        return self.args.replica_reads == "on"

    def start_serve(self):
        step("rankd serve --env test (2 shards)")
        self.log_path = os.path.join(self.folder, "rankd-serve.log")
        self.log = open(self.log_path, "w")
        self.serve, self.port = start_serve(
            [self.args.rankd, "serve", "--plans", self.plans, "--registry", self.registry,
             "--env", "test", "--port", "0", "--shards", "2", "--log_sample", "0"]
            + self.args.serve_args.split(),
            self.log, self.log_path, "demo-cluster")
        print("rankd serve pid %d on http://127.0.0.1:%d (log %s)"
              % (self.serve.pid, self.port, self.log_path))

    def request(self, method, path, body=None):
        return request(self.port, method, path, body)

    def show_feed(self, viewer):
        step('POST /rank {"plan": "feed", "viewer_id": %d}' % viewer)
        status, text = self.request("POST", "/rank", json.dumps({"plan": "feed", "viewer_id": viewer}))
        if status != 200:
            raise SystemExit("demo-cluster: /rank answered %d: %s" % (status, text))
        r = json.loads(text)
        rows = r["outputs"]["top"]
        print_top(rows, 5)
        print("(%d of %d ranked items, degraded: %s)" % (min(5, len(rows)), len(rows),
                                                        json.dumps(r["degraded"])))

    def rankings(self):
        """CHECKED_VIEWERS' feeds as the drill's requests ask for them: viewer -> (status, the
        ranked media ids, the degraded nodes)."""
        out = {}
        for viewer in CHECKED_VIEWERS:
            body = BODY.replace("{viewer}", str(viewer)) % self.args.deadline_ms
            status, text = self.request("POST", "/rank", body)
            answer = json.loads(text) if status == 200 else {}
            out[viewer] = (status, [row["id"] for row in answer.get("outputs", {}).get("top", [])],
                           answer.get("degraded"))
        return out

    def client(self, mode, seconds):
        deadline_ms = self.args.deadline_ms
        argv = [self.args.client, "--port", str(self.port), "--body", BODY % deadline_ms,
                "--users", str(USERS), "--connections", "64", "--deadline_ms", str(deadline_ms),
                "--drain_ms", str(2000 + deadline_ms),
                "--bucket_ms", "1000"] + mode
        self.clients.append(subprocess.Popen(argv, stdout=subprocess.PIPE, text=True))
        print("load client pid %d" % self.clients[-1].pid, flush=True)
        return self.clients[-1], seconds

    @staticmethod
    def report(proc_and_seconds):
        proc, seconds = proc_and_seconds
        out, _ = proc.communicate(timeout=seconds + 60)
        if proc.returncode != 0:
            raise SystemExit("demo-cluster: the paced client failed (exit %d)" % proc.returncode)
        return json.loads(out)

    def drill(self):
        a = self.args
        step("the most it answers: closed loop, 16 connections, 3 s")
        peak = self.report(self.client(["--closed", "--duration_ms", "3000", "--connections", "16"], 3))
        max_rps = peak["total"]["goodput_per_s"]
        rate = max(1, int(max_rps * a.load))
        print("%.0f answers/s within %d ms; the drill offers %.0f%% of that: %d requests/s" % (
            max_rps, a.deadline_ms, 100 * a.load, rate))
        victim = self.cluster.masters()[0]
        slots = next(v.slots for v in self.cluster.view() if v.address == victim.address)
        phases = "%d:%d,%d:%d,%d:%d" % (rate, a.kill_at * 1000, rate, (a.restart_at - a.kill_at) * 1000,
                                        rate, (a.seconds - a.restart_at) * 1000)
        step("the drill: %d requests/s for %d s; SIGKILL of master %s (slots %s) at %d s, "
             "restart at %d s" % (rate, a.seconds, victim.address,
                                 " ".join("%d-%d" % r for r in slots), a.kill_at, a.restart_at))
        before = self.rankings()
        t0 = time.monotonic()
        load = self.client(["--phases", phases], a.seconds)
        watch = SlotWatch(self.cluster, slots[0][0], victim, self.port, t0)
        events = []
        try:
            time.sleep(max(0.0, t0 + a.kill_at - time.monotonic()))  # the schedule, not a wait
            victim.kill()
            killed_at = time.monotonic() - t0
            events.append((killed_at, "SIGKILL %s" % victim.address))
            time.sleep(max(0.0, t0 + a.kill_at + 0.5 - time.monotonic()))  # the schedule
            during_from = time.monotonic() - t0
            during = self.rankings()
            during_to = time.monotonic() - t0
            time.sleep(max(0.0, t0 + a.restart_at - time.monotonic()))
            victim.start()
            watch.restarted = True
            events.append((time.monotonic() - t0, "restarted %s" % victim.address))
            result = self.report(load)
            rejoined = watch.wait_rejoined(30)
        finally:
            watch.stop()
        after = self.rankings()
        promoted_at = watch.first_time_served_by_other(victim.address, killed_at)
        if promoted_at is not None:
            new_master = next(o for t, o in watch.samples if t >= promoted_at and o)
            events.append((promoted_at, "%s serves the slots (replica promoted)" % new_master))
        restarted_at = next(t for t, what in events if what.startswith("restarted"))
        self.rejoined_after_restart_s = None if rejoined is None else rejoined - restarted_at
        if rejoined is not None:
            events.append((rejoined, "%s is a replica again, in sync" % victim.address))
        self.print_table(result, watch, sorted(events))
        self.not_ready_polls = sum(1 for _, status in watch.readyz if status != 200)
        self.readyz_polls = len(watch.readyz)
        self.exactness = {
            "viewers": len(before),
            "before_all_200": all(status == 200 and not degraded
                                  for status, _, degraded in before.values()),
            "during_from_s": round(during_from, 3),
            "during_to_s": round(during_to, 3),
            "during_before_promotion": promoted_at is None or during_to < promoted_at,
            "same_during": sum(1 for v in before if during[v] == before[v]),
            "same_after": sum(1 for v in before if after[v] == before[v]),
            "differ": {str(v): {"before": before[v], "during": during[v], "after": after[v]}
                       for v in before if not before[v] == during[v] == after[v]},
        }
        return self.summary(result, max_rps, rate, killed_at, promoted_at, victim, slots, events)

    @staticmethod
    def errors_in(timeline, i):
        parts = ["%s:%d" % (code, counts[i]) for code, counts in sorted(timeline["errors"].items())
                 if counts[i]]
        if timeline["shed"][i]:
            parts.insert(0, "503:%d" % timeline["shed"][i])
        return " ".join(parts) or "-"

    def print_table(self, result, watch, events):
        tl = result["timeline"]
        print("%4s %9s %6s %9s %-18s %8s %8s %6s  %s" % (
            "s", "answered", "200", "degraded", "errors", "p50 ms", "p99 ms", "ready",
            "slots served by"))
        for i in range(len(tl["answered"])):
            owners = watch.owner_during(i)
            served = " -> ".join(o or "(none)" for o in owners) or "?"
            ok = tl["goodput"][i] + tl["late_200"][i]
            not_ready = watch.not_ready_during(i)
            print("%4d %9d %6d %9d %-18s %8.2f %8.2f %6s  %s" % (
                i, tl["answered"][i], ok, tl["degraded"][i], self.errors_in(tl, i),
                tl["p50_ms"][i], tl["p99_ms"][i], "yes" if not not_ready else "no:%d" % not_ready,
                served))
            for t, what in events:
                if i <= t < i + 1:
                    print("     %6.2f s: %s" % (t, what))
        for t, what in events:
            if t >= len(tl["answered"]):
                print("     %6.2f s: %s" % (t, what))

    def summary(self, result, max_rps, rate, killed_at, promoted_at, victim, slots, events):
        phases = result["phases"]
        steady, failover = phases["0"], phases["1"]
        total = result["total"]
        p99 = lambda phase: phase["latency_ms"]["admitted"]["p99"]
        doc = {
            "replica_reads": self.replica_reads,
            "serve_args": self.args.serve_args,
            "node_timeout_ms": NODE_TIMEOUT_MS,
            "max_rps": max_rps,
            "offered_rps": rate,
            "killed": victim.address,
            "slots": slots,
            "killed_at_s": killed_at,
            "promoted_after_s": None if promoted_at is None else promoted_at - killed_at,
            "rejoined_after_restart_s": self.rejoined_after_restart_s,
            "deadline_ms": self.args.deadline_ms,
            "readyz_polls": self.readyz_polls,
            "readyz_not_ready": self.not_ready_polls,
            "requests": total["requests"],
            "non_200": total["requests"] - total["goodput"] - total["late_200"],
            "degraded": total["degraded"],
            "status": total["status"],
            "failures": total["failures"],
            "steady_p99_ms": p99(steady),
            "failover_p99_ms": p99(failover),
            "events": [[round(t, 3), what] for t, what in events],
            "rankings": self.exactness,
            "report": result,
        }
        step("summary")
        print("%d requests at %d/s (%.0f%% of the %.0f/s measured); %d not 200, %d degraded" % (
            doc["requests"], rate, 100 * self.args.load, max_rps, doc["non_200"], doc["degraded"]))
        print("GET /readyz every 50 ms: %d of %d polls not ready" % (
            doc["readyz_not_ready"], doc["readyz_polls"]))
        if doc["promoted_after_s"] is not None:
            print("the replica served the slots %.2f s after the kill" % doc["promoted_after_s"])
        print("p99 %.2f ms before the kill, %.2f ms from the kill to the restart (%.2fx)" % (
            doc["steady_p99_ms"], doc["failover_p99_ms"],
            doc["failover_p99_ms"] / doc["steady_p99_ms"] if doc["steady_p99_ms"] else float("nan")))
        x = doc["rankings"]
        print("the feeds of %d viewers, compared with theirs before the load: %d the same at "
              "%.2f-%.2f s (%s), %d the same after the rejoin" % (
                  x["viewers"], x["same_during"], x["during_from_s"], x["during_to_s"],
                  "master dead, not yet replaced" if x["during_before_promotion"]
                  else "after the promotion", x["same_after"]))
        for viewer, answers in x["differ"].items():
            print("  viewer %s: %s" % (viewer, json.dumps(answers)))
        step("GET /metrics (the cluster's)")
        _, text = self.request("GET", "/metrics")
        doc["metrics"] = [line for line in text.splitlines()
                          if line.startswith(("rankd_redis_cluster_", "rankd_redis_errors_total{",
                                              "rankd_redis_reconnects_total{"))]
        for line in doc["metrics"]:
            print("  " + line)
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(doc, f, indent=1)
            print("wrote %s" % self.args.json)
        return doc

    def stop(self):
        for client in self.clients:
            if client.poll() is None:
                client.kill()
                client.wait()
        if self.serve:
            stop_process(self.serve)
        if self.cluster:
            self.cluster.stop()
        if self.log:
            self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        print("\ndemo-cluster: stopped rankd serve and the cluster's redis-servers, removed %s"
              % self.folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankd", default=os.path.join(ROOT, "build/apps/rankd/rankd"))
    parser.add_argument("--client", default=os.path.join(ROOT, "build/bench/load/rankd_paced_client"))
    parser.add_argument("--seconds", type=int, default=16, help="the drill's length")
    parser.add_argument("--kill-at", type=int, default=4)
    parser.add_argument("--restart-at", type=int, default=10)
    parser.add_argument("--replica-reads", choices=["on", "off"], default="on")
    parser.add_argument("--load", type=float, default=0.5,
                        help="the drill's rate as a fraction of the measured maximum")
    parser.add_argument("--deadline-ms", type=int, default=100, help="each request's deadline")
    parser.add_argument("--command-timeout-ms", type=int, default=50,
                        help="the endpoints' command timeout (the repository registry's test value)")
    parser.add_argument("--json", help="write the drill's figures there")
    parser.add_argument("--serve-args", default="",
                        help="more flags for rankd serve, e.g. '--max_waiting 0' (admission refusing "
                        "at once instead of letting requests wait)")
    parser.add_argument("--rankc-built", action="store_true",
                        help="use dsl/dist as it is (make test builds it) instead of npm run build")
    args = parser.parse_args()
    if not 0 < args.kill_at < args.restart_at < args.seconds:
        parser.error("need 0 < --kill-at < --restart-at < --seconds")
    if not 0 < args.load <= 1:
        parser.error("--load must be in (0, 1]")
    signal.signal(signal.SIGTERM, on_sigterm)
    demo = DemoCluster(args)
    try:
        demo.start_cluster()
        demo.load_data()
        demo.compile_plans()
        demo.start_serve()
        demo.show_feed(42)
        demo.drill()
        return 0
    except (KeyboardInterrupt, Stop):
        print("\ndemo-cluster: interrupted")
        return 130
    finally:
        demo.stop()


if __name__ == "__main__":
    sys.exit(main())
