#!/usr/bin/env python3
"""The feed scored by a tree model against the feed's own expression, served (make bench-models):
`rankd serve` over a private redis-server loaded with `rankd datagen --dataset bench`, the
repository's plans built by rankc, and --viewers viewers spread over the dataset each ranked by
`feed` (its hand-written score) and `feed_gbdt` (the registry's feed_ctr LightGBM model over the
same candidates), alternating, the order rotating per viewer, one request at a time, explain on,
no deadline_ms in the request (the server's default, 100 ms, applies). Reports per plan the
requests' elapsed time (explain totals: p50, p99, max), the `score` node's time and where it ran,
and how many answered 200 within the deadline. Records the section of docs/benchmarks.md between
<!-- model_feed:begin --> and <!-- model_feed:end --> with --record.

  build-bench/venv/bin/python bench/scripts/model_feed_bench.py --record"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request

from rankd_harness import bench_env
from rankd_harness.bench_server import stop_all
from rankd_harness.bench_stats import median
from rankd_harness.feed_service import (DATASET_USERS, RankdServer, build_plans, load_dataset,
                                        rankd_serve_args)
from rankd_harness.redis_server import RedisServer

ROOT = bench_env.REPO_ROOT
DOCS_MD = os.path.join(ROOT, "docs/benchmarks.md")
PLANS = ["feed", "feed_gbdt"]
DEFAULT_DEADLINE_MS = 100


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100.0 * len(ordered)))]


def rank(port, plan, viewer):
    body = json.dumps({"plan": plan, "viewer_id": viewer, "explain": True}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/rank" % port, data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rankd", default=os.path.join(ROOT, "build-bench/apps/rankd/rankd"))
    parser.add_argument("--dataset", default="bench", choices=sorted(DATASET_USERS))
    parser.add_argument("--viewers", type=int, default=400)
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="rankd-model-feed-bench-")
    registry = os.path.join(ROOT, "registry")
    redis = RedisServer(folder)
    server = None
    try:
        load_dataset(args.rankd, redis, args.dataset, print)
        store, _ = build_plans(folder, registry)
        server = RankdServer([args.rankd, "serve"] + rankd_serve_args(store, registry,
                                                                      redis.address()),
                             "rankd", listen_timeout_s=30)
        port = server.wait_listening()
        users = DATASET_USERS[args.dataset]
        viewers = [1 + (i * 7919) % users for i in range(args.viewers)]
        for plan in PLANS:  # warm-up: connections, allocator, caches
            for v in viewers[:20]:
                rank(port, plan, v)
        runs = {p: {"elapsed_ms": [], "score_ms": [], "rows": [], "ran_on": {}, "ok": 0}
                for p in PLANS}
        for i, viewer in enumerate(viewers):
            for plan in (PLANS if i % 2 == 0 else PLANS[::-1]):
                status, answer = rank(port, plan, viewer)
                run = runs[plan]
                if status != 200:
                    continue
                run["ok"] += 1
                explain = answer["explain"]
                run["elapsed_ms"].append(explain["totals"]["elapsed_us"] / 1000)
                score = next(n for n in explain["nodes"] if n["node"] == "score")
                run["score_ms"].append((score["end_us"] - score["start_us"]) / 1000)
                run["rows"].append(score["rows_in"])
                run["ran_on"][score["ran_on"]] = run["ran_on"].get(score["ran_on"], 0) + 1
        results = []
        for plan in PLANS:
            run = runs[plan]
            within = sum(1 for e in run["elapsed_ms"] if e <= DEFAULT_DEADLINE_MS)
            cell = {"plan": plan, "requests": len(viewers), "ok": run["ok"], "within": within,
                    "elapsed_p50": median(run["elapsed_ms"]),
                    "elapsed_p99": percentile(run["elapsed_ms"], 99),
                    "elapsed_max": max(run["elapsed_ms"]),
                    "score_p50": median(run["score_ms"]), "score_p99": percentile(run["score_ms"], 99),
                    "rows_p50": median(run["rows"]), "rows_max": max(run["rows"]),
                    "ran_on": run["ran_on"]}
            results.append(cell)
            print("%-10s %d/%d answered 200, %d within %d ms; elapsed p50 %.2f p99 %.2f max %.2f ms; "
                  "score node p50 %.3f p99 %.3f ms over p50 %d (max %d) rows, ran on %s" % (
                      plan, cell["ok"], cell["requests"], within, DEFAULT_DEADLINE_MS,
                      cell["elapsed_p50"], cell["elapsed_p99"], cell["elapsed_max"],
                      cell["score_p50"], cell["score_p99"], cell["rows_p50"], cell["rows_max"],
                      cell["ran_on"]), flush=True)
        if any(c["ok"] != c["requests"] for c in results):
            sys.exit("some requests failed")
        if args.record:
            record(args, results)
    finally:
        if server is not None:
            server.stop()
        redis.stop()
        stop_all()


def record(args, results):
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["<!-- model_feed:begin -->", "",
             "Latest recorded run. Command: `make bench-models` (its second part, "
             "`bench/scripts/model_feed_bench.py --record`)", "",
             "%s; %s (%d cores); commit %s%s; the %s dataset, %d viewers each ranked by both plans "
             "one request at a time, the server's default deadline (%d ms). Generated; do not "
             "edit by hand." % (
                 when, bench_env.cpu_model(), os.cpu_count(),
                 bench_env.git("rev-parse", "--short", "HEAD"),
                 " (uncommitted changes)" if bench_env.git("status", "--porcelain",
                                                           "--untracked-files=no") else "",
                 args.dataset, args.viewers, DEFAULT_DEADLINE_MS), "",
             "| plan | within the deadline | elapsed p50 / p99 / max ms | score node p50 / p99 ms "
             "| rows scored p50 (max) | score node ran on |",
             "|---|---|---|---|---|---|"]
    for c in results:
        lines.append("| %s | %d of %d | %.2f / %.2f / %.2f | %.3f / %.3f | %d (%d) | %s |" % (
            c["plan"], c["within"], c["requests"], c["elapsed_p50"], c["elapsed_p99"],
            c["elapsed_max"], c["score_p50"], c["score_p99"], c["rows_p50"], c["rows_max"],
            ", ".join("%s %d" % kv for kv in sorted(c["ran_on"].items()))))
    lines += ["", "<!-- model_feed:end -->"]
    bench_env.rewrite_docs_section(DOCS_MD, "model_feed", "\n".join(lines))
    print("recorded in docs/benchmarks.md")


if __name__ == "__main__":
    main()
