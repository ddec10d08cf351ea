"""Tests of `rankd run` against a real redis-server: python3 run_test.py <rankd> <source dir>
(run by ctest, labels cli and integration).

The six example plans (dsl/test/golden, the artifacts rankc builds from plans/) over a small
dataset this test writes: the responses equal tests/cli/golden/run_responses.jsonl for both
schedulers, the feed plan's ranking equals one computed here from the data, every request error
that a local run can meet comes from a real malformed request, a file of mixed good and bad
lines gets one response per line in order, and bad flags or a bad plan store exit 2.
Set RANKD_UPDATE_GOLDEN=1 to rewrite the golden file (review the diff).
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

from rankd_harness.run_fixture import (DIRTY_MEDIA, DIRTY_VIEWER, FOLLOWEES, PLANS,
                                       example_requests, features_of, media_of,
                                       redis_with_dataset, without_round_trips, without_timings)

RANKD = None
SOURCE = None
GOLDEN = "tests/cli/golden/run_responses.jsonl"


def parse_number(text, kind):
    """The engine's value rules for the cases this dataset holds (docs/engine.md)."""
    if text is None:
        return None
    if kind == "int":
        return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def expected_feed(params):
    """The feed plan computed here: score, filter, top 50 (ties in input order)."""
    rows = []
    for user in FOLLOWEES:
        for m in media_of(user):
            f = features_of(m)
            ctr = parse_number(f.get("ctr"), "float")
            likes = parse_number(f.get("likes"), "int")
            age = parse_number(f.get("age_hours"), "float")
            score = (ctr if ctr is not None else 0.0) + params["like_weight"] * math.log1p(
                likes if likes is not None else 0)
            score = score - params["recency_weight"] * (age if age is not None else 0.0)
            if score >= params["min_score"] and not re.search(params["blocklist_regex"], f["title"]):
                rows.append((m, score))
    rows.sort(key=lambda r: -r[1])  # stable: ties keep input order
    return rows[:50]


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder, cls.redis, cls.store = redis_with_dataset(SOURCE, "rankd-run-test-")

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def run_rankd(self, lines, *flags, timeout=60):
        endpoint = "127.0.0.1:%d" % self.redis.port
        args = [RANKD, "run", "--plans", self.store, "--registry", os.path.join(SOURCE, "registry"),
                "--env", "test", "--endpoint", "graph=" + endpoint, "--endpoint", "features=" + endpoint,
                *flags]
        return subprocess.run(args, input="".join(l + "\n" for l in lines), capture_output=True,
                              text=True, timeout=timeout)

    def answers(self, lines, *flags):
        r = self.run_rankd(lines, *flags)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.splitlines()
        self.assertEqual(len(out), len(lines), r.stdout)
        return out

    def test_example_plans_match_the_golden_responses_on_both_schedulers(self):
        responses = {}
        for scheduler in ("async", "sync"):
            responses[scheduler] = [without_timings(r) for r in
                                    self.answers(example_requests(), "--scheduler", scheduler)]
        golden_path = os.path.join(SOURCE, GOLDEN)
        if os.environ.get("RANKD_UPDATE_GOLDEN"):
            with open(golden_path, "w") as f:
                for r in responses["async"]:
                    f.write(json.dumps(r, sort_keys=True) + "\n")
        with open(golden_path) as f:
            golden = [json.loads(l) for l in f]
        self.assertEqual([g["plan"] for g in golden], PLANS,
                         "one golden response per plan, in order")
        for plan, g, r in zip(PLANS, golden, responses["async"]):
            with self.subTest(scheduler="async", plan=plan):
                self.assertEqual(r, g)
        # The sync scheduler waits for each command's reply: a round trip per command; the rest
        # of its answer is the async one.
        for plan, g, r in zip(PLANS, golden, responses["sync"]):
            with self.subTest(scheduler="sync", plan=plan):
                for node in r["explain"]["nodes"] + [r["explain"]["totals"]]:
                    self.assertEqual(node["round_trips"], node["redis_commands"], node)
                self.assertEqual(without_round_trips(r), without_round_trips(g))
        for r in responses["async"]:
            self.assertTrue(any(rows for rows in r["outputs"].values()), r)

    def test_feed_ranks_as_computed_from_the_data(self):
        params = {"like_weight": 0.5, "recency_weight": 0.05, "min_score": 0.0,
                  "blocklist_regex": "[^\\s\\S]"}
        overrides = [{}, {"like_weight": 2, "min_score": 1.5, "blocklist_regex": "clip 3"}]
        lines = [json.dumps({"plan": "feed", "viewer_id": 1, "params": o}) for o in overrides]
        for o, line in zip(overrides, self.answers(lines)):
            with self.subTest(params=o):
                p = dict(params, **o)
                got = json.loads(line, parse_int=int)["outputs"]["top"]
                want = expected_feed(p)
                self.assertEqual([r["id"] for r in got], [m for m, _ in want])
                self.assertEqual([r["final_score"] for r in got], [s for _, s in want])
                self.assertEqual(list(got[0].keys())[0], "id")
        # The author id past 2^53 comes back exact (media 203 has it).
        top = json.loads(self.answers([lines[0]])[0])["outputs"]["top"]
        row = [r for r in top if r["id"] == 203]
        if row:
            self.assertEqual(row[0]["author_id"], 9007199254740993)

    def test_blend_returns_as_many_rows_as_the_requests_result_size(self):
        # blend's topk keeps result_size rows: its default, 100, is more than this dataset gives
        # it, so every row; a request's smaller value keeps the best that many, in order.
        sizes = [None, 1, 3, 1000]
        lines = [json.dumps(dict({"plan": "blend", "viewer_id": 1},
                                 **({"params": {"result_size": n}} if n else {})))
                 for n in sizes]
        out = [json.loads(line)["outputs"]["topk"] for line in self.answers(lines)]
        every = out[0]
        self.assertTrue(3 < len(every) < 100, every)
        self.assertEqual(out[1], every[:1])
        self.assertEqual(out[2], every[:3])
        self.assertEqual(out[3], every)
        # A value outside result_size's registry bounds (1 to 1000) or not an int is refused.
        bad = [0, 1001, 2.5, "3"]
        lines = [json.dumps({"plan": "blend", "viewer_id": 1, "params": {"result_size": v}})
                 for v in bad]
        for v, line in zip(bad, self.answers(lines)):
            with self.subTest(result_size=v):
                error = json.loads(line)["error"]
                self.assertEqual(error["code"], "invalid_param", line)
                self.assertIn("result_size", error["message"])

    def test_every_request_error_a_local_run_can_meet(self):
        cases = [
            ("{\"plan\": \"feed\",", "bad_request", "byte 16"),
            ("", "bad_request", "byte 0"),
            ("[1]", "bad_request", "object"),
            ("{\"plan\": 5}", "bad_request", "plan"),
            ("{\"viewer_id\": 1}", "bad_request", "plan or surface is required"),
            ("{\"plan\": \"feed\"}", "bad_request", "viewer_id"),
            ("{\"plan\": \"feed\", \"viewer_id\": -1}", "bad_request", "viewer_id"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1.5}", "bad_request", "viewer_id"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"deadline_ms\": 0}", "bad_request", "deadline_ms"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"deadline_ms\": 60001}", "bad_request", "deadline_ms"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"explain\": 1}", "bad_request", "explain"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"request_id\": 7}", "bad_request", "request_id"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"params\": []}", "bad_request", "params"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"colour\": 1}", "bad_request", "colour"),
            ("{\"plan\": \"feed\", \"plan\": \"feed\"}", "bad_request", "already has a member"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1e999}", "bad_request", "float64"),
            ("{\"plan\": \"nope\"}", "unknown_plan", "nope"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"params\": {\"zzz\": 1}}", "invalid_param", "zzz"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"params\": {\"like_weight\": \"x\"}}",
             "invalid_param", "like_weight"),
            ("{\"plan\": \"feed\", \"viewer_id\": 1, \"params\": {\"blocklist_regex\": \"(\"}}",
             "invalid_param", "blocklist_regex"),
            ("{\"plan\": \"feed\", \"viewer_id\": 66}", "upstream_error", "follow"),
        ]
        lines = [c[0] for c in cases] + ["{\"plan\": \"feed\", \"viewer_id\": 1, \"request_id\": \"\"}"]
        out = self.answers(lines)
        for (line, code, needle), response in zip(cases, out):
            with self.subTest(line=line):
                r = json.loads(response)
                self.assertEqual(r.get("error", {}).get("code"), code, response)
                self.assertIn(needle, r["error"]["message"])
        last = json.loads(out[-1])  # an empty request_id is valid, and kept
        self.assertEqual(last["request_id"], "")
        self.assertIn("outputs", last)

    def test_a_wrong_type_feature_hash_degrades_the_fetch_and_the_vm_reads_nulls(self):
        # The timeouts plan's features node (on_error skip) reads a list where a hash belongs:
        # it degrades, and the vm after it reads ctr and age_hours as null (coalesced to 0).
        line = json.dumps({"plan": "timeouts", "viewer_id": DIRTY_VIEWER, "deadline_ms": 5000})
        for scheduler in ("async", "sync"):
            with self.subTest(scheduler=scheduler):
                out = self.answers([line, line], "--scheduler", scheduler)
                for response in out:  # the process answers, and goes on answering
                    r = json.loads(response)
                    self.assertNotIn("error", r, response)
                    degraded = {d["node"]: d for d in r["degraded"]}
                    self.assertEqual(degraded["features"]["reason"], "error", response)
                    self.assertIn("WRONGTYPE", degraded["features"]["message"])
                    top = r["outputs"]["top"]
                    self.assertEqual([row["id"] for row in top], DIRTY_MEDIA)
                    for row in top:
                        self.assertIsNone(row["ctr"])
                        self.assertIsNone(row["age_hours"])
                        self.assertEqual(row["final_score"], 0)

    def test_deadline_exceeded_when_redis_stalls(self):
        os.kill(self.redis.proc.pid, signal.SIGSTOP)
        try:
            out = self.answers(['{"plan": "feed", "viewer_id": 1, "deadline_ms": 50}'])
        finally:
            os.kill(self.redis.proc.pid, signal.SIGCONT)
        r = json.loads(out[0])
        self.assertEqual(r["error"]["code"], "deadline_exceeded", out[0])

    def test_mixed_file_one_response_per_line_in_order(self):
        lines = []
        for i in range(30):
            if i % 3 == 0:
                lines.append("{\"plan\": \"feed\", \"viewer_id\": 1, \"request_id\": \"r%d\"}" % i)
            elif i % 3 == 1:
                lines.append("{\"plan\": \"nope\", \"request_id\": \"r%d\"}" % i)
            else:
                lines.append("garbage %d" % i)
        out = self.answers(lines)
        for i, response in enumerate(out):
            r = json.loads(response)
            if i % 3 == 0:
                self.assertEqual(r["request_id"], "r%d" % i)
                self.assertIn("outputs", r)
            elif i % 3 == 1:
                self.assertEqual((r["request_id"], r["error"]["code"]), ("r%d" % i, "unknown_plan"))
            else:
                self.assertEqual(r["error"]["code"], "bad_request")

    def test_bad_flags_and_a_bad_store_exit_2(self):
        registry = os.path.join(SOURCE, "registry")
        for args, needle in [
            (["--registry", registry], "--plans"),
            (["--plans", self.store], "--registry"),
            (["--plans", self.store, "--registry", registry, "--env", "moon"], "--env"),
            (["--plans", self.store, "--registry", registry, "--scheduler", "fast"], "--scheduler"),
            (["--plans", self.store, "--registry", registry, "--endpoint", "graph"], "--endpoint"),
            (["--plans", self.store, "--registry", registry, "--deadline_ms", "0"], "--deadline_ms"),
            (["--plans", self.store, "--registry", registry, "--colour"], "--colour"),
            (["--plans", self.folder, "--registry", registry], "index.json"),
            (["--plans", self.store, "--registry", self.folder], "plan store"),
        ]:
            with self.subTest(args=args):
                r = subprocess.run([RANKD, "run", *args], input="", capture_output=True, text=True,
                                   timeout=30)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
