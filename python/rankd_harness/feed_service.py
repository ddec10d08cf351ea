"""The feed plan served for a benchmark: a private redis-server (redis_server.RedisServer) loaded
with a `rankd datagen` dataset, the repository's plans compiled by rankc, and `rankd serve` on a
free loopback port; and where the Rust peer serving the same plan is built. Shared by the runners
in bench/scripts (plan, overload, shadow, model feed) and tests/bench; every process started here
is stopped by PID."""
import json
import os
import re
import subprocess
import threading
import time
import urllib.request

from rankd_harness.bench_env import REPO_ROOT
from rankd_harness.bench_server import Server, ServerError

# The Rust peer serving the feed plan (bench/peers), built by `make bench`, `make bench-plan` and
# `make test` where cargo is on PATH.
RUST_PEER = os.path.join(REPO_ROOT, "build-bench", "rust_feed", "release", "rust_feed_server")
# Viewers in each dataset of `rankd datagen` (docs/operations.md, "Datasets").
DATASET_USERS = {"tiny": 200, "demo": 2000, "bench": 100000}


class RankdServer(Server):
    """`rankd serve` on a free port: its `listening` log line (stderr) names the port; ready once
    /readyz answers 200."""

    def wait_listening(self):
        threading.Thread(target=self._drain, daemon=True).start()  # stdout, should it write
        deadline = time.time() + self.listen_timeout_s
        while self.port is None:
            if self.proc.poll() is not None or time.time() > deadline:
                raise ServerError("%s did not start: %s" % (self.name, self.stderr_tail()))
            self.stderr.seek(0)
            for line in self.stderr.read().splitlines():
                if '"listening"' in line:
                    self.port = json.loads(line)["port"]
            time.sleep(0.02)
        while time.time() < deadline:
            try:
                if urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.port).status == 200:
                    return self.port
            except OSError:
                pass
            time.sleep(0.02)
        raise ServerError("%s never became ready" % self.name)


def load_dataset(rankd, redis, dataset, log):
    """Flushes `redis` and loads `dataset` into it with `rankd datagen`; returns its key count."""
    log("redis-server on %s; loading the %s dataset" % (redis.address(), dataset))
    out = subprocess.run([rankd, "datagen", "--dataset", dataset, "--redis", redis.address(),
                          "--flush"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit("datagen failed: " + out.stderr[-500:])
    log("  " + out.stderr.strip().splitlines()[-1])
    return int(re.search(r"(\d+) keys \(", out.stderr).group(1))


def build_plans(folder, registry):
    """Compiles the repository's plans/ with rankc against `registry` into <folder>/plans:
    returns (the store's path, the feed plan's digest)."""
    store = os.path.join(folder, "plans")
    out = subprocess.run(["node", os.path.join(REPO_ROOT, "dsl", "bin", "rankc.js"), "build",
                          os.path.join(REPO_ROOT, "plans"), "--out", store, "--registry", registry],
                         capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    if out.returncode != 0:
        raise SystemExit("rankc build failed: " + (out.stderr or out.stdout)[-500:])
    with open(os.path.join(store, "index.json")) as f:
        feed_digest = next(p["digest"] for p in json.load(f)["plans"] if p["name"] == "feed")
    return store, feed_digest


def rankd_serve_args(store, registry, redis_address):
    """`rankd serve`'s flags for the feed plan on the `test` environment against one Redis, on a
    free port (RankdServer reads it from the log), without request sampling in the log."""
    return ["--plans", store, "--registry", registry, "--env", "test", "--endpoint",
            "graph=" + redis_address, "--endpoint", "features=" + redis_address, "--port", "0",
            "--log_sample", "0"]
