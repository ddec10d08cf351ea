"""`rankd datagen` against a real redis-server:
python3 datagen_test.py <path to rankd> <source folder> (run by ctest, labels cli and integration).

The same dataset and seed write the same data (Redis' DEBUG DIGEST of the whole database), again
and again (every key is replaced whole); another seed writes other data; the data has the shapes
the registry's key schemas declare, and the example feed plan ranks over it; progress lines
when stderr is not a terminal; a Redis Cluster gets the same keys and values as one server, each
on its slot's master, and the feed ranks over it; bad flags exit 2 naming them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from rankd_harness.redis_cluster import RedisCluster
from rankd_harness.redis_server import RedisServer
from rankd_harness.resp_client import call
from rankd_harness.run_fixture import write_store

RANKD = SOURCE = None


class DatagenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="rankd-datagen-test-")
        cls.redis = RedisServer(cls.folder, debug=True)

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def datagen(self, *args):
        r = subprocess.run([RANKD, "datagen", "--redis", self.redis.address(), *args],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def digest(self):
        return call(self.redis.port, "DEBUG", "DIGEST")

    def test_a_seed_writes_the_same_data_every_time_and_another_seed_other_data(self):
        r = self.datagen("--dataset", "tiny", "--seed", "3", "--flush")
        first = self.digest()
        m = re.search(r"dataset tiny, seed 3: (\d+) keys \((\d+) commands\) written to .* ([\d.]+) keys/s",
                      r.stdout)
        self.assertTrue(m, r.stdout)
        # Progress lines on a pipe, ending at 100%.
        self.assertRegex(r.stderr.strip().splitlines()[-1],
                         r"^datagen: %s/%s keys \(100%%\)$" % (m.group(1), m.group(1)))
        self.datagen("--dataset", "tiny", "--seed", "3")  # every key replaced whole
        self.assertEqual(self.digest(), first)
        self.datagen("--dataset", "tiny", "--seed", "4", "--flush")
        self.assertNotEqual(self.digest(), first)
        self.datagen("--dataset", "tiny", "--seed", "3", "--flush")
        self.assertEqual(self.digest(), first)

    def test_the_data_has_the_registry_shapes_and_the_feed_ranks_over_it(self):
        self.datagen("--dataset", "tiny", "--seed", "5", "--flush")
        port = self.redis.port
        self.assertGreater(call(port, "DBSIZE"), 1000)
        users = 200
        follows = [len(call(port, "LRANGE", "follow:%d" % u, 0, -1)) for u in range(1, users + 1)]
        self.assertTrue(all(5 <= n <= 150 for n in follows), follows)
        # Skewed popularity: the most followed user has many times the median's followers.
        followers = {}
        for u in range(1, users + 1):
            for v in call(port, "LRANGE", "follow:%d" % u, 0, -1):
                followers[int(v)] = followers.get(int(v), 0) + 1
        counts = sorted(followers.values())
        self.assertGreater(counts[-1], 5 * counts[len(counts) // 2])
        self.assertEqual(len(call(port, "LRANGE", "recommendation:7", 0, -1)), 20)
        # seen:{u}: some followees' newest media items, and nothing else.
        newest = {}
        for u in range(1, users + 1):
            items = call(port, "LRANGE", "media:%d" % u, 0, 0)
            if items:
                newest[u] = items[0]
        sizes = []
        for u in range(1, users + 1):
            seen = set(call(port, "SMEMBERS", "seen:%d" % u))
            shown = {newest[int(f)] for f in call(port, "LRANGE", "follow:%d" % u, 0, -1)
                     if int(f) in newest}
            self.assertLessEqual(seen, shown, u)
            sizes.append(len(seen))
        self.assertGreater(sum(sizes), users)  # a quarter of the followees' newest items
        user = call(port, "HGETALL", "user:7")
        self.assertIn("verified", user)
        media = call(port, "LRANGE", "media:1", 0, -1) or call(port, "LRANGE", "media:2", 0, -1)
        features = dict(zip(*[iter(call(port, "HGETALL", "media_features:%s" % media[0]))] * 2))
        self.assertLessEqual({"author_id", "age_hours", "likes", "title"}, set(features))
        self.assert_the_feed_ranks_over(self.redis.address())

    def assert_the_feed_ranks_over(self, endpoint):
        """`rankd run` ranks viewer 7's feed with the example plans over `endpoint`."""
        store = write_store(SOURCE, tempfile.mkdtemp(dir=self.folder))
        r = subprocess.run([RANKD, "run", "--plans", store, "--registry",
                            os.path.join(SOURCE, "registry"), "--env", "test", "--endpoint",
                            "graph=" + endpoint, "--endpoint", "features=" + endpoint],
                           input=json.dumps({"plan": "feed", "viewer_id": 7}) + "\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        response = json.loads(r.stdout)
        self.assertNotIn("error", response, response)
        self.assertGreater(len(response["outputs"]["top"]), 0)

    def contents(self, port, keys):
        """{key: (type, value)} of `keys` on the server at `port` (lists in order, hashes as dicts)."""
        out = {}
        for key in keys:
            kind = call(port, "TYPE", key)
            if kind == "list":
                out[key] = (kind, call(port, "LRANGE", key, 0, -1))
            elif kind == "set":
                out[key] = (kind, sorted(call(port, "SMEMBERS", key)))
            elif kind == "hash":
                flat = call(port, "HGETALL", key)
                out[key] = (kind, dict(zip(flat[::2], flat[1::2])))
            else:
                out[key] = (kind, None)
        return out

    def test_a_cluster_gets_the_same_data_on_the_masters_of_its_slots(self):
        self.datagen("--dataset", "tiny", "--seed", "6", "--flush")
        keys = call(self.redis.port, "KEYS", "*")
        self.assertGreater(len(keys), 1000)
        single = self.contents(self.redis.port, keys)
        cluster = RedisCluster(tempfile.mkdtemp(dir=self.folder))
        try:
            # A key of another dataset, removed by --flush on every master.
            cluster.commands([("SET", "stale:%d" % i, "x") for i in range(30)])
            r = subprocess.run([RANKD, "datagen", "--dataset", "tiny", "--seed", "6", "--flush",
                                "--redis", cluster.endpoint()],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"keys \(\d+ commands\) written to cluster:\S+ \(3 masters\)")
            sizes = [call(n.port, "DBSIZE") for n in cluster.nodes]
            self.assertEqual(sum(sizes), len(keys))
            self.assertTrue(all(s > len(keys) // 5 for s in sizes), sizes)  # spread over all
            on_owners = {}
            for node in cluster.nodes:
                on_owners.update(self.contents(
                    node.port, [k for k in keys if cluster.owner(k) is node]))
            self.assertEqual(on_owners, single)
            self.assert_the_feed_ranks_over(cluster.endpoint())
        finally:
            cluster.stop()

    def test_bad_flags_exit_2_naming_them(self):
        for args, needle in [
            (["--redis", self.redis.address()], "--dataset"),
            (["--dataset", "huge", "--redis", self.redis.address()], "'huge'"),
            (["--dataset", "tiny"], "--redis"),
            (["--dataset", "tiny", "--redis", "localhost"], "HOST:PORT"),
            (["--dataset", "tiny", "--redis", "cluster:"], "at least one HOST:PORT"),
            (["--dataset", "tiny", "--redis", "cluster:127.0.0.1:1,x"], '"x" is not HOST:PORT'),
            (["--dataset", "tiny", "--redis", self.redis.address(), "--seed", "-1"], "--seed"),
            (["--dataset", "tiny", "--redis", self.redis.address(), "--colour", "red"], "--colour"),
        ]:
            with self.subTest(args=args):
                r = subprocess.run([RANKD, "datagen", *args], capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(needle, r.stderr)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
