"""Tests of capture and replay: python3 replay_test.py <rankd> <source dir> (run by ctest, labels
cli and integration).

`rankd run --capture` against a real redis-server writes every request with its response and the
Redis replies its plan read; `rankd replay` re-executes the captured requests with no Redis:
- every example plan's responses over the demo dataset (rankd datagen) and over the run tests'
  dataset (dirty values, WRONGTYPE replies, a slow node cut by its timeout) come back byte for
  byte, on both schedulers;
- 1,000 captured requests replayed against a changed plan answer exactly what the changed plan
  answers live over the same data, and the diffs it writes are the ranking diffs of the two
  (overlap@k computed here from the two responses);
- commands a plan needs that the capture lacks are counted and degrade the node that sent them;
- a line that is not a capture exits 1 naming the line; bad flags exit 2.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from rankd_harness.redis_server import RedisServer
from rankd_harness.run_fixture import PLANS, redis_with_dataset, write_plan_variant

RANKD = None
SOURCE = None
DEMO_VIEWERS = 2000  # the demo dataset's users (src/datagen/dataset.cpp)


def endpoint_flags(redis):
    endpoint = "127.0.0.1:%d" % redis.port
    return ["--env", "test", "--endpoint", "graph=" + endpoint, "--endpoint", "features=" + endpoint]


def run_capture(store, redis, lines, capture, *flags):
    """`rankd run --capture` over `lines`: the responses."""
    r = subprocess.run([RANKD, "run", "--plans", store, "--registry", os.path.join(SOURCE, "registry"),
                        *endpoint_flags(redis), *(["--capture", capture] if capture else []), *flags],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise AssertionError("rankd run failed: " + r.stderr)
    out = r.stdout.splitlines()
    assert len(out) == len(lines), r.stdout
    return out


def replay(store, capture, *flags):
    return subprocess.run([RANKD, "replay", "--captures", capture, "--plans", store,
                           "--registry", os.path.join(SOURCE, "registry"), *flags],
                          capture_output=True, text=True, timeout=300)


def replay_json(test, store, capture, *flags):
    r = replay(store, capture, "--json", *flags)
    test.assertEqual(r.returncode, 0, r.stderr)
    return [json.loads(l) for l in r.stdout.splitlines()]


def took_too_long(response):
    """Whether a response is an error that depended on time: the request's deadline, or a
    Redis endpoint that did not answer within its command timeout."""
    error = json.loads(response).get("error") or {}
    return error.get("code") == "deadline_exceeded" or (
        error.get("code") == "upstream_error" and "command timeout" in error.get("message", ""))


def overlap_at(a, b, k):
    """overlap@k as docs/experiments.md defines it, over the only output's ids."""
    (ra,) = json.loads(a)["outputs"].values()
    (rb,) = json.loads(b)["outputs"].values()
    ia, ib = [r["id"] for r in ra], [r["id"] for r in rb]
    if not ia and not ib:
        return 1.0
    return len(set(ia[:k]) & set(ib[:k])) / min(k, max(len(ia), len(ib)))


class ReplayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder, cls.redis, cls.store = redis_with_dataset(SOURCE, "rankd-replay-test-")
        cls.demo = None
        try:
            cls.demo = RedisServer(cls.folder)
            r = subprocess.run([RANKD, "datagen", "--dataset", "demo", "--redis",
                                "127.0.0.1:%d" % cls.demo.port], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0:
                raise RuntimeError("rankd datagen failed: " + r.stderr)
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        if cls.demo:
            cls.demo.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def capture_path(self):
        return tempfile.mktemp(prefix="capture-", suffix=".jsonl", dir=self.folder)

    def assert_replays_identically(self, redis, lines, *flags):
        capture = self.capture_path()
        responses = run_capture(self.store, redis, lines, capture, *flags)
        with open(capture) as f:
            records = [json.loads(l) for l in f]
        self.assertEqual([r["response"] for r in records], responses)
        self.assertEqual([r["request"] for r in records], lines)
        results = replay_json(self, self.store, capture, *flags)
        self.assertEqual(len(results), len(lines))
        timed_out = 0
        for line, record, result in zip(lines, records, results):
            self.assertEqual(result["plan_a"], result["plan_b"])
            # A request that failed on its deadline or a `fail` node's timeout depended on time
            # (docs/experiments.md: the timeouts plan's 5 ms CPU step overruns its 100 ms on a
            # machine saturated by parallel tests); every other one comes back byte for byte.
            if json.loads(record["response"]).get("error", {}).get("code") == "deadline_exceeded":
                timed_out += 1
                continue
            self.assertTrue(result["identical"], (line, result))
            self.assertEqual(result["missing_commands"], 0, line)
        self.assertLess(timed_out, len(lines) // 4, "most requests answer within their deadlines")
        return records

    def test_every_example_plan_replays_byte_for_byte_over_the_demo_dataset(self):
        lines = [json.dumps({"plan": p, "viewer_id": v, "request_id": "%s-%d" % (p, v),
                             "deadline_ms": 5000})
                 for p in PLANS for v in (1, 7, 42, 500, 1999)]
        for scheduler in ("async", "sync"):
            with self.subTest(scheduler=scheduler):
                records = self.assert_replays_identically(self.demo, lines, "--scheduler", scheduler)
                # The capture holds the replies the plans read: every plan read Redis.
                for record in records:
                    self.assertTrue(record["commands"], record["request"])
                    self.assertTrue(all(c["outcome"] == "reply" for c in record["commands"]))

    def test_dirty_values_error_replies_and_timeouts_replay_byte_for_byte(self):
        # Viewer 77's feature fetch answers WRONGTYPE (the node degrades), viewer 66's followee
        # list is a string, the timeouts plan's slow node is cut by its timeout; explain is on.
        lines = [json.dumps({"plan": p, "viewer_id": v, "request_id": "%s-%d" % (p, v),
                             "deadline_ms": 2000}) for p in PLANS for v in (1, 66, 77)]
        records = self.assert_replays_identically(self.redis, lines)
        outcomes = {c["outcome"] for r in records for c in r["commands"]}
        self.assertIn("error", outcomes)
        degraded = [json.loads(r["response"]).get("degraded") for r in records]
        self.assertTrue(any(degraded), degraded)

    def test_a_changed_plan_replays_as_it_answers_live(self):
        store = os.path.join(tempfile.mkdtemp(dir=self.folder), "plans")
        shutil.copytree(self.store, store)

        lines = [json.dumps({"plan": "feed", "viewer_id": v, "request_id": "r%d" % v,
                             "params": {"like_weight": 0.5 if v % 2 else 0.05}})
                 for v in range(1, 1001)]
        capture = self.capture_path()
        captured = run_capture(store, self.demo, lines, capture)
        live_lines = [json.dumps(dict(json.loads(l), plan="feed_changed")) for l in lines]
        write_plan_variant(store, "feed", self.change_feed, as_name="feed_changed")
        live = run_capture(store, self.demo, live_lines, None)
        results = replay_json(self, store, capture, "--plan", "feed_changed", "--k", "20")
        self.assertEqual(len(results), 1000)
        changed = timed_out = 0
        for line, a, b, result in zip(lines, captured, live, results):
            self.assertEqual(result["plan_a"], "feed")
            self.assertEqual(result["plan_b"], "feed_changed")
            self.assertEqual(result["missing_commands"], 0)
            # A request whose Redis read outlasted its command timeout (50 ms in the registry's
            # test environment) on a machine busy with parallel tests has an error response,
            # captured or live: no ranking to compare (for a captured one the replay says so in
            # diff_error).
            changed += 0 if result["identical"] else 1
            if took_too_long(a):
                timed_out += 1
                self.assertIsNone(result["diff"], result)
                self.assertTrue(result["diff_error"], result)
                continue
            self.assertIsNotNone(result["diff"], result)
            if took_too_long(b):  # the replay answered; the live run has no ranking to compare
                timed_out += 1
                continue
            self.assertAlmostEqual(result["diff"]["overlap_at_k"], overlap_at(a, b, 20), places=12)
        self.assertGreater(changed, 0)
        self.assertLess(timed_out, len(lines) // 4, "most requests answer within their timeouts")
        # The text form: one line per request, then the summary.
        r = replay(store, capture, "--plan", "feed_changed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.splitlines()[-1],
                         r"^replayed 1000 requests: \d+ identical, %d differ; 0 commands missing "
                         r"from the capture$" % changed)

    @staticmethod
    def change_feed(plan):
        """The feed plan's filter threshold raised: fewer rows pass, from the same reads."""
        plan["params"]["min_score"]["default"] = 0.5

    def test_commands_the_capture_lacks_are_counted_and_degrade_their_node(self):
        capture = self.capture_path()
        # Captured: the feed plan for viewer 1; replayed: the blend plan, which reads other keys.
        run_capture(self.store, self.demo, [json.dumps({"plan": "feed", "viewer_id": 1})], capture)
        results = replay_json(self, self.store, capture, "--plan", "blend")
        self.assertEqual(len(results), 1)
        self.assertGreater(results[0]["missing_commands"], 0)
        self.assertFalse(results[0]["identical"])

    def test_bad_lines_and_flags(self):
        capture = self.capture_path()
        run_capture(self.store, self.demo, [json.dumps({"plan": "reels", "viewer_id": 3})], capture)
        with open(capture, "a") as f:
            f.write("{\"rankd_capture\": 1}\nnot json\n")
        r = replay(self.store, capture)
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 2: not a capture: missing request", r.stderr)
        self.assertIn("line 3: not a capture: not JSON", r.stderr)
        self.assertIn("replayed 1 requests: 1 identical, 0 differ", r.stdout)
        r = replay(self.store, capture, "--plan", "nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--plan nope: no such plan in the plan store", r.stderr)
        r = replay(self.store, os.path.join(self.folder, "absent.jsonl"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot open", r.stderr)
        r = subprocess.run([RANKD, "replay", "--plans", self.store], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--captures is required", r.stderr)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
