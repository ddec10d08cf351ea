"""Shadow plans in `rankd serve` (docs/experiments.md, "Shadow plans"), against a real
redis-server: python3 shadow_test.py <path to rankd> <source folder> (run by ctest, labels cli
and integration, with Debian's python3 and its python3-prometheus-client, whose parser reads
/metrics).

A surface whose shadow is feed_fresh (feed's steps, scored with other weights) over a feed
variant: every request answers as feed does, and after it the shadow runs on the rows feed
already fetched: it shares viewer, follow, media and features, sends no Redis command (Redis
counts as many commands for a shadowed request as for an unshadowed one), and its diff, in the
shadow log and in the metrics, is the diff of feed's and feed_fresh's own answers. A shadow whose
plan cannot take the request's params is counted invalid_param and the answer is unaffected.
"""
import json
import os
import sys
import time
import unittest

from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import OwnServer, Server, json_lines, samples

VIEWERS = list(range(1, 13))


def surfaces_toml(shadow_plan):
    return ('[surfaces.home]\nsalt = "shadow-test"\n'
            '[[surfaces.home.variants]]\nname = "control"\nplan = "feed"\nweight = 1\n'
            '[surfaces.home.shadow]\nplan = "%s"\nsample = 1\ndeadline_ms = 2000\n'
            % shadow_plan)


def ids(response):
    (rows,) = response["outputs"].values()
    return [row["id"] for row in rows]


def overlap_at(k, a, b):
    if not a and not b:
        return 1.0
    return len(set(a[:k]) & set(b[:k])) / min(k, max(len(a), len(b)))


class ShadowTest(OwnServer):
    folder_prefix = "rankd-shadow-"

    def start(self, shadow_plan):
        with open(os.path.join(self.store, "surfaces.toml"), "w") as f:
            f.write(surfaces_toml(shadow_plan))
        self.log = os.path.join(self.folder, "shadow.jsonl")
        self.server = Server(self.store, self.redis, "--shadow_log", self.log)
        self.server.wait_ready()

    def metrics(self):
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        return samples(text)[1]

    def redis_commands(self):
        """Redis' count of the commands it processed (INFO counts itself too)."""
        info = self.redis.reply_text("INFO", "stats")
        return int(info.split("total_commands_processed:")[1].split()[0])

    def test_a_shadow_shares_the_primarys_fetches_and_logs_its_diff(self):
        self.start("feed_fresh")
        answers = {}
        for viewer in VIEWERS:
            status, r = self.server.rank({"surface": "home", "viewer_id": viewer,
                                          "request_id": "v%d" % viewer})
            self.assertEqual(status, 200, r)
            status, direct = self.server.rank({"plan": "feed", "viewer_id": viewer})
            self.assertEqual(status, 200, direct)
            self.assertEqual(r["outputs"], direct["outputs"], "the shadow never changes an answer")
            answers[viewer] = r
        records = {r["request_id"]: r for r in json_lines(self.log, len(VIEWERS))}
        self.assertEqual(sorted(records), sorted("v%d" % v for v in VIEWERS))
        saved = 0
        for viewer in VIEWERS:
            with self.subTest(viewer=viewer):
                record = records["v%d" % viewer]
                self.assertEqual((record["status"], record["surface"], record["variant"],
                                  record["plan"], record["shadow_plan"], record["viewer_id"]),
                                 ("ran", "home", "control", "feed", "feed_fresh", viewer))
                self.assertEqual(next(iter(record)), "time")  # the record's first member
                self.assertRegex(record["time"], r"^\d{4}-\d\d-\d\dT")
                # viewer, follow, media and features are feed's; score, quality and top run on
                # them and read no Redis.
                self.assertEqual(record["shared_nodes"], 4)
                self.assertEqual(record["redis_commands"], 0)
                self.assertGreater(record["saved_redis_commands"], 0)
                saved += record["saved_redis_commands"]
                status, fresh = self.server.rank({"plan": "feed_fresh", "viewer_id": viewer})
                self.assertEqual(status, 200, fresh)
                a, b = ids(answers[viewer]), ids(fresh)
                diff = record["diff"]
                self.assertAlmostEqual(diff["overlap_at_k"], overlap_at(10, a, b))
                self.assertEqual(sorted(i["id"] for i in diff["only_in_a"]),
                                 sorted(set(a) - set(b)))
                self.assertEqual(sorted(i["id"] for i in diff["only_in_b"]),
                                 sorted(set(b) - set(a)))
        m = self.metrics()
        home = (("surface", "home"),)
        self.assertEqual(m[("rankd_shadow_requests_total", (("result", "ran"),) + home)],
                         len(VIEWERS))
        self.assertEqual(m[("rankd_shadow_overlap_at_k_count", home)], len(VIEWERS))
        self.assertEqual(m[("rankd_shadow_rbo_count", home)], len(VIEWERS))
        self.assertAlmostEqual(m[("rankd_shadow_overlap_at_k_sum", home)],
                               sum(r["diff"]["overlap_at_k"] for r in records.values()))
        self.assertEqual(m[("rankd_shadow_shared_nodes_total", home)], 4 * len(VIEWERS))
        self.assertEqual(m[("rankd_shadow_saved_redis_commands_total", home)], saved)
        self.assertEqual(m[("rankd_shadow_redis_commands_total", home)], 0)
        self.assertEqual(m[("rankd_log_lines_total", (("log", "shadow"), ("result", "written")))],
                         len(VIEWERS))

    def test_redis_sees_no_command_of_a_shadow_that_differs_only_in_scoring(self):
        self.start("feed_fresh")
        # Warm: connections made, the first requests' costs paid.
        for viewer in VIEWERS[:2]:
            self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": viewer})[0], 200)
        before = self.redis_commands()
        for viewer in VIEWERS:
            self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": viewer})[0], 200)
        plain = self.redis_commands() - before - 1
        before = self.redis_commands()
        for viewer in VIEWERS:
            self.assertEqual(
                self.server.rank({"surface": "home", "viewer_id": viewer})[0], 200)
        self.assertEqual(len(json_lines(self.log, len(VIEWERS))), len(VIEWERS))
        shadowed = self.redis_commands() - before - 1
        self.assertGreater(plain, 0)
        self.assertEqual(shadowed, plain)

    def test_a_shadow_that_cannot_take_the_params_leaves_the_answer_alone(self):
        # reels declares no recency_weight, which feed takes.
        self.start("reels")
        request = {"surface": "home", "viewer_id": 3, "params": {"recency_weight": 0.1}}
        status, r = self.server.rank(request)
        self.assertEqual(status, 200, r)
        (record,) = json_lines(self.log, 1)
        self.assertEqual((record["status"], record["error"]), ("invalid_param", "invalid_param"))
        self.assertIn("recency_weight", record["message"])
        self.assertIsNone(record["diff"])
        m = self.metrics()
        self.assertEqual(m[("rankd_shadow_requests_total",
                            (("result", "invalid_param"), ("surface", "home")))], 1)
        # A shadow of another plan shares what it can: reels' steps are not feed's.
        status, r = self.server.rank({"surface": "home", "viewer_id": 4})
        self.assertEqual(status, 200, r)
        records = json_lines(self.log, 2)
        self.assertEqual(records[1]["status"], "ran", records[1])
        self.assertLess(records[1]["shared_nodes"], 7)


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
