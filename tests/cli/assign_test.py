"""`rankd assign` (docs/experiments.md, "rankd assign"): python3 assign_test.py <path to rankd>
<source folder> (run by ctest, label cli).

Viewers from --viewer flags and from stdin get the same variants, as text and as JSON lines; each
bucket is the documented hash recomputed here, and each variant the one whose range holds it;
bad flags exit 2 naming them, as do an unknown surface and a store whose surfaces.toml is broken;
a bad stdin line exits 1 naming the line.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from rankd_harness.run_fixture import assignment_bucket as bucket, write_store

RANKD = SOURCE = None
SURFACES = """[surfaces.home]
salt = "home-2026-11"
[[surfaces.home.variants]]
name = "control"
plan = "feed"
weight = 70
[[surfaces.home.variants]]
name = "fresh"
plan = "reels"
weight = 20
[[surfaces.home.variants]]
name = "mixed"
plan = "blend"
weight = 10
"""
RANGES = [("control", "feed", 0, 7000), ("fresh", "reels", 7000, 9000),
          ("mixed", "blend", 9000, 10000)]


def expected(viewer):
    b = bucket("home-2026-11", viewer)
    for name, plan, begin, end in RANGES:
        if begin <= b < end:
            return name, plan, b
    raise AssertionError(b)


class AssignTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="rankd-assign-")
        cls.store = write_store(SOURCE, cls.folder)
        with open(os.path.join(cls.store, "surfaces.toml"), "w") as f:
            f.write(SURFACES)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def assign(self, *args, stdin="", store=None):
        return subprocess.run([RANKD, "assign", "--plans", store or self.store, "--registry",
                               os.path.join(SOURCE, "registry"), *args],
                              input=stdin, capture_output=True, text=True, timeout=60)

    def test_flags_and_stdin_give_the_documented_assignment(self):
        viewers = [0, 1, 2, 42, 1000, 9007199254740993, 9223372036854775807] + list(range(3, 60))
        flags = [a for v in viewers for a in ("--viewer", str(v))]
        r = self.assign("--surface", "home", *flags)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = ["%d %s %s" % (v, *expected(v)[:2]) for v in viewers]
        self.assertEqual(r.stdout.splitlines(), want)
        self.assertEqual({line.split()[1] for line in want}, {"control", "fresh", "mixed"})
        stdin = "".join("  %d\n\n" % v for v in viewers)  # blank lines and spaces skipped
        r = self.assign("--surface", "home", stdin=stdin)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), want)

    def test_json_lines_carry_the_bucket(self):
        r = self.assign("--surface", "home", "--json", "--viewer", "1", "--viewer", "42")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(lines, [{"viewer_id": v, "surface": "home", "variant": expected(v)[0],
                                  "plan": expected(v)[1], "bucket": expected(v)[2]}
                                 for v in (1, 42)])
        self.assertEqual([line["bucket"] for line in lines], [4281, 1331])

    def test_bad_flags_exit_2_naming_them(self):
        cases = [
            (["--surface", "home", "--viewer", "-1"], "--viewer must be an integer from 0"),
            (["--surface", "home", "--viewer", "x"], "--viewer must be an integer"),
            (["--surface", "home", "--colour", "red"], "unknown flag '--colour'"),
            (["--viewer", "1"], "--surface is required"),
            (["--surface", "nope", "--viewer", "1"], "no surface 'nope'"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                r = self.assign(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stdout, "")
        r = subprocess.run([RANKD, "assign", "--surface", "home"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--plans is required", r.stderr)

    def test_a_broken_surfaces_file_refuses_the_store(self):
        folder = tempfile.mkdtemp(prefix="rankd-assign-bad-")
        try:
            store = write_store(SOURCE, folder)
            with open(os.path.join(store, "surfaces.toml"), "w") as f:
                f.write(SURFACES.replace("weight = 20", "weight = 0"))
            r = self.assign("--surface", "home", "--viewer", "1", store=store)
            self.assertEqual(r.returncode, 2)
            self.assertIn("/surfaces/home/variants/1/weight", r.stderr)
            self.assertIn("surfaces_invalid", r.stderr)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def test_a_bad_stdin_line_exits_1_naming_it(self):
        r = self.assign("--surface", "home", stdin="1\n2\nthree\n4\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("stdin line 3", r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["1 %s %s" % expected(1)[:2],
                                                 "2 %s %s" % expected(2)[:2]])


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
