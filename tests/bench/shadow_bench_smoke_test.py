"""The shadow benchmark's smoke run (bench/scripts/shadow_bench.py --quick on the tiny dataset):
python3 shadow_bench_smoke_test.py <path to rankd> <path to rankd_paced_client>, run by ctest.

The runner must check that A (feed) and B (surface home, shadow feed_fresh) answer alike, measure
a max, run its A/B pairs against one server and write results of the documented shape, with the
shadows the server counted: B's requests are shadowed, A's are not. Timings are not asserted
(the machine is shared).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

RANKD = CLIENT = None
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ShadowBenchSmokeTest(unittest.TestCase):
    def test_quick_run_writes_pairs_and_counts_the_shadows(self):
        with tempfile.TemporaryDirectory(prefix="rankd-shadow-smoke-") as folder:
            out = os.path.join(folder, "shadow.json")
            r = subprocess.run(["/usr/bin/python3",
                                os.path.join(SOURCE, "bench", "scripts", "shadow_bench.py"),
                                "--quick", "--dataset", "tiny", "--rankd", RANKD, "--client",
                                CLIENT, "--out", out], capture_output=True, text=True, timeout=240)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("checked: A and B answer 20 viewers alike", r.stdout)
            with open(out) as f:
                doc = json.load(f)
        self.assertEqual(len(doc["pairs"]), 2)
        s = doc["summary"]
        self.assertGreater(s["max_goodput_per_s"], 0)
        self.assertAlmostEqual(s["rate"], 0.5 * s["max_goodput_per_s"])
        for pair in doc["pairs"]:
            self.assertEqual(pair["shadows_A"], {}, "a request naming a plan is never shadowed")
            # Each B request that ranked got one shadow outcome: ran; shed when the shard had no
            # room to spare; failed when the machine left its background pool too little CPU
            # for its deadline (ctest runs other tests beside it).
            self.assertEqual(sum(pair["shadows_B"].values()), pair["ranked_B"], pair)
            self.assertEqual(set(pair["shadows_B"]) - {"ran", "shed", "failed"}, set(), pair)
            for name in ("A", "B"):
                self.assertGreater(pair[name]["goodput_per_s"], 0)
                self.assertLessEqual(pair[name]["p50_ms"], pair[name]["p99_ms"])
        self.assertGreater(s["shadows"].get("ran", 0), 0)
        self.assertIsNotNone(s["p99_ratio"])
        # Every admitted request of the runs pooled per side (rankd_paced_client --raw_admitted),
        # and the server's own histogram read around each run.
        self.assertGreater(s["pooled_requests_a"], 0)
        self.assertGreater(s["pooled_requests_b"], 0)
        self.assertLessEqual(s["pooled_p99_a"], max(p["A"]["p99_ms"] for p in doc["pairs"]))
        self.assertGreaterEqual(s["pooled_p99_a"], min(p["A"]["p99_ms"] for p in doc["pairs"]))
        self.assertIsNotNone(s["pooled_p99_ratio"])
        for side in ("a", "b"):
            self.assertTrue(0 <= s["server_over_25ms_" + side] <= 1, s)


if __name__ == "__main__":
    RANKD, CLIENT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
