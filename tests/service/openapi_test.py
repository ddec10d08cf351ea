"""GET /openapi.json of `rankd serve`, checked against the live server:
python openapi_test.py <path to rankd> <source folder>, run by ctest (labels cli and integration)
with the python of the test venv that scripts/setup.sh makes (openapi-spec-validator and
schemathesis from PyPI, pinned in tests/service/requirements.txt; Debian's packages visible).

- The document is valid OpenAPI 3.1 (openapi-spec-validator), has every route, and describes each
  plan of the store: its params (types, bounds, defaults, which are RE2 patterns), whether
  viewer_id is required, its outputs' row keys with the registry's types.
- Real answers of every endpoint and error validate against the document's schemas, the HTTP
  layer's own errors (components.responses, each with its code) included.
- schemathesis, a bounded run from the document against the server (a fixed seed): no server
  error but 504 deadline_exceeded (the answer to a deadline_ms the client chose too short), every
  status, content type, header and body as documented, invalid requests rejected; the run ranked
  with every plan.
- A store with a surfaces.toml describes each surface's request (surface and viewer_id
  required), and surface answers (with surface and variant) and errors conform.
- A reload that drops a plan drops it from the document (one requested just now only with
  allow_removals=1: 409 plan_in_use otherwise); POST /admin/reload from a peer that is not
  loopback is 403 forbidden.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from prometheus_client.parser import text_string_to_metric_families

from rankd_harness import serve_fixture
from rankd_harness.run_fixture import STORE_PLANS
from rankd_harness.serve_fixture import SharedServer, local_address, server_on_own_redis

ROUTES = {"/rank": "post", "/plans": "get", "/plans/{name}": "get", "/healthz": "get",
          "/readyz": "get", "/metrics": "get", "/openapi.json": "get", "/admin/reload": "post"}

# schemathesis' checks, all but positive_data_acceptance: JSON Schema's "integer" admits 17.0,
# which rankd's requests refuse (docs/engine.md, "Requests": integer literals only), and no schema
# can say so; the refusal is a documented 400, which the other checks hold it to.
SCHEMATHESIS_CONFIG = """
[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "504"]
"""


def document(server):
    status, content_type, text = server.request("GET", "/openapi.json")
    assert status == 200 and content_type == "application/json", (status, content_type)
    return json.loads(text)


class DocumentCheck(SharedServer):
    """The document of the class's server, and checks of real answers against it."""

    def setUp(self):
        self.doc = document(self.server)

    def schema(self, path, method, status, content_type="application/json"):
        """A validator of the documented body of `method path` answering `status`."""
        response = self.doc["paths"][path][method]["responses"][str(status)]
        root = dict(response["content"][content_type]["schema"])
        root["components"] = self.doc["components"]  # where its $refs point
        return Draft202012Validator(root)

    def assertConforms(self, path, method, body=None, status=200, query=""):
        got, content_type, text = self.server.request(method.upper(), path.replace(
            "{name}", "feed") + query, body)
        self.assertEqual(got, status, text)
        media = content_type.split(";")[0]
        self.assertIn(media, self.doc["paths"][path][method]["responses"][str(status)]["content"])
        if media == "application/json":
            errors = [e.message for e in self.schema(path, method, status).iter_errors(
                json.loads(text))]
            self.assertEqual(errors, [], text[:500])
        return text


class DocumentTest(DocumentCheck):
    def test_the_document_is_valid_openapi_3_1_with_every_route(self):
        validate_openapi(self.doc)
        self.assertEqual(self.doc["openapi"], "3.1.0")
        self.assertEqual({p: list(ops) for p, ops in self.doc["paths"].items()},
                         {p: [m] for p, m in ROUTES.items()})

    def test_each_plan_is_described_with_its_params_and_outputs(self):
        schemas = self.doc["components"]["schemas"]
        self.assertEqual([r["$ref"].rsplit("/", 1)[1] for r in schemas["RankRequest"]["oneOf"]],
                         ["RankRequest." + p for p in sorted(STORE_PLANS)])
        for name in STORE_PLANS:
            with self.subTest(plan=name):
                _, _, text = self.server.request("GET", "/plans/" + name)
                artifact = json.loads(text)
                request = schemas["RankRequest." + name]
                self.assertEqual(request["properties"]["plan"], {"const": name})
                reads_viewer = any(n["op"] == "viewer" for n in artifact["nodes"])
                self.assertEqual("viewer_id" in request["required"], reads_viewer)
                params = request["properties"]["params"]["properties"]
                self.assertEqual(sorted(params), sorted(artifact["params"]))
                for param, p in artifact["params"].items():
                    want = {"int": "integer", "float": "number", "string": "string",
                            "bool": "boolean"}[p["type"]]
                    self.assertEqual(params[param]["type"], want, param)
                    self.assertEqual(params[param]["default"], p["default"], param)
                    for bound, key in (("min", "minimum"), ("max", "maximum"),
                                       ("max_bytes", "x-max-bytes")):
                        if bound in p:
                            self.assertEqual(params[param][key], p[bound], param)
                response = schemas["RankResponse." + name]
                self.assertEqual(response["properties"]["plan_digest"], {"const": artifact["digest"]})
                self.assertEqual(sorted(response["properties"]["outputs"]["required"]),
                                 sorted(artifact["outputs"]))
        # feed's blocklist_regex is a pattern for a regex predicate.
        feed = schemas["RankRequest.feed"]["properties"]["params"]["properties"]
        self.assertEqual(feed["blocklist_regex"].get("format"), "regex")
        self.assertEqual(feed["blocklist_regex"].get("x-max-bytes"), 256)
        self.assertIn("at most 256 bytes", feed["blocklist_regex"]["description"])
        self.assertNotIn("format", feed["min_score"])

    def test_real_answers_conform_to_the_document(self):
        for name in STORE_PLANS:
            with self.subTest(plan=name):
                text = self.assertConforms("/rank", "post", json.dumps(
                    {"plan": name, "viewer_id": 1, "explain": True}))
                rows = json.loads(text)["outputs"]
                self.assertTrue(any(rows.values()), "the plan ranked something")
        # A trace of an id the feed returns, one it never produced and, with a deadline of 1 ms,
        # one through nodes that did not finish.
        top = json.loads(self.assertConforms("/rank", "post", json.dumps(
            {"plan": "feed", "viewer_id": 1})))["outputs"]["top"]
        traced = json.loads(self.assertConforms("/rank", "post", json.dumps(
            {"plan": "feed", "viewer_id": 1, "trace_ids": [top[0]["id"], -1]})))
        self.assertEqual([t["outcome"] for t in traced["explain"]["trace"]],
                         ["returned", "not_produced"])
        self.assertConforms("/rank", "post", '{"plan": "timeouts", "viewer_id": 1, '
                            '"deadline_ms": 1, "trace_ids": [1]}', status=504)
        degraded = json.loads(self.assertConforms("/rank", "post",
                                                 '{"plan": "timeouts", "viewer_id": 1}'))
        self.assertEqual([d["node"] for d in degraded["degraded"]], ["slow_ranker"])
        self.assertConforms("/rank", "post", '{"plan": "feed"', status=400)
        self.assertConforms("/rank", "post", '{"plan": "feed", "viewer_id": 1, '
                            '"params": {"blocklist_regex": "("}}', status=400)
        self.assertConforms("/rank", "post", '{"plan": "nope"}', status=404)
        self.assertConforms("/rank", "post", '{"plan": "timeouts", "viewer_id": 1, "deadline_ms": 1}',
                            status=504)
        failed = json.loads(self.assertConforms(
            "/rank", "post", '{"plan": "timeouts", "viewer_id": 1, "deadline_ms": 1, '
            '"explain": true}', status=504))
        self.assertEqual(failed["error"]["code"], "deadline_exceeded")
        self.assertTrue({n["status"] for n in failed["explain"]["nodes"]} - {"ok"}, failed)
        for path in ("/plans", "/plans/{name}", "/healthz", "/readyz", "/metrics",
                     "/openapi.json"):
            with self.subTest(path=path):
                self.assertConforms(path, "get")
        self.assertConforms("/admin/reload", "post")
        self.assertConforms("/admin/reload", "post", query="?dry_run=1")
        self.assertConforms("/admin/reload", "post", query="?dry_run=maybe", status=400)
        # A mistaken validator would pass anything: a body the document does not allow fails.
        errors = list(self.schema("/rank", "post", 200).iter_errors({"plan": "feed"}))
        self.assertTrue(errors)

    def test_the_http_layers_errors_are_listed_with_their_codes_and_conform(self):
        responses = self.doc["components"]["responses"]
        codes = {name: r["content"]["application/json"]["schema"]["allOf"][1]["properties"]
                 ["error"]["properties"]["code"]["const"] for name, r in responses.items()}
        self.assertEqual(codes, {
            "BadRequest": "bad_request", "NotFound": "not_found",
            "MethodNotAllowed": "method_not_allowed", "LengthRequired": "length_required",
            "PayloadTooLarge": "payload_too_large", "ExpectationFailed": "expectation_failed",
            "HeadersTooLarge": "headers_too_large", "Internal": "internal",
            "NotImplemented": "not_implemented", "Overloaded": "overloaded",
            "HttpVersionNotSupported": "http_version_not_supported"})

        def validator(schema):
            return Draft202012Validator(dict(schema, components=self.doc["components"]))

        for method, path, name, status in (("GET", "/nope", "NotFound", 404),
                                           ("POST", "/healthz", "MethodNotAllowed", 405)):
            with self.subTest(path=path):
                got, content_type, text = self.server.request(
                    method, path, headers={"X-Request-Id": "openapi-1"})
                self.assertEqual((got, content_type), (status, "application/json"), text)
                body = json.loads(text)
                self.assertEqual(body["request_id"], "openapi-1")
                schema = responses[name]["content"]["application/json"]["schema"]
                self.assertEqual([e.message for e in validator(schema).iter_errors(body)], [])
        # A head over the limit: the operation's documented 431.
        got, content_type, text = self.server.request(
            "GET", "/healthz", headers={"X-Big": "a" * (32 * 1024)})
        self.assertEqual((got, content_type), (431, "application/json"), text)
        self.assertEqual(
            [e.message for e in self.schema("/healthz", "get", 431).iter_errors(json.loads(text))],
            [])

    def test_schemathesis_finds_nothing_against_the_live_server(self):
        with tempfile.TemporaryDirectory(prefix="rankd-schemathesis-") as folder:
            config = os.path.join(folder, "schemathesis.toml")
            with open(config, "w") as f:
                f.write(SCHEMATHESIS_CONFIG)
            url = "http://127.0.0.1:%d/openapi.json" % self.server.port
            r = subprocess.run(
                [os.path.join(os.path.dirname(sys.executable), "schemathesis"), "--config-file",
                 config, "run", url, "--checks", "all", "--exclude-checks",
                 "positive_data_acceptance", "--max-examples", "60", "--seed", "1",
                 "--request-timeout", "10", "--no-color"],
                cwd=folder, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-6000:] + r.stderr[-2000:])
        self.assertIn("passed", r.stdout)
        _, _, text = self.server.request("GET", "/metrics")
        ranked = {s.labels["plan"] for f in text_string_to_metric_families(text)
                  if f.name == "rankd_requests" for s in f.samples
                  if s.labels.get("status") == "200" and s.value > 0}
        self.assertEqual(ranked, set(STORE_PLANS), "schemathesis ranked with every plan")


class ReloadDocumentTest(DocumentCheck):
    def test_a_reload_without_a_plan_drops_it_from_the_document(self):
        self.assertIn("RankRequest.reels", self.doc["components"]["schemas"])
        self.assertEqual(self.server.rank({"plan": "reels", "viewer_id": 1})[0], 200)
        index_path = os.path.join(self.store, "index.json")
        with open(index_path) as f:
            index = json.load(f)
        index["plans"] = [p for p in index["plans"] if p["name"] != "reels"]
        with open(index_path, "w") as f:
            json.dump(index, f)
        # reels answered a request just now: removing it takes allow_removals.
        self.assertConforms("/admin/reload", "post", status=409)
        self.assertIn("RankRequest.reels", document(self.server)["components"]["schemas"])
        removed = json.loads(self.assertConforms("/admin/reload", "post",
                                                 query="?allow_removals=1"))
        self.assertEqual((removed["removed"], removed["in_use"]), (["reels"], ["reels"]))
        schemas = document(self.server)["components"]["schemas"]
        self.assertNotIn("RankRequest.reels", schemas)
        self.assertIn("RankRequest.feed", schemas)


class SurfaceDocumentTest(DocumentCheck):
    def test_a_surface_is_described_and_its_answers_conform(self):
        with open(os.path.join(self.store, "surfaces.toml"), "w") as f:
            f.write('[surfaces.home]\nsalt = "home-1"\n'
                    '[[surfaces.home.variants]]\nname = "control"\nplan = "feed"\nweight = 1\n'
                    '[[surfaces.home.variants]]\nname = "fresh"\nplan = "reels"\nweight = 1\n')
        self.assertConforms("/admin/reload", "post")
        self.doc = document(self.server)
        validate_openapi(self.doc)
        schemas = self.doc["components"]["schemas"]
        self.assertIn({"$ref": "#/components/schemas/RankRequest.surface.home"},
                      schemas["RankRequest"]["oneOf"])
        request = schemas["RankRequest.surface.home"]
        self.assertEqual(request["properties"]["surface"], {"const": "home"})
        self.assertEqual(sorted(request["required"]), ["surface", "viewer_id"])
        root = {"$ref": "#/components/schemas/RankRequest", "components": self.doc["components"]}
        self.assertEqual(list(Draft202012Validator(root).iter_errors(
            {"surface": "home", "viewer_id": 3, "deadline_ms": 500})), [])
        self.assertTrue(list(Draft202012Validator(root).iter_errors({"surface": "home"})))
        variants = set()
        for viewer in range(1, 9):
            answer = json.loads(self.assertConforms("/rank", "post", json.dumps(
                {"surface": "home", "viewer_id": viewer})))
            variants.add(answer["variant"])
        self.assertEqual(variants, {"control", "fresh"})
        self.assertConforms("/rank", "post", '{"surface": "nope", "viewer_id": 1}', status=404)
        self.assertConforms("/rank", "post", '{"surface": "home", "plan": "feed"}', status=400)


class NonLoopbackPeerTest(unittest.TestCase):
    def test_admin_reload_from_a_peer_not_on_loopback_is_forbidden(self):
        address = local_address()
        if address is None:
            self.skipTest("this machine has no address but loopback")
        # Listening on the machine's own address: the connection stays on this host, and its peer
        # address is that address, not 127.0.0.1.
        with server_on_own_redis("rankd-openapi-test-", "--host", address, "--shards", "1") as (
                server, *_):
            status, _, text = server.request("POST", "/admin/reload")
            self.assertEqual(status, 403, text)
            self.assertEqual(json.loads(text)["error"]["code"], "forbidden")
            self.assertEqual(server.request("GET", "/healthz")[0], 200)
            self.assertFalse([e for e in server.drain_log() if e.get("event") == "reloaded"])

if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
