"""Tests of rankd's command line: python3 cli_test.py <path to rankd> (run by ctest, label cli).

What a user and the benchmark scripts rely on: every command is listed and answers --help, what
rankd does not know exits 2 naming it, and the benchmark modes run under both spellings
(`rankd bench eventloop` and `rankd --bench_eventloop`) with the same report.
"""
import json
import subprocess
import sys
import unittest

RANKD = None
COMMANDS = ["serve", "run", "assign", "datagen", "diff", "bench", "version", "help"]
BENCH_MODES = ["eventloop", "echo-server", "http-server"]


def rankd(*args):
    return subprocess.run([RANKD, *args], capture_output=True, text=True, timeout=60)


class Listing(unittest.TestCase):
    def test_no_arguments_help_and_flags_list_every_command(self):
        for args in ([], ["help"], ["--help"], ["-h"]):
            with self.subTest(args=args):
                r = rankd(*args)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith("usage: rankd <command>"), r.stdout)
                for command in COMMANDS:
                    self.assertRegex(r.stdout, rf"\n  {command} +\S")

    def test_bench_lists_its_modes(self):
        for args in (["bench"], ["bench", "--help"], ["help", "bench"]):
            with self.subTest(args=args):
                r = rankd(*args)
                self.assertEqual(r.returncode, 0, r.stderr)
                for mode in BENCH_MODES:
                    self.assertRegex(r.stdout, rf"\n  {mode} +\S")

    def test_every_command_and_mode_takes_help(self):
        for args in [[c] for c in COMMANDS] + [["bench", m] for m in BENCH_MODES]:
            with self.subTest(args=args):
                r = rankd(*args, "--help")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith("usage: rankd " + " ".join(args)), r.stdout)


class Version(unittest.TestCase):
    def test_names_version_build_and_io_backends(self):
        r = rankd("version")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"^rankd \d+\.\d+\.\d+$")
        self.assertEqual([line.split(":")[0] for line in lines[1:]],
                         ["build type", "compiler", "git commit", "io backends"])
        self.assertIn("epoll", lines[-1])

    def test_takes_no_arguments(self):
        r = rankd("version", "--json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("'--json'", r.stderr)


class Errors(unittest.TestCase):
    def check_exit_2_naming(self, args, named):
        r = rankd(*args)
        self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
        self.assertIn(f"'{named}'", r.stderr)

    def test_unknown_commands_and_flags(self):
        self.check_exit_2_naming(["serve-all"], "serve-all")
        self.check_exit_2_naming(["--verbose"], "--verbose")
        self.check_exit_2_naming(["help", "nope"], "nope")
        self.check_exit_2_naming(["bench", "nope"], "nope")
        self.check_exit_2_naming(["bench", "eventloop", "--bogus", "1"], "--bogus")
        self.check_exit_2_naming(["bench", "echo-server", "--bogus", "1"], "--bogus")
        self.check_exit_2_naming(["bench", "http-server", "--shards", "x"], "x")


class OriginalSpellings(unittest.TestCase):
    FLAGS = ["--bench_eventloop_mode", "timers", "--bench_n", "200", "--bench_json"]

    def report_keys(self, args):
        r = rankd(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        return {mode: sorted(fields) for mode, fields in report.items()}

    def test_both_spellings_print_the_same_report(self):
        new = self.report_keys(["bench", "eventloop", *self.FLAGS])
        self.assertEqual(list(new), ["timers"])
        self.assertEqual(new, self.report_keys(["--bench_eventloop", *self.FLAGS]))
        # The selecting flag may stand anywhere, with or without a value.
        self.assertEqual(new, self.report_keys([*self.FLAGS, "--bench_eventloop"]))
        self.assertEqual(new, self.report_keys(["--bench_eventloop=true", *self.FLAGS]))

    def test_server_modes_take_their_flags(self):
        for flag in ("--bench_echo_server", "--bench_http_server"):
            with self.subTest(flag=flag):
                r = rankd("--port", "70000", flag)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(r.stderr, f"rankd {flag}: --port: expected 0..65535, got '70000'\n")


if __name__ == "__main__":
    RANKD = sys.argv.pop(1)
    unittest.main(verbosity=1)
