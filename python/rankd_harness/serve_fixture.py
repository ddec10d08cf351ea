"""What the `rankd serve` tests share: a server on a free port with its JSON log lines collected,
a load of client threads, test case classes owning one Redis (the example dataset) and one
server, and readers of what a server writes (/metrics samples, JSON-lines files).
configure() names the rankd binary and the source folder first."""
import contextlib
import http.client
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
import unittest

from rankd_harness.files import lines_when
from rankd_harness.processes import stop_process
from rankd_harness.run_fixture import redis_with_dataset

RANKD = SOURCE = None


def configure(rankd, source):
    global RANKD, SOURCE
    RANKD, SOURCE = rankd, source


class Server:
    """A `rankd serve` on a free port; its stderr (JSON lines) collected by a thread."""

    def __init__(self, store, redis, *flags, config=None):
        if config:  # everything from the file but the port
            args = ["--config", config, "--port", "0"]
        else:
            endpoint = redis.address()
            args = ["--plans", store, "--registry", os.path.join(SOURCE, "registry"), "--env",
                    "test", "--endpoint", "graph=" + endpoint, "--endpoint",
                    "features=" + endpoint, "--port", "0", "--shards", "2", *flags]
        self._start(args, flags)

    @classmethod
    def with_args(cls, *args):
        """`rankd serve --port 0 ARGS...`: flags and config files exactly as given."""
        server = cls.__new__(cls)
        server._start(["--port", "0", *args], args)
        return server

    def _start(self, args, flags):
        self.proc = subprocess.Popen([RANKD, "serve", *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.log = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        try:
            self.listening = self.wait_event("listening", 20)
        except BaseException:
            self.proc.kill()  # never leave a server behind
            self.proc.wait()
            raise
        self.port = self.listening["port"]
        self.host = flags[flags.index("--host") + 1] if "--host" in flags else "127.0.0.1"

    def _read(self):
        for line in self.proc.stderr:
            self.lines.put(line)

    def drain_log(self):
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return self.log
            self.log.append(json.loads(line))

    def wait_event(self, event, timeout=10):
        """The first log line of `event` after those already seen."""
        deadline = time.time() + timeout
        seen = len(self.log)
        while time.time() < deadline:
            exited = self.proc.poll() is not None
            if exited:
                self.reader.join(timeout=5)  # every line it wrote is in the queue
            self.drain_log()
            for entry in self.log[seen:]:
                if entry.get("event") == event:
                    return entry
            seen = len(self.log)
            if exited:
                raise AssertionError("rankd serve exited %s before '%s'" % (self.proc.returncode, event))
            time.sleep(0.02)
        raise AssertionError("no '%s' log line within %ss: %s" % (event, timeout, self.log[-5:]))

    def wait_events(self, event, count, timeout=10):
        """The log's lines of `event` (from the start), once there are at least `count`."""
        deadline = time.time() + timeout
        while True:
            found = [e for e in self.drain_log() if e.get("event") == event]
            if len(found) >= count:
                return found
            remaining = deadline - time.time()
            if remaining <= 0:
                raise AssertionError("%d '%s' log lines within %ss, not %d: %s" % (
                    len(found), event, timeout, count, self.log[-5:]))
            try:  # the next line the server writes, or the deadline
                self.log.append(json.loads(self.lines.get(timeout=remaining)))
            except queue.Empty:
                pass

    def request(self, method, path, body=None, timeout=10, headers=None):
        status, answer_headers, text = self.exchange(method, path, body, timeout, headers)
        return status, answer_headers.get("Content-Type"), text

    def exchange(self, method, path, body=None, timeout=10, headers=None):
        """(status, the answer's headers as an http.client.HTTPMessage, its body as text)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            headers = dict(headers or {})
            if body is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.headers, r.read().decode()
        finally:
            conn.close()

    def rank(self, request, timeout=10, headers=None):
        body = request if isinstance(request, str) else json.dumps(request)
        status, _, text = self.request("POST", "/rank", body, timeout, headers)
        return status, json.loads(text)

    def wait_ready(self, ready=True, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _, _ = self.request("GET", "/readyz")
            if (status == 200) == ready:
                return
            time.sleep(0.05)
        raise AssertionError("/readyz did not become %s" % ("200" if ready else "503"))

    def stop(self):
        stop_process(self.proc)
        self.reader.join(timeout=10)  # to the end of its stderr
        self.proc.stderr.close()
        return self.proc.returncode


class Load:
    """`clients` threads sending `request` to /rank until stop(); each answer is kept as
    (status, error). A client whose connection fails (refused or closed: a drain) stops."""

    def __init__(self, server, clients, request):
        self.answers = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(server, request))
                         for _ in range(clients)]
        for t in self._threads:
            t.start()

    def _client(self, server, request):
        while not self._stop.is_set():
            try:
                status, r = server.rank(request)
            except (ConnectionError, http.client.HTTPException, OSError):
                return
            with self._lock:
                self.answers.append((status, r.get("error")))

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)


@contextlib.contextmanager
def server_on_own_redis(prefix, *flags, config=None):
    """A Redis with the example dataset and a server on it, both stopped (and their folder
    removed) on leaving, also when the body fails: yields (server, folder, redis, store).
    `config` is called with (folder, redis, store) and returns a config file path, or None."""
    folder, redis, store = redis_with_dataset(SOURCE, prefix)
    server = None
    try:
        server = Server(store, redis, *flags,
                        config=config(folder, redis, store) if config else None)
        yield server, folder, redis, store
    finally:
        if server:
            server.stop()
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)


class OwnServer(unittest.TestCase):
    """Each test starts its own Redis (the example dataset) and sets self.server: tests that
    stop, kill or reload them. Both are stopped after the test, also when it fails."""

    folder_prefix = "rankd-serve-own-"

    def setUp(self):
        self.folder, self.redis, self.store = redis_with_dataset(SOURCE, self.folder_prefix)
        self.server = None

    def tearDown(self):
        try:
            if self.server:
                self.server.stop()
        finally:
            self.redis.stop()
            shutil.rmtree(self.folder, ignore_errors=True)


class SharedServer(unittest.TestCase):
    """Tests that share one Redis and one server (their own, per class)."""

    @classmethod
    def server_flags(cls, folder):
        """The server's flags besides the store and the endpoints (`folder` is the class's)."""
        return ()

    @classmethod
    def setUpClass(cls):
        cls.folder, cls.redis, cls.store = redis_with_dataset(SOURCE, "rankd-serve-test-")
        try:
            cls.server = Server(cls.store, cls.redis, *cls.server_flags(cls.folder))
            cls.server.wait_ready()
        except BaseException:
            # tearDownClass does not run after a failed setUpClass.
            if getattr(cls, "server", None):
                cls.server.stop()
            cls.redis.stop()
            shutil.rmtree(cls.folder, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop()
        finally:
            cls.redis.stop()
            shutil.rmtree(cls.folder, ignore_errors=True)


def local_address():
    """This machine's address on its default route (no packet is sent), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.254.254.254", 9))
        address = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if address.startswith("127.") else address


def samples(text):
    """/metrics as {(sample name, sorted labels): value}, read by prometheus_client's parser
    (Debian's python3-prometheus-client, imported here so that tests not reading /metrics do
    without it)."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    families = set()
    for family in text_string_to_metric_families(text):
        families.add((family.name, family.type))
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return families, out


def json_lines(path, count, timeout=10):
    """The JSON lines of `path` once it holds `count` of them, or what it holds after `timeout`
    seconds (the server writes them from a thread of its own)."""
    return [json.loads(line) for line in lines_when(path, count, timeout)]
