"""Reading files another process is still writing, the way the scripts and tests wait for them.

Standard library only (Debian's python3).
"""
import os
import time

# How often a file is read again while it has fewer lines than awaited.
POLL_S = 0.02


def lines_when(path, count, timeout_s=10):
    """The lines of `path` once it holds `count` of them, or what it holds after `timeout_s`
    seconds (a server writes them from a thread of its own); none while it does not exist."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(POLL_S)
