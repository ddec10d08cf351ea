"""make demo's script, short (scripts/demo.py on the tiny dataset, 1 s of load):
python3 demo_test.py <path to rankd> <source folder> (run by ctest, labels cli and integration).

It prints a ranked table, the explain timeline, a degraded answer, an experiment (viewers of the
home surface in their variants, each followed by the surface's shadow plan on the answer's rows
and its diff, their captured requests replayed against feed_fresh with a ranking diff), the load
figures and metrics, exits 0, and leaves no redis-server or rankd serve
behind; interrupted by SIGTERM mid-run it still stops both.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from rankd_harness.demo_common import SURFACES
from rankd_harness.run_fixture import alive, write_store

RANKD = SOURCE = None


class DemoTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="rankd-demo-test-")
        # The artifacts rankc builds from plans/ (the TypeScript tests check they are these).
        self.store = write_store(SOURCE, self.folder)
        with open(os.path.join(self.store, "surfaces.toml"), "w") as f:  # as demo.py writes it
            f.write(SURFACES)
        self.command = ["/usr/bin/python3", os.path.join(SOURCE, "scripts/demo.py"), "--rankd",
                        RANKD, "--dataset", "tiny", "--plans", self.store]

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def pids(self, output):
        pids = [int(p) for p in re.findall(r"(?:redis-server|rankd serve) pid (\d+)", output)]
        self.assertEqual(len(pids), 2, output)
        return pids

    def test_shows_a_ranked_feed_and_stops_everything(self):
        r = subprocess.run(self.command + ["--load-seconds", "1"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = r.stdout
        self.assertRegex(out, r"rank  media\s+author\s+score\s+title\n\s+1  \d+ ")
        self.assertRegex(out, r"total [\d.]+ ms, \d+ Redis commands in \d+ round trips")
        # feed_gbdt's model beside feed's expression: ten ranks, the model's scores probabilities.
        model = re.findall(r"^\s+(\d+)  \d+\s+-?[\d.]+\s+\d+\s+(0\.\d+)\s*$", out, re.M)
        self.assertEqual([int(rank) for rank, _ in model], list(range(1, 11)), out)
        self.assertIn("of the model's top 10 are in feed's top 10", out)
        self.assertIn('"node": "slow_ranker", "reason": "timeout"', out)
        variants = re.findall(r"variant (control|fresh)\s+\(plan (feed|feed_fresh)\s*\)", out)
        self.assertEqual(len(variants), 4, out)
        self.assertTrue(all((v, p) in {("control", "feed"), ("fresh", "feed_fresh")}
                            for v, p in variants), variants)
        fresh = sum(v == "fresh" for v, _ in variants)
        # The shadow (feed_fresh) after each: all of a fresh viewer's answer shared, feed's
        # fetches for a control viewer's; never a Redis command of its own.
        shadows = re.findall(r"viewer +\d+ \((control|fresh)\): shadow feed_fresh shared (\d) nodes, "
                             r"saved \d+ Redis commands, sent 0; overlap@10 ([\d.]+), rbo", out)
        self.assertEqual(len(shadows), 4, out)
        for variant, shared, overlap in shadows:
            self.assertEqual(int(shared), 7 if variant == "fresh" else 4, out)
            if variant == "fresh":
                self.assertEqual(overlap, "1.000", out)
        # Replayed against feed_fresh: the fresh viewers' answers come back byte for byte.
        self.assertRegex(out, r"replayed 4 requests: %d identical, %d differ; 0 commands missing "
                              r"from the capture" % (fresh, 4 - fresh))
        # The load ran and was answered. How many answers were 200 is the machine's: with the
        # shipped registry's 50 ms command timeouts, a busy machine's slow Redis reply is a 502.
        load = re.search(r"(\d+) requests in [\d.]+ s: \d+ requests/s, p50 [\d.]+ ms, p99 "
                         r"[\d.]+ ms, (\d+) not 200", out)
        self.assertIsNotNone(load, out)
        self.assertLess(int(load.group(2)), int(load.group(1)), out)
        self.assertIn('rankd_requests_total{plan="feed",status="200",code=""}', out)
        # The studio's URL, checked by fetching the page while the server was up.
        self.assertRegex(out, r"http://127\.0\.0\.1:\d+/studio: 7 plans to see, run, explain, "
                              r"trace and compare \(page \d+ bytes; `make serve` leaves it up\)")
        self.assertIn("demo: stopped rankd serve and redis-server", out)
        for pid in self.pids(out):
            self.assertFalse(alive(pid), pid)

    def test_sigterm_mid_run_still_stops_everything(self):
        proc = subprocess.Popen(self.command + ["--load-seconds", "30"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        out = ""
        try:
            deadline = time.time() + 60
            while "== load" not in out and time.time() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                out += line
            self.assertIn("== load", out)
            proc.send_signal(signal.SIGTERM)
            rest, _ = proc.communicate(timeout=60)
            out += rest
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 130, out)
        self.assertIn("demo: interrupted", out)
        for pid in self.pids(out):
            self.assertFalse(alive(pid), pid)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
