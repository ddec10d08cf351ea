"""The overload benchmark's smoke run (bench/scripts/overload_bench.py --quick on the demo dataset)
and the paced client's answer to bad flags: python3 overload_bench_smoke_test.py <path to rankd>
<path to rankd_paced_client>, run by ctest.

The runner must load the data, measure a max throughput, run every open-loop step and the flood
against one server, and write results of the documented shape: what `make bench-overload`
records is read from them. Timings are not asserted (the machine is shared); what is: the
figures exist, add up and are consistent with each other, and overload is answered as
docs/operations.md ("Admission") says: at 4x the max, refusals (503 with Retry-After), not
upstream errors or timeouts (502, 504).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

RANKD = CLIENT = None
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = ["0.5x", "1x", "2x", "4x", "1x after 4x"]


class PacedClientFlagsTest(unittest.TestCase):
    def test_bad_flags_exit_2_naming_the_flag(self):
        cases = [
            ([], "--port is required"),
            (["--port", "1", "--body", "{}"], "exactly one of --rate, --phases and --closed"),
            (["--port", "1", "--body", "{viewer}", "--rate", "5", "--duration_ms", "10"],
             "--users is required"),
            (["--port", "1", "--body", "{}", "--rate", "-3", "--duration_ms", "10"], "--rate"),
            (["--port", "1", "--body", "{}", "--phases", "5:10,x"], "--phases"),
            (["--port", "1", "--body", "{}", "--closed"], "--closed needs --duration_ms"),
            (["--port", "1", "--body", "{}", "--closed", "--duration_ms", "5", "--path", "rank"],
             "--path"),
            (["--port", "1", "--body", "{}", "--closed", "--duration_ms", "5", "--frobnicate", "1"],
             "unknown flag '--frobnicate'"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                r = subprocess.run([CLIENT] + argv, capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_a_refused_server_is_counted_not_fatal(self):
        # A port nobody listens on: every request fails to connect, and the report says so.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            r = subprocess.run([CLIENT, "--port", str(port), "--body", "{}", "--rate", "200",
                                "--duration_ms", "200", "--connections", "4", "--drain_ms", "2000"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        total = report["total"]
        self.assertEqual(total["requests"], 40)
        self.assertEqual(total["answered"], 0)
        self.assertEqual(total["other_errors"], 40)
        self.assertEqual(total["failures"]["connect_failed"] + total["failures"]["unsent"], 40)
        self.assertGreater(report["connect_errors"], 0)


class OverloadBenchSmokeTest(unittest.TestCase):
    def test_quick_run_writes_every_step_and_target(self):
        with tempfile.TemporaryDirectory(prefix="rankd-overload-bench-smoke-") as folder:
            out = os.path.join(folder, "overload.json")
            r = subprocess.run(
                ["/usr/bin/python3", os.path.join(SOURCE, "bench", "scripts", "overload_bench.py"),
                 "--quick", "--dataset", "demo", "--rankd", RANKD, "--client", CLIENT,
                 "--out", out], capture_output=True, text=True, timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
            with open(out) as f:
                doc = json.load(f)

        s = doc["summary"]
        self.assertGreater(s["max_goodput_per_s"], 0)
        self.assertIn(s["max_concurrency"], (4, 8))
        self.assertEqual(list(s["steps"]), STEPS)
        for name, share in zip(STEPS, (0.5, 1, 2, 4, 1)):
            with self.subTest(step=name):
                v = s["steps"][name]
                self.assertAlmostEqual(v["offered_rps"], share * s["max_goodput_per_s"], places=2)
                self.assertGreater(v["requests"], 0)
                if v["admitted_p50_ms"] is not None:
                    self.assertLessEqual(v["admitted_p50_ms"], v["admitted_p99_ms"])
        for rss in (s["rss_idle_mb"], s["rss_at_max_mb"], s["flood"]["peak_rss_mb"],
                    s["flood"]["rss_after_mb"]):
            self.assertGreater(rss, 1)
        self.assertGreaterEqual(s["flood"]["connects"], 512)
        self.assertEqual(len(doc["targets"]), 7)
        self.assertTrue(doc["targets"][0][0].startswith("closed-loop goodput past the max"),
                        doc["targets"][0])
        self.assertEqual(sorted(s["closed"]), ["4", "8"])

        runs = doc["runs"]
        self.assertEqual(sorted(runs["closed"]), ["4", "8"])
        # 4x the max: Redis cannot serve it all, and what it cannot serve is refused at once.
        overload = runs["open"]["4x"]["phases"]["0"]
        failed = overload["status"].get("502", 0) + overload["status"].get("504", 0)
        self.assertGreater(overload["shed"], 0, overload["status"])
        self.assertLessEqual(failed * 10, overload["shed"], overload["status"])
        recovery = runs["open"]["4x"]
        self.assertEqual(sorted(recovery["phases"]), ["0", "1"])
        for rep in [recovery, runs["flood"]] + list(runs["closed"].values()):
            t = rep["total"]
            # Every request is counted once: answered with a status or failed without one.
            self.assertEqual(t["requests"], sum(t["status"].values()) + sum(t["failures"].values()))
            self.assertEqual(t["goodput"] + t["late_200"], t["status"].get("200", 0))
            timeline = rep["timeline"]
            self.assertEqual(sum(timeline["goodput"]), t["goodput"])
            self.assertEqual(sum(timeline["shed"]), t["shed"])
            self.assertEqual(sum(timeline["answered"]), t["requests"])
            self.assertEqual(sum(timeline["degraded"]), t["degraded"])
            self.assertEqual(t["shed_without_retry_after"], 0)  # every 503 says when to retry


if __name__ == "__main__":
    RANKD, CLIENT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
