"""Tests of `rankd diff`: python3 diff_test.py <rankd> <source dir> (run by ctest, label cli).

Real responses (tests/cli/golden/run_responses.jsonl, the example plans' answers) against
themselves and against changed copies: the metrics rankd prints equal the definitions of
docs/experiments.md computed here independently, the text form's summary line agrees with the
JSON form, and bad arguments exit 2 and bad files exit 1, naming what is wrong.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

RANKD = None
SOURCE = None


def rankd(*args):
    return subprocess.run([RANKD, "diff", *args], capture_output=True, text=True, timeout=60)


def golden_responses():
    with open(os.path.join(SOURCE, "tests/cli/golden/run_responses.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def ranked(response, score_key):
    """[(id, score or None)] of the response's only output."""
    (rows,) = response["outputs"].values()
    return [(row["id"], row.get(score_key) if score_key else None) for row in rows]


def rbo_ext(a, b, p):
    """Webber, Moffat and Zobel 2010, eq. 32, over id lists (docs/experiments.md)."""
    s_list, l_list = (b, a) if len(b) < len(a) else (a, b)
    s, l = len(s_list), len(l_list)
    if l == 0:
        return 1.0
    if s == 0:
        return 0.0
    def x(d):
        return len(set(s_list[:d]) & set(l_list[:d]))
    total = sum(x(d) / d * p**d for d in range(1, l + 1))
    total += sum(x(s) * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((x(l) - x(s)) / l + x(s) / s) * p**l


def expected_diff(a, b, k=10, p=0.9):
    """The diff's metrics by docs/experiments.md, from [(id, score)] lists."""
    ids_a = [i for i, _ in a]
    ids_b = [i for i, _ in b]
    depth = min(k, max(len(a), len(b)))
    overlap = 1.0 if depth == 0 else len(set(ids_a[:k]) & set(ids_b[:k])) / depth
    rank_b = {i: r for r, i in enumerate(ids_b, 1)}
    score_b = dict(b)
    common = [(i, ra, rank_b[i], s, score_b[i]) for ra, (i, s) in enumerate(a, 1) if i in rank_b]
    conc = disc = ties_a = ties_b = 0
    for x in range(len(common)):
        for y in range(x + 1, len(common)):
            _, ra_x, rb_x, sa_x, sb_x = common[x]
            _, ra_y, rb_y, sa_y, sb_y = common[y]
            tie_a = sa_x is not None and sa_y is not None and sa_x == sa_y
            tie_b = sb_x is not None and sb_y is not None and sb_x == sb_y
            ties_a += tie_a
            ties_b += tie_b
            if not tie_a and not tie_b:
                if (ra_x < ra_y) == (rb_x < rb_y):
                    conc += 1
                else:
                    disc += 1
    n0 = len(common) * (len(common) - 1) // 2
    tau = None
    if len(common) >= 2 and ties_a < n0 and ties_b < n0:
        tau = (conc - disc) / math.sqrt((n0 - ties_a) * (n0 - ties_b))
    return {"overlap_at_k": overlap, "rbo": rbo_ext(ids_a, ids_b, p), "kendall_tau": tau,
            "common": len(common), "only_in_a": [i for i in ids_a if i not in rank_b],
            "only_in_b": [i for i in ids_b if i not in set(ids_a)]}


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, response):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(response if isinstance(response, str) else json.dumps(response))
        return path


class Metrics(Files):
    def check(self, a, b, *flags, k=10):
        """rankd's JSON diff of responses a and b against expected_diff."""
        path_a, path_b = self.write("a.json", a), self.write("b.json", b)
        r = rankd(path_a, path_b, "--score", "final_score", *flags, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        want = expected_diff(ranked(a, "final_score"), ranked(b, "final_score"), k=k)
        self.assertEqual(got["k"], k)
        self.assertEqual(got["common"], want["common"])
        self.assertAlmostEqual(got["overlap_at_k"], want["overlap_at_k"], places=12)
        self.assertAlmostEqual(got["rbo"], want["rbo"], places=12)
        if want["kendall_tau"] is None:
            self.assertIsNone(got["kendall_tau"])
        else:
            self.assertAlmostEqual(got["kendall_tau"], want["kendall_tau"], places=12)
        self.assertEqual([i["id"] for i in got["only_in_a"]], want["only_in_a"])
        self.assertEqual([i["id"] for i in got["only_in_b"]], want["only_in_b"])
        # The text form's summary line says the same.
        text = rankd(path_a, path_b, "--score", "final_score", *flags)
        self.assertEqual(text.returncode, 0, text.stderr)
        tau = "n/a" if got["kendall_tau"] is None else f"{got['kendall_tau']:.3f}"
        self.assertEqual(
            text.stdout.splitlines()[0],
            f"overlap@{k} {got['overlap_at_k']:.3f}  rbo(0.9) {got['rbo']:.3f}  tau {tau} "
            f"({got['common']} common)  only in A: {len(got['only_in_a'])}  "
            f"only in B: {len(got['only_in_b'])}")
        return got

    def test_a_response_against_itself(self):
        for response in golden_responses():
            with self.subTest(plan=response["plan"]):
                got = self.check(response, response)
                self.assertEqual(got["overlap_at_k"], 1)
                self.assertAlmostEqual(got["rbo"], 1, places=12)
                self.assertTrue(all(i["rank_change"] == 0 for i in got["items"]))

    def test_changed_responses(self):
        for response in golden_responses():
            (name,) = response["outputs"]
            rows = response["outputs"][name]
            changed = json.loads(json.dumps(response))
            copied = changed["outputs"][name]
            new_rows = list(reversed(copied[:6])) + copied[7:]  # top 6 reversed, the 7th dropped
            new_rows.insert(3, {"id": 424242, "final_score": 9.5})  # a new item
            for row in new_rows[:4]:
                if row["final_score"] is not None:
                    row["final_score"] = row["final_score"] + 0.25
            changed["outputs"][name] = new_rows
            with self.subTest(plan=response["plan"]):
                got = self.check(response, changed)
                self.assertEqual([i["id"] for i in got["only_in_b"]], [424242])
                self.assertEqual([i["id"] for i in got["only_in_a"]], [rows[6]["id"]])
                self.assertLess(got["rbo"], 1)
                self.check(response, changed, "--k", "3", k=3)
                self.check(changed, response, "--k=25", k=25)

    def test_text_lists_the_biggest_moves(self):
        response = golden_responses()[0]
        (name,) = response["outputs"]
        rows = response["outputs"][name]
        moved = json.loads(json.dumps(response))
        moved["outputs"][name] = rows[1:] + rows[:1]  # the top item drops to the bottom
        r = rankd(self.write("a.json", response), self.write("b.json", moved), "--score",
                  "final_score")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        top = rows[0]
        self.assertEqual(lines[1], f"  id {top['id']}  rank 1 -> {len(rows)} ({1 - len(rows)})  "
                                   f"score {top['final_score']} -> {top['final_score']}")
        self.assertEqual(len(lines), 6)  # the summary and 5 moves


class Arguments(Files):
    def test_files_may_stand_between_the_flags(self):
        a = self.write("a.json", golden_responses()[0])
        b = self.write("b.json", golden_responses()[1])
        first = rankd(a, b, "--k", "3", "--json")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(json.loads(first.stdout)["k"], 3)
        for args in (("--json", "--k", "3", a, b), ("--k=3", a, "--json", b)):
            with self.subTest(args=args):
                r = rankd(*args)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout, first.stdout)


class Errors(Files):
    def test_bad_arguments_exit_2(self):
        good = self.write("a.json", golden_responses()[0])
        for args, named in [((), "two response files"), ((good,), "two response files"),
                            ((good, good, "--k", "0"), "'0'"),
                            ((good, good, "--bogus", "1"), "'--bogus'"),
                            ((good, good, "--score"), "--score"),
                            ((good, good, good), f"unexpected argument '{good}'"),
                            ((good, os.path.join(self.dir.name, "missing.json")),
                             "B " + os.path.join(self.dir.name, "missing.json") + ": cannot open")]:
            with self.subTest(args=args):
                r = rankd(*args)
                self.assertEqual(r.returncode, 2, (r.stdout, r.stderr))
                self.assertIn(named, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_files_it_cannot_compare_exit_1(self):
        good = self.write("a.json", golden_responses()[0])
        (name,) = golden_responses()[0]["outputs"]
        duplicated = golden_responses()[0]
        rows = duplicated["outputs"][name]
        rows.append(dict(rows[0]))
        cases = [
            (good, self.write("text.json", "not json"), "B", "the response is not JSON"),
            (self.write("error.json", {"error": {"code": "unknown_plan", "message": "no plan x"}}),
             good, "A", "the response is an error: unknown_plan: no plan x"),
            (good, self.write("dup.json", duplicated), None,
             f"list B has id {rows[0]['id']} twice (ranks 1 and {len(rows)})"),
        ]
        for a, b, which, named in cases:
            with self.subTest(named=named):
                r = rankd(a, b)
                self.assertEqual(r.returncode, 1, (r.stdout, r.stderr))
                self.assertIn(named, r.stderr)
                if which:
                    self.assertIn(f"{which} {a if which == 'A' else b}: ", r.stderr)
        r = rankd(good, good, "--output", "bottom")
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'no output "bottom" (outputs: "{name}")', r.stderr)
        r = rankd(good, good, "--score", "title")
        self.assertEqual(r.returncode, 1)
        self.assertIn('"title" is a string, not a number', r.stderr)


if __name__ == "__main__":
    RANKD = sys.argv.pop(1)
    SOURCE = sys.argv.pop(1)
    unittest.main(verbosity=1)
