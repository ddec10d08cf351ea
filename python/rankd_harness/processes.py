"""Stopping a child process the one way the scripts, tests and benchmarks do: by PID, SIGTERM
first (the process drains or cleans up), SIGKILL if it has not exited within a grace period, and
always reaped.

Standard library only (Debian's python3).
"""
import os
import signal
import subprocess

# How long a process gets to exit after SIGTERM before it is killed: rankd serve's drain grace
# (docs/operations.md, "Drain") with room to spare.
STOP_GRACE_S = 15


def stop_process(proc, grace_s=STOP_GRACE_S, resume=False):
    """Stops `proc` (a subprocess.Popen) if it still runs: SIGCONT first when `resume` (a process
    that may be paused), then SIGTERM, then SIGKILL after `grace_s`. Returns its exit status."""
    if proc.poll() is None:
        if resume:
            os.kill(proc.pid, signal.SIGCONT)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
