"""Tests of the flags and config files of `rankd serve`, `rankd run` and `rankd datagen`:
python3 flags_test.py <rankd> <source dir> (run by ctest, labels cli and integration).

What an operator relies on: an unknown flag is named as unknown (not as missing its value); a
config file's value of the wrong type (`port = "8416"`) is refused naming the file, the key, its
line and the type it takes, for every key; a config file that does not open says why, with no
position; --cpu_threads sizes the CPU pool; --node_timeout_ms bounds the nodes that declare no
timeout_ms (a node's own timeout_ms wins); datagen names the Redis address once; and messages
say "an int", "an array".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from rankd_harness import serve_fixture
from rankd_harness.redis_server import RedisServer, free_port
from rankd_harness.run_fixture import redis_with_dataset, slow_store
from rankd_harness.serve_fixture import Server

RANKD = None
SOURCE = None


def degraded(response, node):
    return {d["node"]: d for d in response.get("degraded", [])}.get(node)

def rankd(*args, stdin=""):
    return subprocess.run([RANKD, *args], input=stdin, capture_output=True, text=True, timeout=60)


class UnknownFlags(unittest.TestCase):
    def test_an_unknown_flag_is_named_unknown_with_or_without_a_value(self):
        for command in (["serve"], ["run"], ["datagen"], ["bench", "eventloop"],
                        ["bench", "echo-server"], ["bench", "http-server"]):
            for args in (["--bogus"], ["--bogus", "1"], ["--bogus=1"]):
                with self.subTest(command=command, args=args):
                    r = rankd(*command, *args)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn("unknown flag '--bogus'", r.stderr)
                    self.assertNotIn("needs a value", r.stderr)

    def test_a_known_flag_at_the_end_still_needs_its_value(self):
        for command, flag in ((["serve"], "--plans"), (["run"], "--plans"),
                              (["bench", "eventloop"], "--bench_n"),
                              (["bench", "http-server"], "--shards"),
                              (["bench", "echo-server"], "--port")):
            with self.subTest(command=command):
                r = rankd(*command, flag)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("%s needs a value" % flag, r.stderr)


class ConfigFiles(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="rankd-cli-config-")
        self.config = os.path.join(self.folder, "rankd.toml")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def serve_with(self, lines):
        """`rankd serve --config` of a file holding `lines` (the keys are checked before the
        flags are required)."""
        with open(self.config, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return rankd("serve", "--config", self.config)

    def test_a_string_port_is_refused_naming_file_key_line_and_type(self):
        r = self.serve_with(['port = "8416"'])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("config %s: port must be an integer, not a string (line 1)" % self.config,
                      r.stderr)

    def test_every_key_takes_only_its_type(self):
        cases = [
            ('plans = 1', "plans must be a string, not an integer"),
            ('registry = ["a"]', "registry must be a string, not an array"),
            ('env = true', "env must be a string, not a boolean"),
            ('endpoint = 7', "endpoint must be a string or an array of them, not an integer"),
            ('endpoint = ["graph=127.0.0.1:1", 2]',
             "endpoint must be a string or an array of them, not an array holding an integer"),
            ('scheduler = 1', "scheduler must be a string, not an integer"),
            ('deadline_ms = "100"', "deadline_ms must be an integer, not a string"),
            ('node_timeout_ms = 1.5', "node_timeout_ms must be an integer, not a float"),
            ('cpu_threads = "2"', "cpu_threads must be an integer, not a string"),
            ('shards = "1"', "shards must be an integer, not a string"),
            ('host = 127', "host must be a string, not an integer"),
            ('port = [8416]', "port must be an integer, not an array"),
            ('max_in_flight = 2.0', "max_in_flight must be an integer, not a float"),
            ('log_sample = "0.5"', "log_sample must be a number, not a string"),
            ('drain_grace_ms = "5"', "drain_grace_ms must be an integer, not a string"),
            ('io_backend = 1', "io_backend must be a string, not an integer"),
            ('feature_cache_scope = 2', "feature_cache_scope must be a string, not an integer"),
            ('[server]\nport = 1', "unknown key 'server'"),
            ('config = "other.toml"', "unknown key 'config'"),
        ]
        for line, needle in cases:
            with self.subTest(line=line):
                r = self.serve_with([line])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("config %s: %s (line 1)" % (self.config, needle), r.stderr)

    def test_a_bad_value_of_the_right_type_names_the_flag_and_line(self):
        r = self.serve_with(["shards = 1", "port = 70000"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("config %s: --port must be an integer from 0 to 65535" % self.config,
                      r.stderr)
        self.assertIn("(line 2)", r.stderr)
        r = self.serve_with(['feature_cache_scope = "node"'])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--feature_cache_scope must be shard or process, not 'node'", r.stderr)

    def test_a_missing_file_says_it_cannot_open_without_a_position(self):
        absent = os.path.join(self.folder, "absent.toml")
        r = rankd("serve", "--config", absent)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("config %s: cannot open (No such file or directory)" % absent, r.stderr)
        self.assertNotIn(":0:0:", r.stderr)

    def test_a_syntax_error_keeps_its_line_and_column(self):
        r = self.serve_with(["shards = 1", "port = = 1"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("config %s:2:" % self.config, r.stderr)


class ServeEngineFlags(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder, cls.redis, cls.store = redis_with_dataset(SOURCE, "rankd-cli-serve-")

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def engine_args(self):
        endpoint = self.redis.address()
        return ["--plans", self.store, "--registry", os.path.join(SOURCE, "registry"), "--env",
                "test", "--endpoint", "graph=" + endpoint, "--endpoint", "features=" + endpoint,
                "--shards", "1"]

    def test_cpu_threads_sizes_the_cpu_pool(self):
        for threads in (1, 3):
            with self.subTest(threads=threads):
                server = Server.with_args(*self.engine_args(), "--cpu_threads", str(threads))
                try:
                    self.assertEqual(server.listening["cpu_threads"], threads)
                    self.assertIn("\nrankd_cpu_pool_threads %d\n" % threads, server.request("GET", "/metrics")[2])
                finally:
                    server.stop()

    def test_cpu_threads_from_a_config_file(self):
        config = os.path.join(self.folder, "threads.toml")
        with open(config, "w") as f:
            f.write("cpu_threads = 2\n")
        server = Server.with_args(*self.engine_args(), "--config", config)
        try:
            self.assertEqual(server.listening["cpu_threads"], 2)
        finally:
            server.stop()

    def test_cpu_threads_and_node_timeout_ms_out_of_range_exit_2(self):
        for flag, value in (("--cpu_threads", "0"), ("--cpu_threads", "x"),
                            ("--node_timeout_ms", "0"), ("--node_timeout_ms", "60001")):
            with self.subTest(flag=flag, value=value):
                r = rankd("serve", *self.engine_args(), flag, value)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("%s must be an integer from" % flag, r.stderr)

    def test_node_timeout_ms_cuts_a_node_without_timeout_ms(self):
        args = self.engine_args()
        args[args.index("--plans") + 1] = slow_store(self.store, self.folder)
        server = Server.with_args(*args, "--node_timeout_ms", "100")
        try:
            server.wait_ready()
            start = time.monotonic()
            status, body = server.rank({"plan": "timeouts", "viewer_id": 1, "deadline_ms": 5000})
            self.assertLess(time.monotonic() - start, 2.0)
            self.assertEqual(status, 200, body)
            slow = degraded(body, "slow_ranker")
            self.assertEqual(slow["reason"], "timeout", body)
            self.assertEqual(slow["message"], "node slow_ranker timed out after 100 ms")
        finally:
            server.stop()


class RunEngineFlags(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder, cls.redis, cls.store = redis_with_dataset(SOURCE, "rankd-cli-run-")

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def answers(self, lines, *flags, store=None):
        endpoint = self.redis.address()
        args = ["run", "--plans", store or self.store, "--registry",
                os.path.join(SOURCE, "registry"), "--env", "test", "--endpoint",
                "graph=" + endpoint, "--endpoint", "features=" + endpoint, *flags]
        r = rankd(*args, stdin="".join(line + "\n" for line in lines))
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(line) for line in r.stdout.splitlines()]

    def test_node_timeout_ms_cuts_a_node_without_timeout_ms(self):
        store = slow_store(self.store, self.folder)
        line = json.dumps({"plan": "timeouts", "viewer_id": 1, "deadline_ms": 5000})
        for scheduler in ("async", "sync"):
            with self.subTest(scheduler=scheduler):
                start = time.monotonic()
                out = self.answers([line], "--node_timeout_ms", "100", "--scheduler", scheduler,
                                   store=store)
                self.assertLess(time.monotonic() - start, 2.5)
                self.assertNotIn("error", out[0], out[0])
                slow = degraded(out[0], "slow_ranker")
                self.assertEqual(slow["reason"], "timeout", out[0])
                self.assertEqual(slow["message"], "node slow_ranker timed out after 100 ms")

    def test_a_nodes_own_timeout_ms_wins_over_node_timeout_ms(self):
        line = json.dumps({"plan": "timeouts", "viewer_id": 1, "deadline_ms": 5000})
        out = self.answers([line], "--node_timeout_ms", "1000")
        slow = degraded(out[0], "slow_ranker")  # timeout_ms 20, sleeps 80 ms
        self.assertEqual(slow["message"], "node slow_ranker timed out after 20 ms", out[0])

    def test_without_node_timeout_ms_a_node_runs_to_the_deadline(self):
        store = slow_store(self.store, self.folder)
        line = json.dumps({"plan": "timeouts", "viewer_id": 1, "deadline_ms": 400})
        out = self.answers([line], store=store)
        self.assertEqual(out[0]["error"]["code"], "deadline_exceeded", out[0])
        self.assertIn("did not finish by the request's deadline (400 ms)",
                      out[0]["error"]["message"])

    def test_cpu_threads_is_an_engine_flag_of_run(self):
        feed = json.dumps({"plan": "feed", "viewer_id": 1})
        out = self.answers([feed], "--cpu_threads", "2")
        self.assertIn("outputs", out[0], out[0])
        r = rankd("run", "--plans", self.store, "--registry", os.path.join(SOURCE, "registry"),
                  "--cpu_threads", "0")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--cpu_threads must be an integer from 1", r.stderr)

    def test_type_messages_say_an_int_and_an_array(self):
        out = self.answers([
            json.dumps({"plan": "feed", "viewer_id": 1, "params": {"like_weight": [1]}}),
            json.dumps({"plan": "feed", "viewer_id": 1, "params": []}),
        ])
        self.assertIn("expected a number, got an array", out[0]["error"]["message"])
        self.assertIn("params must be an object of param values, not an array",
                      out[1]["error"]["message"])


class Datagen(unittest.TestCase):
    def test_an_unreachable_redis_is_named_once(self):
        address = "127.0.0.1:%d" % free_port()
        r = rankd("datagen", "--dataset", "tiny", "--redis", address)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.count(address), 1, r.stderr)

    def test_a_refused_command_names_the_address(self):
        folder = tempfile.mkdtemp(prefix="rankd-cli-datagen-")
        redis = RedisServer(folder)
        try:
            redis.commands([("CONFIG", "SET", "maxmemory", "1")])
            r = rankd("datagen", "--dataset", "tiny", "--redis", redis.address())
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stderr.count(redis.address()), 1, r.stderr)
        finally:
            redis.stop()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    serve_fixture.configure(RANKD, SOURCE)
    unittest.main(argv=sys.argv[:1], verbosity=2)
