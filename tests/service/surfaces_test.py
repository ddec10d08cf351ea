"""Surfaces and experiments in `rankd serve` (docs/experiments.md), against a real redis-server:
python3 surfaces_test.py <path to rankd> <source folder> (run by ctest, labels cli and
integration, with Debian's python3 and its python3-prometheus-client, whose parser reads /metrics).

POST /rank naming a surface answers the ranking of the viewer's variant's plan (the same rows as
naming that plan) with surface and variant; a viewer keeps its variant across requests, a reload
(SIGHUP) and a restart; changed weights move only the viewers of the range that changed hands; an
unknown surface is 404 unknown_plan, plan and surface together or neither 400 bad_request; a
broken surfaces.toml refuses the reload and the old surfaces keep serving;
rankd_surface_requests_total counts by variant.
"""
import os
import signal
import sys
import unittest

from rankd_harness import serve_fixture
from rankd_harness.run_fixture import assignment_bucket as bucket
from rankd_harness.serve_fixture import OwnServer, Server, samples

SALT = "home-2026-11"
VIEWERS = list(range(1, 25))


def surfaces_toml(control, fresh, salt=SALT):
    return ('[surfaces.home]\nsalt = "%s"\n'
            '[[surfaces.home.variants]]\nname = "control"\nplan = "feed"\nweight = %d\n'
            '[[surfaces.home.variants]]\nname = "fresh"\nplan = "reels"\nweight = %d\n'
            % (salt, control, fresh))


def expected_variant(viewer, control, fresh):
    return "control" if bucket(SALT, viewer) < 10000 * control // (control + fresh) else "fresh"


class SurfacesTest(OwnServer):
    folder_prefix = "rankd-surfaces-"

    def setUp(self):
        super().setUp()
        self.write_surfaces(surfaces_toml(50, 50))
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()

    def write_surfaces(self, text):
        with open(os.path.join(self.store, "surfaces.toml"), "w") as f:
            f.write(text)

    def variants(self):
        """{viewer: variant} of VIEWERS, each answered 200."""
        out = {}
        for viewer in VIEWERS:
            status, r = self.server.rank({"surface": "home", "viewer_id": viewer})
            self.assertEqual(status, 200, r)
            out[viewer] = r["variant"]
        return out

    def metrics(self):
        status, _, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        return samples(text)[1]

    def test_a_surface_answers_with_the_viewers_variants_ranking(self):
        seen = set()
        for viewer in VIEWERS:
            with self.subTest(viewer=viewer):
                status, r = self.server.rank({"surface": "home", "viewer_id": viewer,
                                              "request_id": "s%d" % viewer})
                self.assertEqual(status, 200, r)
                variant = expected_variant(viewer, 50, 50)
                plan = {"control": "feed", "fresh": "reels"}[variant]
                self.assertEqual((r["surface"], r["variant"], r["plan"]), ("home", variant, plan))
                status, direct = self.server.rank({"plan": plan, "viewer_id": viewer,
                                                   "request_id": "s%d" % viewer})
                self.assertEqual(status, 200, direct)
                self.assertNotIn("variant", direct)
                self.assertEqual(r["outputs"], direct["outputs"])
                self.assertEqual(r["plan_digest"], direct["plan_digest"])
                seen.add(variant)
        self.assertEqual(seen, {"control", "fresh"})
        # Viewer 1 has data: its ranking is not empty, so the comparison above compared rows.
        _, one = self.server.rank({"surface": "home", "viewer_id": 1})
        self.assertTrue(any(one["outputs"].values()), one)

    def test_a_viewer_keeps_its_variant_across_a_reload_and_a_restart(self):
        before = self.variants()
        self.assertEqual(before, {v: expected_variant(v, 50, 50) for v in VIEWERS})
        self.assertEqual(self.variants(), before)
        self.server.proc.send_signal(signal.SIGHUP)
        self.server.wait_event("reloaded")
        self.assertEqual(self.variants(), before)
        self.server.stop()
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        self.assertEqual(self.variants(), before)

    def test_changed_weights_move_only_the_range_that_changed_hands(self):
        before = self.variants()
        self.write_surfaces(surfaces_toml(30, 70))
        self.server.proc.send_signal(signal.SIGHUP)
        self.server.wait_event("reloaded")
        after = self.variants()
        moved = {v for v in VIEWERS if before[v] != after[v]}
        self.assertEqual(moved, {v for v in VIEWERS if 3000 <= bucket(SALT, v) < 5000})
        self.assertTrue(all(before[v] == "control" and after[v] == "fresh" for v in moved))
        self.assertTrue(moved, "some of 24 viewers are in the 20% that moved")

    def test_a_broken_surfaces_file_refuses_the_reload_and_the_old_one_serves(self):
        before = self.variants()
        self.write_surfaces(surfaces_toml(50, 50).replace('plan = "reels"', 'plan = "nope"'))
        self.server.proc.send_signal(signal.SIGHUP)
        refused = self.server.wait_event("reload_refused")
        self.assertIn("surfaces.toml", refused["message"])
        self.assertIn("/surfaces/home/variants/1/plan", refused["message"])
        self.assertIn("surfaces_invalid", refused["message"])
        self.assertEqual(self.variants(), before)

    def test_errors_name_the_fields(self):
        status, r = self.server.rank({"surface": "nope", "viewer_id": 1})
        self.assertEqual((status, r["error"]["code"]), (404, "unknown_plan"))
        self.assertIn('no surface "nope"', r["error"]["message"])
        status, r = self.server.rank({"surface": "home", "plan": "feed", "viewer_id": 1})
        self.assertEqual((status, r["error"]["code"]), (400, "bad_request"))
        self.assertIn("plan and surface", r["error"]["message"])
        status, r = self.server.rank({"viewer_id": 1})
        self.assertEqual((status, r["error"]["code"]), (400, "bad_request"))
        self.assertIn("plan or surface is required", r["error"]["message"])
        status, r = self.server.rank({"surface": "home"})
        self.assertEqual((status, r["error"]["code"]), (400, "bad_request"))
        self.assertIn("viewer_id is required", r["error"]["message"])

    def test_requests_are_counted_by_surface_and_variant(self):
        key = lambda variant: ("rankd_surface_requests_total",
                               (("surface", "home"), ("variant", variant)))
        start = self.metrics()
        # Each variant has its series before any request.
        self.assertEqual(start[key("control")], 0)
        self.assertEqual(start[key("fresh")], 0)
        assigned = self.variants()
        self.server.rank({"surface": "nope", "viewer_id": 1})  # counted under no variant
        after = self.metrics()
        for variant in ("control", "fresh"):
            self.assertEqual(after[key(variant)],
                             sum(1 for v in assigned.values() if v == variant), variant)
        self.assertFalse([k for k in after if k[0] == "rankd_surface_requests_total"
                          and dict(k[1]).get("surface") == "nope"])


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
