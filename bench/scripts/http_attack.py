#!/usr/bin/python3
"""Attacks on rankd's HTTP server (`rankd bench http-server`), each reproduced by one command
that prints its figures, to compare a binary before and after a fix. Loopback only; every phase
is bounded in time and count; every process started here is stopped by PID, also on Ctrl-C.

Usage:
  /usr/bin/python3 bench/scripts/http_attack.py --attack all [--io_backend epoll|io_uring]
      [--rankd build/apps/rankd/rankd] [--shards N] [--json FILE] [--quick]
  make attack-http ARGS='--attack fairness --io_backend io_uring --json /tmp/fair.json'

  --attack fairness   1 shard. 4 attacker connections keep ~1 MiB of pipelined GET /json queued
                      (per connection one thread loops send of a 1 MiB block, one loops
                      recv(4 MiB) counting bytes; the attackers run in a child process so that
                      the probes below are not slowed by them). Meanwhile, for --seconds (10; at
                      least the header timeout + 3 s so the slowloris can be seen dropped):
                      (a) a well-behaved client, one GET /json per 50 ms on fresh connections and
                      one per 50 ms on a keep-alive connection: latency p50/p99/max (after an
                      unloaded baseline of the same probes), and one curl request;
                      (b) a slowloris connection (half a request head, then nothing): when the
                      server drops it, against the header timeout (10 s in the bench server);
                      (c) each attacker's MB/s of responses and the max/min ratio;
                      (d) then SIGTERM with the attack still running: seconds until the server
                      exits (drain grace 5 s) and its exit status.
  --attack memory     N connections (--connections, 600) each send one POST /json with a 1 MiB
                      body (read the answer, a 405), then a 1 MiB burst of pipelined GET /json
                      (read every response), then stay idle. Server RSS (VmRSS) before, once
                      every connection is idle, and some seconds after they all closed; MB and
                      KiB per connection. The client is a few threads with a selector each.
  --attack fds        The server runs with RLIMIT_NOFILE soft = hard = --nofile (1024), below
                      its connection limit (10,000 per shard). Connections are opened as fast as
                      possible up to 2x the limit, each sending GET /json and watched for 2 s:
                      answered (by status), closed without a response, or hung (no byte and
                      not closed). A curl request to /json during the flood, one after it, and
                      the server's stderr lines (total, peak per second).
  --quick             shortens every phase (a smoke run; the slowloris is then not watched
                      up to the header timeout).

Figures are noisy on a shared machine: the load average is printed with them. Writes every figure
to --json FILE when given. Run with /usr/bin/python3 (standard library only); build first
(make build).
"""

import argparse
import datetime
import errno
import json
import multiprocessing
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from rankd_harness.bench_env import cpu_model, git, loadavg
from rankd_harness.bench_server import (LIVE, Server, ServerError, cpu_ns, proc_status, run_main,
                                        stop_all, stop_and_record)
from rankd_harness.bench_stats import fmt
from rankd_harness.http_check import cut_response

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_RANKD = os.path.join(ROOT, "build", "apps", "rankd", "rankd")

MiB = 1 << 20
HOST = "127.0.0.1"
REQUEST = b"GET /json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
# 1 MiB of pipelined requests (whole requests only: a little under 1 MiB).
BURST = REQUEST * (MiB // len(REQUEST))
BURST_REQUESTS = MiB // len(REQUEST)
# Half a request head: the request line and one header, no empty line.
SLOWLORIS_HEAD = b"GET /json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
STATUS_LINE = b"HTTP/1.1 "  # counted to know how many responses arrived

# The bench server's settings (bench/http_server, src/http/server.h); it has no flags for them.
HEADER_TIMEOUT_S = 10.0
DRAIN_GRACE_S = 5.0

ATTACKERS = 4
PROBE_INTERVAL_S = 0.05
PROBE_TIMEOUT_S = 5.0     # a probe request that takes longer counts as timed out
HANG_WINDOW_S = 2.0       # fds: a connection without a byte or a close by then has hung
EXIT_WAIT_S = DRAIN_GRACE_S + 15.0   # after SIGTERM, then SIGKILL


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- server helpers

def server_argv(args, shards):
    return [args.rankd, "bench", "http-server", "--shards", str(shards), "--io_backend",
            args.io_backend, "--port", "0"]


def start_server(args, shards, preexec_fn=None):
    server = Server(server_argv(args, shards), "rankd", preexec_fn=preexec_fn)
    LIVE.append(server)
    server.wait_listening()
    return server


def open_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


class StderrWatch:
    """Counts the lines the server writes to stderr (its temporary file), sampled every 100 ms,
    with the server's open descriptors; gives the total and the peak lines per second."""

    def __init__(self, server, period_s=0.1):
        self.fd = server.stderr.fileno()
        self.pid = server.proc.pid
        self.period_s = period_s
        self.offset = 0
        self.lines = 0
        self.samples = []   # (monotonic, lines so far)
        self.peak_fds = None
        self.first_lines = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.sample()
        self.thread.start()
        return self

    def sample(self):
        try:
            while True:
                chunk = os.pread(self.fd, 1 << 20, self.offset)
                if not chunk:
                    break
                if len(self.first_lines) < 5:
                    head = chunk.decode("latin-1").splitlines()
                    self.first_lines.extend(head[:5 - len(self.first_lines)])
                self.offset += len(chunk)
                self.lines += chunk.count(b"\n")
        except OSError:
            pass
        self.samples.append((time.monotonic(), self.lines))
        fds = open_fds(self.pid)
        if fds is not None and (self.peak_fds is None or fds > self.peak_fds):
            self.peak_fds = fds

    def _run(self):
        while not self.stop_event.wait(self.period_s):
            self.sample()

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=2)
        self.sample()

    def lines_between(self, t0, t1=None):
        before = [n for t, n in self.samples if t <= t0]
        after = [n for t, n in self.samples if t1 is None or t <= t1]
        return (after[-1] if after else 0) - (before[-1] if before else 0)

    def peak_per_s(self):
        """The most lines written within any 1 s (between samples 1 s apart)."""
        peak, j = 0, 0
        for i, (t, n) in enumerate(self.samples):
            while self.samples[j][0] < t - 1.0:
                j += 1
            peak = max(peak, n - self.samples[j][1] if j < i else 0)
        return peak

    def distinct_lines(self, limit=3):
        """Up to `limit` distinct lines the server wrote (read from the start of the file)."""
        seen = []
        try:
            text = os.pread(self.fd, 256 * 1024, 0).decode("latin-1")
        except OSError:
            return seen
        for line in text.splitlines():
            shape = re.sub(r"\d+", "N", line)
            if shape not in [re.sub(r"\d+", "N", s) for s in seen]:
                seen.append(line)
            if len(seen) >= limit:
                break
        return seen


def server_backend_line(watch):
    for line in watch.first_lines:
        if line.startswith("rankd http server on"):
            return line
    return None


def check_backend(args, watch, rec):
    watch.sample()
    line = server_backend_line(watch) or ""
    rec["server_banner"] = line
    if line and not line.rstrip().endswith(args.io_backend):
        rec["warning"] = "asked for %s, the server runs: %s" % (args.io_backend, line)
        log("  ? " + rec["warning"])


def sigterm_and_time(server, wait_s=EXIT_WAIT_S):
    """SIGTERM by PID; seconds until the process exits (SIGKILL after wait_s) and its status."""
    t0 = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        status = server.proc.wait(timeout=wait_s)
        return {"exit_s": time.monotonic() - t0, "exit_status": status, "killed": False}
    except subprocess.TimeoutExpired:
        server.proc.kill()
        status = server.proc.wait()
        return {"exit_s": None, "exit_status": status, "killed": True,
                "note": "still running %.0f s after SIGTERM: SIGKILL" % wait_s}


def finish_server(server, rec):
    """Stops (if still running) and forgets the server; records its exit status."""
    stop_and_record(server, rec)


# ----------------------------------------------------------------------------- HTTP client bits

def read_response(sock, deadline):
    """Reads one complete response; returns its status code. socket.timeout past the deadline,
    ValueError when the connection closes first."""
    data = b""
    while True:
        cut = cut_response(data)
        if cut:
            return int(cut[0][9:12])
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no complete response within %.1f s" % PROBE_TIMEOUT_S)
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("closed after %d bytes of the response" % len(data))
        data += chunk


def response_size(port):
    """Bytes of one GET /json response (the Date has a fixed length, so all are the same size)."""
    with socket.create_connection((HOST, port), timeout=PROBE_TIMEOUT_S) as s:
        s.sendall(REQUEST)
        data, deadline = b"", time.monotonic() + PROBE_TIMEOUT_S
        while not cut_response(data):
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                raise ValueError("the server closed without answering GET /json")
            data += chunk
        return len(cut_response(data)[0])


def percentile(xs, p):
    """Nearest-rank percentile of xs (None when empty)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(-(-p * len(xs) // 100)) - 1))
    return xs[k]


class Prober(threading.Thread):
    """A well-behaved client: one GET /json every PROBE_INTERVAL_S (or right after the previous
    one when that took longer), on a fresh connection each time or on one keep-alive connection.
    Latency: from connect (fresh) or send (keep-alive) to the complete response. A request that
    fails or times out counts with the time until then (a lower bound)."""

    def __init__(self, port, kind, stop_event):
        super().__init__(daemon=True)
        self.port, self.kind, self.stop_event = port, kind, stop_event
        self.ok_ms, self.failed_ms = [], []
        self.statuses, self.errors = {}, {}
        self.reconnects = 0

    def run(self):
        conn = None
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            wait = next_t - time.monotonic()
            if wait > 0 and self.stop_event.wait(wait):
                break
            try:
                if self.kind == "keepalive" and conn is None:
                    conn = socket.create_connection((HOST, self.port), timeout=PROBE_TIMEOUT_S)
                    self.reconnects += 1
                t0 = time.monotonic()
                deadline = t0 + PROBE_TIMEOUT_S
                try:
                    if self.kind == "fresh":
                        conn = socket.create_connection((HOST, self.port), timeout=PROBE_TIMEOUT_S)
                    conn.settimeout(PROBE_TIMEOUT_S)
                    conn.sendall(REQUEST)
                    status = read_response(conn, deadline)
                    self.ok_ms.append((time.monotonic() - t0) * 1e3)
                    self.statuses[status] = self.statuses.get(status, 0) + 1
                    if self.kind == "fresh":
                        conn.close()
                        conn = None
                except (OSError, ValueError) as e:
                    self.failed_ms.append((time.monotonic() - t0) * 1e3)
                    key = "timeout" if isinstance(e, socket.timeout) else type(e).__name__
                    self.errors[key] = self.errors.get(key, 0) + 1
                    if conn is not None:
                        conn.close()
                    conn = None
            except OSError as e:  # the keep-alive connect itself
                self.errors["connect " + type(e).__name__] = self.errors.get("connect " + type(e).__name__, 0) + 1
            next_t = max(next_t + PROBE_INTERVAL_S, time.monotonic())
        if conn is not None:
            conn.close()

    def summary(self):
        all_ms = self.ok_ms + self.failed_ms
        return {"requests": len(all_ms), "ok": len(self.ok_ms), "failed": len(self.failed_ms),
                "errors": self.errors, "statuses": {str(k): v for k, v in self.statuses.items()},
                "p50_ms": percentile(all_ms, 50), "p99_ms": percentile(all_ms, 99),
                "max_ms": max(all_ms) if all_ms else None,
                "connections": self.reconnects if self.kind == "keepalive" else len(all_ms)}


def run_probes(port, seconds):
    stop = threading.Event()
    probers = [Prober(port, "fresh", stop), Prober(port, "keepalive", stop)]
    for p in probers:
        p.start()
    time.sleep(seconds)
    stop.set()
    for p in probers:
        p.join(timeout=PROBE_TIMEOUT_S + 2)
    return {p.kind: p.summary() for p in probers}


def curl_json(port, max_time_s):
    """One curl GET /json: status, connect / first byte / total seconds; None without curl."""
    curl = shutil.which("curl")
    if not curl:
        return None
    t0 = time.monotonic()
    try:
        proc = subprocess.run([curl, "-s", "-o", "/dev/null", "--max-time", "%g" % max_time_s,
                               "-w", "%{http_code} %{time_connect} %{time_starttransfer} %{time_total}",
                               "http://%s:%d/json" % (HOST, port)],
                              capture_output=True, text=True, timeout=max_time_s + 5)
    except subprocess.TimeoutExpired:
        return {"curl_exit": None, "http_code": None, "wall_s": time.monotonic() - t0}
    out = {"curl_exit": proc.returncode, "wall_s": time.monotonic() - t0}
    parts = proc.stdout.split()
    if len(parts) == 4:
        out["http_code"] = int(parts[0])
        out["connect_s"], out["first_byte_s"], out["total_s"] = (float(x) for x in parts[1:])
    if proc.returncode == 28:
        out["note"] = "timed out after %g s" % max_time_s
    return out


def curl_text(c):
    if c is None:
        return "no curl"
    if c.get("http_code"):
        return "HTTP %d in %.1f ms (connect %.1f ms)" % (c["http_code"], c["total_s"] * 1e3, c["connect_s"] * 1e3)
    connected = " (TCP connected in %.1f ms)" % (c["connect_s"] * 1e3) if c.get("connect_s") else ""
    return "no response (curl exit %s) after %.2f s%s" % (c.get("curl_exit"), c["wall_s"], connected)


# ----------------------------------------------------------------------------- fairness

def attacker_process(port, count, stop, received, sent, closed_at):
    """The attackers (a child process): per connection, one thread sends the 1 MiB block of
    pipelined requests in a loop, one receives into a 4 MiB buffer and counts bytes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent stops this process
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    socks = []
    for _ in range(count):
        s = socket.create_connection((HOST, port), timeout=5)
        s.settimeout(0.2)
        socks.append(s)

    def sender(i, s):
        view, off = memoryview(BURST), 0
        while not stop.is_set():
            try:
                n = s.send(view[off:])
            except socket.timeout:
                continue
            except OSError:
                break
            off = (off + n) % len(BURST)
            sent[i] += n

    def reader(i, s):
        buf = bytearray(4 * MiB)
        while not stop.is_set():
            try:
                n = s.recv_into(buf)
            except socket.timeout:
                continue
            except OSError:
                n = 0
            if n == 0:
                closed_at[i] = time.monotonic()
                break
            received[i] += n

    threads = [threading.Thread(target=f, args=(i, s), daemon=True)
               for i, s in enumerate(socks) for f in (sender, reader)]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join(timeout=2)
    for s in socks:
        s.close()


class Slowloris(threading.Thread):
    """Sends half a request head, then nothing; notes when the server drops the connection."""

    def __init__(self, port, watch_s):
        super().__init__(daemon=True)
        self.port, self.watch_s = port, watch_s
        self.result = {"watched_s": watch_s}
        self.stop_event = threading.Event()

    def run(self):
        try:
            s = socket.create_connection((HOST, self.port), timeout=5)
        except OSError as e:
            self.result["error"] = "connect: %s" % e
            return
        t0 = time.monotonic()
        received = 0
        try:
            s.sendall(SLOWLORIS_HEAD)
            s.settimeout(0.05)
            while time.monotonic() - t0 < self.watch_s and not self.stop_event.is_set():
                try:
                    chunk = s.recv(4096)
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    self.result.update(dropped_after_s=time.monotonic() - t0, how="reset")
                    break
                if not chunk:
                    self.result.update(dropped_after_s=time.monotonic() - t0, how="closed")
                    break
                received += len(chunk)
        finally:
            s.close()
        self.result["bytes_received"] = received
        if "dropped_after_s" not in self.result:
            self.result["dropped_after_s"] = None
            self.result["open_after_s"] = time.monotonic() - t0


def attack_fairness(args, q):
    rec = {"attack": "fairness", "shards": 1, "attackers": ATTACKERS,
           "burst_bytes": len(BURST), "burst_requests": BURST_REQUESTS}
    slow_watch = HEADER_TIMEOUT_S + 3 if not args.quick else q["seconds"]
    duration = max(q["seconds"], slow_watch)
    rec.update(seconds=duration, header_timeout_s=HEADER_TIMEOUT_S, drain_grace_s=DRAIN_GRACE_S)
    log("fairness: 1 shard, %d attackers x 1 MiB pipelined bursts for %.0f s (%s)" % (
        ATTACKERS, duration, args.io_backend))
    server = start_server(args, 1)
    watch = StderrWatch(server).start()
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    received = ctx.RawArray("q", ATTACKERS)
    sent = ctx.RawArray("q", ATTACKERS)
    closed_at = ctx.RawArray("d", ATTACKERS)
    attackers = None
    try:
        check_backend(args, watch, rec)
        rec["response_bytes"] = resp_len = response_size(server.port)
        log("  baseline: well-behaved probes for %.0f s without the attack" % q["baseline_s"])
        rec["baseline"] = run_probes(server.port, q["baseline_s"])

        attackers = ctx.Process(target=attacker_process, name="http-attackers",
                                args=(server.port, ATTACKERS, stop, received, sent, closed_at), daemon=True)
        attackers.start()
        time.sleep(0.5)  # the attackers connect and fill their pipes
        if not attackers.is_alive():
            raise ValueError("the attackers' process ended at start (exit %s)" % attackers.exitcode)
        stop_probes = threading.Event()
        probers = [Prober(server.port, "fresh", stop_probes), Prober(server.port, "keepalive", stop_probes)]
        slow = Slowloris(server.port, slow_watch)
        t_start = time.monotonic()
        rx0 = list(received)
        cpu0 = (cpu_ns(server.proc.pid), cpu_ns(attackers.pid))
        for t in probers + [slow]:
            t.start()
        series, curl_box = [], {}
        curl_thread = threading.Thread(target=lambda: curl_box.update(
            r=None if stop_probes.wait(duration / 2) else curl_json(server.port, PROBE_TIMEOUT_S * 2)), daemon=True)
        curl_thread.start()
        log("  attack running: probes, slowloris, curl at %.0f s" % (duration / 2))
        while time.monotonic() - t_start < duration:
            time.sleep(0.5)
            series.append([round(time.monotonic() - t_start, 2)] + list(received))
        t_end = time.monotonic()
        rx1 = list(received)
        cpu1 = (cpu_ns(server.proc.pid), cpu_ns(attackers.pid))
        window = t_end - t_start
        # CPU used during the attack, in % of one core: the server (one shard thread, plus its
        # idle main thread) and the attackers' process.
        rec["server_cpu_pct"], rec["attackers_cpu_pct"] = (
            (b - a) / 1e9 / window * 100 if a is not None and b is not None else None for a, b in zip(cpu0, cpu1))
        rec["server_hwm_mb"] = proc_status(server.proc.pid, "VmHWM")
        stop_probes.set()
        slow.stop_event.set()
        for t in probers + [slow, curl_thread]:
            t.join(timeout=PROBE_TIMEOUT_S * 2 + 5)
        rec["probes"] = {p.kind: p.summary() for p in probers}
        rec["curl"] = curl_box.get("r")
        rec["slowloris"] = slow.result
        mbps = [(b - a) / window / 1e6 for a, b in zip(rx0, rx1)]
        rec["attacker_mb_s"] = mbps
        rec["attacker_req_s"] = [m * 1e6 / resp_len for m in mbps]
        rec["attacker_max_min_ratio"] = (max(mbps) / min(mbps)) if min(mbps) > 0 else None
        rec["attacker_starved"] = sum(1 for m in mbps if m == 0)
        rec["attacker_series"] = {"columns": ["t_s"] + ["rx_bytes_%d" % i for i in range(ATTACKERS)],
                                  "rows": series}
        # Seconds (of 0.5 s steps) in which an attacker received nothing.
        rec["attacker_idle_steps"] = [
            sum(1 for a, b in zip(series, series[1:]) if b[1 + i] == a[1 + i]) for i in range(ATTACKERS)]
        rec["attacker_closed_before_sigterm"] = sum(1 for c in closed_at if c)

        log("  SIGTERM with the attack running")
        t_term = time.monotonic()
        LIVE.remove(server)
        rec["sigterm"] = sigterm_and_time(server)
        rec["sigterm"]["attacker_closed_after_s"] = [round(c - t_term, 3) if c >= t_term else None
                                                    for c in closed_at]
    finally:
        stop.set()
        if attackers is not None:
            attackers.join(timeout=5)
            if attackers.is_alive():
                attackers.terminate()
                attackers.join(timeout=5)
        watch.stop()
        rec["stderr_lines"] = watch.lines
        rec["stderr_sample"] = watch.distinct_lines()
        if server in LIVE:
            finish_server(server, rec)
        else:
            server.stop()  # exited already: closes its files
    return rec


def print_stderr(rec):
    """The server's stderr: line count and its distinct lines past the start-up banner."""
    print("  server stderr: %d lines" % rec.get("stderr_lines", 0))
    for line in rec.get("stderr_sample", [])[1:]:
        print("    | %s" % line[:150])


def print_fairness(rec):
    print("\n== fairness (%s, 1 shard, %d attackers, %.0f s, load %s)" % (
        rec["backend"], rec["attackers"], rec["seconds"], rec["load"]))
    print("  %-28s %8s %8s %9s %9s %6s %s" % ("well-behaved client", "requests", "p50 ms", "p99 ms", "max ms",
                                              "failed", "errors"))
    for phase, key in (("unloaded", "baseline"), ("under attack", "probes")):
        for kind in ("fresh", "keepalive"):
            s = rec.get(key, {}).get(kind)
            if not s:
                continue
            print("  %-28s %8d %8s %9s %9s %6d %s" % (
                "%s, %s" % (phase, "fresh conn" if kind == "fresh" else "keep-alive"), s["requests"],
                fmt(s["p50_ms"]), fmt(s["p99_ms"]), fmt(s["max_ms"]), s["failed"],
                ", ".join("%s %d" % kv for kv in s["errors"].items()) or "-"))
    print("  curl under attack: %s" % curl_text(rec.get("curl")))
    sl = rec.get("slowloris", {})
    if sl.get("dropped_after_s") is not None:
        print("  slowloris: dropped (%s) after %.2f s (header timeout %.0f s)" % (
            sl["how"], sl["dropped_after_s"], rec["header_timeout_s"]))
    elif sl:
        print("  slowloris: still open after %.1f s (header timeout %.0f s)%s" % (
            sl.get("open_after_s", 0), rec["header_timeout_s"], "  " + sl["error"] if "error" in sl else ""))
    if "attacker_mb_s" in rec:
        print("  attackers: %s MB/s of responses (%s req/s); max/min %s; idle 0.5 s steps %s" % (
            " / ".join("%.1f" % m for m in rec["attacker_mb_s"]),
            " / ".join("%.0f" % r for r in rec["attacker_req_s"]),
            fmt(rec["attacker_max_min_ratio"], "%.1f") if rec["attacker_max_min_ratio"] else "inf (one got nothing)",
            rec["attacker_idle_steps"]))
    print("  CPU during the attack (%% of one core): server %s, attackers %s; server peak RSS %s MB" % (
        fmt(rec.get("server_cpu_pct"), "%.0f"), fmt(rec.get("attackers_cpu_pct"), "%.0f"),
        fmt(rec.get("server_hwm_mb"))))
    st = rec.get("sigterm")
    if st:
        print("  SIGTERM under attack: %s, exit status %s (drain grace %.0f s); attackers closed after %s s" % (
            "exited after %.2f s" % st["exit_s"] if st["exit_s"] is not None else st["note"],
            st["exit_status"], rec["drain_grace_s"], st["attacker_closed_after_s"]))
    print_stderr(rec)


# ----------------------------------------------------------------------------- memory

class MemConn:
    __slots__ = ("sock", "state", "out", "off", "data", "count", "tail", "error")

    def __init__(self, sock):
        self.sock = sock
        self.state = "connect"
        self.out, self.off = None, 0
        self.data = b""
        self.count = 0
        self.tail = b""
        self.error = None


def memory_client(port, n, deadline, conns, done, results):
    """Drives n connections through POST (1 MiB) -> read its answer -> 1 MiB pipelined burst ->
    read every response -> idle, with one selector. Appends the connections to conns."""
    post = (b"POST /json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: %d\r\n\r\n" % MiB) + b"x" * MiB
    sel = selectors.DefaultSelector()
    mine = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        c = MemConn(s)
        err = s.connect_ex((HOST, port))
        if err not in (0, errno.EINPROGRESS):
            c.state, c.error = "failed", "connect: %s" % os.strerror(err)
            s.close()
        else:
            sel.register(s, selectors.EVENT_WRITE, c)
        mine.append(c)
    conns.extend(mine)
    pending = sum(1 for c in mine if c.state != "failed")
    buf = bytearray(MiB)
    view = memoryview(buf)

    def fail(c, why):
        c.state, c.error = "failed", why
        sel.unregister(c.sock)
        c.sock.close()

    while pending and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=0.2):
            c = key.data
            try:
                if c.state == "connect":
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        fail(c, "connect: %s" % os.strerror(err))
                        pending -= 1
                        continue
                    c.state, c.out, c.off = "post", memoryview(post), 0
                if ev & selectors.EVENT_WRITE and c.out is not None:
                    c.off += c.sock.send(c.out[c.off:])
                    if c.off == len(c.out):
                        c.out = None
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                if ev & selectors.EVENT_READ:
                    n_read = c.sock.recv_into(buf)
                    if n_read == 0:
                        fail(c, "closed by the server in phase %s" % c.state)
                        pending -= 1
                        continue
                    if c.state == "post":
                        c.data += bytes(view[:n_read])
                        cut = cut_response(c.data)
                        if cut:
                            results["post_status"][int(cut[0][9:12])] = results["post_status"].get(int(cut[0][9:12]), 0) + 1
                            if cut[1]:
                                fail(c, "%d bytes after the POST's answer" % len(cut[1]))
                                pending -= 1
                                continue
                            c.data = b""
                            c.state, c.out, c.off = "burst", memoryview(BURST), 0
                            sel.modify(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
                    else:  # burst: count status lines (one may straddle two reads)
                        chunk = c.tail + bytes(view[:n_read])
                        c.count += chunk.count(STATUS_LINE)
                        c.tail = chunk[-(len(STATUS_LINE) - 1):]
                        if c.count >= BURST_REQUESTS:
                            c.state = "idle"
                            sel.unregister(c.sock)
                            pending -= 1
                            done.append(time.monotonic())
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                fail(c, "%s in phase %s" % (e, c.state))
                pending -= 1
    sel.close()


def attack_memory(args, q):
    n = q["connections"]
    threads_n = max(1, min(4, n // 100))
    rec = {"attack": "memory", "shards": args.shards, "connections": n, "post_body_bytes": MiB,
           "burst_bytes": len(BURST), "burst_requests": BURST_REQUESTS, "client_threads": threads_n}
    log("memory: %d connections x (POST 1 MiB, 1 MiB pipelined GET burst, idle), %d shard(s), %s" % (
        n, args.shards, args.io_backend))
    server = start_server(args, args.shards)
    watch = StderrWatch(server).start()
    conns = []
    try:
        check_backend(args, watch, rec)
        pid = server.proc.pid
        # Warm the server with one request so the baseline includes what every server has.
        response_size(server.port)
        time.sleep(q["settle_s"])
        rec["rss_baseline_mb"] = proc_status(pid, "VmRSS")
        results = {"post_status": {}}
        done = []
        deadline = time.monotonic() + q["load_timeout_s"]
        t0 = time.monotonic()
        shares = [n // threads_n + (1 if i < n % threads_n else 0) for i in range(threads_n)]
        clients = [threading.Thread(target=memory_client, args=(server.port, k, deadline, conns, done, results),
                                    daemon=True) for k in shares]
        for t in clients:
            t.start()
        peak_rss = 0.0
        while any(t.is_alive() for t in clients):
            for t in clients:
                t.join(timeout=0.25)
            peak_rss = max(peak_rss, proc_status(pid, "VmRSS") or 0)
        rec["load_s"] = (max(done) - t0) if done else None
        rec["idle_connections"] = sum(1 for c in conns if c.state == "idle")
        rec["failed_connections"] = sum(1 for c in conns if c.state == "failed")
        rec["unfinished_connections"] = n - rec["idle_connections"] - rec["failed_connections"]
        errors = {}
        for c in conns:
            if c.error:
                key = re.sub(r"\d+", "N", c.error)
                errors[key] = errors.get(key, 0) + 1
        rec["errors"] = errors
        rec["post_status"] = {str(k): v for k, v in results["post_status"].items()}
        time.sleep(q["settle_s"])
        rec["rss_idle_mb"] = proc_status(pid, "VmRSS")
        rec["rss_peak_sampled_mb"] = max(peak_rss, rec["rss_idle_mb"] or 0)
        rec["hwm_mb"] = proc_status(pid, "VmHWM")
        rec["server_fds_idle"] = open_fds(pid)
        log("  %d connections idle; closing them, RSS again in %.0f s" % (rec["idle_connections"], q["after_close_s"]))
        for c in conns:
            c.sock.close()
        t_close, series = time.monotonic(), []
        while time.monotonic() - t_close < q["after_close_s"]:
            time.sleep(0.5)
            series.append([round(time.monotonic() - t_close, 2), proc_status(pid, "VmRSS"), open_fds(pid)])
        rec["after_close_series"] = {"columns": ["t_s", "rss_mb", "server_fds"], "rows": series}
        rec["rss_after_close_mb"] = proc_status(pid, "VmRSS")
        rec["server_fds_after_close"] = open_fds(pid)
        held = rec["idle_connections"] or 1
        rec["per_connection_idle_kib"] = ((rec["rss_idle_mb"] - rec["rss_baseline_mb"]) * 1e6 / 1024 / held
                                          if rec["rss_idle_mb"] is not None else None)
        rec["per_connection_after_close_kib"] = (
            (rec["rss_after_close_mb"] - rec["rss_baseline_mb"]) * 1e6 / 1024 / held
            if rec["rss_after_close_mb"] is not None else None)
        LIVE.remove(server)
        rec["sigterm"] = sigterm_and_time(server)
    finally:
        for c in conns:
            c.sock.close()
        watch.stop()
        rec["stderr_lines"] = watch.lines
        rec["stderr_sample"] = watch.distinct_lines()
        if server in LIVE:
            finish_server(server, rec)
        else:
            server.stop()
    return rec


def print_memory(rec):
    print("\n== memory (%s, %d shard(s), %d connections, load %s)" % (
        rec["backend"], rec["shards"], rec["connections"], rec["load"]))
    print("  connections: %d idle, %d failed, %d unfinished; POST answered %s; load phase %s s" % (
        rec.get("idle_connections", 0), rec.get("failed_connections", 0), rec.get("unfinished_connections", 0),
        rec.get("post_status"), fmt(rec.get("load_s"))))
    if rec.get("errors"):
        print("  errors: %s" % rec["errors"])
    print("  %-34s %10s %18s" % ("server RSS", "MB", "KiB / connection"))
    print("  %-34s %10s %18s" % ("idle baseline", fmt(rec.get("rss_baseline_mb")), ""))
    print("  %-34s %10s %18s" % ("every connection idle", fmt(rec.get("rss_idle_mb")),
                                 fmt(rec.get("per_connection_idle_kib"))))
    print("  %-34s %10s %18s" % ("peak (VmHWM)", fmt(rec.get("hwm_mb")), ""))
    print("  %-34s %10s %18s" % ("%.0f s after they all closed" % rec["after_close_s"],
                                 fmt(rec.get("rss_after_close_mb")), fmt(rec.get("per_connection_after_close_kib"))))
    print("  server descriptors: %s with every connection idle, %s after they closed" % (
        rec.get("server_fds_idle"), rec.get("server_fds_after_close")))
    st = rec.get("sigterm")
    if st:
        print("  SIGTERM: exit status %s after %s s" % (st["exit_status"], fmt(st["exit_s"], "%.2f")))
    print_stderr(rec)


# ----------------------------------------------------------------------------- descriptors

class FdConn:
    __slots__ = ("sock", "state", "t_sent", "t_done", "data", "outcome")

    def __init__(self, sock):
        self.sock, self.state = sock, "connect"
        self.t_sent = self.t_done = None
        self.data = b""
        self.outcome = None


def attack_fds(args, q):
    nofile = args.nofile
    target = q["fd_connections"] or 2 * nofile
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < target + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, target + 256), hard))
    rec = {"attack": "fds", "shards": args.shards, "nofile": nofile, "connections": target,
           "max_connections_per_shard": 10000, "hang_window_s": HANG_WINDOW_S}
    log("fds: server with RLIMIT_NOFILE %d, %d connections as fast as possible, %d shard(s), %s" % (
        nofile, target, args.shards, args.io_backend))

    def lower_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    server = start_server(args, args.shards, preexec_fn=lower_limit)
    watch = StderrWatch(server).start()
    conns = []
    sel = selectors.DefaultSelector()
    try:
        check_backend(args, watch, rec)
        pid = server.proc.pid
        rec["server_fds_baseline"] = open_fds(pid)
        rec["curl_before"] = curl_json(server.port, q["curl_max_s"])
        t0 = time.monotonic()

        def handle(key, ev, now):
            c = key.data
            try:
                if c.state == "connect":
                    err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        c.state, c.outcome, c.t_done = "done", "connect failed: %s" % os.strerror(err), now
                        sel.unregister(c.sock)
                        return
                    c.sock.send(REQUEST)
                    c.state, c.t_sent = "sent", now
                    sel.modify(c.sock, selectors.EVENT_READ, c)
                    return
                chunk = c.sock.recv(65536)
                if not chunk:
                    c.state, c.t_done = "done", now
                    c.outcome = "closed after %d bytes without a status line" % len(c.data) if c.data else \
                        "closed without a response"
                    sel.unregister(c.sock)
                    return
                c.data += chunk
                m = re.match(rb"HTTP/1\.[01] (\d{3})", c.data)
                if m:
                    c.state, c.t_done, c.outcome = "done", now, "response %s" % m.group(1).decode()
                    sel.unregister(c.sock)   # kept open: it holds a descriptor in the server
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                c.state, c.t_done = "done", now
                c.outcome = ("reset without a response" if isinstance(e, ConnectionResetError)
                             else "error: %s" % e.strerror)
                sel.unregister(c.sock)

        # Flood: connect as fast as possible, serving events every 64 connects.
        for i in range(target):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            c = FdConn(s)
            conns.append(c)
            err = s.connect_ex((HOST, server.port))
            if err not in (0, errno.EINPROGRESS):
                c.state, c.outcome, c.t_done = "done", "connect failed: %s" % os.strerror(err), time.monotonic()
                continue
            sel.register(s, selectors.EVENT_WRITE, c)
            if i % 64 == 63:
                for key, ev in sel.select(timeout=0):
                    handle(key, ev, time.monotonic())
        rec["flood_open_s"] = time.monotonic() - t0

        # curl during the flood (every connection still open), in parallel with the watch.
        curl_box = {}
        curl_thread = threading.Thread(target=lambda: curl_box.update(r=curl_json(server.port, q["curl_max_s"])),
                                       daemon=True)
        curl_thread.start()
        hard_deadline = time.monotonic() + HANG_WINDOW_S + q["curl_max_s"] + 10
        while time.monotonic() < hard_deadline:
            now = time.monotonic()
            waiting = [c for c in conns if c.state != "done" and
                       now - (c.t_sent if c.t_sent is not None else t0) < HANG_WINDOW_S]
            if not waiting and not curl_thread.is_alive():
                break
            for key, ev in sel.select(timeout=0.05):
                handle(key, ev, time.monotonic())
        curl_thread.join(timeout=q["curl_max_s"] + 10)
        rec["curl_during"] = curl_box.get("r")
        rec["server_fds_peak"] = watch.peak_fds

        outcomes = {}
        prompt_close = []
        for c in conns:
            if c.state == "sent":
                key = "hung (no byte, not closed)"
            elif c.state == "connect":
                key = "hung (connect not completed)"
            elif c.t_done - (c.t_sent or t0) > HANG_WINDOW_S:
                key = c.outcome + " (later than %g s)" % HANG_WINDOW_S
            else:
                key = c.outcome
                if "without a response" in key:
                    prompt_close.append(c.t_done - (c.t_sent or t0))
            outcomes[key] = outcomes.get(key, 0) + 1
        rec["outcomes"] = dict(sorted(outcomes.items(), key=lambda kv: -kv[1]))
        rec["answered"] = sum(v for k, v in outcomes.items() if k.startswith("response"))
        rec["statuses"] = {k.split()[1]: v for k, v in outcomes.items() if k.startswith("response")}
        rec["closed_promptly_without_response"] = len(prompt_close)
        rec["hung"] = sum(v for k, v in outcomes.items() if k.startswith("hung"))
        t_flood_end = time.monotonic()

        # Let go of the flood; how soon does the server answer again?
        for c in conns:
            c.sock.close()
        conns.clear()
        time.sleep(1.0)
        rec["curl_after_close"] = curl_json(server.port, q["curl_max_s"])
        watch.sample()
        rec["stderr_lines_flood"] = watch.lines_between(t0, t_flood_end)
        rec["flood_s"] = t_flood_end - t0
        LIVE.remove(server)
        rec["sigterm"] = sigterm_and_time(server)
    finally:
        for c in conns:
            c.sock.close()
        sel.close()
        watch.stop()
        rec["stderr_lines"] = watch.lines
        rec["stderr_peak_lines_per_s"] = watch.peak_per_s()
        rec["stderr_sample"] = watch.distinct_lines()
        if server in LIVE:
            finish_server(server, rec)
        else:
            server.stop()
    return rec


def print_fds(rec):
    print("\n== fds (%s, %d shard(s), RLIMIT_NOFILE %d, %d connections, load %s)" % (
        rec["backend"], rec["shards"], rec["nofile"], rec["connections"], rec["load"]))
    print("  opened in %s s; server descriptors %s at rest, peak %s" % (
        fmt(rec.get("flood_open_s"), "%.2f"), rec.get("server_fds_baseline"), rec.get("server_fds_peak")))
    print("  %-52s %8s" % ("outcome within %g s of the request" % rec["hang_window_s"], "count"))
    for k, v in rec.get("outcomes", {}).items():
        print("  %-52s %8d" % (k, v))
    print("  answered %d (%s), closed promptly without a response %d, hung %d" % (
        rec.get("answered", 0), ", ".join("%s: %d" % kv for kv in rec.get("statuses", {}).items()) or "-",
        rec.get("closed_promptly_without_response", 0), rec.get("hung", 0)))
    print("  curl before the flood: %s" % curl_text(rec.get("curl_before")))
    print("  curl during the flood: %s" % curl_text(rec.get("curl_during")))
    print("  curl 1 s after the flood closed: %s" % curl_text(rec.get("curl_after_close")))
    print("  server stderr: %d lines (%d during the %.1f s flood), peak %d lines/s" % (
        rec.get("stderr_lines", 0), rec.get("stderr_lines_flood", 0), rec.get("flood_s", 0),
        rec.get("stderr_peak_lines_per_s", 0)))
    for line in rec.get("stderr_sample", [])[1:]:
        print("    | %s" % line[:150])
    st = rec.get("sigterm")
    if st:
        print("  SIGTERM: exit status %s after %s s" % (st["exit_status"], fmt(st["exit_s"], "%.2f")))


# ----------------------------------------------------------------------------- main

ATTACKS = {"fairness": (attack_fairness, print_fairness),
           "memory": (attack_memory, print_memory),
           "fds": (attack_fds, print_fds)}


def phases(args):
    quick = args.quick
    return {"seconds": args.seconds if args.seconds is not None else (3 if quick else 10),
            "baseline_s": 1 if quick else 3,
            "connections": args.connections if args.connections is not None else (100 if quick else 600),
            "settle_s": 1 if quick else 2,
            "after_close_s": 2 if quick else 5,
            "load_timeout_s": 60 if quick else 240,
            "fd_connections": args.fd_connections,
            "curl_max_s": 5 if quick else 10}


def rankd_version(path):
    try:
        return subprocess.run([path, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attack", default="all", choices=list(ATTACKS) + ["all"])
    ap.add_argument("--rankd", default=DEFAULT_RANKD, help="the binary (default build/apps/rankd/rankd)")
    ap.add_argument("--io_backend", default="epoll", choices=["epoll", "io_uring"])
    ap.add_argument("--shards", type=int, default=1, help="shards for memory and fds (fairness: always 1)")
    ap.add_argument("--seconds", type=float, help="fairness: attack length (default 10, --quick 3; "
                    "without --quick at least the header timeout + 3 s)")
    ap.add_argument("--connections", type=int, help="memory: connections (default 600, --quick 100)")
    ap.add_argument("--nofile", type=int, default=1024, help="fds: the server's descriptor limit (default 1024)")
    ap.add_argument("--fd_connections", type=int, help="fds: connections to open (default 2 x --nofile)")
    ap.add_argument("--json", metavar="FILE", help="write every figure here")
    ap.add_argument("--quick", action="store_true", help="short phases, for a smoke run")
    args = ap.parse_args()
    args.rankd = os.path.abspath(args.rankd)
    if not os.access(args.rankd, os.X_OK):
        raise SystemExit("%s is missing: run `make build` (or pass --rankd)" % args.rankd)
    if args.shards < 1 or args.nofile < 64:
        ap.error("--shards must be >= 1 and --nofile >= 64")
    if args.connections is not None and not 1 <= args.connections <= 5000:
        ap.error("--connections must be within 1..5000")
    if args.fd_connections is not None and not 1 <= args.fd_connections <= 10000:
        ap.error("--fd_connections must be within 1..10000")
    q = phases(args)
    names = list(ATTACKS) if args.attack == "all" else [args.attack]
    meta = {"utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
            "commit": git("rev-parse", "--short", "HEAD") or "?", "rankd": args.rankd,
            "rankd_version": rankd_version(args.rankd), "io_backend": args.io_backend,
            "quick": args.quick, "phases": q, "load_start": loadavg(),
            "command": " ".join(["bench/scripts/http_attack.py"] + sys.argv[1:])}
    log("http attack: %s on %s (%s), load %s" % (", ".join(names), args.io_backend, args.rankd, meta["load_start"]))
    results, failed = {}, 0
    try:
        for name in names:
            run, show = ATTACKS[name]
            load_before = loadavg()
            try:
                rec = run(args, q)
            except (ServerError, OSError, ValueError) as e:
                stop_all()
                rec = {"attack": name, "error": "%s: %s" % (type(e).__name__, e)}
            rec.update(backend=args.io_backend, load=load_before, load_after=loadavg(),
                       after_close_s=q["after_close_s"])
            results[name] = rec
            if "error" in rec:
                failed += 1
                print("\n== %s: failed: %s" % (name, rec["error"]))
            else:
                show(rec)
            sys.stdout.flush()
    finally:
        stop_all()
    meta["load_end"] = loadavg()
    print("\nload average: %s at the start, %s at the end (%d cores, shared)" % (
        meta["load_start"], meta["load_end"], os.cpu_count() or 0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "attacks": results}, f, indent=1)
        print("figures: %s" % args.json)
    return 1 if failed else 0


if __name__ == "__main__":
    run_main(main)
