"""Smoke test of rankd's benchmark mode: small runs whose JSON must parse with every field present.

Run by ctest (label bench): python3 bench_smoke_test.py <path to rankd>. The timings themselves
are not checked here; docs/benchmarks.md has the measured figures.
"""
import json
import subprocess
import sys

STATS = {"min_us", "max_us", "mean_us", "p50_us", "p90_us", "p99_us", "count"}
RSS = {"rss_start_kb", "rss_end_kb", "rss_peak_kb"}
EXPECTED = {
    "posts": {"total_posts", "producers", "wall_ms", "posts_per_sec"} | RSS,
    "timers": {"total_timers", "timer_ms", "wall_ms", "timers_per_sec", "latency", "lateness"} | RSS,
    "coro_timers": {"total_timers", "timer_ms", "wall_ms", "timers_per_sec", "latency", "lateness"}
    | RSS,
    "sleep_vs_pool": {"tasks", "sleep_ms", "pool_threads", "coro_wall_ms", "coro_latency",
                      "coro_lateness", "pool_wall_ms", "pool_latency", "speedup_ratio"} | RSS,
}


def run(rankd, *flags):
    out = subprocess.run([rankd, "--bench_eventloop", "--bench_json", *flags], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


def main():
    rankd = sys.argv[1]
    failures = []
    report = run(rankd, "--bench_n", "2000", "--bench_tasks", "50", "--bench_producers", "2")
    for mode, fields in EXPECTED.items():
        got = report.get(mode)
        if got is None:
            failures.append(f"mode {mode} missing from the report")
            continue
        missing = fields - got.keys()
        if missing:
            failures.append(f"{mode}: missing fields {sorted(missing)}")
        for key in ("latency", "lateness", "coro_latency", "coro_lateness", "pool_latency"):
            if key in got and STATS - got[key].keys():
                failures.append(f"{mode}.{key}: missing {sorted(STATS - got[key].keys())}")
    if report.get("posts", {}).get("total_posts") != 2000:
        failures.append("posts.total_posts is not --bench_n")
    if report.get("coro_timers", {}).get("latency", {}).get("count") != 2000:
        failures.append("coro_timers latency count is not --bench_n")
    single = run(rankd, "--bench_eventloop_mode", "timers", "--bench_n", "100")
    if set(single) != {"timers"}:
        failures.append(f"--bench_eventloop_mode timers printed {sorted(single)}")
    bad = subprocess.run([rankd, "--bench_eventloop", "--bench_eventloop_mode", "nope"],
                         capture_output=True, text=True, timeout=30)
    if bad.returncode != 2 or "nope" not in bad.stderr:
        failures.append(f"a bad mode should exit 2 naming it, got {bad.returncode}: {bad.stderr}")
    for f in failures:
        print("FAIL:", f)
    print("bench smoke: " + ("ok" if not failures else f"{len(failures)} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
