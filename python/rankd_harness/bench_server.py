"""A benchmark server process: started, waited for until it prints `LISTENING <port>`, stopped
by PID with SIGTERM (then SIGKILL). Shared by the runners in bench/scripts; LIVE and stop_all()
let a runner stop every server it started even when it fails."""
import os
import re
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from rankd_harness.processes import stop_process

LISTEN_TIMEOUT_S = 10   # from start to `LISTENING <port>`
STOP_TIMEOUT_S = 10     # from SIGTERM to exit, then SIGKILL


class ServerError(Exception):
    pass


class Server:
    """One server process: started, waited for until it prints LISTENING, stopped by PID."""

    def __init__(self, argv, name, listen_timeout_s=LISTEN_TIMEOUT_S, stop_timeout_s=STOP_TIMEOUT_S,
                 preexec_fn=None):
        """preexec_fn runs in the child before exec (e.g. to lower a resource limit)."""
        self.listen_timeout_s = listen_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.name = name
        self.argv = argv
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL, text=True, bufsize=1,
                                     preexec_fn=preexec_fn)
        self.port = None
        self.exit_status = None

    def wait_listening(self):
        deadline = time.monotonic() + self.listen_timeout_s
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        seen = []
        try:
            while self.port is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServerError("%s: no LISTENING line within %ds" % (self.name, self.listen_timeout_s))
                if not sel.select(timeout=left):
                    continue
                line = self.proc.stdout.readline()
                if not line:
                    raise ServerError("%s exited before listening (status %s): %s" % (
                        self.name, self.proc.wait(), self.stderr_tail()))
                seen.append(line)
                m = re.match(r"\s*LISTENING\s+(\d+)\s*$", line)
                if m:
                    self.port = int(m.group(1))
        finally:
            sel.close()
        # Keep reading stdout so that a chatty server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        return self.port

    def _drain(self):
        try:
            for _ in self.proc.stdout:
                pass
        except (OSError, ValueError):
            pass

    def stderr_tail(self, n=400):
        try:
            self.stderr.seek(0)
            return self.stderr.read()[-n:].strip()
        except (OSError, ValueError):
            return ""

    def stop(self):
        """SIGTERM by PID, then SIGKILL if it does not exit. Returns the exit status."""
        self.exit_status = stop_process(self.proc, self.stop_timeout_s)
        self.stderr.close()
        return self.exit_status


# Every live server, so that Ctrl-C or an unexpected error still stops them.
LIVE = []


def stop_all():
    while LIVE:
        LIVE.pop().stop()


def stop_and_record(server, rec):
    """Stops `server` (no longer live) and records its exit status in rec; a server that does not
    exit cleanly on SIGTERM gets a warning (the measurement stands)."""
    if server in LIVE:
        LIVE.remove(server)
    status = server.stop()
    rec["server_exit"] = status
    if status not in (0, None) and "error" not in rec:
        rec["warning"] = "server exit status %s on SIGTERM" % status


def cpu_ns(pid):
    """CPU time of every thread of `pid` so far (ns, from /proc/<pid>/task/*/schedstat), or None.
    Exact to the nanosecond, unlike the tick-sampled utime/stime, which miss a server that runs
    in short bursts between sleeps."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


def proc_status(pid, key):
    """A kB figure of /proc/<pid>/status (VmRSS, VmHWM), in MB (10^6 bytes), or None once the
    process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        pass
    return None


def proc_cpu_s(pid):
    """The CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat, or None
    once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_load_generator(argv, timeout):
    """Runs a load generator (wrk) to its end: (its stdout, the CPU seconds it used, user +
    system), the load's own cost on cores it shares with the servers. ValueError when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise ValueError("%s exit %d: %s" % (os.path.basename(argv[0]), proc.returncode,
                                             proc.stderr.strip()[-300:]))
    return proc.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def exit_status(runs):
    """runs: scenario -> implementation -> records. Missed targets are a finding, not an error; a
    run that produced no figure is: reported, and the exit status is 1."""
    failed = sum(1 for by_impl in runs.values() for recs in by_impl.values() for rec in recs if "error" in rec)
    if failed:
        print("%d run(s) failed: see the '!' lines above" % failed, file=sys.stderr)
    return 1 if failed else 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_main(main):
    """Runs a runner's main() and exits with its status. Ctrl-C and SIGTERM both unwind through
    the handlers that stop the servers (SIGINT too when the shell started the script with SIGINT
    ignored, as it does for background jobs)."""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        stop_all()
        print("interrupted: servers stopped", file=sys.stderr)
        sys.exit(130)
