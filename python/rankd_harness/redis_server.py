"""The one way rankd's scripts, tests and benchmarks run a redis-server from Python, as
tests/support/redis_server.h is for the C++ tests.

A RedisServer listens on 127.0.0.1 only, on a free port (or the one given), with no persistence
(save "" and appendonly no), its working directory and log file in a folder of the caller's.
Starting returns once the server answers PING, or raises RuntimeError with the end of its log
when it does not within the deadline; stop() ends it by PID (SIGCONT, should it be paused, then
SIGTERM, then SIGKILL after a grace period). Use it as a context manager, or stop it in a
`finally`, so that a failing test leaves no server behind.

Standard library only (Debian's python3).
"""
import ctypes
import os
import random
import signal
import socket
import subprocess
import time

from rankd_harness.processes import stop_process
from rankd_harness.resp_client import call, encode

# How long a server gets to answer PING after it starts, and to exit after SIGTERM.
START_TIMEOUT_S = 10
STOP_GRACE_S = 10
# A cluster node's bus listens on its port plus this; cluster ports are drawn below 45000 so that
# the bus port stays below the kernel's ephemeral range's end.
CLUSTER_BUS_OFFSET = 10000


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent():
    """In the child before exec: the kernel SIGKILLs it when the process that started it dies, so a
    test killed by its timeout leaves no server behind (tests/support/redis_server.h does the
    same)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port():
    """A free loopback port (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_pair_is_free(port):
    """`port` and its cluster bus port (port + 10000) are both free on loopback."""
    for p in (port, port + CLUSTER_BUS_OFFSET):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def free_cluster_port():
    """A free loopback port for a cluster node: the port and its bus port both free."""
    for _ in range(1000):
        port = random.randrange(20000, 45000)
        if port_pair_is_free(port):
            return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisServer:
    """One redis-server process on 127.0.0.1, its data and log in `folder`, stopped by PID.

    port: a fixed port, or None for a free one (picked again if another process takes it before
      the server binds it).
    cluster: cluster mode, its config file nodes-<port>.conf in `folder`, with
      `cluster_node_timeout_ms`.
    debug: DEBUG is allowed (DEBUG DIGEST: a digest of the whole dataset).
    extra_args: more "--name value" arguments.
    logfile: the server's log, relative to `folder` (default redis-<port>.log).

    commands() and reply_text() keep one connection open to the server; call() sends one command
    on a new connection.
    """

    def __init__(self, folder, port=None, cluster=False, debug=False, extra_args=(),
                 logfile=None, cluster_node_timeout_ms=5000, start_timeout_s=START_TIMEOUT_S):
        self.folder, self.cluster, self.debug = folder, cluster, debug
        self.extra_args = list(extra_args)
        self.cluster_node_timeout_ms = cluster_node_timeout_ms
        self.start_timeout_s = start_timeout_s
        self.proc = None
        self.sock = None
        fixed_port = port is not None
        for attempt in range(3):
            self.port = port if fixed_port else (free_cluster_port() if cluster else free_port())
            self.logfile = logfile or "redis-%d.log" % self.port
            try:
                self.start()
                return
            except RuntimeError:
                # A free port taken by another process between the pick and the bind: another one.
                if fixed_port or attempt == 2 or not self._port_was_taken():
                    raise

    # Process ----------------------------------------------------------------------------------

    def command_line(self):
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.folder, "--logfile", self.logfile]
        if self.debug:
            args += ["--enable-debug-command", "yes"]
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file",
                     "nodes-%d.conf" % self.port, "--cluster-node-timeout",
                     str(self.cluster_node_timeout_ms)]
        return args + self.extra_args

    def start(self):
        """Starts redis-server on self.port (again, after stop or kill: on the same folder, so a
        cluster node reads its config file and rejoins) and returns once it answers PING."""
        self.close_connection()
        self.proc = subprocess.Popen(self.command_line(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            self.wait_for_ping(self.start_timeout_s)
        except BaseException:
            self.stop()
            raise

    def wait_for_ping(self, timeout_s):
        """Returns once the server answers PING (this process, not another one on the port, as
        INFO's process_id tells); RuntimeError (with its log's end) when it exits first or
        `timeout_s` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if (call(self.port, "PING", timeout=1) == "PONG" and "process_id:%d\r\n" % self.pid
                        in call(self.port, "INFO", "server", timeout=1)):
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server on %s exited (%s) before answering PING: %s" % (
                    self.address(), self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server on %s did not answer PING within %s s: %s" % (
                    self.address(), timeout_s, self.log_tail()))
            time.sleep(0.02)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL at once (a crash, as far as clients can tell); waits for the process."""
        self.close_connection()
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def stop(self):
        """SIGTERM (after SIGCONT, should it be paused), then SIGKILL if it has not exited within
        the grace period; waits for the process."""
        self.close_connection()
        if self.proc is not None:
            stop_process(self.proc, STOP_GRACE_S, resume=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def log_path(self):
        return os.path.join(self.folder, self.logfile)

    def log_tail(self, lines=10):
        """The last lines of the server's log, for failure messages."""
        try:
            with open(self.log_path(), errors="replace") as f:
                return "".join(f.readlines()[-lines:]).strip() or "(empty log)"
        except OSError:
            return "(no log at %s)" % self.log_path()

    def _port_was_taken(self):
        return "Address already in use" in self.log_tail(50)

    # Commands ---------------------------------------------------------------------------------

    def address(self):
        return "127.0.0.1:%d" % self.port

    def call(self, *command, timeout=2.0):
        """One command on a new connection: its reply (resp_client.RedisError for an error)."""
        return call(self.port, *command, timeout=timeout)

    def _connection(self):
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return self.sock

    def close_connection(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def commands(self, commands):
        """Sends every command at once on the kept connection; fails if any of them answered an
        error."""
        sock = self._connection()
        sock.sendall(b"".join(encode(*c) for c in commands))
        sock.sendall(encode("PING"))
        got = b""
        while not got.endswith(b"+PONG\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("redis-server closed the connection")
            got += chunk
        if b"\r\n-" in b"\r\n" + got:
            raise RuntimeError("redis error: %r" % got[:200])

    def reply_text(self, *command):
        """One command whose reply is a bulk string (CLUSTER INFO), on the kept connection: its
        text."""
        sock = self._connection()
        sock.sendall(encode(*command))
        got = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("redis-server closed the connection")
            got += chunk
            if got.startswith(b"$"):
                header, _, rest = got.partition(b"\r\n")
                if len(rest) >= int(header[1:]) + 2:
                    return rest[:int(header[1:])].decode()
            elif got.endswith(b"\r\n"):
                raise RuntimeError("unexpected reply: %r" % got[:200])
