"""What `make demo` (scripts/demo.py) and `make demo-cluster` (scripts/demo_cluster.py) share:
unwinding on SIGTERM, step headings, starting `rankd serve` and waiting for it, HTTP requests to
it, a ranked feed as a table, and the surfaces.toml `make demo` serves (which
tests/service/demo_test.py checks). Standard library only (Debian's python3).
"""
import http.client
import json
import subprocess
import time

# The experiment `make demo` shows: half the viewers of the `home` surface get feed_fresh, which
# is also the surface's shadow plan.
SURFACES = """[surfaces.home]
salt = "home-demo"
[[surfaces.home.variants]]
name = "control"
plan = "feed"
weight = 50
[[surfaces.home.variants]]
name = "fresh"
plan = "feed_fresh"
weight = 50
[surfaces.home.shadow]
plan = "feed_fresh"
sample = 1
"""


class Stop(Exception):
    """SIGTERM: unwinds like Ctrl-C, so that everything started is stopped."""


def on_sigterm(signum, frame):
    raise Stop()


def step(text):
    print("\n== %s" % text, flush=True)


def request(port, method, path, body=None, conn=None):
    """(status, body text) of one HTTP request to 127.0.0.1:`port`, on `conn` when given (kept
    open) or on a new connection."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body,
                     headers={"Content-Type": "application/json"} if body else {})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        if own:
            conn.close()


def start_serve(command, log, log_path, who, timeout=30):
    """Starts `command` (a `rankd serve` with --port and its JSON log on stderr into `log`, a file
    open for writing at `log_path`), waits for its "listening" line and for GET /readyz to answer
    200, and returns (process, port). Exits naming `who` when it exits or is not ready in
    `timeout` seconds."""
    serve = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + timeout
    port = None
    while port is None:
        with open(log_path) as f:
            for line in f:
                event = json.loads(line)
                if event.get("event") == "listening":
                    port = event["port"]
        if serve.poll() is not None:
            raise SystemExit("%s: rankd serve exited: %s" % (who, open(log_path).read()))
        if time.monotonic() > deadline:
            raise SystemExit("%s: rankd serve did not start listening" % who)
        time.sleep(0.05)
    while request(port, "GET", "/readyz")[0] != 200:
        if serve.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("%s: rankd serve did not get ready" % who)
        time.sleep(0.05)
    return serve, port


def print_top(rows, count):
    """The first `count` rows of a feed answer's `top` output: rank, media, author, score, title."""
    print("%4s  %-9s  %-7s  %7s  %s" % ("rank", "media", "author", "score", "title"))
    for i, row in enumerate(rows[:count], 1):
        print("%4d  %-9s  %-7s  %7.3f  %s" % (i, row["id"], row.get("author_id"),
                                           row.get("final_score") or 0, row.get("title")))
