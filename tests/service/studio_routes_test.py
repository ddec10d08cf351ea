"""The studio's routes of `rankd serve` (docs/studio.md) over HTTP against a real redis-server:
the embedded page and its files with their content types, digests and cache headers (304 on a
matching ETag), a plan's analysis, the comparison of two plans on one request, the build report
rankc posts; loopback-only by default, --studio any and off; no route outside /studio changes.

Usage: studio_routes_test.py RANKD SOURCE_DIR"""
import hashlib
import http.client
import json
import re
import subprocess
import sys
import unittest

from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import local_address, server_on_own_redis


def fetch(server, method, path, body=None, headers=None, host=None):
    """(status, headers as a dict of lowercase names, body bytes)."""
    conn = http.client.HTTPConnection(host or server.host, server.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class StudioRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.context = server_on_own_redis("rankd-studio-test-", "--shards", "1")
        cls.server, _, _, cls.store = cls.context.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.context.__exit__(None, None, None)

    def page(self):
        status, headers, body = fetch(self.server, "GET", "/studio")
        self.assertEqual(status, 200, body)
        return headers, body.decode()

    def test_the_page_names_its_files_by_digest_and_is_revalidated(self):
        headers, html = self.page()
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertEqual(headers["cache-control"], "no-cache")
        self.assertIn("default-src 'self'", headers["content-security-policy"])
        self.assertEqual(headers["x-content-type-options"], "nosniff")
        etag = headers["etag"]
        self.assertEqual(fetch(self.server, "GET", "/studio", headers={"If-None-Match": etag})[0],
                         304)
        self.assertEqual(fetch(self.server, "GET", "/studio",
                               headers={"If-None-Match": '"0000000000000000"'})[0], 200)
        named = dict(re.findall(r"/studio/(studio\.(?:js|css))\?v=([0-9a-f]{16})", html))
        self.assertEqual(set(named), {"studio.js", "studio.css"}, html)
        types = {"studio.js": "text/javascript; charset=utf-8",
                 "studio.css": "text/css; charset=utf-8"}
        for name, digest in named.items():
            status, headers, body = fetch(self.server, "GET", "/studio/%s?v=%s" % (name, digest))
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], types[name])
            self.assertEqual(hashlib.sha256(body).hexdigest()[:16], digest)
            self.assertEqual(headers["etag"], '"%s"' % digest)
            self.assertEqual(headers["cache-control"], "public, max-age=31536000, immutable")
            # Without its digest (or with another) the file is revalidated; a match is a 304.
            status, headers, _ = fetch(self.server, "GET", "/studio/%s?v=old" % name)
            self.assertEqual((status, headers["cache-control"]), (200, "no-cache"))
            status, headers, body = fetch(self.server, "GET", "/studio/" + name,
                                          headers={"If-None-Match": 'W/"x", "%s"' % digest})
            self.assertEqual((status, body), (304, b""))
        status, headers, body = fetch(self.server, "HEAD", "/studio/studio.js")
        self.assertEqual((status, body), (200, b""))

    def test_a_file_the_studio_lacks_is_not_found(self):
        for path in ["/studio/nope.js", "/studio/index.embedded.html", "/studio/api"]:
            status, headers, body = fetch(self.server, "GET", path)
            self.assertEqual(status, 404, path)
            self.assertEqual(json.loads(body)["error"]["code"], "not_found")

    def test_a_plans_analysis_has_each_node_with_its_added_keys_and_static_cost(self):
        status, _, body = fetch(self.server, "GET", "/studio/api/plan/feed")
        self.assertEqual(status, 200, body)
        analysis = json.loads(body)
        artifact = json.loads(fetch(self.server, "GET", "/plans/feed")[2])
        self.assertEqual(analysis["digest"], artifact["digest"])
        self.assertEqual([n["id"] for n in analysis["nodes"]], [n["id"] for n in artifact["nodes"]])
        nodes = {n["id"]: n for n in analysis["nodes"]}
        self.assertEqual(nodes["score"]["keys_added"], ["final_score"])
        self.assertEqual(nodes["quality"]["keys_added"], [])
        self.assertEqual(nodes["top"]["output"], True)
        self.assertEqual(nodes["score"]["output"], False)
        self.assertEqual(set(nodes["features"]["keys_added"]),
                         set(artifact["nodes"][3]["params"]["keys"]))
        self.assertEqual(nodes["top"]["max_rows"], 50)  # topk(50)
        self.assertGreater(nodes["features"]["max_redis_commands"], 0)
        self.assertEqual(nodes["score"]["max_redis_commands"], 0)
        status, _, body = fetch(self.server, "GET", "/studio/api/plan/nope")
        self.assertEqual((status, json.loads(body)["error"]["code"]), (404, "unknown_plan"))

    def compare(self, query, request):
        status, _, body = fetch(self.server, "POST", "/studio/api/compare" + query,
                                json.dumps(request), {"Content-Type": "application/json"})
        return status, json.loads(body)

    def test_compare_answers_one_request_with_two_plans_and_diffs_them(self):
        request = {"plan": "feed", "viewer_id": 1}
        status, answer = self.compare("?against=feed_fresh&k=20", request)
        self.assertEqual(status, 200, answer)
        self.assertEqual((answer["a"]["plan"], answer["b"]["plan"]), ("feed", "feed_fresh"))
        [pair] = answer["diffs"]
        self.assertEqual((pair["output_a"], pair["output_b"]), ("top", "top"))
        diff = pair["diff"]
        ids_a = [r["id"] for r in answer["a"]["outputs"]["top"]]
        ids_b = [r["id"] for r in answer["b"]["outputs"]["top"]]
        self.assertTrue(ids_a and ids_b, answer)
        self.assertEqual(diff["overlap_at_k"],
                         len(set(ids_a[:20]) & set(ids_b[:20])) / min(20, max(len(ids_a),
                                                                               len(ids_b))))
        self.assertEqual(len(diff["only_in_a"]), len(set(ids_a) - set(ids_b)))
        # The same plan on both sides: the same ranking.
        status, answer = self.compare("?against=feed", request)
        self.assertEqual(status, 200, answer)
        self.assertEqual((answer["diffs"][0]["diff"]["overlap_at_k"],
                          answer["diffs"][0]["diff"]["rbo"]), (1, 1))
        # A request that cannot rank: each side's error, nothing to diff.
        status, answer = self.compare("?against=feed", {"plan": "feed"})
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["a"]["error"]["code"], "bad_request")
        self.assertEqual(answer["diffs"], [])

    def test_compare_refuses_a_query_it_cannot_run(self):
        request = {"plan": "feed", "viewer_id": 1}
        for query, status, code in [("", 400, "bad_request"), ("?against=nope", 404, "unknown_plan"),
                                    ("?against=feed&k=0", 400, "bad_request"),
                                    ("?against=feed&k=x", 400, "bad_request"),
                                    ("?against=feed&depth=3", 400, "bad_request")]:
            got, answer = self.compare(query, request)
            self.assertEqual((got, answer["error"]["code"]), (status, code), query)

    def test_the_build_report_is_kept_as_posted(self):
        status, _, body = fetch(self.server, "GET", "/studio/api/build")
        self.assertEqual(status, 200)
        self.assertIn(json.loads(body)["state"], ("none", "ok", "failed"))
        report = {"state": "failed", "at": "2026-11-27T10:00:00.000Z",
                  "diagnostics": [{"file": "plans/feed.plan.ts", "line": 3, "column": 7,
                                   "message": "unknown key \"ctrr\""}]}
        status, _, body = fetch(self.server, "POST", "/studio/api/build", json.dumps(report))
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(fetch(self.server, "GET", "/studio/api/build")[2]), report)
        status, _, body = fetch(self.server, "POST", "/studio/api/build", '{"state": ')
        self.assertEqual((status, json.loads(body)["error"]["code"]), (400, "bad_request"))
        self.assertEqual(json.loads(fetch(self.server, "GET", "/studio/api/build")[2]), report)


class StudioAccessTest(unittest.TestCase):
    def test_off_serves_no_studio_and_changes_no_other_route(self):
        answers = {}
        for access in ["off", "loopback"]:
            with server_on_own_redis("rankd-studio-test-", "--shards", "1", "--studio",
                                     access) as (server, *_):
                studio = fetch(server, "GET", "/studio")[0]
                answers[access] = {
                    "studio": studio,
                    "openapi": json.loads(fetch(server, "GET", "/openapi.json")[2]),
                    "plans": [p["name"] for p in json.loads(fetch(server, "GET", "/plans")[2])
                              ["plans"]],
                    "feed": fetch(server, "GET", "/plans/feed")[2],
                    "rank": fetch(server, "POST", "/rank",
                                  '{"plan": "feed", "viewer_id": 7}')[0],
                    "health": fetch(server, "GET", "/healthz")[:3:2],
                }
        self.assertEqual(answers["off"].pop("studio"), 404)
        self.assertEqual(answers["loopback"].pop("studio"), 200)
        self.assertEqual(answers["off"], answers["loopback"])

    def test_a_peer_not_on_loopback_is_refused_unless_the_studio_is_open_to_any(self):
        address = local_address()
        if address is None:
            self.skipTest("this machine has no address but loopback")
        with server_on_own_redis("rankd-studio-test-", "--host", address, "--shards",
                                 "1") as (server, *_):
            for method, path in [("GET", "/studio"), ("GET", "/studio/studio.js"),
                                 ("GET", "/studio/api/plan/feed"), ("GET", "/studio/api/build"),
                                 ("POST", "/studio/api/compare?against=feed")]:
                status, _, body = fetch(server, method, path, "{}" if method == "POST" else None)
                self.assertEqual((status, json.loads(body)["error"]["code"]), (403, "forbidden"),
                                 path)
        with server_on_own_redis("rankd-studio-test-", "--host", address, "--shards", "1",
                                 "--studio", "any") as (server, *_):
            self.assertEqual(fetch(server, "GET", "/studio")[0], 200)
            self.assertEqual(fetch(server, "GET", "/studio/api/plan/feed")[0], 200)
            # What the page shows of builds comes from this machine's rankc only.
            status, _, body = fetch(server, "POST", "/studio/api/build", '{"state": "ok"}')
            self.assertEqual((status, json.loads(body)["error"]["code"]), (403, "forbidden"))

    def test_a_bad_studio_flag_is_refused(self):
        r = subprocess.run([serve_fixture.RANKD, "serve", "--studio", "public", "--port", "0"],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--studio must be loopback, any or off, not 'public'", r.stderr)


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
