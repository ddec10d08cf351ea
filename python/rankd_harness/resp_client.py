"""A minimal RESP2 client for scripts and tests: encode a command, parse a reply, send one command
to a loopback port on a new connection. Standard library only (Debian's python3).
"""
import socket


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def parse(data, at=0):
    """(value, next offset) of the RESP2 reply at `at`, or None when incomplete. An error reply
    is a RedisError value."""
    end = data.find(b"\r\n", at)
    if end < 0:
        return None
    kind, line = data[at:at + 1], data[at + 1:end]
    if kind == b"+":
        return line.decode(), end + 2
    if kind == b"-":
        return RedisError(line.decode()), end + 2
    if kind == b":":
        return int(line), end + 2
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, end + 2
        if len(data) < end + 2 + n + 2:
            return None
        return data[end + 2:end + 2 + n].decode(), end + 2 + n + 2
    if kind == b"*":
        n = int(line)
        if n < 0:
            return None, end + 2
        items, at = [], end + 2
        for _ in range(n):
            got = parse(data, at)
            if got is None:
                return None
            value, at = got
            items.append(value)
        return items, at
    raise RuntimeError("not a RESP reply: %r" % data[at:at + 80])


class RedisError(str):
    """An error reply's text."""


def call(port, *command, timeout=2.0):
    """One command to 127.0.0.1:`port` on a new connection: its reply (RedisError for an error
    reply). Raises OSError when the node does not answer within `timeout`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(encode(*command))
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("127.0.0.1:%d closed the connection" % port)
            data += chunk
            got = parse(data)
            if got is not None:
                return got[0]
