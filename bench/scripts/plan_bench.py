#!/usr/bin/python3
"""Plan-serving benchmark: `rankd serve` ranking the feed plan over HTTP against a private
redis-server loaded by `rankd datagen --dataset bench`, read against the most any service could
get from that Redis, and compared with rankd's own sync scheduler and two peers, the feed plan
by hand: Node (fastify + ioredis, bench/peers/node/feed_server.js) and Rust (tokio, hyper and the
redis crate's multiplexed connection, bench/peers/rust_feed/; included when `make bench` built it).
`rankd_cached_2` is rankd with every key schema's feature cache on (TTL 60 s; docs/operations.md,
"Feature cache"): its runs also report the share of commands answered from the cache and the Redis
commands sent per request, and its targets are against the Redis-bound limit measured without it.

1. The Redis-bound limit: the exact commands of feed requests for a sample of viewers (the
   plan's keys read from the data: HGETALL user, LRANGE follow, HGETALL user per followee,
   LRANGE media per followee, HMGET media_features per item) replayed with `redis-cli --pipe`
   (one connection, as deep a pipeline as Redis takes): commands/s divided by commands per
   request is the most requests/s this Redis can serve. rankd's explain totals for the same
   viewers must count the same commands. The replay runs 3 times at the start, again before
   each closed-loop repeat and after each warm-cache configuration, and the limit is the median
   of them all: the machine's speed drifts over the run (one start measured 408,000 commands/s,
   and rankd then served 661,000 a second through that Redis).
2. Before timing: the same requests (viewers spread over the dataset) to every implementation
   must give the same rankings as rankd async: the same ids in the same order, and scores equal
   within 4 ulps (glibc's log1p and V8's may differ in the last bit).
3. Closed loop (throughput): wrk with --latency, concurrency 1, 2, 4, 8, 16, 32, 64 (2 threads,
   one below 2 connections), bodies varied by plan_bench.lua; every implementation alternates
   at each concurrency, the order rotating per repeat, a fresh server per run after a warm-up.
4. Open loop (latency): each implementation at 25%, 50% and 75% of its own median max
   requests/s, sent by rankd's paced client (bench/load/paced_client.cpp) as a Poisson stream
   (--arrivals poisson, a seed per repeat): a request is due at its arrival whatever the answers
   so far, on any of up to 256 connections, and its latency runs from when it was due, so the
   bursts a Poisson stream has reach the service as they would from its users.
5. Warm feature cache (with rankd_cached_2 among the implementations): the cache as a service
   that has run a while sees it, in three configurations (WARM_CACHE: one and two shards, with
   redis-server's tracking-table-max-keys at its default and unbounded), each one server warmed
   for one TTL (60 s) at 16 connections, then measured over whole TTLs: closed-loop runs at 16
   and 32 connections, alternating back to back for one TTL, and the paced client at 50% of the
   best one's mean for another. An entry is refetched once per TTL after it expires, and the
   entries a warm-up fills together expire within a tenth of a TTL of each other (docs/
   operations.md), so a service's throughput and hits dip once per TTL: a window shorter than a
   TTL would catch the dip or miss it. A configuration's max is the mean over its TTL of runs,
   its hits and CPU those of all its runs, its p99 that of every request of the paced TTL.
Per run: requests/s, p50/p90/p99/p99.9, the service's CPU per request (every thread of every
process), redis-server's CPU per request, the load client's CPU per request (it shares the 2
cores), peak RSS of the service. Requests carry deadline_ms 5000 so that a request's own deadline never
cuts it short. A 503 is rankd's admission refusing a request (docs/operations.md, "Admission"):
it is counted as shed, requests/s is goodput (the 2xx answers per second) and CPU per request
is per request served; wrk's closed loop resends a refused request at once, unlike a client
that honours Retry-After. Any other non-2xx fails the run.

Writes bench/results/plan-<UTC>.json; with --record also docs/benchmarks/plan.json,
docs/benchmarks/plan_throughput.png, docs/benchmarks/plan_latency.png and the section of
docs/benchmarks.md between <!-- plan:begin --> and <!-- plan:end -->.

  make bench-plan                       # build, load, check, run everything, record (~45 min)
  /usr/bin/python3 bench/scripts/plan_bench.py --quick --dataset tiny --rankd build/apps/rankd/rankd \
      --client build/bench/load/rankd_paced_client   # the smoke run of make test: nothing recorded
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from rankd_harness.bench_env import (cpu_model, loadavg, rewrite_docs_section, git, save_doc_json,
                                     save_results)
from rankd_harness.bench_server import (LIVE, Server, ServerError, run_load_generator, run_main,
                                        stop_all, stop_and_record)
from rankd_harness.bench_stats import median, paired_ratio, rotation, fmt
from rankd_harness.feed_service import (DATASET_USERS, RUST_PEER, RankdServer, build_plans,
                                        load_dataset, rankd_serve_args)
from rankd_harness.redis_server import RedisServer
from rankd_harness.registry_copy import cache_every_cacheable_schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
LUA = os.path.join(ROOT, "bench", "scripts", "plan_bench.lua")
NODE_PEER = os.path.join(ROOT, "bench", "peers", "node", "feed_server.js")
WRK = "/usr/bin/wrk"
# The open loop's request (the paced client puts a viewer walking the dataset in {viewer}, as
# plan_bench.lua does) and the most connections it opens to keep requests going out when due.
PACED_BODY = '{"plan":"feed","viewer_id":{viewer},"deadline_ms":5000}'
PACED_CONNECTIONS = 256
FEATURES = ["author_id", "age_hours", "likes", "ctr", "title"]
FOLLOW_FANOUT, MEDIA_FANOUT = 100, 10

# Each implementation's command ({rankd}, {store}, {registry}, {redis} filled in). rankd logs
# `listening` on stderr; the peers print LISTENING <port> on stdout.
IMPLS = {
    "rankd_async_1": "{rankd} serve --shards 1",
    "rankd_async_2": "{rankd} serve --shards 2",
    "rankd_sync_2": "{rankd} serve --shards 2 --scheduler sync",
    "rankd_cached_2": "{rankd} serve --shards 2",
    "node_1": "node " + NODE_PEER + " --workers 1",
    "node_2": "node " + NODE_PEER + " --workers 2",
    "rust_1": RUST_PEER + " --workers 1",
    "rust_2": RUST_PEER + " --workers 2",
}
RANKD_ASYNC = ("rankd_async_1", "rankd_async_2")  # without the feature cache
# rankd with every key schema's feature cache on (docs/operations.md, "Feature cache"): the registry
# copy with `cache = {...}`. Each run starts a fresh server: its cache fills during the warm-up
# and the run, and the run reports its hit ratio and the Redis commands per request.
CACHED = "rankd_cached_2"
# The bench dataset's keys are never given an expiry, and the registry says so (keys_expire =
# false): the default (true) would send a PTTL with each missed read, one more Redis command per
# miss, to keep expiring keys exact (docs/operations.md, "Expiring keys").
TTL_S = 60
CACHE = "cache = { ttl_ms = %d, max_mb = 256, keys_expire = false }" % (TTL_S * 1000)
# The feature cache as a service that has run a while sees it (the runs above start a fresh server
# each: a cache filled only by its warm-up and the run). Each configuration is one server, warmed
# by WARM_CACHE_S (one TTL) of load at 16 connections, then measured over whole TTLs: closed-loop
# runs alternating WARM_CACHE_CONCURRENCY back to back for one TTL, then the paced client at 50%
# of the best concurrency's mean for another (in `repeats` phases). The configurations run one
# after another, not alternated: redis-server's tracking-table-max-keys is the server's, and
# lowering it sends invalidations to every cached client. `tracking` is the value a configuration
# runs with: None leaves Redis' default (1,000,000 keys, below the bench dataset's 1.4 M: Redis
# then drops a tracked key, and sends its invalidation, for each new key a cache reads), 0 (no
# bound) is what docs/operations.md advises when the caches read more keys. The setting is put
# back after each configuration.
WARM_CACHE = [  # (name, shards, tracking-table-max-keys)
    ("rankd_cached_1_warm", 1, None),
    ("rankd_cached_1_warm_tracking_0", 1, 0),
    ("rankd_cached_2_warm_tracking_0", 2, 0),
]
WARM_CACHE_S = TTL_S
WARM_CACHE_CONCURRENCY = [16, 32]
CONCURRENCY = [1, 2, 4, 8, 16, 32, 64]
OPEN_LOOP_SHARES = [0.25, 0.5, 0.75]


def log(*args):
    print(*args, flush=True)


# ----------------------------------------------------------------------------- Redis and data

class RespConnection:
    """A minimal blocking RESP client for reading the dataset back (lists and hashes)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest.decode()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(resp(*c) for c in commands))
        return [self._reply() for _ in commands]


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def int_ids(values):
    return [int(v) for v in values if re.fullmatch(r"-?\d{1,19}", v)]


def feed_commands(conn, viewer):
    """The Redis commands of one feed request, as rankd sends them (docs/plan-format.md)."""
    commands = [("HGETALL", "user:%d" % viewer)]
    follow_key = "follow:%d" % viewer
    commands.append(("LRANGE", follow_key, 0, FOLLOW_FANOUT - 1))
    followees = int_ids(conn.pipeline([("LRANGE", follow_key, 0, FOLLOW_FANOUT - 1)])[0])
    commands += [("HGETALL", "user:%d" % f) for f in followees]
    media_cmds = [("LRANGE", "media:%d" % f, 0, MEDIA_FANOUT - 1) for f in followees]
    commands += media_cmds
    media = [m for reply in conn.pipeline(media_cmds) for m in int_ids(reply)] if media_cmds else []
    commands += [("HMGET", "media_features:%d" % m, *FEATURES) for m in media]
    return commands


def viewers(users, count):
    """`count` viewer ids spread over 1..users (the same stride as plan_bench.lua)."""
    return [((i * 104729) % users) + 1 for i in range(1, count + 1)]


class RedisBound:
    """The Redis-bound limit: the exact feed commands of a sample of viewers, replayed with
    redis-cli --pipe (commands/s over commands per request). The machine's speed drifts over a
    run that lasts most of an hour, so the replay runs again at points spread over it (`replay`):
    the limit is the median of every replay's rate, each recorded with when it ran."""

    def __init__(self, redis, users, sample):
        self.redis = redis
        conn = RespConnection(redis.port)
        try:
            self.per_viewer = {v: feed_commands(conn, v) for v in viewers(users, sample)}
        finally:
            conn.close()
        self.total = sum(len(c) for c in self.per_viewer.values())
        with tempfile.NamedTemporaryFile(prefix="rankd-plan-bench-", suffix=".resp",
                                         delete=False) as f:
            for cmds in self.per_viewer.values():
                f.write(b"".join(resp(*c) for c in cmds))
            self.path = f.name
        self.replays = []

    def replay(self, when):
        """Replays the sample once; returns its commands/s."""
        with open(self.path, "rb") as stdin:
            start = time.perf_counter()
            out = subprocess.run(["redis-cli", "-p", str(self.redis.port), "--pipe"], stdin=stdin,
                                 capture_output=True, text=True, timeout=300)
            seconds = time.perf_counter() - start
        m = re.search(r"errors: (\d+), replies: (\d+)", out.stdout)
        if out.returncode != 0 or not m or int(m.group(1)) != 0 or int(m.group(2)) != self.total:
            raise ServerError("redis-cli --pipe: %s %s" % (out.stdout[-300:], out.stderr[-300:]))
        self.replays.append({"when": when, "commands_per_s": self.total / seconds})
        return self.total / seconds

    def close(self):
        if os.path.exists(self.path):
            os.unlink(self.path)

    def figures(self):
        mix = {}
        for cmds in self.per_viewer.values():
            for c in cmds:
                mix[c[0]] = mix.get(c[0], 0) + 1
        per_request = self.total / len(self.per_viewer)
        rates = [r["commands_per_s"] for r in self.replays]
        return {"viewers": len(self.per_viewer), "commands": self.total,
                "commands_per_request": per_request,
                "mix_per_request": {k: v / len(self.per_viewer) for k, v in sorted(mix.items())},
                "replays": self.replays, "commands_per_s_per_repeat": rates,
                "median_commands_per_s": median(rates), "limit_rps": median(rates) / per_request,
                "per_viewer_commands": {str(v): len(c) for v, c in self.per_viewer.items()}}


# ----------------------------------------------------------------------------- services

def bench_registry(folder, cached=False):
    """The repository's registry with the `test` environment's Redis command timeouts (50 ms)
    raised to the requests' 5 s deadline: at saturation a batch of a thousand commands waits its
    turn in Redis for longer than 50 ms, which the benchmark measures as queueing (the Node peer
    has no command timeout either) rather than counts as upstream_error. With `cached`, every hash
    and list key schema also has the feature cache on (a TTL of 60 s)."""
    registry = os.path.join(folder, "registry_cached" if cached else "registry")
    shutil.copytree(os.path.join(ROOT, "registry"), registry)
    if cached and cache_every_cacheable_schema(registry, CACHE) == 0:
        raise SystemExit("plan_bench: no key schema in %s" % registry)
    path = os.path.join(registry, "endpoints.toml")
    with open(path) as f:
        text = f.read()
    text, n = re.subn(r"(\[endpoints\.\w+\.test\][^\[]*?command_timeout_ms = )\d+", r"\g<1>5000", text)
    if n == 0:
        raise SystemExit("plan_bench: no test command_timeout_ms in %s" % path)
    with open(path, "w") as f:
        f.write(text)
    return registry


def start(impl, ctx, warm_shards=None):
    """Starts `impl` (IMPLS), or with warm_shards a WARM_CACHE configuration's rankd."""
    command = IMPLS[impl] if warm_shards is None else "{rankd} serve --shards %d" % warm_shards
    argv = command.format(rankd=ctx["rankd"]).split()
    if impl.startswith("rankd"):
        cached = impl == CACHED or warm_shards is not None
        registry = ctx["registry_cached"] if cached else ctx["registry"]
        argv += rankd_serve_args(ctx["store"], registry, ctx["redis"]) + [
            "--max_in_flight", "4096"]
        server = RankdServer(argv, impl, listen_timeout_s=20)
    else:
        argv += ["--redis", ctx["redis"], "--port", "0", "--digest", ctx["feed_digest"]]
        server = Server(argv, impl, listen_timeout_s=20)
    LIVE.append(server)
    try:
        server.wait_listening()
    except BaseException:
        stop_and_record(server, {})
        raise
    return server


def process_tree(pid):
    """pid and its descendants (the Node peer's workers)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_cpu_ns(pids):
    total = 0
    for pid in pids:
        try:
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def tree_peak_rss_mb(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
            total += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total / 1024


def post(port, body):
    request = urllib.request.Request("http://127.0.0.1:%d/rank" % port, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def ulps_apart(a, b):
    ia = struct.unpack("<q", struct.pack("<d", a))[0]
    ib = struct.unpack("<q", struct.pack("<d", b))[0]
    return abs(ia - ib)


def check_equal_rankings(ctx, impls, users, count):
    """The same `count` requests to rankd async and each other implementation: identical ids in
    the same order, scores within 4 ulps. Returns the record; raises on a mismatch."""
    reference = start("rankd_async_1", ctx)
    try:
        expected = {v: post(reference.port, {"plan": "feed", "viewer_id": v, "explain": True,
                                             "deadline_ms": 5000})
                    for v in viewers(users, count)}
    finally:
        stop_and_record(reference, {})
    record = {"requests": count, "impls": {}, "explain_commands_per_viewer":
              {str(v): r["explain"]["totals"]["redis_commands"] for v, r in expected.items()}}
    for impl in impls:
        if impl == "rankd_async_1":
            continue
        server = start(impl, ctx)
        try:
            exact = max_ulps = rows = 0
            for v, want in expected.items():
                got = post(server.port, {"plan": "feed", "viewer_id": v, "deadline_ms": 5000})
                a, b = want["outputs"]["top"], got["outputs"]["top"]
                if [r["id"] for r in a] != [r["id"] for r in b]:
                    raise ServerError("%s ranks viewer %d differently: %s vs rankd %s" % (
                        impl, v, [r["id"] for r in b][:10], [r["id"] for r in a][:10]))
                for x, y in zip(a, b):
                    if x.keys() != y.keys() or any(x[k] != y[k] for k in x if k != "final_score"):
                        raise ServerError("%s: viewer %d row %s differs: %s vs %s" % (impl, v, x["id"], y, x))
                    max_ulps = max(max_ulps, ulps_apart(x["final_score"], y["final_score"]))
                rows += len(a)
                exact += a == b
            if max_ulps > 4:
                raise ServerError("%s: scores up to %d ulps from rankd's" % (impl, max_ulps))
            record["impls"][impl] = {"identical_responses": exact, "rows": rows,
                                     "max_score_ulps": max_ulps}
            log("  %-14s %d/%d rankings identical in ids and order; %d of them byte-equal rows, "
                "scores at most %d ulps apart" % (impl, count, count, exact, max_ulps))
        finally:
            stop_and_record(server, {})
    return record


# ----------------------------------------------------------------------------- load

def parse_wrk(text):
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not m:
        raise ValueError("no Requests/sec in wrk output: %s" % text[-300:])
    out["rps"] = float(m.group(1))
    m = re.search(r"PLAN_BENCH_LATENCY_US p50=(\d+) p90=(\d+) p99=(\d+) p999=(\d+) max=(\d+)", text)
    if not m:
        raise ValueError("no latency line in wrk output")
    for key, v in zip(("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"), m.groups()):
        out[key] = int(v) / 1000
    m = re.search(r"PLAN_BENCH_COUNTS requests=(\d+) non2xx=(\d+) timeouts=(\d+) shed=(\d+)", text)
    out["requests"], out["non_2xx"], out["timeouts"], out["shed"] = (int(x) for x in m.groups())
    # Goodput: the requests answered 2xx per second (a 503 is admission refusing one: shed, and
    # wrk's closed loop sends the next request at once).
    out["all_rps"] = out["rps"]
    if out["requests"]:
        out["rps"] = out["all_rps"] * (out["requests"] - out["shed"]) / out["requests"]
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    return out


def shed_note(rec):
    """The refused share of a run's answers, for its log line ("" when none was refused)."""
    if not rec.get("shed"):
        return ""
    return "  (%d refused: 503 overloaded, %.0f%% of answers)" % (
        rec["shed"], 100.0 * rec["shed"] / rec["requests"])


def cache_note(rec):
    """A cached run's hit ratio and commands per request, for its log line."""
    if rec.get("cache_hit_ratio") is None:
        return ""
    return "  cache hits %.1f%%, %.0f commands/req" % (100 * rec["cache_hit_ratio"],
                                                       rec["redis_commands_per_req"])


def wrk(port, connections, seconds, users):
    """Closed loop: `connections` connections each sending the next request when the last is
    answered, for `seconds`."""
    threads = min(2, connections)
    argv = [WRK, "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds, "--timeout", "10s",
            "-s", LUA, "http://127.0.0.1:%d" % port, "--", str(users), "5000"]
    stdout, cpu_s = run_load_generator(argv, seconds + 60)
    out = parse_wrk(stdout)
    out["client_cpu_s"] = cpu_s
    return out


def paced_figures(stats):
    """A run's figures (those parse_wrk gives) from one of the paced client's stats objects."""
    lat = stats["latency_ms"]["admitted"]  # every answer but admission's 503s
    failures = sum(stats["failures"].values())
    out = {"requests": stats["requests"], "shed": stats["shed"],
           "non_2xx": stats["requests"] - stats["goodput"] - stats["late_200"] - failures,
           "socket_errors": failures, "rps": stats["goodput_per_s"] + stats["late_200"] / stats["seconds"],
           "all_rps": (stats["answered"] - failures) / stats["seconds"]}
    for q in ("p50", "p90", "p99", "p999"):
        out[q + "_ms"] = lat[q] if lat["count"] else None
    out["max_ms"] = lat["max"] if lat["count"] else None
    return out


def paced(client, port, rate, seconds, users, seed, phases=1):
    """Open loop: rankd's paced client sends a Poisson stream of `rate` requests/s (seeded) for
    `seconds`, in `phases` equal phases at that rate, each one's figures under "phases"."""
    phase_ms = int(round(seconds * 1000 / phases))
    argv = [client, "--port", str(port), "--path", "/rank", "--body", PACED_BODY,
            "--users", str(users), "--arrivals", "poisson", "--seed", str(seed),
            "--phases", ",".join("%.3f:%d" % (rate, phase_ms) for _ in range(phases)),
            "--connections", str(PACED_CONNECTIONS), "--deadline_ms", "5000", "--drain_ms", "5000"]
    stdout, cpu_s = run_load_generator(argv, seconds + 70)
    report = json.loads(stdout)
    out = paced_figures(report["total"])
    out["phases"] = [paced_figures(report["phases"][str(k)]) for k in range(phases)]
    out["client_cpu_s"] = cpu_s
    return out


def scrape(port):
    """The sums of rankd's /metrics samples by name and, for the cache's lookups, by result."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    sums = {}
    for m in re.finditer(r"^(\w+)(\{[^}]*\})? (\S+)$", text, flags=re.M):
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "rankd_feature_cache_lookups_total":
            name += ":" + re.search(r'result="(\w+)"', labels).group(1)
        sums[name] = sums.get(name, 0) + value
    return sums


def cache_figures(before, after, served):
    """A cached run's lookups, hits (hits and joined fetches), Redis commands sent, hit ratio and
    commands per request served, from /metrics before and after it."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    lookups = sum(d.get("rankd_feature_cache_lookups_total:" + r, 0) for r in ("hit", "joined", "miss"))
    hits = d.get("rankd_feature_cache_lookups_total:hit", 0) + d.get(
        "rankd_feature_cache_lookups_total:joined", 0)
    commands = d.get("rankd_redis_commands_total", 0)
    return {"cache_lookups": lookups, "cache_hits": hits, "redis_commands": commands,
            "cache_hit_ratio": hits / lookups if lookups else None,
            "redis_commands_per_req": commands / served if served else None}


def measured_run(impl, ctx, connections, seconds, warmup_s, rate=None, seed=0):
    """One run on a fresh server: started, warmed up for warmup_s, measured, stopped; closed loop
    at `connections`, or with `rate` open loop (the paced client, Poisson arrivals from `seed`)."""
    rec = {"impl": impl, "connections": connections if rate is None else PACED_CONNECTIONS,
           "started": round(time.time(), 3)}
    if rate is None:
        def load(s):
            return wrk(server.port, connections, s, ctx["users"])
    else:
        rec["seed"] = seed

        def load(s):
            return paced(ctx["client"], server.port, rate, s, ctx["users"], seed)
    server = None
    try:
        server = start(impl, ctx)
        if warmup_s:
            load(warmup_s)
        measure(server, impl == CACHED, ctx, lambda: load(seconds), rec)
    except (ServerError, ValueError, subprocess.TimeoutExpired, OSError) as e:
        rec["error"] = str(e)
    finally:
        if server:
            stop_and_record(server, rec)
    return rec


def measure(server, cached, ctx, load, rec):
    """Measures one run of `load` (wrk or paced: its figures) against a running server into `rec`."""
    pids = process_tree(server.proc.pid)
    metrics0 = scrape(server.port) if cached else None
    cpu0, redis0 = tree_cpu_ns(pids), tree_cpu_ns([ctx["redis_pid"]])
    rec.update(load())
    cpu1, redis1 = tree_cpu_ns(pids), tree_cpu_ns([ctx["redis_pid"]])
    n = rec["requests"] - rec["shed"]  # the requests served: CPU per served request
    rec["served"] = n
    if metrics0 is not None:
        rec.update(cache_figures(metrics0, scrape(server.port), n))
    rec["peak_rss_mb"] = tree_peak_rss_mb(pids)
    rec["service_cpu_s"], rec["redis_cpu_s"] = (cpu1 - cpu0) / 1e9, (redis1 - redis0) / 1e9
    if n:
        rec["service_cpu_us_per_req"] = (cpu1 - cpu0) / 1e3 / n
        rec["redis_cpu_us_per_req"] = (redis1 - redis0) / 1e3 / n
        rec["client_cpu_us_per_req"] = rec["client_cpu_s"] * 1e6 / n
    if rec["non_2xx"] - rec["shed"] or rec["socket_errors"]:
        rec["error"] = "%d non-2xx responses besides %d 503s, %d socket errors" % (
            rec["non_2xx"] - rec["shed"], rec["shed"], rec["socket_errors"])


def warm_cache_runs(ctx, redis, repeats, seconds, warm_s, span_s, concurrency, bound_replay):
    """The WARM_CACHE configurations, each on one server warmed for warm_s: closed-loop runs of
    `seconds` alternating `concurrency` back to back for span_s (a TTL), then the paced client at
    50% of the best concurrency's mean for span_s in `repeats` phases, as {name: {...}}; the
    Redis-bound replay runs again after each."""
    out = {}
    closed_runs = max(1, -(-span_s // (seconds * len(concurrency)))) * len(concurrency)
    for name, shards, tracking in WARM_CACHE:
        runs = {"shards": shards, "tracking_table_max_keys": tracking, "closed": {}, "open": []}
        out[name] = runs
        default = redis_config_get(redis, "tracking-table-max-keys")
        server = None
        try:
            if tracking is not None:
                redis_config_set(redis, "tracking-table-max-keys", str(tracking))
            server = start(name, ctx, warm_shards=shards)
            if warm_s:
                wrk(server.port, 16, warm_s, ctx["users"])
            for k in range(closed_runs):
                c = concurrency[k % len(concurrency)]
                rec = {"impl": name, "connections": c, "run": k, "started": round(time.time(), 3)}
                measure(server, True, ctx, lambda c=c: wrk(server.port, c, seconds, ctx["users"]), rec)
                runs["closed"].setdefault(str(c), []).append(rec)
                log("  %2d c=%-3d %-31s %7.0f req/s  p50 %6.2f  p99 %6.2f ms  service %5.0f "
                    "us/req  redis %4.0f us/req%s%s" % (
                        k + 1, c, name, rec["rps"], rec["p50_ms"], rec["p99_ms"],
                        rec.get("service_cpu_us_per_req", 0), rec.get("redis_cpu_us_per_req", 0),
                        cache_note(rec), shed_note(rec)))
            max_rps = best_mean(runs["closed"])[1]
            if max_rps is None:
                raise ValueError("every closed-loop run failed")
            rec = {"impl": name, "connections": PACED_CONNECTIONS, "share": 0.5,
                   "offered_rps": 0.5 * max_rps, "seed": 1, "started": round(time.time(), 3)}
            measure(server, True, ctx, lambda: paced(ctx["client"], server.port, 0.5 * max_rps,
                                                     span_s, ctx["users"], 1, repeats), rec)
            runs["open"].append(rec)
            log("  50%% %-31s offered %6.0f achieved %6.0f req/s  p50 %6.2f  p99 %6.2f  p99.9 %6.2f "
                "ms (p99 per %.0f s: %s)%s%s" % (
                    name, 0.5 * max_rps, rec["rps"], rec["p50_ms"], rec["p99_ms"], rec["p999_ms"],
                    span_s / repeats, " ".join("%.2f" % p["p99_ms"] for p in rec["phases"]),
                    cache_note(rec), shed_note(rec)))
        except (ServerError, ValueError, subprocess.TimeoutExpired, OSError) as e:
            runs["error"] = str(e)
            log("  %s: %s" % (name, e))
        finally:
            if server:
                stop_and_record(server, {})
            redis_config_set(redis, "tracking-table-max-keys", default)
        log("  Redis-bound replay after %s: %s commands/s" % (
            name, "{:,.0f}".format(bound_replay.replay("after " + name))))
    return out


def mean_rps(recs):
    """The goodput of runs of equal length taken together: their mean requests/s."""
    return sum(r["rps"] for r in recs) / len(recs)


def best_mean(closed):
    """Of closed-loop runs by concurrency, the concurrency whose runs without an error have the
    highest mean_rps, and that mean: (None, None) when every run failed."""
    ok = {c: [x for x in recs if "error" not in x] for c, recs in closed.items()}
    ok = {c: recs for c, recs in ok.items() if recs}
    if not ok:
        return None, None
    best_c = max(ok, key=lambda c: mean_rps(ok[c]))
    return best_c, mean_rps(ok[best_c])


def redis_config_get(redis, name):
    out = subprocess.run(["redis-cli", "-p", str(redis.port), "CONFIG", "GET", name],
                         capture_output=True, text=True, timeout=10, check=True).stdout.split()
    if len(out) != 2:
        raise SystemExit("plan_bench: CONFIG GET %s answered %r" % (name, out))
    return out[1]


def redis_config_set(redis, name, value):
    out = subprocess.run(["redis-cli", "-p", str(redis.port), "CONFIG", "SET", name, value],
                         capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    if out != "OK":
        raise SystemExit("plan_bench: CONFIG SET %s %s answered %r" % (name, value, out))


def summarize_warm(warm, limit_rps):
    """Per WARM_CACHE configuration, over its TTL of closed-loop runs: the best concurrency's mean
    requests/s, and its runs' hits, commands and CPU taken together; over its paced TTL: the
    latency of every request, and each phase's p99."""
    out = {}
    for name, runs in warm.items():
        best_c, max_rps = best_mean(runs["closed"])
        if best_c is None:
            out[name] = {"error": runs.get("error", "no runs")}
            continue
        recs = [x for x in runs["closed"][best_c] if "error" not in x]
        served = sum(x["served"] for x in recs)
        lookups = sum(x["cache_lookups"] for x in recs)
        opens = [x for x in runs["open"] if "error" not in x]
        o = opens[0] if opens else {}
        out[name] = {"shards": runs["shards"], "tracking_table_max_keys": runs["tracking_table_max_keys"],
                     "max_rps": max_rps, "best_concurrency": int(best_c),
                     "rps_per_run": [x["rps"] for x in recs],
                     "of_limit": max_rps / limit_rps if limit_rps else None,
                     "service_cpu_us_at_max": sum(x["service_cpu_s"] for x in recs) * 1e6 / served
                     if served else None,
                     "redis_cpu_us_at_max": sum(x["redis_cpu_s"] for x in recs) * 1e6 / served
                     if served else None,
                     "cache_hit_ratio_at_max": sum(x["cache_hits"] for x in recs) / lookups
                     if lookups else None,
                     "redis_commands_per_req_at_max": sum(x["redis_commands"] for x in recs) / served
                     if served else None,
                     "achieved_rps_at_half": o.get("rps"), "p50_ms_at_half": o.get("p50_ms"),
                     "p99_ms_at_half": o.get("p99_ms"), "p999_ms_at_half": o.get("p999_ms"),
                     "cache_hit_ratio_at_half": o.get("cache_hit_ratio"),
                     "p99_ms_at_half_per_phase": [p["p99_ms"] for p in o.get("phases", [])]}
    return out


# ----------------------------------------------------------------------------- summary

def summarize(closed, open_runs, impls, bound):
    s = {"impls": {}}
    for impl in impls:
        by_c = {}
        for c, recs in closed[impl].items():
            ok = [r for r in recs if "error" not in r]
            by_c[c] = {"median_rps": median([r["rps"] for r in ok]),
                       "median_p50_ms": median([r["p50_ms"] for r in ok]),
                       "median_p99_ms": median([r["p99_ms"] for r in ok]),
                       "rps_per_repeat": [r.get("rps") if "error" not in r else None for r in recs],
                       "median_service_cpu_us": median([r.get("service_cpu_us_per_req") for r in ok]),
                       "median_redis_cpu_us": median([r.get("redis_cpu_us_per_req") for r in ok]),
                       "median_client_cpu_us": median([r.get("client_cpu_us_per_req") for r in ok]),
                       "median_peak_rss_mb": median([r.get("peak_rss_mb") for r in ok]),
                       "median_shed_share": median([r["shed"] / r["requests"] for r in ok
                                                    if r.get("requests")]),
                       "median_cache_hit_ratio": median([r["cache_hit_ratio"] for r in ok
                                                         if r.get("cache_hit_ratio") is not None]),
                       "median_redis_commands_per_req": median(
                           [r["redis_commands_per_req"] for r in ok
                            if r.get("redis_commands_per_req") is not None]),
                       "failed": len(recs) - len(ok)}
        best_c = max(by_c, key=lambda c: by_c[c]["median_rps"] or 0)
        # Per repeat: the best concurrency's figure, for paired ratios.
        max_per_repeat = [max([x for x in col if x is not None], default=None)
                          for col in zip(*[by_c[c]["rps_per_repeat"] for c in by_c])]
        opened = {}
        for share, recs in open_runs.get(impl, {}).items():
            ok = [r for r in recs if "error" not in r]
            opened[share] = {"offered_rps": recs[0]["offered_rps"] if recs else None,
                             "median_achieved_rps": median([r["rps"] for r in ok]),
                             "median_p50_ms": median([r["p50_ms"] for r in ok]),
                             "median_p99_ms": median([r["p99_ms"] for r in ok]),
                             "median_p999_ms": median([r["p999_ms"] for r in ok]),
                             "median_cache_hit_ratio": median(
                                 [r["cache_hit_ratio"] for r in ok
                                  if r.get("cache_hit_ratio") is not None]),
                             "failed": len(recs) - len(ok)}
        s["impls"][impl] = {"by_concurrency": by_c, "best_concurrency": best_c,
                            "max_rps": by_c[best_c]["median_rps"],
                            "max_rps_per_repeat": max_per_repeat,
                            "service_cpu_us_at_max": by_c[best_c]["median_service_cpu_us"],
                            "redis_cpu_us_at_max": by_c[best_c]["median_redis_cpu_us"],
                            "wrk_cpu_us_at_max": by_c[best_c]["median_client_cpu_us"],
                            "peak_rss_mb": max([v["median_peak_rss_mb"] or 0 for v in by_c.values()]),
                            "cache_hit_ratio_at_max": by_c[best_c]["median_cache_hit_ratio"],
                            "redis_commands_per_req_at_max": by_c[best_c]["median_redis_commands_per_req"],
                            "open_loop": opened}
    asyncs = [i for i in RANKD_ASYNC if i in impls]
    best = max(asyncs, key=lambda i: s["impls"][i]["max_rps"] or 0) if asyncs else None
    s["best_async"] = best
    if best:
        b = s["impls"][best]
        s["ratios"] = {}
        for other in impls:
            if other != best:
                r, per = paired_ratio(b["max_rps_per_repeat"], s["impls"][other]["max_rps_per_repeat"])
                s["ratios"][other] = {"rps_ratio": r, "rps_ratio_per_repeat": per}
        s["limit_share"] = (b["max_rps"] or 0) / bound["limit_rps"]
    s["limit_rps"] = bound["limit_rps"]
    return s


def targets(s, impls):
    out = []
    best = s.get("best_async")
    if not best:
        return out
    b = s["impls"][best]
    out.append(("rankd async (%s) / Redis-bound limit" % best, s["limit_share"], ">= 0.7",
                s["limit_share"] >= 0.7))
    redis_cpu = b["redis_cpu_us_at_max"]
    cpu_share = (b["service_cpu_us_at_max"] or 0) / redis_cpu if redis_cpu else None
    out.append(("rankd CPU per request / redis-server's (same run)", cpu_share, "<= 0.4",
                cpu_share is not None and cpu_share <= 0.4))
    half = b["open_loop"].get("0.5")
    if half:
        out.append(("rankd async p99 at 50% of its max (ms)", half["median_p99_ms"], "<= 10",
                    half["median_p99_ms"] is not None and half["median_p99_ms"] <= 10))
    if CACHED in impls:
        c = s["impls"][CACHED]
        share = (c["max_rps"] or 0) / s["limit_rps"]
        out.append(("rankd with the feature cache / Redis-bound limit", share, ">= 3",
                    share is not None and share >= 3))
        half = c["open_loop"].get("0.5")
        if half:
            out.append(("rankd with the feature cache: p99 at 50% of its max (ms)",
                        half["median_p99_ms"], "<= 10",
                        half["median_p99_ms"] is not None and half["median_p99_ms"] <= 10))
    for name, w in s.get("warm_cache", {}).items():
        if w.get("max_rps") is None:
            continue
        out.append(("%s / Redis-bound limit" % name, w["of_limit"], ">= 3", w["of_limit"] >= 3))
        if w["p99_ms_at_half"] is not None:
            out.append(("%s: p99 at 50%% of its max (ms)" % name, w["p99_ms_at_half"], "<= 10",
                        w["p99_ms_at_half"] <= 10))
    if "rankd_sync_2" in impls:
        r = s["ratios"]["rankd_sync_2"]["rps_ratio"]
        out.append(("max req/s vs the sync scheduler", r, ">= 1.5", r is not None and r >= 1.5))
    nodes = [i for i in impls if i.startswith("node")]
    if nodes:
        node = max(nodes, key=lambda i: s["impls"][i]["max_rps"] or 0)
        r = s["ratios"][node]["rps_ratio"]
        out.append(("max req/s vs the Node peer (%s)" % node, r, ">= 1.5", r is not None and r >= 1.5))
        cpu = (b["service_cpu_us_at_max"] or 0) / (s["impls"][node]["service_cpu_us_at_max"] or 1)
        out.append(("CPU per request vs the Node peer", cpu, "<= 0.33", cpu <= 1 / 3))
    rusts = [i for i in impls if i.startswith("rust")]
    if rusts:
        rust = max(rusts, key=lambda i: s["impls"][i]["max_rps"] or 0)
        r = s["ratios"][rust]["rps_ratio"]
        out.append(("max req/s vs the Rust peer (%s)" % rust, r, ">= 1.0", r is not None and r >= 1.0))
        cpu = (b["service_cpu_us_at_max"] or 0) / (s["impls"][rust]["service_cpu_us_at_max"] or 1)
        out.append(("CPU per request vs the Rust peer", cpu, "<= 1.0", cpu <= 1.0))
    return out


def plot(doc, path_throughput, path_latency):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s, bound = doc["summary"], doc["redis_bound"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for impl, v in s["impls"].items():
        cs = sorted(v["by_concurrency"], key=int)
        ax.plot([int(c) for c in cs], [v["by_concurrency"][c]["median_rps"] for c in cs],
                marker="o", label=impl)
    ax.axhline(bound["limit_rps"], color="black", linestyle="--",
               label="Redis-bound limit (%.0f req/s)" % bound["limit_rps"])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent connections (closed loop)")
    ax.set_ylabel("feed requests/s (median)")
    ax.set_title("feed plan over HTTP, bench dataset, one redis-server (2 cores shared)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_throughput, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for impl, v in s["impls"].items():
        shares = sorted(v["open_loop"], key=float)
        xs = [v["open_loop"][sh]["median_achieved_rps"] for sh in shares]
        line = ax.plot(xs, [v["open_loop"][sh]["median_p99_ms"] for sh in shares], marker="o",
                       label=impl + " p99")[0]
        ax.plot(xs, [v["open_loop"][sh]["median_p50_ms"] for sh in shares], marker=".",
                linestyle=":", color=line.get_color(), label=impl + " p50")
    ax.set_xlabel("requests/s (open loop at 25/50/75% of each one's max)")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_latency, dpi=110)
    plt.close(fig)


def section(doc):
    s, bound, meta = doc["summary"], doc["redis_bound"], doc["meta"]
    lines = ["<!-- plan:begin -->", "",
             "Recorded %s at %s on %s (%d cores), %d repeats, %d s per run; dataset `%s` (%s keys)."
             % (meta["date"], meta["commit"], meta["cpu"], meta["cores"], meta["repeats"],
                meta["seconds_per_run"], meta["dataset"], meta["keys"]), "",
             "**Redis-bound limit**: a feed request is %.0f commands (%s); replayed with "
             "`redis-cli --pipe` %d times over the run (%s to %s), this redis-server runs %s "
             "commands/s (the median), so at most **%.0f requests/s**." % (
                 bound["commands_per_request"], ", ".join(
                     "%.1f %s" % (n, c) for c, n in bound["mix_per_request"].items()),
                 len(bound["commands_per_s_per_repeat"]),
                 "{:,.0f}".format(min(bound["commands_per_s_per_repeat"])),
                 "{:,.0f}".format(max(bound["commands_per_s_per_repeat"])),
                 "{:,.0f}".format(bound["median_commands_per_s"]), bound["limit_rps"]), "",
             "| implementation | max req/s (concurrency) | of the limit | service CPU us/req | "
             "redis CPU us/req | wrk CPU us/req | peak RSS MB | p50 / p99 / p99.9 ms at 25% (Poisson) | at 50% | at 75% |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for impl, v in s["impls"].items():
        cells = []
        for share in ("0.25", "0.5", "0.75"):
            o = v["open_loop"].get(share)
            cells.append("n/a" if not o else "%s / %s / %s" % (
                fmt(o["median_p50_ms"], "%.2f"), fmt(o["median_p99_ms"], "%.2f"),
                fmt(o["median_p999_ms"], "%.2f")))
        lines.append("| %s | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
            impl, fmt(v["max_rps"], "%.0f"), v["best_concurrency"],
            fmt((v["max_rps"] or 0) / bound["limit_rps"], "%.2f"),
            fmt(v["service_cpu_us_at_max"], "%.0f"), fmt(v["redis_cpu_us_at_max"], "%.0f"),
            fmt(v["wrk_cpu_us_at_max"], "%.0f"), fmt(v["peak_rss_mb"], "%.0f"), " | ".join(cells)))
    lines += ["", "Paired ratios, %s max req/s over each other's (median over repeats): %s." % (
        s.get("best_async"), ", ".join("%s %s" % (k, fmt(r["rps_ratio"], "%.2f"))
                                      for k, r in s.get("ratios", {}).items())), ""]
    c = s["impls"].get(CACHED)
    if c:
        lines += ["With the feature cache (`%s`: every key schema cached, TTL 60 s, a fresh server per "
                  "run, its cache filled by the %d s warm-up and the run): %s of the commands "
                  "answered from the cache and %s Redis commands per request at its max (without "
                  "it: %.0f)." % (CACHED, meta.get("warmup_s", 1),
                                  fmt(100 * c["cache_hit_ratio_at_max"] if c.get("cache_hit_ratio_at_max")
                                      is not None else None, "%.1f%%"),
                                  fmt(c.get("redis_commands_per_req_at_max"), "%.0f"),
                                  bound["commands_per_request"]), ""]
    warm = {k: v for k, v in s.get("warm_cache", {}).items() if v.get("max_rps") is not None}
    if warm:
        lines += ["With the feature cache warm (one server per configuration, warmed %d s at 16 "
                  "connections, then measured over whole TTLs, %d s each: closed-loop runs at %s "
                  "connections alternating back to back, max req/s being the best concurrency's "
                  "mean over its runs (their range in brackets), its hits, commands and CPU "
                  "those of all its runs; then Poisson arrivals at 50%% of that max, p50 and p99 "
                  "over every request, and each %.0f s phase's p99; `tracking` is redis-server's "
                  "`tracking-table-max-keys`, default 1,000,000, below the dataset's keys):"
                  % (meta.get("warm_cache_s", WARM_CACHE_S), meta.get("warm_cache_span_s", TTL_S),
                     " and ".join(str(c) for c in meta.get("warm_cache_concurrency", [])),
                     meta.get("warm_cache_span_s", TTL_S) / meta["repeats"]), "",
                  "| configuration | shards | tracking | max req/s (concurrency) [runs] | of the "
                  "limit | cache hits | Redis commands/req | service CPU us/req | redis CPU us/req | "
                  "req/s offered at 50% (achieved) | p50 / p99 ms there | p99 per phase |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for name, w in warm.items():
            runs = w.get("rps_per_run") or [0]
            lines.append("| %s | %d | %s | %s (%d) [%.0f-%.0f] | %s | %s | %s | %s | %s | %s (%s) | "
                         "%s / %s | %s |" % (
                             name, w["shards"], "default" if w["tracking_table_max_keys"] is None
                             else w["tracking_table_max_keys"], fmt(w["max_rps"], "%.0f"),
                             w["best_concurrency"], min(runs), max(runs), fmt(w["of_limit"], "%.2f"),
                             fmt(100 * w["cache_hit_ratio_at_max"] if w["cache_hit_ratio_at_max"]
                                 is not None else None, "%.1f%%"),
                             fmt(w["redis_commands_per_req_at_max"], "%.0f"),
                             fmt(w["service_cpu_us_at_max"], "%.0f"),
                             fmt(w["redis_cpu_us_at_max"], "%.0f"), fmt(0.5 * w["max_rps"], "%.0f"),
                             fmt(w["achieved_rps_at_half"], "%.0f"), fmt(w["p50_ms_at_half"], "%.2f"),
                             fmt(w["p99_ms_at_half"], "%.2f"),
                             " ".join("%.1f" % p for p in w.get("p99_ms_at_half_per_phase", [])
                                      if p is not None) or "n/a"))
        lines.append("")
    lines += ["| target | measured | goal | |", "|---|---:|---|---|"]
    for name, value, goal, ok in doc["targets"]:
        lines.append("| %s | %s | %s | %s |" % (name, fmt(value, "%.2f"), goal,
                                                 "**PASS**" if ok else "**MISS**"))
    eq = doc["equal_rankings"]
    lines += ["", "Equal work: before timing, %d feed requests to every implementation gave the "
              "same ids in the same order as rankd async (%s)." % (eq["requests"], "; ".join(
                  "%s: %d byte-equal, scores at most %d ulps apart" % (
                      k, v["identical_responses"], v["max_score_ulps"]) for k, v in eq["impls"].items())),
              "", "![feed throughput](benchmarks/plan_throughput.png)",
              "![feed latency](benchmarks/plan_latency.png)", "", "<!-- plan:end -->"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rankd", default=os.path.join(ROOT, "build-bench", "apps", "rankd", "rankd"))
    ap.add_argument("--client", default=os.path.join(ROOT, "build-bench", "bench", "load",
                                                     "rankd_paced_client"),
                    help="rankd's paced load client (the open-loop runs)")
    ap.add_argument("--dataset", default="bench", choices=sorted(DATASET_USERS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=4, help="per measured run")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--only", default="", help="implementations, comma-separated (default all)")
    ap.add_argument("--quick", action="store_true",
                    help="the smoke run: 1 repeat, 1 s runs, concurrency 1 and 4, no warm-up")
    ap.add_argument("--record", action="store_true", help="write docs/benchmarks and the docs section")
    ap.add_argument("--out", help="write the results JSON here instead of bench/results")
    args = ap.parse_args()
    impls = [i for i in IMPLS if not args.only or i in args.only.split(",")]
    unknown = set(args.only.split(",")) - set(IMPLS) if args.only else set()
    if unknown:
        ap.error("unknown implementation(s): %s" % ", ".join(sorted(unknown)))
    if not os.path.exists(RUST_PEER) and any(i.startswith("rust") for i in impls):
        if args.only:
            raise SystemExit("plan_bench: the Rust peer is not built: %s (make bench, with cargo on "
                             "PATH: bench/peers/README.md)" % RUST_PEER)
        log("plan_bench: the Rust peer is not built (%s), so it is left out; `make bench` builds it "
            "where cargo is on PATH" % RUST_PEER)
        impls = [i for i in impls if not i.startswith("rust")]
    concurrency, shares = CONCURRENCY, OPEN_LOOP_SHARES
    warm_s, warm_span_s, warm_concurrency = WARM_CACHE_S, TTL_S, WARM_CACHE_CONCURRENCY
    if args.quick:
        args.repeats, args.seconds, args.warmup = 1, 1, 0
        concurrency = [1, 4]
        warm_s, warm_span_s, warm_concurrency = 1, 2, [4]
    for tool in (args.rankd, args.client, WRK, shutil.which("redis-server"), shutil.which("redis-cli"),
                 shutil.which("node")):
        if not tool or not os.path.exists(tool):
            raise SystemExit("plan_bench: missing %s (make bench, scripts/setup.sh bench)" % tool)
    if any(i.startswith("node") for i in impls) and not os.path.isdir(
            os.path.join(ROOT, "bench", "peers", "node", "node_modules", "fastify")):
        raise SystemExit("plan_bench: the Node peer's packages are missing (scripts/setup.sh bench)")

    t0 = time.time()
    now = datetime.datetime.now(datetime.timezone.utc)
    folder = tempfile.mkdtemp(prefix="rankd-plan-bench-")
    redis = bound_replay = None
    try:
        redis = RedisServer(folder)
        keys = load_dataset(args.rankd, redis, args.dataset, log)
        registry = bench_registry(folder)
        registry_cached = bench_registry(folder, cached=True)
        store, feed_digest = build_plans(folder, registry)
        users = DATASET_USERS[args.dataset]
        ctx = {"rankd": args.rankd, "client": args.client, "store": store, "registry": registry,
               "registry_cached": registry_cached,
               "redis": redis.address(), "users": users,
               "redis_pid": redis.proc.pid, "feed_digest": feed_digest}

        log("\nRedis-bound limit: the feed's commands replayed with redis-cli --pipe (again before "
            "each closed-loop repeat and after each warm-cache configuration)")
        bound_replay = RedisBound(redis, users, 50 if args.quick else 300)
        for _ in range(3):
            bound_replay.replay("start")
        bound = bound_replay.figures()
        log("  %.1f commands per request, %s commands/s -> %.0f requests/s" % (
            bound["commands_per_request"], "{:,.0f}".format(bound["median_commands_per_s"]),
            bound["limit_rps"]))

        log("\nEqual rankings before timing")
        equal = check_equal_rankings(ctx, impls, users, 20 if args.quick else 100)
        replayed = bound["per_viewer_commands"]
        differ = {v: (n, replayed[v]) for v, n in equal["explain_commands_per_viewer"].items()
                  if v in replayed and n != replayed[v]}
        if differ:
            raise SystemExit("rankd's explain and the replay count different commands (viewer: "
                             "explain, replay): %s" % dict(list(differ.items())[:5]))

        closed = {i: {str(c): [] for c in concurrency} for i in impls}
        log("\nClosed loop: %d repeats x concurrency %s, %d s per run" % (
            args.repeats, concurrency, args.seconds))
        for r in range(args.repeats):
            log("  Redis-bound replay before r%d: %s commands/s" % (
                r + 1, "{:,.0f}".format(bound_replay.replay("closed loop r%d" % (r + 1)))))
            for c in concurrency:
                for impl in rotation(impls, r):
                    rec = measured_run(impl, ctx, c, args.seconds, args.warmup)
                    rec["repeat"] = r
                    closed[impl][str(c)].append(rec)
                    log("  r%d c=%-3d %-14s %s" % (r + 1, c, impl, rec.get("error") or
                        "%7.0f req/s  p50 %6.2f  p99 %6.2f ms  service %5.0f us/req  redis %4.0f us/req%s%s"
                        % (rec["rps"], rec["p50_ms"], rec["p99_ms"],
                           rec.get("service_cpu_us_per_req", 0), rec.get("redis_cpu_us_per_req", 0),
                           cache_note(rec), shed_note(rec))))
        pre = summarize(closed, {}, impls, bound)
        open_runs = {i: {str(sh): [] for sh in shares} for i in impls}
        log("\nOpen loop: %s of each one's max, Poisson arrivals (rankd's paced client)" % shares)
        for r in range(args.repeats):
            for sh in shares:
                for impl in rotation(impls, r):
                    max_rps = pre["impls"][impl]["max_rps"]
                    if not max_rps:
                        continue
                    offered = sh * max_rps
                    rec = measured_run(impl, ctx, None, args.seconds, args.warmup, offered, seed=r + 1)
                    rec["repeat"], rec["share"], rec["offered_rps"] = r, sh, offered
                    open_runs[impl][str(sh)].append(rec)
                    log("  r%d %3.0f%% %-14s %s" % (r + 1, sh * 100, impl, rec.get("error") or
                        "offered %6.0f achieved %6.0f req/s  p50 %6.2f  p99 %6.2f  p99.9 %6.2f ms%s"
                        % (offered, rec["rps"], rec["p50_ms"], rec["p99_ms"], rec["p999_ms"],
                           shed_note(rec))))
        warm = {}
        if CACHED in impls:
            log("\nWarm feature cache: one server per configuration, warmed %d s, then %d s of "
                "closed-loop runs at concurrency %s and %d s at 50%% of its max" % (
                    warm_s, warm_span_s, warm_concurrency, warm_span_s))
            warm = warm_cache_runs(ctx, redis, args.repeats, args.seconds, warm_s, warm_span_s,
                                   warm_concurrency, bound_replay)
        bound = bound_replay.figures()
        log("\nRedis-bound limit over the run: %d replays, %s to %s commands/s, median %s -> %.0f "
            "requests/s" % (len(bound["replays"]), "{:,.0f}".format(min(bound["commands_per_s_per_repeat"])),
                            "{:,.0f}".format(max(bound["commands_per_s_per_repeat"])),
                            "{:,.0f}".format(bound["median_commands_per_s"]), bound["limit_rps"]))
    finally:
        stop_all()
        if bound_replay:
            bound_replay.close()
        if redis:
            redis.stop()
        shutil.rmtree(folder, ignore_errors=True)

    summary = summarize(closed, open_runs, impls, bound)
    summary["warm_cache"] = summarize_warm(warm, bound["limit_rps"])
    doc = {"meta": {"date": now.strftime("%Y-%m-%d"), "commit": git("rev-parse", "--short", "HEAD"),
                    "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
                    "loadavg_end": loadavg(), "repeats": args.repeats, "seconds_per_run": args.seconds,
                    "dataset": args.dataset, "keys": keys, "concurrency": concurrency,
                    "open_loop_shares": shares, "warmup_s": args.warmup,
                    "warm_cache_s": warm_s, "warm_cache_span_s": warm_span_s,
                    "warm_cache_concurrency": warm_concurrency,
                    "seconds": time.time() - t0},
           "redis_bound": bound, "equal_rankings": equal, "summary": summary}
    doc["targets"] = targets(summary, impls)
    log("\nmax requests/s (median over repeats, best concurrency); Redis-bound limit %.0f" % bound["limit_rps"])
    for impl, v in summary["impls"].items():
        log("  %-14s %7s at c=%-3s service %s us/req, redis %s us/req, peak RSS %s MB" % (
            impl, fmt(v["max_rps"], "%.0f"), v["best_concurrency"],
            fmt(v["service_cpu_us_at_max"], "%.0f"), fmt(v["redis_cpu_us_at_max"], "%.0f"),
            fmt(v["peak_rss_mb"], "%.0f")))
    for name, value, goal, ok in doc["targets"]:
        log("  target %-45s %8s  %-8s %s" % (name, fmt(value, "%.2f"), goal, "PASS" if ok else "MISS"))
    runs = {"closed": closed, "open": open_runs, "warm_cache": warm}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(doc, runs=runs), f, indent=1)
    else:
        save_results(RESULTS_DIR, "plan", now, doc, runs)
    if args.record:
        save_doc_json(DOCS_DIR, "plan", doc)
        plot(doc, os.path.join(DOCS_DIR, "plan_throughput.png"), os.path.join(DOCS_DIR, "plan_latency.png"))
        rewrite_docs_section(DOC, "plan", section(doc))
        log("recorded: docs/benchmarks.md (plan section), docs/benchmarks/plan*.{json,png}")
    failed = sum(1 for by in (closed, open_runs) for i in by.values() for recs in i.values()
                 for rec in recs if "error" in rec)
    failed += sum(1 for runs in warm.values() for rec in
                  [x for recs in runs["closed"].values() for x in recs] + runs["open"]
                  if "error" in rec) + sum(1 for runs in warm.values() if "error" in runs)
    if failed:
        print("%d run(s) failed: see the lines above" % failed, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    run_main(main)
