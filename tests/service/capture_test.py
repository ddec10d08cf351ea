"""Capture in `rankd serve` (docs/experiments.md, "Capture and replay"), against a real
redis-server: python3 capture_test.py <path to rankd> <source folder> (run by ctest, labels cli
and integration, with Debian's python3 and its python3-prometheus-client, whose parser reads
/metrics).

With --capture_file, a request asking ("capture": true) is captured and the others are not; with
--capture_sample 1 every request is; the file's lines replay (rankd replay, no Redis) to the
responses the clients got, byte for byte, over both shards; rankd_captures_total counts them.
Without --capture_file a request asking is 400 bad_request, and --capture_sample alone or a
capture file that cannot be opened exits 2.
"""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_fixture  # noqa: E402
from serve_fixture import OwnServer, Server  # noqa: E402
from serve_test import samples  # noqa: E402


class CaptureTest(OwnServer):
    folder_prefix = "rankd-capture-"

    def capture_file(self, name):
        return os.path.join(self.folder, name)

    def captured(self, path, count, timeout=10):
        """The capture file's records once it holds `count` lines (the writer is a thread)."""
        deadline = time.time() + timeout
        while True:
            lines = open(path).read().splitlines() if os.path.exists(path) else []
            if len(lines) >= count or time.time() > deadline:
                return [json.loads(l) for l in lines]
            time.sleep(0.02)

    def metric(self, result):
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        return samples(text)[1].get(("rankd_captures_total", (("result", result),)))

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
        records = self.captured(path, 10)
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
        records = self.captured(path, 8)
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
        self.assertNotIn("rankd_captures_total", text)

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


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
