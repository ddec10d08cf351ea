"""The plan-serving benchmark's smoke run (bench/scripts/plan_bench.py --quick on the tiny
dataset): python3 plan_bench_smoke_test.py <path to rankd> <path to rankd_paced_client> <source
folder>, run by ctest.

The runner must load the data, measure the Redis-bound limit, pass its equal-rankings check
(rankd's sync scheduler, rankd with the feature cache, the Node peer and, where it is built, the
Rust peer rank like rankd async), run every implementation at
each concurrency (wrk) and offered rate (the paced client's Poisson arrivals) without a failed run,
and write results of the documented shape: what `make bench-plan` records is read from them.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from rankd_harness.feed_service import RUST_PEER

RANKD = CLIENT = SOURCE = None
IMPLS = ["rankd_async_1", "rankd_sync_2", "rankd_cached_2", "node_1"]
# The implementations beside rankd async: checked for equal rankings and given paired ratios.
OTHERS = ["node_1", "rankd_cached_2", "rankd_sync_2"]
# Targets: 4 of rankd's own, 2 of the feature cache's, 2 per warm-cache configuration (3) and 2
# against the Node peer (and 2 against the Rust peer).
TARGETS = 14
WARM_CACHE = ["rankd_cached_1_warm", "rankd_cached_1_warm_tracking_0",
              "rankd_cached_2_warm_tracking_0"]


class PlanBenchSmokeTest(unittest.TestCase):
    def test_quick_run_checks_equal_rankings_and_writes_every_figure(self):
        with tempfile.TemporaryDirectory(prefix="rankd-plan-bench-smoke-") as folder:
            out = os.path.join(folder, "plan.json")
            r = subprocess.run(
                ["/usr/bin/python3", os.path.join(SOURCE, "bench", "scripts", "plan_bench.py"),
                 "--quick", "--dataset", "tiny", "--rankd", RANKD, "--client", CLIENT,
                 "--only", ",".join(IMPLS),
                 "--out", out], capture_output=True, text=True, timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
            with open(out) as f:
                doc = json.load(f)

        bound = doc["redis_bound"]
        self.assertGreater(bound["commands_per_request"], 10)
        self.assertEqual(set(bound["mix_per_request"]), {"HGETALL", "LRANGE", "HMGET"})
        self.assertGreater(bound["limit_rps"], 0)
        self.assertAlmostEqual(bound["limit_rps"],
                               bound["median_commands_per_s"] / bound["commands_per_request"])
        # The replay ran 3 times at the start, before the one closed-loop repeat and after each
        # warm-cache configuration; the limit is the median of every replay.
        self.assertEqual([r["when"] for r in bound["replays"]],
                         ["start"] * 3 + ["closed loop r1"] + ["after " + n for n in WARM_CACHE])
        rates = sorted(r["commands_per_s"] for r in bound["replays"])
        self.assertEqual(bound["median_commands_per_s"], rates[len(rates) // 2])

        equal = doc["equal_rankings"]
        self.assertEqual(sorted(equal["impls"]), OTHERS)
        for impl, check in equal["impls"].items():
            self.assertLessEqual(check["max_score_ulps"], 4, impl)
            self.assertGreater(check["rows"], 0, impl)
        # rankd's sync scheduler, and rankd with the cache, write the same bytes as rankd async.
        self.assertEqual(equal["impls"]["rankd_sync_2"]["identical_responses"], equal["requests"])
        self.assertEqual(equal["impls"]["rankd_cached_2"]["identical_responses"], equal["requests"])

        summary = doc["summary"]
        self.assertEqual(sorted(summary["impls"]), sorted(IMPLS))
        for impl, v in summary["impls"].items():
            with self.subTest(impl=impl):
                self.assertEqual(sorted(v["by_concurrency"], key=int), ["1", "4"])
                for c, figures in v["by_concurrency"].items():
                    self.assertEqual(figures["failed"], 0)
                    self.assertGreater(figures["median_rps"], 0)
                    self.assertGreater(figures["median_service_cpu_us"], 0)
                    self.assertGreater(figures["median_redis_cpu_us"], 0)
                    self.assertLessEqual(figures["median_p50_ms"], figures["median_p99_ms"])
                self.assertEqual(sorted(v["open_loop"]), ["0.25", "0.5", "0.75"])
                for share, o in v["open_loop"].items():
                    self.assertEqual(o["failed"], 0)
                    self.assertAlmostEqual(o["offered_rps"], float(share) * v["max_rps"])
                    self.assertLessEqual(o["median_p99_ms"], o["median_p999_ms"])
                self.assertGreater(v["peak_rss_mb"], 1)
        self.assertEqual(summary["best_async"], "rankd_async_1")
        # The cached runs answer most commands from the cache (the tiny dataset's few keys are
        # read again within the warm-up-less 1 s run) and send fewer commands per request.
        cached = summary["impls"]["rankd_cached_2"]
        self.assertGreater(cached["cache_hit_ratio_at_max"], 0.5)
        self.assertLess(cached["redis_commands_per_req_at_max"], bound["commands_per_request"] / 2)
        self.assertEqual(sorted(summary["ratios"]), OTHERS)
        # Each warm-cache configuration ran on one server (its tracking setting put back after
        # it): its closed and open runs were measured, and its cache answered most lookups.
        warm = summary["warm_cache"]
        self.assertEqual(sorted(warm), sorted(WARM_CACHE))
        for name, w in warm.items():
            with self.subTest(warm=name):
                self.assertGreater(w["max_rps"], 0)
                self.assertAlmostEqual(w["of_limit"], w["max_rps"] / bound["limit_rps"])
                self.assertGreater(w["cache_hit_ratio_at_max"], 0.5)
                self.assertLess(w["redis_commands_per_req_at_max"], bound["commands_per_request"] / 2)
                self.assertGreater(w["service_cpu_us_at_max"], 0)
                # Its closed loop: runs spanning the quick TTL's 2 s, its max their mean.
                self.assertEqual(w["best_concurrency"], 4)
                self.assertEqual(len(w["rps_per_run"]), 2)
                self.assertAlmostEqual(w["max_rps"], sum(w["rps_per_run"]) / 2)
                # Its open loop at half that: every request's p99, and one per phase (1 repeat).
                self.assertLessEqual(w["p50_ms_at_half"], w["p99_ms_at_half"])
                self.assertLessEqual(w["p99_ms_at_half"], w["p999_ms_at_half"])
                self.assertEqual(len(w["p99_ms_at_half_per_phase"]), 1)
                self.assertGreater(w["achieved_rps_at_half"], 0)
                self.assertGreater(w["cache_hit_ratio_at_half"], 0.5)
        self.assertEqual([warm[n]["tracking_table_max_keys"] for n in WARM_CACHE], [None, 0, 0])
        self.assertEqual([warm[n]["shards"] for n in WARM_CACHE], [1, 1, 2])
        self.assertEqual(len(doc["targets"]), TARGETS)
        runs = doc["runs"]
        self.assertEqual(len(runs["closed"]["node_1"]["4"]), 1)
        # The open loop is the paced client's Poisson stream at the offered rate: the requests
        # due in the 1 s run are about the offered rate's (tens at least, so half and one and a
        # half times it are several standard deviations away), each one answered.
        for impl, by_share in runs["open"].items():
            for share, recs in by_share.items():
                for rec in recs:
                    self.assertEqual(rec["seed"], 1, (impl, share))
                    self.assertGreater(rec["offered_rps"], 20, (impl, share))
                    self.assertGreater(rec["requests"], 0.5 * rec["offered_rps"], (impl, share))
                    self.assertLess(rec["requests"], 1.5 * rec["offered_rps"], (impl, share))
                    self.assertEqual(rec["socket_errors"], 0, (impl, share))
        # Every run counts the 503s among its answers (admission's refusals, none at this load)
        # and its requests/s is goodput, at most the rate of all answers.
        for impl, by_c in runs["closed"].items():
            for c, recs in by_c.items():
                for rec in recs:
                    self.assertGreaterEqual(rec["shed"], 0, (impl, c))
                    self.assertLessEqual(rec["shed"], rec["non_2xx"], (impl, c))
                    self.assertLessEqual(rec["rps"], rec["all_rps"] + 1e-9, (impl, c))


if __name__ == "__main__":
    RANKD, CLIENT, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
    if os.path.exists(RUST_PEER):
        IMPLS.append("rust_1")
        OTHERS = sorted(OTHERS + ["rust_1"])
        TARGETS += 2
    else:
        print("plan_bench_smoke: the Rust peer is not built (%s; make test builds it where cargo is "
              "on PATH), so its equal-rankings check is skipped" % RUST_PEER, flush=True)
    unittest.main(argv=sys.argv[:1], verbosity=2)
