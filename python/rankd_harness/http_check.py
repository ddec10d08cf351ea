"""Equal work in the HTTP benchmark: before anything is timed, every implementation's server must
answer /plaintext and /json with the same bytes as the others, apart from the Date value (any
IMF-fixdate) and the Server value (which names the implementation).

Each server is started fresh and asked once, on one connection, with both requests in one write
(so pipelining is checked too); the responses are cut apart by their Content-Length, the two
values are masked, and every implementation's responses are compared with the first one's."""
import re
import socket
import time

from rankd_harness.bench_server import LIVE, Server, ServerError, stop_and_record

PATHS = ("/plaintext", "/json")
TIMEOUT_S = 5
IMF_FIXDATE = re.compile(rb"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                         rb"\d{4} \d\d:\d\d:\d\d GMT")
MASKED = {b"date": b"<date>", b"server": b"<server>"}


def request(path):
    return b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path.encode()


def cut_response(data):
    """(one complete response, the bytes after it), or None while incomplete."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    m = re.search(rb"\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n", data[:end + 2], re.I)
    total = end + 4 + (int(m.group(1)) if m else 0)
    return (data[:total], data[total:]) if len(data) >= total else None


def fetch(port, paths):
    """The raw responses to `paths`, sent pipelined in one write on one connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as s:
        s.sendall(b"".join(request(p) for p in paths))
        deadline = time.monotonic() + TIMEOUT_S
        data, responses = b"", []
        while len(responses) < len(paths):
            cut = cut_response(data)
            if cut:
                responses.append(cut[0])
                data = cut[1]
                continue
            s.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                raise ValueError("connection closed after %d of %d responses" % (len(responses), len(paths)))
            data += chunk
        if data:
            raise ValueError("%d bytes after the last response" % len(data))
        return responses


def masked(response):
    """The response with its Date and Server values masked; ValueError when either is missing or
    the Date is not an IMF-fixdate."""
    head, sep, body = response.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    seen = set()
    for i, line in enumerate(lines[1:], 1):
        name, colon, value = line.partition(b":")
        key = name.lower()
        if colon and key in MASKED:
            if key == b"date" and not IMF_FIXDATE.fullmatch(value.strip()):
                raise ValueError("Date is not an IMF-fixdate: %r" % value.strip())
            lines[i] = name + b": " + MASKED[key]
            seen.add(key)
    if seen != set(MASKED):
        raise ValueError("no %s header" % " or ".join(sorted(k.decode() for k in set(MASKED) - seen)))
    return b"\r\n".join(lines) + sep + body


def responses_of(impl, argv):
    """{path: masked response} from a fresh server of `impl`."""
    server = Server(argv, impl)
    LIVE.append(server)
    try:
        port = server.wait_listening()
        return {p: masked(r) for p, r in zip(PATHS, fetch(port, PATHS))}
    finally:
        stop_and_record(server, {})


def check_same_responses(argvs, log):
    """argvs: implementation -> server argv. Returns ({path: the masked response text}, the problems
    found: empty when every implementation answers as the first one does)."""
    reference, problems = None, []
    for impl, argv in argvs.items():
        try:
            got = responses_of(impl, argv)
        except (ServerError, ValueError, OSError) as e:
            problems.append("%s: %s" % (impl, e))
            continue
        if reference is None:
            reference, first = got, impl
            continue
        for path in PATHS:
            if got[path] != reference[path]:
                problems.append("%s %s differs from %s:\n    %r\n    %r" % (
                    impl, path, first, got[path], reference[path]))
    if not problems:
        log("responses: %d implementations answer %s with the same bytes apart from Date and Server" % (
            len(argvs), " and ".join(PATHS)))
    texts = {p: r.decode("latin-1") for p, r in (reference or {}).items()}
    return texts, problems
