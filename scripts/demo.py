#!/usr/bin/env python3
"""make demo / make serve: rankd ranking a feed over HTTP, on a private Redis.

Starts its own redis-server on a free loopback port (data in a temporary folder), loads the demo
dataset with `rankd datagen`, compiles the example plans with rankc, starts `rankd serve`, then
shows what rankd is for: a viewer's feed as a table, the explain timeline of that request, the
same viewer ranked by a tree model and by the weekly rules (`feed_rules`: items already seen
dropped, authors spread, a discovery every fifth rank, with the item trace of one item each rule
moved), a degraded answer from the `timeouts` plan, an experiment (the `home` surface splitting viewers
between feed and feed_fresh, its requests captured and replayed offline against feed_fresh with
a ranking diff, and feed_fresh as the surface's shadow plan, diffed live on the rows each answer
fetched), highlights of /metrics and a short load run. It stops everything it started
when it ends, fails, or is interrupted (Ctrl-C, SIGTERM).

  PYTHONPATH=python scripts/demo.py [--rankd PATH] [--dataset demo] [--load-seconds 5]
                                    [--plans DIR] [--serve]

--serve sets up the same and leaves the service running (printing its URL and curl examples),
with `rankc build plans --watch` rebuilding the store and reloading the server on every save,
until Ctrl-C. --plans uses an already compiled plan store instead of compiling plans/.
Standard library only (Debian's python3); imports rankd_harness from python/ (scripts/demo.sh
sets PYTHONPATH).
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from rankd_harness.demo_common import (SURFACES, Stop, on_sigterm, print_top, request,
                                       start_serve, step)
from rankd_harness.files import lines_when
from rankd_harness.processes import stop_process
from rankd_harness.redis_server import RedisServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Demo:
    def __init__(self, args):
        self.args = args
        self.folder = tempfile.mkdtemp(prefix="rankd-demo-")
        self.redis = None
        self.serve = None
        self.watcher = None
        self.port = None

    # Set-up --------------------------------------------------------------------------------

    def start_redis(self):
        step("a private redis-server (data in %s)" % self.folder)
        try:
            self.redis = RedisServer(self.folder)
        except RuntimeError as e:
            raise SystemExit("demo: %s" % e)
        self.redis_port = self.redis.port
        print("redis-server pid %d on 127.0.0.1:%d" % (self.redis.pid, self.redis_port))

    def load_data(self):
        step("the %s dataset (rankd datagen)" % self.args.dataset)
        subprocess.run([self.args.rankd, "datagen", "--dataset", self.args.dataset, "--redis",
                        "127.0.0.1:%d" % self.redis_port, "--flush"], check=True)

    def compile_plans(self):
        if self.args.plans:
            self.plans = self.args.plans
            return
        step("the example plans, compiled by rankc (plans/*.plan.ts)")
        self.plans = os.path.join(self.folder, "plans")
        subprocess.run(["npm", "run", "build", "--silent"], cwd=ROOT, check=True)
        subprocess.run(["node", "dsl/bin/rankc.js", "build", "plans", "--out", self.plans],
                       cwd=ROOT, check=True)
        # The experiment the demo shows: half the viewers of `home` get feed_fresh.
        with open(os.path.join(self.plans, "surfaces.toml"), "w") as f:
            f.write(SURFACES)
        print("%s/surfaces.toml: surface home, variants control (feed) and fresh (feed_fresh), "
              "shadow feed_fresh" % self.plans)

    def start_serve(self, foreground=False):
        step("rankd serve")
        endpoint = "127.0.0.1:%d" % self.redis_port
        self.log_path = os.path.join(self.folder, "rankd-serve.log")
        command = [self.args.rankd, "serve", "--plans", self.plans, "--registry",
                   os.path.join(ROOT, "registry"), "--endpoint", "graph=" + endpoint,
                   "--endpoint", "features=" + endpoint, "--port", str(self.args.port),
                   "--shards", "2", "--log_sample", "1" if foreground else "0",
                   "--capture_file", self.capture_path(), "--shadow_log", self.shadow_log_path()]
        self.log = open(self.log_path, "w")
        if foreground:
            self.serve = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            return
        self.serve, self.port = start_serve(command, self.log, self.log_path, "demo")
        print("rankd serve pid %d on http://127.0.0.1:%d (2 shards; log %s)"
              % (self.serve.pid, self.port, self.log_path))

    def start_watcher(self, port):
        """rankc build --watch over plans/ into the served store, reloading the server on each
        successful build (a store given with --plans is not rebuilt)."""
        if self.args.plans:
            return
        self.watcher_log_path = os.path.join(self.folder, "rankc-watch.log")
        self.watcher_log = open(self.watcher_log_path, "w")
        self.watcher = subprocess.Popen(
            ["node", "dsl/bin/rankc.js", "build", "plans", "--out", self.plans, "--watch",
             "--reload", "http://127.0.0.1:%d/admin/reload" % port],
            cwd=ROOT, stdout=self.watcher_log, stderr=subprocess.STDOUT)

    # Showing -------------------------------------------------------------------------------

    def request(self, method, path, body=None, conn=None):
        return request(self.port, method, path, body, conn)

    def rank(self, request):
        status, text = self.request("POST", "/rank", json.dumps(request))
        return status, json.loads(text)

    def show_feed(self, viewer):
        step("POST /rank {\"plan\": \"feed\", \"viewer_id\": %d, \"explain\": true}" % viewer)
        status, r = self.rank({"plan": "feed", "viewer_id": viewer, "explain": True})
        if status != 200:
            raise SystemExit("demo: /rank answered %d: %s" % (status, r))
        rows = r["outputs"]["top"]
        print_top(rows, 10)
        print("(%d of %d ranked items; plan digest %s...)" % (min(10, len(rows)), len(rows),
                                                              r["plan_digest"][:12]))
        step("the explain timeline of that request")
        print("%-10s %-15s %9s %9s %8s %8s %6s %5s" % ("node", "op", "start ms", "end ms", "rows in",
                                                      "rows out", "redis", "on"))
        for n in r["explain"]["nodes"]:
            print("%-10s %-15s %9.2f %9.2f %8d %8d %6d %5s" % (
                n["node"], n["op"], n.get("start_us", 0) / 1000, n.get("end_us", 0) / 1000,
                n["rows_in"], n["rows_out"], n["redis_commands"], n["ran_on"]))
        t = r["explain"]["totals"]
        print("total %.2f ms, %d Redis commands in %d round trips" % (
            t["elapsed_us"] / 1000, t["redis_commands"], t["round_trips"]))

    def capture_path(self):
        return os.path.join(self.folder, "captures.jsonl")

    def shadow_log_path(self):
        return os.path.join(self.folder, "shadow.jsonl")

    def wait_lines(self, path, count):
        """The lines of `path` once it has `count` (the server writes them from a thread of its
        own), or what it has after 10 s."""
        return lines_when(path, count, 10)

    def show_experiment(self, viewers):
        if not os.path.exists(os.path.join(self.plans, "surfaces.toml")):
            return  # a store given with --plans: no surfaces to show
        step("an experiment: POST /rank {\"surface\": \"home\", \"viewer_id\": ..., "
             "\"capture\": true}")
        for viewer in viewers:
            status, r = self.rank({"surface": "home", "viewer_id": viewer, "capture": True})
            if status != 200:
                raise SystemExit("demo: /rank answered %d: %s" % (status, r))
            top = r["outputs"]["top"]
            print("viewer %4d: variant %-7s (plan %-10s) top items %s" % (
                viewer, r["variant"], r["plan"], " ".join(str(row["id"]) for row in top[:5])))
        step("the shadow plan: feed_fresh ran after each of those answers, on the rows it fetched")
        for line in self.wait_lines(self.shadow_log_path(), len(viewers)):
            record = json.loads(line)
            diff = record["diff"] or {}
            print("viewer %4d (%s): shadow %s shared %d nodes, saved %d Redis commands, sent %d; "
                  "overlap@10 %.3f, rbo %.3f, only in the shadow: %d" % (
                      record["viewer_id"], record["variant"], record["shadow_plan"],
                      record["shared_nodes"], record["saved_redis_commands"],
                      record["redis_commands"], diff.get("overlap_at_k", 0), diff.get("rbo", 0),
                      len(diff.get("only_in_b", []))))
        step("rankd replay: those captured requests against feed_fresh, offline (no Redis)")
        self.wait_lines(self.capture_path(), len(viewers))
        r = subprocess.run([self.args.rankd, "replay", "--captures", self.capture_path(),
                            "--plans", self.plans, "--registry", os.path.join(ROOT, "registry"),
                            "--plan", "feed_fresh", "--score", "final_score", "--k", "10"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit("demo: rankd replay failed: " + r.stderr)
        lines = r.stdout.splitlines()
        shown = 0
        for line in lines[:-1]:
            if line.startswith("line ") and shown >= 2:
                break
            shown += line.startswith("line ")
            print(line)
        print(lines[-1])

    def show_model(self, viewer):
        """The same viewer ranked by feed_gbdt, a LightGBM model's click probability, beside feed's
        hand-written score."""
        step("POST /rank {\"plan\": \"feed_gbdt\", \"viewer_id\": %d}: the feed_ctr tree model "
             "(registry/models.toml) beside feed's expression" % viewer)
        answers = {}
        for plan in ("feed", "feed_gbdt"):
            status, r = self.rank({"plan": plan, "viewer_id": viewer})
            if status != 200:
                raise SystemExit("demo: /rank %s answered %d: %s" % (plan, status, r))
            answers[plan] = r["outputs"]["top"]
        print("%4s  %-28s  %-28s" % ("rank", "feed (expression)", "feed_gbdt (model p(click))"))
        for i in range(10):
            cells = []
            for plan in ("feed", "feed_gbdt"):
                rows = answers[plan]
                cells.append("%-9s %7.3f" % (rows[i]["id"], rows[i].get("final_score") or 0)
                             if i < len(rows) else "")
            print("%4d  %-28s  %-28s" % (i + 1, cells[0], cells[1]))
        shared = len({r["id"] for r in answers["feed"][:10]} & {r["id"] for r in answers["feed_gbdt"][:10]})
        print("(%d of the model's top 10 are in feed's top 10; GET /plans lists feed_gbdt with the "
              "model's sha256 in its digest)" % shared)

    def show_rules(self, viewer):
        """The same viewer ranked by feed_rules (what ranking engineers change every week: items
        already shown dropped, authors spread out, a discovery every fifth rank) beside feed, then
        the item traces of one item each rule moved."""
        step("POST /rank {\"plan\": \"feed_rules\", \"viewer_id\": %d}: feed with the seen filter, "
             "author diversity and inserted discoveries (plans/feed_rules.plan.ts)" % viewer)
        answers = {}
        for plan in ("feed", "feed_rules"):
            status, r = self.rank({"plan": plan, "viewer_id": viewer})
            if status != 200:
                raise SystemExit("demo: /rank %s answered %d: %s" % (plan, status, r))
            answers[plan] = r["outputs"]["top"]
        print("%4s  %-24s  %-24s" % ("rank", "feed (id, author)", "feed_rules (id, author)"))
        for i in range(10):
            cells = []
            for plan in ("feed", "feed_rules"):
                rows = answers[plan]
                cells.append("%-9s by %-8s" % (rows[i]["id"], rows[i].get("author_id"))
                             if i < len(rows) else "")
            print("%4d  %-24s  %-24s" % (i + 1, cells[0], cells[1]))
        # Why they differ: the traces of feed's top 50 and feed_rules' top 20 (trace_ids takes 100).
        ids = list(dict.fromkeys([row["id"] for row in answers["feed"][:50]] +
                                 [row["id"] for row in answers["feed_rules"][:20]]))[:100]
        status, r = self.rank({"plan": "feed_rules", "viewer_id": viewer, "trace_ids": ids})
        if status != 200:
            raise SystemExit("demo: /rank feed_rules with trace_ids answered %d: %s" % (status, r))
        traces = [t for t in r["explain"]["trace"]]

        def rank_at(trace, node):
            for n in trace["nodes"]:
                if n["node"] == node and n["present"]:
                    return n["rank"]
            return None

        step("item traces (trace_ids): one item each rule moved")
        seen = next((t for t in traces
                     if any(x["node"] == "unseen" for x in t["removed_by"])), None)
        moves = [(rank_at(t, "diverse") - rank_at(t, "ranked"), t) for t in traces
                 if rank_at(t, "ranked") and rank_at(t, "diverse")]
        demoted = max(moves, key=lambda m: m[0])[1] if moves and max(m[0] for m in moves) > 0 else None
        # Inserted: answered from the discoveries, not among the organic rows (insert skips a
        # discovery the organic rows already have).
        inserted = next((t for t in traces if rank_at(t, "discovery") and rank_at(t, "top")
                         and not rank_at(t, "diverse")), None)
        if seen:
            why = next(x for x in seen["removed_by"] if x["node"] == "unseen")
            print("seen:     %s was removed by %s (%s): %s" % (seen["id"], why["node"], why["op"],
                                                             why["why"]))
        if demoted:
            top = rank_at(demoted, "top")
            print("demoted:  %s ranked %d by score (node ranked), %d after diversify (node diverse: "
                  "at most 1 item per author in any 3 ranks)%s" % (
                      demoted["id"], rank_at(demoted, "ranked"), rank_at(demoted, "diverse"),
                      ", %d in the answer" % top if top else ", then past the answer's 50"))
        if inserted:
            print("inserted: %s, the newest item of a recommended creator, was %d of the "
                  "discoveries and is %d in the answer (node mixed: insert every=5)" % (
                      inserted["id"], rank_at(inserted, "discovery"), rank_at(inserted, "top")))
        for name, t in (("seen", seen), ("demoted", demoted), ("inserted", inserted)):
            if t is None:
                print("%-9s (none among the traced items for this viewer)" % (name + ":"))

    def show_degraded(self, viewer):
        step("a degraded answer: the timeouts plan (slow_ranker has timeout_ms 20, on_error skip)")
        status, r = self.rank({"plan": "timeouts", "viewer_id": viewer})
        print("HTTP %d, %d rows, degraded: %s" % (status, len(r.get("outputs", {}).get("top", [])),
                                                 json.dumps(r.get("degraded"))))

    def load(self, seconds):
        step("load: %d s of feed requests from 8 keep-alive clients" % seconds)
        latencies, errors = [], [0]
        lock = threading.Lock()
        end = time.time() + seconds
        users = 200 if self.args.dataset == "tiny" else 2000

        def client(seed):
            rnd = random.Random(seed)
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            mine = []
            while time.time() < end and not stopping.is_set():
                body = json.dumps({"plan": "feed", "viewer_id": rnd.randint(1, users)})
                t0 = time.perf_counter()
                try:
                    status, _ = self.request("POST", "/rank", body, conn)
                except (OSError, http.client.HTTPException):
                    return  # the demo is stopping
                mine.append(time.perf_counter() - t0)
                if status != 200:
                    with lock:
                        errors[0] += 1
            conn.close()
            with lock:
                latencies.extend(mine)
        stopping = threading.Event()
        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(8)]
        start = time.time()
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        finally:
            stopping.set()
        elapsed = time.time() - start
        latencies.sort()
        if not latencies:
            raise SystemExit("demo: no request completed")
        p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
        print("%d requests in %.1f s: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %d not 200"
              % (len(latencies), elapsed, len(latencies) / elapsed, p(0.50), p(0.99), errors[0]))
        print("(the Python client, Redis and rankd share this machine's cores; the plan-serving "
              "benchmark measures rankd on its own)")

    def show_metrics(self):
        step("GET /metrics (highlights)")
        _, text = self.request("GET", "/metrics")
        wanted = ("rankd_requests_total{", "rankd_request_duration_seconds_count",
                  "rankd_node_degraded_total{", "rankd_redis_commands_total{",
                  "rankd_event_loop_lag_seconds{")
        for line in text.splitlines():
            if line.startswith(wanted):
                print("  " + line)

    def show_studio(self):
        step("the studio")
        status, page = self.request("GET", "/studio")
        if status != 200:
            raise SystemExit("demo: GET /studio answered %d" % status)
        _, plans = self.request("GET", "/plans")
        print("http://127.0.0.1:%d/studio: %d plans to see, run, explain, trace and compare "
              "(page %d bytes; `make serve` leaves it up)"
              % (self.port, len(json.loads(plans)["plans"]), len(page)))

    # Tear-down -----------------------------------------------------------------------------

    def stop(self):
        if self.watcher and self.watcher.poll() is None:
            self.watcher.terminate()
            self.watcher.wait(timeout=15)
        if getattr(self, "watcher_log", None):
            self.watcher_log.close()
        if self.serve:
            stop_process(self.serve)
        if self.redis:
            self.redis.stop()
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        print("\ndemo: stopped rankd serve and redis-server, removed %s" % self.folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankd", default=os.path.join(ROOT, "build/apps/rankd/rankd"))
    parser.add_argument("--dataset", default="demo")
    parser.add_argument("--load-seconds", type=float, default=5)
    parser.add_argument("--plans", help="an already compiled plan store")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help="leave the service running")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    demo = Demo(args)
    try:
        demo.start_redis()
        demo.load_data()
        demo.compile_plans()
        if args.serve:
            port = args.port or 8080
            args.port = port
            demo.start_serve(foreground=True)
            demo.start_watcher(port)
            print("\nrankd serve on http://127.0.0.1:%d (Ctrl-C stops it and its Redis). Try:" % port)
            print("  curl -s localhost:%d/rank -d '{\"plan\": \"feed\", \"viewer_id\": 42}'" % port)
            print("  curl -s localhost:%d/plans; curl -s localhost:%d/metrics | grep rankd_requests"
                  % (port, port))
            print("  curl -s localhost:%d/openapi.json  # each plan's request and response schema"
                  % port)
            print("The studio (plans, runs, explain, traces, comparisons): http://127.0.0.1:%d/studio"
                  % port)
            if demo.watcher:
                print("Edit plans/*.plan.ts and save: rankc rebuilds the store and the server "
                      "reloads it (rankc's output: %s)" % demo.watcher_log_path)
            demo.serve.wait()
            return 0
        demo.start_serve()
        viewer = 42 if args.dataset != "tiny" else 7
        demo.show_feed(viewer)
        demo.show_model(viewer)
        demo.show_rules(viewer)
        demo.show_degraded(viewer)
        demo.show_experiment([viewer, viewer + 1, viewer + 2, viewer + 3])
        demo.load(args.load_seconds)
        demo.show_metrics()
        demo.show_studio()
        return 0
    except (KeyboardInterrupt, Stop):
        print("\ndemo: interrupted")
        return 130
    finally:
        demo.stop()


if __name__ == "__main__":
    sys.exit(main())
