"""The feature cache end to end: `rankd serve` with every key schema cached (a copy of the
registry with `cache = {...}` added) against a real redis-server, over HTTP:
python3 feature_cache_test.py <path to rankd> <source folder> (run by ctest).

A repeated request is answered from the cache (explain: every command a hit, no round trip; the
/metrics families count them), a write to a cached hash and a deleted key are served once their
invalidations arrive (the delay is printed), and FLUSHDB and a killed connection empty it.
"""
import json
import os
import shutil
import sys
import time
import unittest

from prometheus_client.parser import text_string_to_metric_families

from rankd_harness import serve_fixture
from rankd_harness.registry_copy import cache_every_cacheable_schema
from rankd_harness.serve_fixture import OwnServer, Server

RANKD = SOURCE = None
CACHE = "cache = { ttl_ms = 60000, max_mb = 16 }"


def cached_registry(folder):
    """The shipped registry with every hash and list key schema cached, in folder/registry."""
    registry = os.path.join(folder, "registry")
    shutil.copytree(os.path.join(SOURCE, "registry"), registry)
    assert cache_every_cacheable_schema(registry, CACHE) >= 5, "every key schema names its endpoint"
    return registry


class FeatureCacheTest(OwnServer):
    folder_prefix = "rankd-cache-"

    def setUp(self):
        super().setUp()
        try:
            endpoint = self.redis.address()
            # One shard: every request meets the same cache.
            self.server = Server.with_args(
                "--plans", self.store, "--registry", cached_registry(self.folder), "--env", "test",
                "--endpoint", "graph=" + endpoint, "--endpoint", "features=" + endpoint,
                "--shards", "1")
            self.server.wait_ready()
        except BaseException:
            self.tearDown()
            raise

    def feed(self, viewer=1):
        status, response = self.server.rank(
            json.dumps({"plan": "feed", "viewer_id": viewer, "explain": True}))
        self.assertEqual(status, 200, response)
        return response

    def metrics(self):
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return samples

    def wait_for(self, what, predicate, timeout=5):
        """Polls predicate() until it holds (fails after `timeout`); returns the seconds taken."""
        start = time.monotonic()
        while not predicate():
            self.assertLess(time.monotonic() - start, timeout, "timed out waiting for " + what)
            time.sleep(0.005)
        return time.monotonic() - start

    def test_a_repeated_request_is_answered_from_the_cache(self):
        first = self.feed()
        second = self.feed()
        self.assertEqual(first["outputs"], second["outputs"])
        self.assertGreater(len(second["outputs"]["top"]), 0)
        nodes = {n["node"]: n for n in second["explain"]["nodes"]}
        for node in (n for n in first["explain"]["nodes"] if n["redis_commands"] > 0):
            with self.subTest(node=node["node"]):
                self.assertEqual(node["cache_hits"] + node["cache_misses"], node["redis_commands"])
                self.assertGreater(node["cache_misses"], 0)
                again = nodes[node["node"]]
                self.assertEqual(again["cache_hits"], again["redis_commands"])
                self.assertEqual(again["cache_misses"], 0)
                self.assertEqual(again["round_trips"], 0)
        self.assertEqual(second["explain"]["totals"]["round_trips"], 0)
        # The metrics count both requests' lookups.
        m = self.metrics()
        features = nodes["features"]["redis_commands"]
        hits = m[("rankd_feature_cache_lookups_total",
                  (("result", "hit"), ("schema", "media_features")))]
        misses = m[("rankd_feature_cache_lookups_total",
                    (("result", "miss"), ("schema", "media_features")))]
        self.assertEqual(hits, features)
        self.assertEqual(misses, features)
        self.assertGreater(m[("rankd_feature_cache_entries", (("schema", "media_features"),))], 0)
        self.assertGreater(m[("rankd_feature_cache_bytes", (("schema", "media_features"),))], 0)

    def test_writes_are_served_once_their_invalidations_arrive(self):
        top = self.feed()["outputs"]["top"]
        self.feed()  # cached now
        media = top[0]["id"]

        def title_of(media_id):
            rows = [r for r in self.feed()["outputs"]["top"] if r["id"] == media_id]
            return rows[0]["title"] if rows else "(gone)"

        self.redis.commands([["HSET", "media_features:%d" % media, "title", "changed by a test"]])
        took = self.wait_for("the new title", lambda: title_of(media) == "changed by a test")
        print("[ staleness ] a changed field served %.1f ms after the write's reply" % (took * 1e3))
        # A deleted hash: its features read as missing (the row's title is null, or its score of
        # 0 leaves it out of the top 50).
        self.redis.commands([["DEL", "media_features:%d" % media]])
        self.wait_for("the deleted features", lambda: title_of(media) in (None, "(gone)"))
        m = self.metrics()
        self.assertGreaterEqual(
            m[("rankd_feature_cache_invalidations_total",
               (("kind", "key"), ("schema", "media_features")))], 2)

    def test_flushdb_and_a_killed_connection_empty_it(self):
        before = self.feed()
        self.feed()

        def flushes():
            return self.metrics()[("rankd_feature_cache_invalidations_total",
                                   (("kind", "all"), ("schema", "media_features")))]

        # Every connection but the test's own is killed: rankd reconnects and fetches again.
        self.redis.commands([["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]])
        self.wait_for("the flush of a lost connection", lambda: flushes() >= 1)
        self.server.wait_ready()
        after = self.wait_for_answer()
        self.assertEqual(after["outputs"], before["outputs"])
        features = {n["node"]: n for n in after["explain"]["nodes"]}["features"]
        self.assertGreater(features["cache_misses"], 0)
        # FLUSHDB: the viewer has no data any more, and the next answers say so.
        count = flushes()
        self.redis.commands([["FLUSHDB"]])
        self.wait_for("the flush of FLUSHDB", lambda: flushes() > count)
        self.assertEqual(self.feed()["outputs"]["top"], [])

    def wait_for_answer(self):
        """A feed answer once the server answers 200 again (after its connections were killed,
        a request may meet a connection not yet back up)."""
        deadline = time.monotonic() + 5
        while True:
            status, response = self.server.rank(
                json.dumps({"plan": "feed", "viewer_id": 1, "explain": True}))
            if status == 200 or time.monotonic() > deadline:
                self.assertEqual(status, 200, response)
                return response
            time.sleep(0.01)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    serve_fixture.configure(RANKD, SOURCE)
    unittest.main(argv=sys.argv[:1], verbosity=2)
