"""`rankd run` over a Redis Cluster: python3 run_cluster_test.py <rankd> <source dir> (run by
ctest, labels cli and integration).

The example dataset is written once into a single redis-server and once into a Redis Cluster of
three masters (its keys spread over all of them); the six example plans, on both schedulers,
answer the same over the cluster as over the single server: the same rows, degraded nodes,
commands and reply bytes. Only the round-trip counts may differ (a batch split over the masters).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from rankd_harness.redis_cluster import RedisCluster
from rankd_harness.redis_server import RedisServer
from rankd_harness.run_fixture import (PLANS, dataset, example_requests, without_round_trips,
                                       without_timings, write_store)

RANKD = None
SOURCE = None


class RunClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="rankd-run-cluster-test-")
        cls.single = None
        cls.cluster = None
        try:
            cls.single = RedisServer(cls.folder)
            cls.single.commands(dataset())
            cls.cluster = RedisCluster(cls.folder)
            cls.written = cls.cluster.commands(dataset())
            cls.store = write_store(SOURCE, cls.folder)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.cluster:
            cls.cluster.stop()
        if cls.single:
            cls.single.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def responses(self, endpoint, scheduler):
        lines = example_requests()
        r = subprocess.run(
            [RANKD, "run", "--plans", self.store, "--registry", os.path.join(SOURCE, "registry"),
             "--env", "test", "--endpoint", "graph=" + endpoint, "--endpoint",
             "features=" + endpoint, "--scheduler", scheduler],
            input="".join(l + "\n" for l in lines), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.splitlines()
        self.assertEqual(len(out), len(lines), r.stdout)
        return [without_round_trips(without_timings(line)) for line in out]

    def test_every_master_holds_part_of_the_dataset(self):
        for address, commands in self.written.items():
            self.assertGreater(commands, 1, address)  # more than FLUSHALL

    def test_example_plans_answer_the_same_over_a_cluster(self):
        for scheduler in ("async", "sync"):
            single = self.responses(self.single.address(), scheduler)
            cluster = self.responses(self.cluster.endpoint(), scheduler)
            for plan, s, c in zip(PLANS, single, cluster):
                with self.subTest(scheduler=scheduler, plan=plan):
                    self.assertNotIn("error", s, s)
                    self.assertEqual(c, s)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
