"""The paced load client's per-bucket timeline and degraded answers, against a real `rankd serve`
(the example dataset on its own redis-server) and against a port nobody listens on:
python3 paced_client_timeline_test.py <path to rankd> <path to rankd_paced_client> <source dir>,
run by ctest.

What a failover drill prints per second comes from the report's timeline (bench/load/
paced_client.cpp's header comment): every request ends in one bucket, the buckets add up to the
totals, degraded answers are the 200s whose "degraded" list is not empty (every answer of the
timeouts plan, none of the feed plan's), errors count each other status and failure per bucket,
and a bucket's p50_ms/p99_ms are of its admitted answers (0 for a bucket without any). Timings
are not asserted (the machine is shared).
"""
import json
import socket
import subprocess
import sys
import unittest

from rankd_harness import serve_fixture

CLIENT = None
BUCKET_MS = 100
COUNTS = ["goodput", "late_200", "shed", "other_errors", "answered", "degraded"]


def run_client(port, body, rate, duration_ms, extra=()):
    r = subprocess.run([CLIENT, "--port", str(port), "--body", body, "--rate", str(rate),
                        "--duration_ms", str(duration_ms), "--connections", "8",
                        "--bucket_ms", str(BUCKET_MS), "--drain_ms", "10000", *extra],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("rankd_paced_client exited %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def rank_body(plan, explain=False):
    return json.dumps({"plan": plan, "viewer_id": 1, "deadline_ms": 5000, "explain": explain})


class TimelineChecks(unittest.TestCase):
    def check_timeline(self, report):
        """The timeline's shape, and its agreement with the stats of the whole run."""
        total, timeline = report["total"], report["timeline"]
        errors = timeline["errors"]
        arrays = [timeline[k] for k in COUNTS + ["p50_ms", "p99_ms"]] + list(errors.values())
        buckets = len(timeline["answered"])
        self.assertGreaterEqual(buckets, 1)
        for a in arrays:
            self.assertEqual(len(a), buckets, timeline)

        # Every request ends in exactly one bucket, answered or failed.
        self.assertEqual(sum(timeline["answered"]),
                         total["answered"] + sum(total["failures"].values()))
        self.assertEqual(sum(timeline["answered"]), total["requests"])
        # Degraded answers: per bucket, per phase and in total alike; only 200s are.
        self.assertEqual(sum(timeline["degraded"]), total["degraded"])
        self.assertEqual(sum(p["degraded"] for p in report["phases"].values()), total["degraded"])
        self.assertLessEqual(total["degraded"], total["status"].get("200", 0))

        # errors: each status but 200 and 503, and each failure kind, that the run had.
        failure_kinds = {k for k, n in total["failures"].items() if n > 0}
        codes = {c for c in total["status"] if c not in ("200", "503")}
        self.assertEqual(set(errors), codes | failure_kinds)
        for key, counts in errors.items():
            expected = total["failures"][key] if key in failure_kinds else total["status"][key]
            self.assertEqual(sum(counts), expected, key)

        admitted = []
        for b in range(buckets):
            ended = sum(timeline[k][b] for k in ("goodput", "late_200", "shed", "other_errors"))
            self.assertEqual(timeline["answered"][b], ended, "bucket %d" % b)
            self.assertEqual(timeline["other_errors"][b], sum(c[b] for c in errors.values()))
            self.assertLessEqual(timeline["degraded"][b],
                                 timeline["goodput"][b] + timeline["late_200"][b])
            # Admitted: answered with a status, and not 503.
            failed = sum(errors[k][b] for k in failure_kinds)
            admitted.append(timeline["answered"][b] - timeline["shed"][b] - failed)
            p50, p99 = timeline["p50_ms"][b], timeline["p99_ms"][b]
            if admitted[b] == 0:
                self.assertEqual((p50, p99), (0, 0), "bucket %d" % b)
            else:
                self.assertGreater(p50, 0, "bucket %d" % b)
                self.assertLessEqual(p50, p99, "bucket %d" % b)
                self.assertLessEqual(p99, total["latency_ms"]["admitted"]["max"])
        self.assertEqual(sum(admitted), total["latency_ms"]["admitted"]["count"])
        return timeline


class AgainstRankdServe(TimelineChecks):
    @classmethod
    def setUpClass(cls):
        cls.context = serve_fixture.server_on_own_redis("rankd-paced-timeline-")
        cls.server = cls.context.__enter__()[0]
        try:
            cls.server.wait_ready()
        except BaseException:
            cls.context.__exit__(*sys.exc_info())
            raise

    @classmethod
    def tearDownClass(cls):
        cls.context.__exit__(None, None, None)

    def test_feed_answers_are_not_degraded(self):
        report = run_client(self.server.port, rank_body("feed", explain=True), 100, 1000)
        total = report["total"]
        self.assertEqual(total["requests"], 100)
        self.assertGreater(total["status"].get("200", 0), 0, total["status"])
        self.assertEqual(total["degraded"], 0)
        self.assertEqual(sum(self.check_timeline(report)["degraded"]), 0)

    def test_every_answer_of_the_timeouts_plan_is_degraded(self):
        # Its slow_ranker sleeps 80 ms under a 20 ms timeout with on_error skip: every 200 says
        # so in its "degraded" list, also when an explain (node statuses "degraded") follows it.
        for explain in (False, True):
            with self.subTest(explain=explain):
                report = run_client(self.server.port, rank_body("timeouts", explain), 50, 600)
                total = report["total"]
                self.assertEqual(total["requests"], 30)
                self.assertGreater(total["status"].get("200", 0), 0, total["status"])
                self.assertEqual(total["degraded"], total["status"]["200"])
                timeline = self.check_timeline(report)
                for b, degraded in enumerate(timeline["degraded"]):
                    self.assertEqual(degraded, timeline["goodput"][b] + timeline["late_200"][b])

    def test_other_statuses_are_counted_per_bucket(self):
        # No such plan: 404 unknown_plan, an admitted answer with a latency.
        report = run_client(self.server.port, rank_body("no_such_plan"), 100, 500)
        total = report["total"]
        self.assertEqual(total["status"].get("404", 0), 50, total["status"])
        self.assertEqual(total["degraded"], 0)
        timeline = self.check_timeline(report)
        self.assertEqual(sum(timeline["errors"]["404"]), 50)
        self.assertGreater(max(timeline["p99_ms"]), 0)


class AgainstNoServer(TimelineChecks):
    def test_failures_are_counted_per_bucket_by_kind(self):
        # A port nobody listens on: every request fails without a status, so no bucket has an
        # admitted latency.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            report = run_client(port, "{}", 200, 200)
        timeline = self.check_timeline(report)
        self.assertEqual(sum(timeline["answered"]), 40)
        self.assertIn("connect_failed", timeline["errors"])
        self.assertLessEqual(set(timeline["errors"]), {"connect_failed", "unsent"})
        self.assertEqual(set(timeline["p50_ms"] + timeline["p99_ms"]), {0})

    def test_poisson_arrivals_are_a_repeatable_stream_of_the_rate(self):
        # 1,000/s for 2 s: evenly spaced, exactly 2,000 requests; as a Poisson stream, a count
        # within 5 standard deviations of 2,000 (sqrt(2000) = 45), the same for the same seed.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            even = run_client(port, "{}", 1000, 2000)["total"]["requests"]
            counts = {seed: [run_client(port, "{}", 1000, 2000,
                                        ("--arrivals", "poisson", "--seed", str(seed)))
                             for _ in range(2)] for seed in (1, 2)}
        self.assertEqual(even, 2000)
        totals = {seed: [r["total"]["requests"] for r in runs] for seed, runs in counts.items()}
        for seed, (first, second) in totals.items():
            self.assertEqual(first, second, totals)
            self.assertGreater(first, 2000 - 5 * 45, totals)
            self.assertLess(first, 2000 + 5 * 45, totals)
            self.check_timeline(counts[seed][0])
        self.assertNotEqual(totals[1][0], totals[2][0], totals)


if __name__ == "__main__":
    CLIENT = sys.argv[2]
    serve_fixture.configure(sys.argv[1], sys.argv[3])
    unittest.main(argv=sys.argv[:1], verbosity=2)
