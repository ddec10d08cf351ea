"""make demo-cluster's drill, short (scripts/demo_cluster.py: 7 s at a quarter of the measured
maximum, a master SIGKILLed at 2 s and started again at 4 s; 1 s deadlines and 500 ms command
timeouts, so that a machine busy with other work, not the failover, cannot fail a request:
the drill's own record uses 100 and 50 ms):
python3 demo_cluster_test.py <rankd> <rankd_paced_client> <source folder> (run by ctest, labels
cli and integration).

Every request is answered 200 and none degraded through the kill, the promotion of the killed
master's replica (reads served by the replicas meanwhile) and the killed node's return as a
replica, with replica reads on and off, and GET /readyz answers 200 throughout; the feeds of 21
viewers asked for while the master is dead and after it rejoined are the ones asked for before
the kill; the per-second table is printed; the script exits 0 and leaves no redis-server or rankd
serve behind, also when interrupted (Ctrl-C) during the drill.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from rankd_harness.run_fixture import alive

RANKD = CLIENT = SOURCE = None


class DemoClusterTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="rankd-demo-cluster-test-")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def command(self, *args):
        return ["/usr/bin/python3", os.path.join(SOURCE, "scripts", "demo_cluster.py"), "--rankd",
                RANKD, "--client", CLIENT, "--rankc-built", *args]

    def test_ctrl_c_during_the_drill_stops_everything(self):
        proc = subprocess.Popen(self.command("--seconds", "30", "--kill-at", "10",
                                             "--restart-at", "20"),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = ""
        deadline = time.monotonic() + 180
        try:
            while "== the drill" not in out or out.count("load client pid") < 2:
                self.assertLess(time.monotonic(), deadline, out)
                ready, _, _ = select.select([proc.stdout], [], [], 1)
                if ready:
                    line = proc.stdout.readline()
                    self.assertTrue(line, "the demo ended before its drill: " + out)
                    out += line
            proc.send_signal(signal.SIGINT)
            rest, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out += rest
        self.assertEqual(proc.returncode, 130, out[-3000:])
        self.assertIn("demo-cluster: interrupted", out)
        pids = [int(p) for p in re.findall(r" pid (\d+)", out)]
        self.assertEqual(len(pids), 9, out)  # six redis-servers, rankd serve, two load clients
        self.assertEqual([p for p in pids if alive(p)], [], "left running")

    def test_a_killed_master_fails_no_request(self):
        self.drill(replica_reads="on")

    def test_b_a_killed_master_fails_no_request_with_replica_reads_off(self):
        # The reads of the dead master's slots fall back to its replica; the commands stalled on
        # it hold their requests until the command timeout, and the requests arriving meanwhile
        # wait for room instead of being refused (docs/operations.md, "Admission").
        self.drill(replica_reads="off")

    def drill(self, replica_reads):
        figures = os.path.join(self.folder, "drill.json")
        r = subprocess.run(
            self.command("--seconds", "7", "--kill-at", "2", "--restart-at", "4", "--load", "0.25",
                         "--deadline-ms", "1000", "--command-timeout-ms", "500", "--json",
                         figures, "--replica-reads", replica_reads),
            capture_output=True, text=True, timeout=240)
        out = r.stdout
        self.assertEqual(r.returncode, 0, out[-4000:] + r.stderr[-4000:])
        pids = [int(p) for p in re.findall(r" pid (\d+)", out)]
        self.assertEqual(len(pids), 9, out)  # six redis-servers, rankd serve, two load clients
        self.assertEqual([p for p in pids if alive(p)], [], "left running")
        self.assertRegex(out, r"\n\s+s\s+answered\s+200\s+degraded\s+errors\s+p50 ms\s+p99 ms")
        self.assertRegex(out, r"SIGKILL 127\.0\.0\.1:\d+")
        with open(figures) as f:
            doc = json.load(f)
        self.assertEqual(doc["replica_reads"], replica_reads == "on")
        self.assertGreater(doc["requests"], 0)
        self.assertEqual(doc["non_200"], 0, doc["status"])
        self.assertEqual(sum(doc["failures"].values()), 0, doc["failures"])
        self.assertEqual(doc["degraded"], 0)
        self.assertIsNotNone(doc["promoted_after_s"], "the replica was never promoted")
        self.assertIsNotNone(doc["rejoined_after_restart_s"], "the killed node never rejoined")
        # Every slot stayed readable (the replicas answered for the dead master): ready throughout.
        self.assertGreater(doc["readyz_polls"], 50)
        self.assertEqual(doc["readyz_not_ready"], 0)
        timeline = doc["report"]["timeline"]
        self.assertEqual(sum(timeline["answered"]), doc["requests"])
        # Exact answers: 21 viewers' feeds with the master dead and after it rejoined are the
        # ones they had before the kill, media for media.
        x = doc["rankings"]
        self.assertEqual(x["viewers"], 21)
        self.assertTrue(x["before_all_200"], x)
        self.assertEqual(x["same_during"], x["viewers"], x["differ"])
        self.assertEqual(x["same_after"], x["viewers"], x["differ"])
        self.assertGreater(x["during_from_s"], 2.0)  # after the kill


if __name__ == "__main__":
    RANKD, CLIENT, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
    unittest.main(argv=sys.argv[:1], verbosity=2)
