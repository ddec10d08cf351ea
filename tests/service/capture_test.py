"""Capture and the served-rankings log in `rankd serve` (docs/experiments.md, "Capture and
replay", "Served-rankings log"), against a real redis-server: python3 capture_test.py <path to rankd> <source folder> (run by ctest, labels cli
and integration, with Debian's python3 and its python3-prometheus-client, whose parser reads
/metrics).

With --capture_file, a request asking ("capture": true) is captured and the others are not; with
--capture_sample 1 every request is; the file's lines replay (rankd replay, no Redis) to the
responses the clients got, byte for byte, over both shards; rankd_log_lines_total{log="captures"} counts them.
Without --capture_file a request asking is 400 bad_request, and --capture_sample alone or a
capture file that cannot be opened exits 2.

With --served_log, each ranked request of the sampled share gets a record: its request, plan,
viewer and each output's items by rank with the features and score its response rows carry;
failed requests get none; rankd_log_lines_total{log="served"} counts them.
"""
import json
import os
import subprocess
import sys
import unittest

from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import OwnServer, Server, json_lines, samples


class CaptureTest(OwnServer):
    folder_prefix = "rankd-capture-"

    def capture_file(self, name):
        return os.path.join(self.folder, name)


    def metric(self, result):
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        return samples(text)[1].get(("rankd_log_lines_total",
                                     (("log", "captures"), ("result", result))))

    def replay(self, path):
        r = subprocess.run([serve_fixture.RANKD, "replay", "--captures", path, "--plans",
                            self.store, "--registry", os.path.join(serve_fixture.SOURCE, "registry"),
                            "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(l) for l in r.stdout.splitlines()]

    def test_requests_asking_are_captured_and_replay_byte_for_byte(self):
        path = self.capture_file("asked.jsonl")
        self.server = Server(self.store, self.redis, "--capture_file", path)
        self.server.wait_ready()
        bodies = {}
        for viewer in range(1, 21):
            request = {"plan": ("feed", "reels", "blend")[viewer % 3], "viewer_id": viewer,
                       "request_id": "c%d" % viewer, "capture": viewer % 2 == 0}
            status, _, text = self.server.request("POST", "/rank", json.dumps(request))
            self.assertEqual(status, 200, text)
            bodies[request["request_id"]] = text
        records = json_lines(path, 10)
        self.assertEqual(sorted(r["request_id"] for r in records),
                         sorted("c%d" % v for v in range(2, 21, 2)))
        for r in records:
            self.assertEqual(r["response"], bodies[r["request_id"]])
            self.assertTrue(r["commands"])
        results = self.replay(path)
        self.assertEqual(len(results), 10)
        self.assertTrue(all(r["identical"] and r["missing_commands"] == 0 for r in results), results)
        self.assertEqual(self.metric("written"), 10)
        self.assertEqual(self.metric("dropped"), 0)

    def test_a_sample_of_one_captures_every_request(self):
        path = self.capture_file("all.jsonl")
        self.server = Server(self.store, self.redis, "--capture_file", path, "--capture_sample", "1")
        self.server.wait_ready()
        for viewer in range(1, 9):
            status, r = self.server.rank({"plan": "feed", "viewer_id": viewer})
            self.assertEqual(status, 200, r)
        records = json_lines(path, 8)
        self.assertEqual(len(records), 8)
        # The ids the server made are captured, so the replay answers with them.
        results = self.replay(path)
        self.assertTrue(all(r["identical"] for r in results), results)

    def test_without_a_capture_file_a_request_asking_is_a_bad_request(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        status, r = self.server.rank({"plan": "feed", "viewer_id": 1, "capture": True})
        self.assertEqual(status, 400, r)
        self.assertEqual(r["error"]["code"], "bad_request")
        self.assertIn("capture: this server keeps no captures", r["error"]["message"])
        status, _, text = self.server.request("GET", "/metrics")
        self.assertNotIn("rankd_log_lines_total", text)

    def test_bad_capture_flags_exit_2(self):
        registry = os.path.join(serve_fixture.SOURCE, "registry")
        for flags, message in (
                (["--capture_sample", "0.5"], "--capture_sample needs --capture_file"),
                (["--capture_file", "/nonexistent-dir/c.jsonl"],
                 "--capture_file /nonexistent-dir/c.jsonl: cannot open"),
                (["--capture_file", self.capture_file("x"), "--capture_sample", "2"],
                 "--capture_sample must be a number from 0 to 1")):
            r = subprocess.run([serve_fixture.RANKD, "serve", "--plans", self.store, "--registry",
                                registry, "--port", "0", *flags], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 2, (flags, r.stderr))
            self.assertIn(message, r.stderr)


class ServedLogTest(OwnServer):
    folder_prefix = "rankd-served-"


    def test_each_ranked_request_is_recorded_with_its_items_features_and_scores(self):
        path = os.path.join(self.folder, "served.jsonl")
        self.server = Server(self.store, self.redis, "--served_log", path)
        self.server.wait_ready()
        sent = {}
        for viewer in range(1, 7):
            body = json.dumps({"plan": ("feed", "blend")[viewer % 2], "viewer_id": viewer,
                               "request_id": "s%d" % viewer})
            status, _, text = self.server.request("POST", "/rank", body)
            self.assertEqual(status, 200, text)
            sent["s%d" % viewer] = (body, json.loads(text))
        status, _ = self.server.rank({"plan": "nope", "request_id": "failed"})
        self.assertEqual(status, 404)
        records = json_lines(path, 6)
        self.assertEqual(sorted(r["request_id"] for r in records), sorted(sent))
        for r in records:
            body, response = sent[r["request_id"]]
            self.assertEqual(next(iter(r)), "time")  # the record's first member
            self.assertRegex(r["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertEqual(r["request"], body)
            self.assertEqual((r["plan"], r["plan_digest"]), (response["plan"], response["plan_digest"]))
            self.assertEqual(r["viewer_id"], json.loads(body)["viewer_id"])
            self.assertEqual((r["surface"], r["variant"]), ("", ""))
            self.assertEqual(set(r["outputs"]), set(response["outputs"]))
            for name, rows in response["outputs"].items():
                out = r["outputs"][name]
                self.assertEqual([i["rank"] for i in out["items"]], list(range(1, len(rows) + 1)))
                self.assertEqual([i["id"] for i in out["items"]], [row["id"] for row in rows])
                for item, row in zip(out["items"], rows):
                    self.assertEqual(item["features"], {k: v for k, v in row.items() if k != "id"})
                    if out["score_key"] is not None:
                        self.assertEqual(item["score"], row[out["score_key"]])
                    else:
                        self.assertIsNone(item["score"])
            self.assertEqual(r["degraded"], [d["node"] for d in response["degraded"]])
        # The feed plan ends in a topk: its items carry the key it ranked by as their score.
        feed = [r for r in records if r["plan"] == "feed"]
        self.assertTrue(feed)
        self.assertTrue(all(o["score_key"] for r in feed for o in r["outputs"].values()))
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(samples(text)[1].get(("rankd_log_lines_total",
                                               (("log", "served"), ("result", "written")))), 6)

    def test_a_sample_of_zero_records_nothing_and_bad_flags_exit_2(self):
        path = os.path.join(self.folder, "none.jsonl")
        self.server = Server(self.store, self.redis, "--served_log", path, "--served_log_sample", "0")
        self.server.wait_ready()
        for viewer in range(1, 5):
            self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": viewer})[0], 200)
        self.server.stop()  # the writer writes what is queued before the server exits
        self.assertEqual(json_lines(path, 0), [])
        registry = os.path.join(serve_fixture.SOURCE, "registry")
        for flags, message in (
                (["--served_log_sample", "0.5"], "need --served_log"),
                (["--served_log", "/nonexistent-dir/s.jsonl"], "--served_log /nonexistent-dir/s.jsonl: cannot open"),
                (["--served_log", path, "--served_log_keep", "0"], "--served_log_keep")):
            r = subprocess.run([serve_fixture.RANKD, "serve", "--plans", self.store, "--registry",
                                registry, "--port", "0", *flags], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 2, (flags, r.stderr))
            self.assertIn(message, r.stderr)


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
