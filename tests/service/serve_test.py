"""`rankd serve` end to end over HTTP against a real redis-server:
python3 serve_test.py <path to rankd> <source folder> (run by ctest, labels cli and integration,
with Debian's python3 and its python3-prometheus-client, whose parser reads /metrics).

Every endpoint and every error code's HTTP status from real requests, /rank answering as
`rankd run` does, /readyz following Redis down and up, admission (503 overloaded at once while
admitted requests complete), reload on SIGHUP and POST /admin/reload (under load with no failed
request; a broken store refused, the old one serving; a dry run answering the diff and serving
nothing new; a plan requested in the last minute removed only when the reload allows it),
SIGTERM under load answering every accepted request, the JSON log lines, the config file, and
exit status 2 for bad flags.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from rankd_harness.run_fixture import (DIRTY_MEDIA, DIRTY_VIEWER, STORE_PLANS, dataset,
                         example_requests, redis_with_dataset, slow_store, without_timings,
                         write_plan_variant, write_store)
from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import (Load, OwnServer, Server, SharedServer, samples,
                                         server_on_own_redis)

RANKD = SOURCE = None


class ServeTest(SharedServer):
    def run_rankd(self, lines):
        endpoint = self.redis.address()
        r = subprocess.run([RANKD, "run", "--plans", self.store, "--registry",
                            os.path.join(SOURCE, "registry"), "--env", "test", "--endpoint",
                            "graph=" + endpoint, "--endpoint", "features=" + endpoint],
                           input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def test_rank_answers_as_rankd_run_does(self):
        expected = [without_timings(r) for r in self.run_rankd(example_requests())]
        for request, want in zip(example_requests(), expected):
            with self.subTest(plan=json.loads(request)["plan"]):
                status, content_type, text = self.server.request("POST", "/rank", request)
                self.assertEqual(status, 200, text)
                self.assertEqual(content_type, "application/json")
                self.assertEqual(without_timings(text), want)

    def test_a_requests_result_size_is_how_many_rows_blend_returns(self):
        def rows(params):
            body = json.dumps({"plan": "blend", "viewer_id": 1, "params": params})
            status, _, text = self.server.request("POST", "/rank", body)
            return status, json.loads(text)

        status, every = rows({})
        self.assertEqual(status, 200, every)
        every = every["outputs"]["topk"]
        self.assertGreater(len(every), 2)
        for n in (1, 2):
            with self.subTest(result_size=n):
                status, answer = rows({"result_size": n})
                self.assertEqual(status, 200, answer)
                self.assertEqual(answer["outputs"]["topk"], every[:n])
        status, refused = rows({"result_size": 1001})
        self.assertEqual(status, 400, refused)
        self.assertEqual(refused["error"]["code"], "invalid_param")
        self.assertIn("result_size", refused["error"]["message"])

    def test_a_wrong_type_feature_hash_degrades_and_the_server_keeps_serving(self):
        # The timeouts plan's skip features node meets a list where a hash belongs: a degraded
        # answer with ctr and age_hours null, and the process goes on serving.
        body = json.dumps({"plan": "timeouts", "viewer_id": DIRTY_VIEWER, "deadline_ms": 5000})
        for _ in range(3):
            status, response = self.server.rank(body)
            self.assertEqual(status, 200, response)
            degraded = {d["node"]: d["reason"] for d in response["degraded"]}
            self.assertEqual(degraded.get("features"), "error", response)
            top = response["outputs"]["top"]
            self.assertEqual([row["id"] for row in top], DIRTY_MEDIA)
            self.assertTrue(all(row["ctr"] is None and row["age_hours"] is None for row in top))
        status, response = self.server.rank(json.dumps({"plan": "feed", "viewer_id": 1}))
        self.assertEqual(status, 200, response)

    def test_request_ids_longer_than_128_bytes_or_not_printable_are_refused(self):
        cases = [("x" * 129, "at most 128 bytes"), ("tab\there", "byte 3 is 0x09"),
                 ("caf\u00e9", "byte 3 is 0xC3")]
        for request_id, needle in cases:
            with self.subTest(request_id=request_id[:20]):
                status, response = self.server.rank(
                    json.dumps({"plan": "feed", "viewer_id": 1, "request_id": request_id}))
                self.assertEqual((status, response["error"]["code"]), (400, "bad_request"))
                self.assertIn(needle, response["error"]["message"])
                self.assertTrue(response["request_id"].startswith("rankd-"), response)
        status, response = self.server.rank(
            json.dumps({"plan": "feed", "viewer_id": 1, "request_id": "r" * 128}))
        self.assertEqual((status, response["request_id"]), (200, "r" * 128))

    def test_made_request_ids_never_repeat_across_shards_or_processes(self):
        ids = []
        for _ in range(200):  # a connection each: SO_REUSEPORT spreads them over both shards
            status, response = self.server.rank({"plan": "no such plan"})
            self.assertEqual(status, 404)
            ids.append(response["request_id"])
        self.assertEqual(len(set(ids)), len(ids))
        prefixes = {re.fullmatch(r"(rankd-[0-9a-f]{12}-)[0-9]+", i).group(1) for i in ids}
        self.assertEqual(len(prefixes), 1, prefixes)
        other = json.loads(self.run_rankd(['{"plan": "no such plan"}'])[0])["request_id"]
        self.assertRegex(other, r"^rankd-[0-9a-f]{12}-1$")
        self.assertNotIn(other[:19], prefixes)  # another process, another prefix

    def test_x_request_id_names_a_request_without_one_and_traceparent_reaches_the_log(self):
        trace = "4bf92f3577b34da6a3ce929d0e0e4736"
        status, response = self.server.rank(
            {"plan": "no such plan"},
            headers={"X-Request-Id": "hdr-1", "traceparent": "00-%s-00f067aa0ba902b7-01" % trace})
        self.assertEqual((status, response["request_id"]), (404, "hdr-1"))
        deadline = time.time() + 10
        lines = []
        while not lines and time.time() < deadline:
            lines = [e for e in self.server.drain_log() if e.get("request_id") == "hdr-1"]
            time.sleep(0.02)
        self.assertTrue(lines, "no request line for hdr-1")
        self.assertEqual(lines[0]["trace_id"], trace)
        # The body's request_id wins; a bad header is a bad request naming it.
        status, response = self.server.rank({"plan": "feed", "viewer_id": 1, "request_id": "b"},
                                            headers={"X-Request-Id": "hdr-2"})
        self.assertEqual((status, response["request_id"]), (200, "b"))
        status, response = self.server.rank({"plan": "feed", "viewer_id": 1},
                                            headers={"X-Request-Id": "h" * 129})
        self.assertEqual((status, response["error"]["code"]), (400, "bad_request"))
        self.assertIn("X-Request-Id must be at most 128 bytes", response["error"]["message"])

    def test_every_answer_carries_its_request_id_in_the_x_request_id_header(self):
        cases = [
            # (request body, request headers, the id the answer names)
            ({"plan": "feed", "viewer_id": 1, "request_id": "b-1"}, {}, "b-1"),
            ({"plan": "feed", "viewer_id": 1, "request_id": "b-2"}, {"X-Request-Id": "h-2"}, "b-2"),
            ({"plan": "no such plan"}, {"X-Request-Id": "h-3"}, "h-3"),
            ({"plan": "feed", "viewer_id": 1, "deadline_ms": 0}, {"X-Request-Id": "h-4"}, "h-4"),
        ]
        for body, headers, want in cases:
            with self.subTest(body=body):
                status, answer_headers, text = self.server.exchange(
                    "POST", "/rank", json.dumps(body), headers=headers)
                self.assertEqual(json.loads(text)["request_id"], want, (status, text))
                self.assertEqual(answer_headers.get_all("X-Request-Id"), [want], status)
        # A made id is the body's too.
        status, answer_headers, text = self.server.exchange(
            "POST", "/rank", json.dumps({"plan": "feed", "viewer_id": 1}))
        self.assertEqual(status, 200, text)
        self.assertRegex(answer_headers.get("X-Request-Id"), r"^rankd-[0-9a-f]{12}-\d+$")
        self.assertEqual(answer_headers.get("X-Request-Id"), json.loads(text)["request_id"])
        # An answer of the HTTP layer (a method /rank does not take) names a valid header id, and
        # no invalid one.
        status, answer_headers, text = self.server.exchange(
            "GET", "/rank", headers={"X-Request-Id": "h-5"})
        self.assertEqual((status, answer_headers.get_all("X-Request-Id")), (405, ["h-5"]), text)
        status, answer_headers, text = self.server.exchange(
            "GET", "/rank", headers={"X-Request-Id": "h" * 129})
        self.assertEqual((status, answer_headers.get_all("X-Request-Id")), (405, None), text)

    def test_an_unknown_plan_named_in_raw_bytes_gets_a_json_404(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
            sock.sendall(b"GET /plans/caf\xc3\xa9\xff HTTP/1.1\r\nHost: x\r\n"
                         b"Connection: close\r\n\r\n")
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 404"), head)
        error = json.loads(body.decode("utf-8"))["error"]  # valid UTF-8 and JSON
        self.assertEqual(error["code"], "unknown_plan")
        self.assertIn("caf\u00e9\ufffd", error["message"])

    def test_every_error_code_has_its_status(self):
        cases = [
            ('{"plan": "feed", "viewer_id": 1', 400, "bad_request"),
            ('{"viewer_id": 1}', 400, "bad_request"),
            (json.dumps({"plan": "feed", "viewer_id": 1, "params": {"like_weight": "ten"}}), 400,
             "invalid_param"),
            (json.dumps({"plan": "nope", "viewer_id": 1}), 404, "unknown_plan"),
        ]
        # The registry caps blocklist_regex at 256 bytes: a longer pattern is never compiled.
        status, response = self.server.rank(json.dumps(
            {"plan": "feed", "viewer_id": 1, "params": {"blocklist_regex": "a" * 257}}))
        self.assertEqual((status, response["error"]["code"]), (400, "invalid_param"), response)
        self.assertEqual(response["error"]["message"],
                         "param blocklist_regex must be at most 256 bytes, got 257")
        for body, status, code in cases:
            with self.subTest(code=code, body=body):
                got_status, response = self.server.rank(body)
                self.assertEqual((got_status, response["error"]["code"]), (status, code), response)
                self.assertTrue(response["error"]["message"])

    def test_plans_list_the_store_and_serve_each_artifact(self):
        status, content_type, text = self.server.request("GET", "/plans")
        self.assertEqual((status, content_type), (200, "application/json"))
        listing = json.loads(text)
        with open(os.path.join(self.store, "index.json")) as f:
            index = json.load(f)
        self.assertEqual(listing["registry_digest"], index["registry_digest"])
        self.assertEqual({p["name"]: p["digest"] for p in listing["plans"]},
                         {p["name"]: p["digest"] for p in index["plans"]})
        self.assertRegex(listing["plans"][0]["loaded_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        # Each plan names the models it scores with their files' digests (those the index lists).
        models = {p["name"]: p["models"] for p in listing["plans"]}
        self.assertEqual(models["feed"], {})
        self.assertEqual(models["feed_gbdt"], {m["name"]: m["sha256"] for m in index["models"]})
        self.assertEqual(set(models["feed_gbdt"]), {"feed_ctr"})
        for name in STORE_PLANS:
            status, _, text = self.server.request("GET", "/plans/" + name)
            self.assertEqual(status, 200)
            with open(os.path.join(self.store, name + ".json")) as f:
                self.assertEqual(text, f.read())
        status, _, text = self.server.request("GET", "/plans/nope")
        self.assertEqual((status, json.loads(text)["error"]["code"]), (404, "unknown_plan"))
        status, _, _ = self.server.request("GET", "/nowhere")
        self.assertEqual(status, 404)
        status, _, _ = self.server.request("GET", "/rank")
        self.assertEqual(status, 405)

    def test_healthz_and_each_request_logs_a_json_line(self):
        status, _, text = self.server.request("GET", "/healthz")
        self.assertEqual((status, json.loads(text)), (200, {"status": "serving"}))
        self.server.rank({"plan": "feed", "viewer_id": 1, "request_id": "logged-1"})
        self.server.rank({"plan": "nope", "request_id": "logged-2"})
        deadline = time.time() + 5
        while time.time() < deadline:
            lines = {e.get("request_id"): e for e in self.server.drain_log()
                     if e.get("event") == "request"}
            if "logged-1" in lines and "logged-2" in lines:
                break
            time.sleep(0.02)
        ok, bad = lines["logged-1"], lines["logged-2"]
        self.assertEqual((ok["plan"], ok["status"], ok["degraded"]), ("feed", 200, 0))
        self.assertNotIn("code", ok)
        self.assertGreater(ok["ms"], 0)
        self.assertRegex(ok["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual((bad["status"], bad["code"]), (404, "unknown_plan"))


class MetricsTest(SharedServer):
    def scrape(self):
        status, content_type, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(content_type, "text/plain; version=0.0.4; charset=utf-8")
        return samples(text)

    def test_families_parse_and_counters_grow_with_requests(self):
        _, before = self.scrape()
        for _ in range(3):
            self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        self.assertEqual(self.server.rank({"plan": "timeouts", "viewer_id": 1})[0], 200)
        self.assertEqual(self.server.rank({"plan": "no such plan"})[0], 404)
        self.assertEqual(
            self.server.rank({"plan": "feed", "viewer_id": 1, "params": {"zzz": 1}})[0], 400)
        families, after = self.scrape()

        for name, kind in [("rankd_requests", "counter"),
                           ("rankd_request_duration_seconds", "histogram"),
                           ("rankd_requests_in_flight", "gauge"),
                           ("rankd_requests_shed", "counter"),
                           ("rankd_node_duration_seconds", "histogram"),
                           ("rankd_node_degraded", "counter"),
                           ("rankd_redis_commands", "counter"), ("rankd_redis_errors", "counter"),
                           ("rankd_redis_in_flight", "gauge"), ("rankd_redis_reconnects", "counter"),
                           ("rankd_redis_queue_delay_seconds", "gauge"),
                           ("rankd_redis_connect_failures", "counter"), ("rankd_redis_up", "gauge"),
                           ("rankd_event_loop_lag_seconds", "gauge"),
                           ("rankd_event_loop_stalls", "counter"), ("rankd_cpu_pool_queued", "gauge"),
                           ("rankd_cpu_pool_threads", "gauge"),
                           ("rankd_plan_store_reloads", "counter"),
                           ("rankd_plan_store_reload_failures", "counter")]:
            self.assertIn((name, kind), families)

        def grew(name, by=None, **labels):
            key = (name, tuple(sorted(labels.items())))
            self.assertIn(key, after)
            delta = after[key] - before.get(key, 0)
            if by is None:
                self.assertGreater(delta, 0, key)
            else:
                self.assertEqual(delta, by, key)

        grew("rankd_requests_total", 3, plan="feed", status="200", code="")
        grew("rankd_requests_total", 1, plan="timeouts", status="200", code="")
        # A plan the store lacks is counted without its name: clients cannot add label values.
        grew("rankd_requests_total", 1, plan="", status="404", code="unknown_plan")
        self.assertFalse([k for k in after if ("plan", "no such plan") in k[1]])
        # An error after the plan is known is counted under its name.
        grew("rankd_requests_total", 1, plan="feed", status="400", code="invalid_param")
        grew("rankd_request_duration_seconds_count", 4, plan="feed")
        grew("rankd_request_duration_seconds_bucket", 4, plan="feed", le="+Inf")
        for node in ("viewer", "follow", "media", "features", "score", "quality", "top"):
            grew("rankd_node_duration_seconds_count", 3, plan="feed", node=node)
        grew("rankd_node_degraded_total", 1, plan="timeouts", node="slow_ranker", reason="timeout")
        grew("rankd_redis_commands_total", endpoint="graph")
        grew("rankd_redis_commands_total", endpoint="features")
        self.assertEqual(after[("rankd_redis_up", (("endpoint", "graph"),))], 1)
        self.assertEqual(after[("rankd_requests_in_flight", (("shard", "0"),))], 0)
        self.assertEqual(after[("rankd_cpu_pool_queued", ())], 0)
        self.assertGreaterEqual(after[("rankd_event_loop_lag_seconds", (("shard", "1"),))], 0)

    def test_build_plans_data_http_and_process_families(self):
        _, before = self.scrape()
        # A viewer with nothing in Redis: each output empty, a 200 counted as an empty result.
        status, empty = self.server.rank({"plan": "feed", "viewer_id": 424242})
        self.assertEqual(status, 200, empty)
        self.assertEqual([rows for rows in empty["outputs"].values() if rows], [])
        status, ranked = self.server.rank({"plan": "feed", "viewer_id": 1, "explain": True})
        self.assertEqual(status, 200, ranked)
        self.assertTrue(ranked["outputs"]["top"])
        unparsable = sum(n["unparsable_values"] for n in ranked["explain"]["nodes"])
        self.assertGreater(unparsable, 0)  # the dataset's "many" likes and "NaN" ages
        self.assertEqual(self.server.request("GET", "/no/such/path")[0], 404)
        self.assertEqual(self.server.request("DELETE", "/rank")[0], 405)
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1, "zzz": 1})[0], 400)
        families, after = self.scrape()

        for name, kind in [("rankd_build_info", "gauge"), ("rankd_plan_info", "gauge"),
                           ("rankd_plan_empty_results", "counter"),
                           ("rankd_unparsable_values", "counter"),
                           ("rankd_http_error_responses", "counter"),
                           ("process_cpu_seconds", "counter"),
                           ("process_resident_memory_bytes", "gauge"),
                           ("process_virtual_memory_bytes", "gauge"),
                           ("process_open_fds", "gauge"), ("process_max_fds", "gauge"),
                           ("process_start_time_seconds", "gauge")]:
            self.assertIn((name, kind), families)

        def delta(name, **labels):
            key = (name, tuple(sorted(labels.items())))
            self.assertIn(key, after)
            return after[key] - before.get(key, 0)

        def labelled(name):
            return [dict(k[1]) for k, v in after.items() if k[0] == name and v == 1]

        build = labelled("rankd_build_info")
        self.assertEqual(len(build), 1)
        self.assertRegex(build[0]["version"], r"^\d+\.\d+")
        self.assertRegex(build[0]["commit"], r"^([0-9a-f]{7,40})?$")
        self.assertTrue(build[0]["build_type"] and build[0]["compiler"], build[0])
        # One rankd_plan_info per plan of GET /plans, with its digest.
        plans = json.loads(self.server.request("GET", "/plans")[2])["plans"]
        self.assertCountEqual(labelled("rankd_plan_info"),
                              [{"plan": p["name"], "digest": p["digest"]} for p in plans])

        self.assertEqual(delta("rankd_plan_empty_results_total", plan="feed"), 1)
        # Every plan has its series from the start, 0 until one of its answers is empty.
        for p in plans:
            self.assertIn(("rankd_plan_empty_results_total", (("plan", p["name"]),)), after)
        # Counted per hash key schema (both of the registry's), as explain counts them per node.
        unparsable_delta = {schema: delta("rankd_unparsable_values_total", schema=schema)
                            for schema in ("user", "media_features")}
        self.assertEqual(sum(unparsable_delta.values()), unparsable)
        self.assertGreater(unparsable_delta["media_features"], 0)

        self.assertEqual(delta("rankd_http_error_responses_total", status="404"), 1)
        self.assertEqual(delta("rankd_http_error_responses_total", status="405"), 1)
        # Each status the HTTP layer answers on its own has a series from the start.
        for status in ("400", "413", "431", "500", "503"):
            self.assertIn(("rankd_http_error_responses_total", (("status", status),)), after)
        # /rank's answers are rankd_requests_total's, not the HTTP layer's.
        self.assertEqual(delta("rankd_http_error_responses_total", status="400"), 0)

        self.assertGreaterEqual(after[("process_cpu_seconds_total", ())], 0)
        rss = after[("process_resident_memory_bytes", ())]
        self.assertGreater(rss, 1 << 20)
        self.assertGreaterEqual(after[("process_virtual_memory_bytes", ())], rss)
        self.assertGreaterEqual(after[("process_open_fds", ())], 3)
        self.assertLessEqual(after[("process_open_fds", ())], after[("process_max_fds", ())])
        start = after[("process_start_time_seconds", ())]
        self.assertLessEqual(start, time.time() + 1)
        self.assertGreater(start, time.time() - 600)

    def test_floats_are_shortest_and_node_histograms_have_fewer_buckets(self):
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        _, _, text = self.server.request("GET", "/metrics")
        # Every value and bound as Python's repr writes its double (the fewest digits that read
        # back as it, plain from 0.0001 to below 1e16), an integral one without ".0":
        # 0.000142148, not 0.00014214800000000001; le="0.0005", not "5e-04".
        numbers = re.findall(r"^[^#].* (\S+)$", text, re.MULTILINE)
        numbers += re.findall(r'le="([^"]+)"', text)
        finite = [n for n in numbers if n not in ("+Inf", "-Inf", "NaN")]
        self.assertGreater(len(finite), 100)
        for number in finite:
            self.assertEqual(number, re.sub(r"\.0$", "", repr(float(number))))

        def le(name):
            return set(re.findall(name + r'_bucket\{[^}]*le="([^"]+)"', text))

        self.assertEqual(le("rankd_request_duration_seconds"),
                         {"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
                          "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"})
        self.assertEqual(le("rankd_node_duration_seconds"),
                         {"0.0005", "0.0025", "0.01", "0.05", "0.25", "1", "5", "+Inf"})


class ServeFaultTest(OwnServer):
    """Each test starts its own Redis and server: they stop, kill and reload them."""

    folder_prefix = "rankd-serve-fault-"

    def test_stalled_redis_gives_504_and_502_and_readyz_follows_redis(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        os.kill(self.redis.proc.pid, signal.SIGSTOP)
        try:
            # Past the request deadline (20 ms) first: deadline_exceeded; with a deadline past
            # the endpoint's command timeout: the fail node's Redis call fails, upstream_error.
            status, r = self.server.rank({"plan": "feed", "viewer_id": 1, "deadline_ms": 20})
            self.assertEqual((status, r["error"]["code"]), (504, "deadline_exceeded"), r)
            status, r = self.server.rank({"plan": "feed", "viewer_id": 1, "deadline_ms": 5000})
            self.assertEqual((status, r["error"]["code"]), (502, "upstream_error"), r)
        finally:
            os.kill(self.redis.proc.pid, signal.SIGCONT)
        status, r = self.server.rank({"plan": "feed", "viewer_id": 1})
        self.assertEqual(status, 200, r)
        self.redis.stop()
        self.server.wait_ready(False)
        status, text = self.server.request("GET", "/readyz")[::2]
        self.assertEqual(status, 503)
        self.assertIn("graph", json.loads(text)["reason"])
        lost = {(e["shard"], e["endpoint"])
                for e in self.server.wait_events("redis_connection_lost", 4)}
        self.assertEqual(lost, {(s, e) for s in (0, 1) for e in ("features", "graph")})
        self.redis.start()
        self.redis.commands(dataset())
        self.server.wait_ready(True, timeout=15)
        restored = self.server.wait_events("redis_connection_restored", 4, timeout=15)
        self.assertEqual({(e["shard"], e["endpoint"]) for e in restored}, lost)
        status, r = self.server.rank({"plan": "feed", "viewer_id": 1})
        self.assertEqual(status, 200, r)

    def burst_on_a_stopped_redis(self, clients):
        """`clients` feed requests at once (2 s deadlines, request ids c0, c1, ...) while Redis is
        stopped: each admitted one holds its slot for the endpoint's command timeout (50 ms).
        Their (status, error code, request id echoed, Retry-After), in the order answered."""
        os.kill(self.redis.proc.pid, signal.SIGSTOP)
        results = []
        lock = threading.Lock()
        go = threading.Event()

        def client(i):
            go.wait()
            conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=10)
            try:
                conn.request("POST", "/rank", json.dumps(
                    {"plan": "feed", "viewer_id": 1, "deadline_ms": 2000, "request_id": "c%d" % i}))
                response = conn.getresponse()
                r = json.loads(response.read())
                retry_after = response.getheader("Retry-After")
            finally:
                conn.close()
            with lock:
                results.append((response.status, r["error"]["code"],
                                r["request_id"] == "c%d" % i, retry_after))
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        try:
            for t in threads:
                t.start()
            go.set()
            for t in threads:
                t.join(timeout=30)
        finally:
            os.kill(self.redis.proc.pid, signal.SIGCONT)
        return results

    def test_a_burst_past_the_cap_waits_for_room(self):
        self.server = Server(self.store, self.redis, "--max_in_flight", "1", "--shards", "1")
        self.server.wait_ready()
        # Each admitted request fails on the stopped Redis; the others of the burst wait for the
        # slot in turn, within their 2 s deadlines, instead of being refused.
        results = self.burst_on_a_stopped_redis(8)
        self.assertEqual([r[:2] for r in results], [(502, "upstream_error")] * 8)
        _, metrics = samples(self.server.request("GET", "/metrics")[2])
        self.assertGreaterEqual(metrics[("rankd_requests_waited_total", ())], 1)
        self.assertEqual(sum(v for (name, _), v in metrics.items()
                             if name == "rankd_requests_shed_total"), 0)
        self.assertEqual(metrics[("rankd_requests_waiting", (("shard", "0"),))], 0)

    def test_over_the_admission_limit_answers_503_at_once(self):
        # --max_waiting 0: a request held back is refused at once instead of waiting.
        self.server = Server(self.store, self.redis, "--max_in_flight", "1", "--max_waiting", "0",
                             "--shards", "1")
        self.server.wait_ready()
        # An admitted request stays in flight for the command timeout; the others of the burst
        # arriving meanwhile are refused.
        results = self.burst_on_a_stopped_redis(16)
        # A shed request keeps the client's request_id and says when to come back.
        shed_answers = [(r[2], r[3]) for r in results if r[1] == "overloaded"]
        refused = [r for r in results if r[1] == "overloaded"]
        admitted = [r for r in results if r[1] != "overloaded"]
        self.assertEqual(len(results), 16)
        self.assertTrue(refused, results)
        self.assertTrue(admitted, results)
        self.assertEqual({r[0] for r in refused}, {503})
        self.assertEqual(set(shed_answers), {(True, "1")})
        _, metrics = samples(self.server.request("GET", "/metrics")[2])
        self.assertEqual(metrics[("rankd_requests_shed_total", (("reason", "in_flight"),))],
                         len(refused))
        # Admitted ones failed on the stopped Redis: the endpoint's command timeout.
        self.assertEqual({(r[0], r[1]) for r in admitted}, {(502, "upstream_error")})
        status, r = self.server.rank({"plan": "feed", "viewer_id": 1})
        self.assertEqual(status, 200, r)
        # The episode is logged as it starts and once it is over, with what it refused.
        [started] = self.server.wait_events("shedding_started", 1)
        self.assertEqual((started["shard"], started["reason"]), (0, "in_flight"))
        self.assertEqual(set(started["limits"]), {"features", "graph"})
        [stopped] = self.server.wait_events("shedding_stopped", 1)
        self.assertEqual((stopped["shard"], stopped["reason"], stopped["refused"]),
                         (0, "in_flight", len(refused)))
        # A failed request's line says why, where and with which plan; refusals have none (the
        # shedding lines above count them).
        requests = [e for e in self.server.drain_log() if e.get("event") == "request"]
        self.assertFalse([e for e in requests if e.get("code") == "overloaded"])
        lines = [e for e in requests if e.get("code") == "upstream_error"]
        self.assertEqual(len(lines), len(admitted))
        self.assertEqual(lines[0]["shard"], 0)
        self.assertIn("graph", lines[0]["message"])
        plans = json.loads(self.server.request("GET", "/plans")[2])
        self.assertEqual(lines[0]["plan_digest"],
                         {p["name"]: p["digest"] for p in plans["plans"]}["feed"])

    def test_a_drain_past_its_grace_still_answers_every_request_in_flight(self):
        # The timeouts plan's slow_ranker sleeps 3 s here, well past the 300 ms grace.
        self.server = Server(slow_store(self.store, self.folder), self.redis,
                             "--drain_grace_ms", "300")
        self.server.wait_ready()
        answers = {}
        lock = threading.Lock()

        def client(i):
            conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=30)
            try:
                conn.request("POST", "/rank", json.dumps(
                    {"plan": "timeouts", "viewer_id": 1, "deadline_ms": 20000,
                     "request_id": "drain-%d" % i}))
                response = conn.getresponse()
                answer = (response.status, json.loads(response.read()),
                          response.getheader("Connection"))
            except (OSError, http.client.HTTPException) as e:
                answer = ("no answer", repr(e), None)
            finally:
                conn.close()
            with lock:
                answers[i] = answer
        threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        deadline = time.time() + 20
        while True:  # every request is running (the shards' in-flight gauges, refreshed 10/s)
            _, metrics = samples(self.server.request("GET", "/metrics")[2])
            running = sum(v for (name, _), v in metrics.items()
                          if name == "rankd_requests_in_flight")
            if running == 6:
                break
            self.assertLess(time.time(), deadline, "in flight: %s" % running)
            time.sleep(0.02)
        self.server.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(self.server.stop(), 0)
        self.assertEqual(len(answers), 6, answers)
        for i, (status, body, connection) in answers.items():
            with self.subTest(request=i):
                self.assertEqual(status, 503, body)
                self.assertEqual(body["request_id"], "drain-%d" % i)
                self.assertEqual(body["error"]["code"], "shutting_down")
                self.assertEqual(connection, "close")
        logged = [e for e in self.server.drain_log() if e.get("code") == "shutting_down"]
        self.assertEqual(sorted(e["request_id"] for e in logged),
                         sorted("drain-%d" % i for i in range(6)))

    def test_sighup_reloads_and_a_broken_store_is_refused(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        before = json.loads(self.server.request("GET", "/plans")[2])
        index = os.path.join(self.store, "index.json")
        with open(index) as f:
            good = f.read()
        with open(index, "w") as f:
            f.write(good.replace('"feed.json"', '"missing.json"'))
        self.server.proc.send_signal(signal.SIGHUP)
        refused = self.server.wait_event("reload_refused")
        self.assertIn("missing.json", refused["message"])
        self.assertEqual(json.loads(self.server.request("GET", "/plans")[2]), before)
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        with open(index, "w") as f:
            f.write(good)
        time.sleep(1.1)  # loaded_at has a resolution of one second
        self.server.proc.send_signal(signal.SIGHUP)
        self.assertIn("%d plans" % len(STORE_PLANS), self.server.wait_event("reloaded")["message"])
        _, metrics = samples(self.server.request("GET", "/metrics")[2])
        self.assertEqual(metrics[("rankd_plan_store_reloads_total", ())], 1)
        self.assertEqual(metrics[("rankd_plan_store_reload_failures_total", ())], 1)
        after = json.loads(self.server.request("GET", "/plans")[2])
        self.assertGreater(after["loaded_at"], before["loaded_at"])
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)

    def test_reloads_under_load_fail_no_request(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        load = Load(self.server, 4, {"plan": "feed", "viewer_id": 1, "deadline_ms": 2000})
        try:
            for i in range(6):  # alternately by signal and by the loopback admin endpoint
                if i % 2 == 0:
                    self.server.proc.send_signal(signal.SIGHUP)
                    self.server.wait_event("reloaded")
                else:
                    status, _, text = self.server.request("POST", "/admin/reload", "")
                    self.assertEqual(status, 200, text)
                    self.assertTrue(json.loads(text)["loaded"])
                time.sleep(0.05)
        finally:
            load.stop()
        statuses = load.answers
        self.assertGreater(len(statuses), 20)
        self.assertEqual({s for s, _ in statuses}, {200}, [e for s, e in statuses if s != 200][:3])
        _, metrics = samples(self.server.request("GET", "/metrics")[2])
        self.assertEqual(metrics[("rankd_plan_store_reloads_total", ())], 6)
        # A store that does not load: 422 and the reason; the old store keeps serving.
        index = os.path.join(self.store, "index.json")
        with open(index, "w") as f:
            f.write("{")
        status, _, text = self.server.request("POST", "/admin/reload", "")
        self.assertEqual(status, 422, text)
        self.assertFalse(json.loads(text)["loaded"])
        self.assertIn("index.json", json.loads(text)["message"])
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)

    def without_plans(self, *names):
        """Drops `names` from the store's index (their artifacts stay, unlisted)."""
        index_path = os.path.join(self.store, "index.json")
        with open(index_path) as f:
            index = json.load(f)
        index["plans"] = [p for p in index["plans"] if p["name"] not in names]
        with open(index_path, "w") as f:
            json.dump(index, f)

    def reload_counts(self):
        _, metrics = samples(self.server.request("GET", "/metrics")[2])
        return (metrics[("rankd_plan_store_reloads_total", ())],
                metrics[("rankd_plan_store_reload_failures_total", ())])

    def test_a_dry_run_answers_the_diff_and_serves_nothing_new(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        before = json.loads(self.server.request("GET", "/plans")[2])
        digests = {p["name"]: p["digest"] for p in before["plans"]}

        def relabel(plan):
            plan["nodes"][0]["label"] = "relabelled"
        timeouts = write_plan_variant(self.store, "timeouts", relabel)
        added = write_plan_variant(self.store, "timeouts", relabel, as_name="timeouts_two")
        self.without_plans("feed", "reels")
        status, content_type, text = self.server.request("POST", "/admin/reload?dry_run=1")
        self.assertEqual((status, content_type), (200, "application/json"), text)
        diff = json.loads(text)
        self.assertEqual(diff["message"], "%d plans, registry %s" % (len(STORE_PLANS) - 1,
                                                                     before["registry_digest"]))
        del diff["message"]
        self.assertEqual(diff, {
            "loaded": True, "dry_run": True, "added": ["timeouts_two"],
            "removed": ["feed", "reels"],
            "changed": [{"plan": "timeouts", "from_digest": digests["timeouts"],
                         "to_digest": timeouts}],
            "in_use": ["feed"]})  # reels was never requested
        self.assertNotEqual(added, timeouts)
        # Nothing changed: the old store serves, no reload was counted or logged.
        self.assertEqual(json.loads(self.server.request("GET", "/plans")[2]), before)
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        self.assertEqual(self.server.rank({"plan": "timeouts_two", "viewer_id": 1})[0], 404)
        self.assertEqual(self.reload_counts(), (0, 0))
        # A dry run of a store that does not load: 422, as a reload.
        with open(os.path.join(self.store, "index.json"), "w") as f:
            f.write("{")
        status, _, text = self.server.request("POST", "/admin/reload?dry_run=1&allow_removals=0")
        self.assertEqual(status, 422, text)
        self.assertEqual({k: v for k, v in json.loads(text).items() if k != "message"},
                         {"loaded": False, "dry_run": True})
        self.assertIn("index.json", json.loads(text)["message"])
        self.assertEqual(self.reload_counts(), (0, 0))
        self.assertFalse([e for e in self.server.drain_log()
                          if e.get("event") in ("reloaded", "reload_refused")])
        for query, problem in (("dry_run=yes", 'dry_run must be 1 or 0, got "yes"'),
                               ("dry_run", 'dry_run must be 1 or 0, got ""'),
                               ("dry_run=1&force=1", 'unknown query parameter "force"')):
            with self.subTest(query=query):
                status, _, text = self.server.request("POST", "/admin/reload?" + query)
                self.assertEqual(status, 400, text)
                error = json.loads(text)["error"]
                self.assertEqual(error["code"], "bad_request")
                self.assertIn(problem, error["message"])

    def test_a_reload_removing_a_plan_in_use_is_refused_unless_allowed(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        # reels was never requested: a reload removes it without asking.
        self.without_plans("reels")
        status, _, text = self.server.request("POST", "/admin/reload")
        self.assertEqual(status, 200, text)
        outcome = json.loads(text)
        self.assertEqual((outcome["loaded"], outcome["dry_run"], outcome["removed"],
                          outcome["in_use"], outcome["added"], outcome["changed"]),
                         (True, False, ["reels"], [], [], []))
        self.assertEqual(self.server.rank({"plan": "reels", "viewer_id": 1})[0], 404)
        self.assertEqual(self.reload_counts(), (1, 0))
        # feed answered a request just now: removing it is refused, by POST and by SIGHUP.
        self.without_plans("reels", "feed")
        status, _, text = self.server.request("POST", "/admin/reload")
        self.assertEqual(status, 409, text)
        error = json.loads(text)["error"]
        self.assertEqual(error["code"], "plan_in_use")
        self.assertIn("requested in the last 60 s: feed; reload with allow_removals=1",
                      error["message"])
        self.assertIn("feed", self.server.wait_event("reload_refused")["message"])
        self.server.proc.send_signal(signal.SIGHUP)
        self.assertIn("allow_removals=1", self.server.wait_event("reload_refused")["message"])
        self.assertEqual(self.reload_counts(), (1, 2))
        self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)
        self.assertEqual(sorted(p["name"] for p in json.loads(
            self.server.request("GET", "/plans")[2])["plans"]),
            ["blend", "feed", "feed_fresh", "feed_gbdt", "feed_rules", "timeouts"])
        # Asked for, it is removed.
        status, _, text = self.server.request("POST", "/admin/reload?allow_removals=1")
        self.assertEqual(status, 200, text)
        outcome = json.loads(text)
        self.assertEqual((outcome["loaded"], outcome["removed"], outcome["in_use"]),
                         (True, ["feed"], ["feed"]))
        status, r = self.server.rank({"plan": "feed", "viewer_id": 1})
        self.assertEqual((status, r["error"]["code"]), (404, "unknown_plan"))
        self.assertEqual(self.reload_counts(), (2, 2))

    def test_a_second_server_on_a_taken_port_exits_2_and_the_first_keeps_it(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        endpoint = self.redis.address()
        second = subprocess.run(
            [RANKD, "serve", "--plans", self.store, "--registry", os.path.join(SOURCE, "registry"),
             "--env", "test", "--endpoint", "graph=" + endpoint, "--endpoint",
             "features=" + endpoint, "--port", str(self.server.port), "--shards", "2"],
            capture_output=True, text=True, timeout=30)
        self.assertEqual(second.returncode, 2, second.stderr)
        self.assertIn("port %d on 127.0.0.1 is in use by another process" % self.server.port,
                      second.stderr)
        for _ in range(20):  # every connection still reaches the first server
            self.assertEqual(self.server.rank({"plan": "feed", "viewer_id": 1})[0], 200)

    def test_host_unspecified_ipv6_listens_dual_stack(self):
        # --host :: takes IPv4 clients too, as 0.0.0.0 does for IPv4 alone.
        self.server = Server(self.store, self.redis, "--host", "::")
        for host in ("::1", "127.0.0.1"):
            with self.subTest(host=host):
                conn = http.client.HTTPConnection(host, self.server.port, timeout=10)
                try:
                    conn.request("GET", "/healthz")
                    self.assertEqual(conn.getresponse().status, 200)
                finally:
                    conn.close()

    def test_sigterm_under_load_answers_every_accepted_request(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        load = Load(self.server, 8, {"plan": "timeouts", "viewer_id": 1, "deadline_ms": 2000})
        time.sleep(0.5)
        self.server.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.server.proc.wait(timeout=15), 0)
        load.stop()
        statuses = [status for status, _ in load.answers]
        self.assertGreater(len(statuses), 8)
        # Every accepted request is answered by its plan: ranked, or, on a machine starved enough
        # that the plan's 5 ms CPU step overruns its own 100 ms timeout, that step's 504; never a
        # shutdown refusal or a dropped connection.
        not_ranked = [a for a in load.answers if a[0] != 200]
        for status, body in not_ranked:
            self.assertEqual(status, 504, not_ranked[:3])
            self.assertEqual(body["code"], "deadline_exceeded", not_ranked[:3])
            self.assertIn("node cpu_step timed out", body["message"], not_ranked[:3])
        self.assertIn(200, statuses)
        self.server.wait_event("stopped")

class FlagsTest(unittest.TestCase):
    def serve(self, *args):
        return subprocess.run([RANKD, "serve", *args], capture_output=True, text=True, timeout=30)

    def test_bad_flags_and_config_exit_2_naming_them(self):
        folder = tempfile.mkdtemp(prefix="rankd-serve-flags-")
        try:
            registry = os.path.join(SOURCE, "registry")
            store = write_store(SOURCE, folder)
            config = os.path.join(folder, "rankd.toml")
            cases = [
                (["--registry", registry], "--plans"),
                (["--plans", store, "--registry", registry, "--port", "70000"], "--port"),
                (["--plans", store, "--registry", registry, "--shards", "0"], "--shards"),
                (["--plans", store, "--registry", registry, "--log_sample", "2"], "--log_sample"),
                (["--plans", store, "--registry", registry, "--io_backend", "kqueue"],
                 "--io_backend"),
                (["--plans", store, "--registry", registry, "--colour", "red"], "--colour"),
                (["--plans", folder, "--registry", registry], "index.json"),
                (["--config", config], "unknown key 'colour'"),
                (["--config", os.path.join(folder, "absent.toml")], "absent.toml"),
            ]
            with open(config, "w") as f:
                f.write('plans = "%s"\nregistry = "%s"\ncolour = "red"\n' % (store, registry))
            for args, needle in cases:
                with self.subTest(args=args):
                    r = self.serve(*args)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn(needle, r.stderr)
            with open(config, "w") as f:
                f.write('plans = "%s"\nregistry = "%s"\nport = 70000\n' % (store, registry))
            r = self.serve("--config", config)
            self.assertEqual(r.returncode, 2)
            self.assertIn("config %s: --port" % config, r.stderr)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def test_config_file_sets_flags_and_the_command_line_wins(self):
        def config(folder, redis, store):
            path = os.path.join(folder, "rankd.toml")
            with open(path, "w") as f:
                f.write('plans = "%s"\nregistry = "%s"\nenv = "test"\nshards = 1\n'
                        'port = 1\nendpoint = ["graph=%s", "features=%s"]\n'
                        % (store, os.path.join(SOURCE, "registry"), redis.address(),
                           redis.address()))
            return path

        # Everything from the file but --port 0, which wins over port = 1.
        with server_on_own_redis("rankd-serve-config-", config=config) as (server, *_):
            self.assertNotEqual(server.port, 1)
            self.assertEqual(server.listening["shards"], 1)
            server.wait_ready()
            self.assertEqual(server.rank({"plan": "feed", "viewer_id": 1})[0], 200)

if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    serve_fixture.configure(RANKD, SOURCE)
    unittest.main(argv=sys.argv[:1], verbosity=2)
