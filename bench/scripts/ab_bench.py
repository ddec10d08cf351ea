#!/usr/bin/python3
"""A/B regression runner: rankd's benchmark binaries at a base commit against the current tree's
(or another commit's), side by side in one run, on the workloads where a runtime change shows.

  /usr/bin/python3 bench/scripts/ab_bench.py --base <commit> [--repeats 3] [--only echo,http,redis]
  make bench-ab BASE=<commit> [ARGS='--repeats 5']
  /usr/bin/python3 bench/scripts/ab_bench.py --base <commit> --quick          # smoke run
  /usr/bin/python3 bench/scripts/ab_bench.py --base <commit> --build-only     # prints its bin dir

The base's binaries (rankd, rankd_echo_client, rankd_redis_bench) are built from a temporary
`git worktree` of the commit, Release with -DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF, only
those three targets, and kept in build-ab/<commit>/bin/ (build-ab/ is ignored by git), so a second
run against the same commit starts at once. The head's are the current tree's build-bench/
(`make bench`), or, with --head <commit>, another commit's from the same cache. Every binary is
copied before the run, so a rebuild cannot swap it halfway.

Workloads (each a fresh server per run, as in the runners they come from):
  echo    echo_bench.py's echo_64, echo_16384 and churn_32 against `rankd --bench_echo_server`
          on epoll and on io_uring, driven by one echo client (the head's; the client uses
          blocking POSIX sockets, not the runtime, so only the server differs): total ms and
          the server's CPU per message (echo) or per connection (churn)
  http    http_bench.py's plaintext_c100 and json_c100 (wrk -t2 -c100, 10 s after a 1 s warm-up)
          against `rankd --bench_http_server` with 1 and 2 shards on epoll and on io_uring:
          req/s, p99 and the server's CPU per request
  redis   rankd_redis_bench get and lrange (50 connections x pipelines of 16) and the pipelined
          fan-out of 100 LRANGEs (one connection, loopback) against a redis-server started here:
          commands/s (fan-out: rounds/s) and the client's CPU per command
The two servers' spellings `--bench_echo_server` and `--bench_http_server` are used because older
binaries know only those (newer ones take both). Before the HTTP runs, base and head must answer
/plaintext and /json with the same bytes apart from Date and Server (rankd_harness.http_check); a
difference is printed as a warning (the work per request then differs, e.g. a benchmark route
changed).

Order: per scenario, per repeat, the variants (backend x shards) in an order that rotates each
repeat, and within a variant base and head back to back, who goes first alternating with the
repeat and the variant; so each pair shares the machine's state of that moment. The paired ratio
is the median over repeats of the per-repeat ratio, oriented so that > 1 means head is better:
head / base for rates (req/s, commands/s, rounds/s), base / head for times and CPU (total ms,
p99, CPU per request). A verdict says `head faster` or `head slower` only when the median is more
than 5% from 1 and every repeat's ratio lies on the same side of 1; otherwise `noise`. Every run
records the load average and the CPU steal during it (from /proc/stat); the summary shows them
per scenario.

Writes bench/results/ab-<UTC>.json (every run, medians, ratios, both sides' binaries). Nothing is
recorded in docs/. Run with /usr/bin/python3 (standard library only).
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from rankd_harness.bench_env import cpu_jiffies, cpu_model, git, loadavg, save_results, steal_pct
from rankd_harness.bench_server import LIVE, stop_all, run_main
from rankd_harness.bench_stats import fmt, median, paired_ratio
import echo_bench
import http_bench
import redis_bench
from rankd_harness.http_check import check_same_responses

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAD_BUILD = os.path.join(ROOT, "build-bench")
CACHE_DIR = os.path.join(ROOT, "build-ab")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")

# The targets an A/B run needs, and where CMake puts them.
TARGETS = {
    "rankd": "apps/rankd/rankd",
    "rankd_echo_client": "bench/echo/rankd_echo_client",
    "rankd_redis_bench": "bench/redis/rankd_redis_bench",
}
CMAKE_ARGS = ["-DCMAKE_BUILD_TYPE=Release", "-DRANKD_BUILD_BENCH=ON", "-DRANKD_BUILD_TESTS=OFF"]

GROUPS = ["echo", "http", "redis"]
ECHO_SCENARIOS = ["echo_64", "echo_16384", "churn_32"]
ECHO_VARIANTS = ["epoll", "io_uring"]
HTTP_SCENARIOS = ["plaintext_c100", "json_c100"]
HTTP_VARIANTS = [("epoll", 1), ("epoll", 2), ("io_uring", 1), ("io_uring", 2)]
# name -> rankd_redis_bench workload, what its rate counts
REDIS_SCENARIOS = {"get": ("get", "commands/s"), "lrange_100": ("lrange", "commands/s"),
                   "fanout_pipelined": ("fanout_pipelined", "rounds/s")}
REDIS_SECONDS = 2.0

SIDES = ("base", "head")
NOISE = 0.05   # a verdict needs the median ratio beyond 1 +- NOISE and every repeat on one side


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the build cache

def resolve(commit):
    sha = git("rev-parse", "--verify", "--quiet", commit + "^{commit}")
    if not sha:
        raise SystemExit("ab_bench: %r is not a commit of this repository" % commit)
    return sha


def build_commit(commit, cache_dir, jobs):
    """The directory holding `commit`'s TARGETS, building them first unless cached. Returns
    (bin dir, build info)."""
    sha = resolve(commit)
    dest = os.path.join(cache_dir, sha[:12])
    bindir = os.path.join(dest, "bin")
    info_path = os.path.join(dest, "build.json")
    if os.path.isfile(info_path) and all(os.path.isfile(os.path.join(bindir, t)) for t in TARGETS):
        with open(info_path) as f:
            info = json.load(f)
        log("base %s: cached in %s (built %s)" % (sha[:12], os.path.relpath(bindir, ROOT), info["built_utc"]))
        return bindir, info
    if not shutil.which("cmake") or not shutil.which("ninja"):
        raise SystemExit("ab_bench: cmake and ninja are needed to build %s (make setup-bench)" % sha[:12])
    os.makedirs(dest, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="rankd-ab-")
    src = os.path.join(tmp, "src")
    build = os.path.join(dest, "cmake")
    t0 = time.time()
    log("building %s (%s) in a temporary worktree, -j%d: %s" % (
        sha[:12], git("log", "-1", "--format=%s", sha)[:80], jobs, ", ".join(TARGETS)))
    try:
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "--quiet", src, sha], check=True)
        # rankd's build bundles the studio with the repository's npm packages (esbuild): the
        # worktree borrows the checkout's node_modules (make bench installed them).
        if os.path.isdir(os.path.join(ROOT, "node_modules")):
            os.symlink(os.path.join(ROOT, "node_modules"), os.path.join(src, "node_modules"))
        shutil.rmtree(build, ignore_errors=True)
        subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja"] + CMAKE_ARGS, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["ninja", "-C", build, "-j%d" % jobs, "--quiet"] + list(TARGETS), check=True)
        os.makedirs(bindir, exist_ok=True)
        binaries = {}
        for name, rel in TARGETS.items():
            shutil.copy2(os.path.join(build, rel), os.path.join(bindir, name))
            binaries[name] = sha256(os.path.join(bindir, name))
        cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()
        info = {"commit": sha, "subject": git("log", "-1", "--format=%s", sha),
                "built_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "build_seconds": round(time.time() - t0), "cmake_args": CMAKE_ARGS,
                "compiler": cxx[0] if cxx else "?", "binaries": binaries}
        with open(info_path, "w") as f:
            json.dump(info, f, indent=1)
    except subprocess.CalledProcessError as e:
        raise SystemExit("ab_bench: building %s failed (%s)" % (sha[:12], e))
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", src],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["git", "-C", ROOT, "worktree", "prune"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(build, ignore_errors=True)   # only the binaries are kept
    log("built %s in %.0f s: %s" % (sha[:12], time.time() - t0, os.path.relpath(bindir, ROOT)))
    return bindir, info


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def head_from_tree(build_dir):
    """The current tree's binaries in build_dir (make bench) and what is known about them."""
    bindir = {}
    for name, rel in TARGETS.items():
        p = os.path.join(build_dir, rel)
        if not os.path.isfile(p):
            raise SystemExit("missing %s: run `make bench` first" % p)
        bindir[name] = p
    dirty = [l[3:] for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if l[3:].startswith(("src/", "apps/", "bench/", "CMakeLists.txt")) and not l[3:].startswith("bench/scripts/")]
    info = {"commit": git("rev-parse", "HEAD"), "subject": git("log", "-1", "--format=%s"),
            "build_dir": os.path.relpath(build_dir, ROOT), "uncommitted_sources": dirty,
            "binaries_mtime_utc": {n: datetime.datetime.fromtimestamp(os.path.getmtime(p), datetime.timezone.utc)
                                   .strftime("%Y-%m-%d %H:%M:%S") for n, p in bindir.items()}}
    return bindir, info


def snapshot(paths, snap_dir, side):
    """Copies a side's binaries into snap_dir (so a rebuild cannot swap them mid-run)."""
    out = {}
    for name, p in paths.items():
        dst = os.path.join(snap_dir, "%s_%s" % (side, name))
        shutil.copy2(p, dst)
        out[name] = dst
    return out


# The benchmark programs' own code: when it differs between base and head, the A/B measures that
# change too (e.g. a route that does more work per request), not only the runtime's.
BENCH_CODE = ["bench/echo_server", "bench/http_server", "bench/server_flags", "bench/redis", "apps/rankd"]


def bench_code_changes(base, head):
    """Files of BENCH_CODE that differ between the two commits (head None: the working tree)."""
    argv = ["diff", "--name-only", base] + ([head] if head else []) + ["--"] + BENCH_CODE
    return [l for l in git(*argv).splitlines() if l]


# ----------------------------------------------------------------------------- scenarios

def scenarios(quick, only):
    """Every scenario: key, group, the metrics (the first is the one the verdict is about) and a
    `run(side binaries) -> record` made later. Filtered by --only (groups or keys)."""
    out = []
    echo_all = {sc["key"]: sc for sc in echo_bench.scenarios(quick)}
    for k in ECHO_SCENARIOS:
        sc = echo_all[k]
        per = "msg" if sc["kind"] == "echo" else "conn"
        for backend in ECHO_VARIANTS:
            out.append({"key": "%s/%s" % (k, backend), "group": "echo", "echo": sc, "backend": backend,
                        "ops": sc["connections"] * sc["iterations"],
                        "title": "echo %s, rankd %s" % (k, backend),
                        "metrics": [("total_ms", "time", "total ms", "%.1f"),
                                    ("server_cpu_us_per_op", "time", "server CPU us/%s" % per, "%.2f")]})
    http_all = {sc["key"]: sc for sc in http_bench.scenarios(quick)}
    for k in HTTP_SCENARIOS:
        for backend, shards in HTTP_VARIANTS:
            out.append({"key": "%s/%s_%d" % (k, backend, shards), "group": "http", "http": http_all[k],
                        "backend": backend, "shards": shards,
                        "title": "http %s, rankd %s, %d shard%s" % (k, backend, shards, "s" if shards > 1 else ""),
                        "metrics": [("rps", "rate", "req/s", "%.0f"), ("p99_ms", "time", "p99 ms", "%.2f"),
                                    ("server_cpu_us_per_req", "time", "server CPU us/req", "%.2f"),
                                    ("wrk_cpu_us_per_req", "time", "wrk CPU us/req", "%.2f")]})
    for k, (workload, unit) in REDIS_SCENARIOS.items():
        out.append({"key": "redis_%s" % k, "group": "redis", "workload": workload,
                    "title": "redis %s (rankd_redis_bench --workload %s)" % (k, workload),
                    "metrics": [("rate", "rate", unit, "%.0f"),
                                ("cpu_ns_per_command", "time", "client CPU ns/cmd", "%.0f")]})
    if only:
        known = set(GROUPS) | {sc["key"] for sc in out} | {sc["key"].split("/")[0] for sc in out}
        for o in only:
            if o not in known:
                raise SystemExit("ab_bench: unknown --only entry %r (groups: %s; or a scenario key such "
                                 "as echo_64, json_c100, redis_get, echo_64/epoll)" % (o, ", ".join(GROUPS)))
        out = [sc for sc in out if sc["group"] in only or sc["key"] in only or sc["key"].split("/")[0] in only]
    return out


def echo_argv(rankd, backend):
    # The original spelling: base binaries older than the subcommand table know only this one.
    return [rankd, "--bench_echo_server", "--io_backend=%s" % backend, "--port", "0"]


def http_argv(rankd, backend, shards):
    return [rankd, "--bench_http_server", "--shards", str(shards), "--io_backend", backend, "--port", "0"]


def run_one(sc, side, bins, client, ctx, args):
    """One run of scenario sc with one side's binaries; a record with the metrics or an error."""
    if sc["group"] == "echo":
        rec = echo_bench.run_once(sc["echo"], side, echo_argv(bins["rankd"], sc["backend"]), client, args.timeout)
        if "server_cpu_ms" in rec and "error" not in rec:
            rec["server_cpu_us_per_op"] = rec["server_cpu_ms"] * 1e3 / sc["ops"]
        return rec
    if sc["group"] == "http":
        return http_bench.run_once(sc["http"], side, http_argv(bins["rankd"], sc["backend"], sc["shards"]),
                                   args.warmup)
    rec = {"impl": side, "scenario": sc["key"], "started": round(time.time(), 3)}
    try:
        out = redis_bench.run_ours(bins["rankd_redis_bench"], ctx["redis_port"], sc["workload"], args.redis_seconds)
    except (SystemExit, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        rec["error"] = str(e)
        return rec
    rec.update(out)
    rec["rate"] = out["ops_per_s"]
    return rec


# ----------------------------------------------------------------------------- statistics

def summarize(sc, runs):
    """runs: side -> records (one per repeat, None where a run failed)."""
    s = {"key": sc["key"], "title": sc["title"], "group": sc["group"], "metrics": {}}
    for key, kind, label, spec in sc["metrics"]:
        vals = {side: [None if (r is None or "error" in r) else r.get(key) for r in runs[side]] for side in SIDES}
        if kind == "rate":
            ratio, per = paired_ratio(vals["head"], vals["base"])
        else:
            ratio, per = paired_ratio(vals["base"], vals["head"])
        m = {"label": label, "kind": kind, "ratio": ratio, "ratio_per_repeat": per}
        for side in SIDES:
            got = [v for v in vals[side] if v is not None]
            m[side] = {"per_repeat": vals[side], "median": median(got),
                       "min": min(got) if got else None, "max": max(got) if got else None}
        m["verdict"] = verdict(ratio, per)
        s["metrics"][key] = m
    return s


def verdict(ratio, per):
    if ratio is None:
        return "n/a"
    if len(per) < 2:
        return "1 repeat"
    if ratio > 1 + NOISE and all(r > 1 for r in per):
        return "head faster"
    if ratio < 1 - NOISE and all(r < 1 for r in per):
        return "head slower"
    return "noise"


# ----------------------------------------------------------------------------- reporting

def print_summary(scs, summaries, meta):
    print()
    print("A/B: base %s vs head %s; %d repeats; paired ratios > 1 mean head is better (rates: head/base, "
          "times and CPU: base/head)" % (meta["base"]["commit"][:12], meta["head"]["commit"][:12], meta["repeats"]))
    print("load %s at the start, %s at the end; CPU steal over the run %s%%" % (
        meta["load_start"], meta.get("load_end"), fmt(meta.get("steal_pct"), "%.2f")))
    width = max(len(sc["key"]) for sc in scs) + 1
    group = None
    for sc in scs:
        s = summaries.get(sc["key"])
        if s is None:
            continue
        if sc["group"] != group:
            group = sc["group"]
            print("\n%-*s %-18s %22s %22s %7s %-22s %s" % (width, "== " + group, "metric", "base median [min-max]",
                                                          "head median [min-max]", "ratio", "per repeat", "verdict"))
        for i, (key, kind, label, spec) in enumerate(sc["metrics"]):
            m = s["metrics"][key]

            def cell(side):
                e = m[side]
                return "%s [%s-%s]" % (fmt(e["median"], spec), fmt(e["min"], spec), fmt(e["max"], spec))
            print("%-*s %-18s %22s %22s %7s %-22s %s" % (
                width, sc["key"] if i == 0 else "", label, cell("base"), cell("head"), fmt(m["ratio"], "%.3f"),
                " ".join("%.2f" % r for r in m["ratio_per_repeat"]), m["verdict"]))
        print("%-*s load %s, steal %s%% (min-max of the runs)" % (
            width, "", s["load_range"], s["steal_range"]))


def markdown(scs, summaries, meta):
    """A compact Markdown table of the main metric and the CPU metric of every scenario."""
    lines = ["| scenario | metric | base median | head median | paired ratio (> 1: head better) | per repeat | verdict | load (1 min) | steal % |",
             "|---|---|---|---|---|---|---|---|---|"]
    for sc in scs:
        s = summaries.get(sc["key"])
        if s is None:
            continue
        for i, (key, kind, label, spec) in enumerate(sc["metrics"]):
            m = s["metrics"][key]
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                sc["key"] if i == 0 else "", label, fmt(m["base"]["median"], spec), fmt(m["head"]["median"], spec),
                fmt(m["ratio"], "%.3f"), " ".join("%.2f" % r for r in m["ratio_per_repeat"]), m["verdict"],
                s["load_range"] if i == 0 else "", s["steal_range"] if i == 0 else ""))
    return "\n".join(lines)


def value_range(xs, spec):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    return (spec % min(xs)) if min(xs) == max(xs) else "%s-%s" % (spec % min(xs), spec % max(xs))


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the commit to compare against (built into build-ab/ once)")
    ap.add_argument("--head", help="another commit as head (built like the base) instead of build-bench/")
    ap.add_argument("--repeats", type=int, help="alternating repeats per scenario (default 3; --quick 1)")
    ap.add_argument("--only", default="", help="comma list of groups (%s) or scenario keys" % ",".join(GROUPS))
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: a tenth of the echo iterations, 2 s wrk runs, 0.3 s Redis runs, 1 repeat")
    ap.add_argument("--build-only", action="store_true", help="build (or find) the base's binaries, print their dir")
    ap.add_argument("--build-dir", default=HEAD_BUILD, help="the head's build (default build-bench/, make bench)")
    ap.add_argument("--cache-dir", default=CACHE_DIR, help="where commits' binaries are kept (default build-ab/)")
    ap.add_argument("--jobs", type=int, default=2, help="ninja -j for the base's build (default 2)")
    ap.add_argument("--warmup", type=int, default=1, help="HTTP: unmeasured seconds of wrk per fresh server")
    ap.add_argument("--timeout", type=int, default=120, help="echo: seconds per client run")
    args = ap.parse_args()
    args.repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if args.repeats < 1 or args.jobs < 1:
        ap.error("--repeats and --jobs must be at least 1")
    args.redis_seconds = 0.3 if args.quick else REDIS_SECONDS
    only = [o for o in args.only.split(",") if o]

    base_bindir, base_info = build_commit(args.base, os.path.abspath(args.cache_dir), args.jobs)
    if args.build_only:
        print(base_bindir, flush=True)
        return 0
    if args.head:
        head_bindir, head_info = build_commit(args.head, os.path.abspath(args.cache_dir), args.jobs)
        head_paths = {n: os.path.join(head_bindir, n) for n in TARGETS}
    else:
        head_paths, head_info = head_from_tree(os.path.abspath(args.build_dir))
    base_paths = {n: os.path.join(base_bindir, n) for n in TARGETS}
    scs = scenarios(args.quick, only)
    groups = [g for g in GROUPS if any(sc["group"] == g for sc in scs)]
    if "http" in groups and not os.access(http_bench.WRK, os.X_OK):
        raise SystemExit("%s is missing: run `make setup-bench`" % http_bench.WRK)
    if "redis" in groups and not shutil.which("redis-server"):
        raise SystemExit("redis-server is missing: run `make setup-bench`")

    snap = tempfile.mkdtemp(prefix="rankd-ab-bench-")
    redis_tmp = None
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {"utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu_model(), "cores": os.cpu_count(),
            "kernel": platform.release(), "repeats": args.repeats, "quick": args.quick,
            "base": base_info, "head": head_info,
            "load_start": loadavg(), "command": " ".join(["bench/scripts/ab_bench.py"] + sys.argv[1:]),
            "ratio": "paired median over repeats, > 1: head better (rates head/base, times and CPU base/head)",
            "verdict": "head faster/slower when the median ratio is beyond 1 +- %.2f and every repeat agrees" % NOISE}
    runs, summaries = {}, {}
    jiffies0, t0 = cpu_jiffies(), time.time()
    try:
        bins = {"base": snapshot(base_paths, snap, "base"), "head": snapshot(head_paths, snap, "head")}
        for side in SIDES:
            meta[side]["snapshot_sha256"] = {n: sha256(p) for n, p in bins[side].items()}
        client = bins["head"]["rankd_echo_client"]   # the client is not under test: one for both
        log("A/B: base %s vs head %s (%s); %d scenarios x %d repeats; load %s" % (
            base_info["commit"][:12], head_info["commit"][:12], "build-ab" if args.head else
            os.path.relpath(args.build_dir, ROOT), len(scs), args.repeats, meta["load_start"]))
        meta["bench_code_changes"] = bench_code_changes(base_info["commit"], args.head and head_info["commit"])
        if meta["bench_code_changes"]:
            log("note: the benchmark programs' own code differs between base and head, the A/B measures "
                "that too: %s" % ", ".join(meta["bench_code_changes"]))
        ctx = {}
        if "http" in groups:
            meta["responses"], problems = check_same_responses(
                {side: http_argv(bins[side]["rankd"], "epoll", 1) for side in SIDES}, log)
            if problems:
                meta["response_warning"] = problems
                log("WARNING: base and head answer differently (the work per request differs):\n  " +
                    "\n  ".join(problems))
        if "redis" in groups:
            redis_tmp = tempfile.mkdtemp(prefix="rankd-ab-redis-")
            ctx["redis_port"] = redis_bench.start_server(redis_tmp)
            subprocess.run([bins["head"]["rankd_redis_bench"], "--port", str(ctx["redis_port"]), "--setup"],
                           check=True, capture_output=True)
            meta["redis_server"] = subprocess.run(["redis-server", "--version"], capture_output=True,
                                                  text=True).stdout.strip()
        # Scenarios that share a workload run together, repeat by repeat, variants rotating.
        families = []
        for sc in scs:
            fam = sc["key"].split("/")[0]
            if not families or families[-1][0] != fam:
                families.append((fam, []))
            families[-1][1].append(sc)
        for fam, members in families:
            log("- %s: %s (load %s)" % (fam, ", ".join(sc["key"] for sc in members), loadavg()))
            for sc in members:
                runs[sc["key"]] = {side: [] for side in SIDES}
                runs[sc["key"]]["env"] = []
            for r in range(args.repeats):
                k = r % len(members)
                for j, sc in enumerate(members[k:] + members[:k]):
                    order = SIDES if (r + j) % 2 == 0 else SIDES[::-1]
                    env = {"repeat": r, "order": list(order), "load_start": loadavg()}
                    j0 = cpu_jiffies()
                    for side in order:
                        rec = run_one(sc, side, bins[side], client, ctx, args)
                        rec["repeat"] = r
                        rec["load"] = loadavg()
                        runs[sc["key"]][side].append(rec)
                        main_key, _, label, spec = sc["metrics"][0]
                        if "error" in rec:
                            log("  ! %s %s repeat %d: %s" % (sc["key"], side, r + 1, rec["error"]))
                        else:
                            log("  %-28s %s repeat %d: %s %s" % (sc["key"], side, r + 1, label,
                                                                 fmt(rec.get(main_key), spec)))
                    env["steal_pct"] = steal_pct(j0, cpu_jiffies())
                    env["load_end"] = loadavg()
                    runs[sc["key"]]["env"].append(env)
            for sc in members:
                s = summarize(sc, runs[sc["key"]])
                envs = runs[sc["key"]]["env"]
                s["load_range"] = value_range([float(e["load_start"].split()[0]) for e in envs
                                               if e["load_start"] != "?"], "%.2f")
                s["steal_range"] = value_range([e["steal_pct"] for e in envs], "%.2f")
                summaries[sc["key"]] = s
                m = s["metrics"][sc["metrics"][0][0]]
                print("PERF_AB scenario=%s metric=%s base=%s head=%s ratio=%s verdict=%s" % (
                    sc["key"], sc["metrics"][0][0], fmt(m["base"]["median"], "%.3f"),
                    fmt(m["head"]["median"], "%.3f"), fmt(m["ratio"], "%.3f"), m["verdict"].replace(" ", "_")),
                    flush=True)
    finally:
        stop_all()
        if redis_tmp is not None:
            redis_bench.stop_server()
            shutil.rmtree(redis_tmp, ignore_errors=True)
        shutil.rmtree(snap, ignore_errors=True)
    meta["load_end"] = loadavg()
    meta["steal_pct"] = steal_pct(jiffies0, cpu_jiffies())
    meta["seconds"] = round(time.time() - t0, 1)

    sys.stdout.flush()
    print_summary(scs, summaries, meta)
    print()
    print(markdown(scs, summaries, meta))
    save_results(RESULTS_DIR, "ab", now, {"meta": meta, "scenarios": summaries}, runs)
    failed = sum(1 for by in runs.values() for side in SIDES for r in by[side] if "error" in r)
    if failed:
        print("%d run(s) failed: see the '!' lines above" % failed, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    run_main(main)
