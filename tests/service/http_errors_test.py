"""Errors of `rankd serve` in one shape, against a real server and redis-server:
python3 http_errors_test.py <path to rankd> <source folder> (run by ctest, labels cli and
integration).

- What the HTTP layer answers on its own — a bad request line, an unknown path, a wrong method, a
  body over the limit, a head over the limit — is application/json
  {"request_id"?, "error": {"code", "message"}} with the code of docs/operations.md, "Errors";
  request_id is the request's valid X-Request-Id when it was parsed and had one.
- An upstream_error names the Redis endpoint by its registry name and never the server's address,
  which goes to the log.
"""
import json
import socket
import sys
import time
import unittest

from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import Server, SharedServer


def exchange(port, data, timeout=10):
    """Sends `data` on a new connection and reads one response: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before taking everything; read the answer
        raw = b""
        while b"\r\n\r\n" not in raw:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers["content-length"])
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body[:length]


class HttpLayerErrorsTest(SharedServer):
    def assertError(self, answer, status, code, request_id=None):
        got_status, headers, body = answer
        self.assertEqual(got_status, status, body[:300])
        self.assertEqual(headers.get("content-type"), "application/json", headers)
        parsed = json.loads(body.decode("utf-8"))  # JSON, and valid UTF-8
        want_keys = {"error", "request_id"} if request_id is not None else {"error"}
        self.assertEqual(set(parsed), want_keys, parsed)
        self.assertEqual(set(parsed["error"]), {"code", "message"}, parsed)
        self.assertEqual(parsed["error"]["code"], code, parsed)
        self.assertTrue(parsed["error"]["message"], parsed)
        if request_id is not None:
            self.assertEqual(parsed["request_id"], request_id)
        return parsed, headers

    def test_a_bad_request_line_is_400_bad_request(self):
        parsed, headers = self.assertError(
            exchange(self.server.port, b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n"), 400,
            "bad_request")
        self.assertIn("malformed request line", parsed["error"]["message"])
        self.assertEqual(headers.get("connection"), "close")

    def test_an_unknown_path_is_404_not_found_with_the_request_id(self):
        parsed, _ = self.assertError(
            exchange(self.server.port,
                     b"GET /nope HTTP/1.1\r\nHost: x\r\nX-Request-Id: r-404\r\n\r\n"),
            404, "not_found", request_id="r-404")
        self.assertIn("/nope", parsed["error"]["message"])
        # Without an X-Request-Id (or with one that is not valid), no request_id.
        self.assertError(exchange(self.server.port, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"),
                         404, "not_found")
        self.assertError(exchange(self.server.port,
                                  b"GET /nope HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\tb\r\n\r\n"),
                         404, "not_found")
        # A raw non-UTF-8 byte in the path is still valid JSON.
        parsed, _ = self.assertError(
            exchange(self.server.port, b"GET /caf\xc3\xa9\xff HTTP/1.1\r\nHost: x\r\n\r\n"), 404,
            "not_found")
        self.assertIn("/caf\u00e9\ufffd", parsed["error"]["message"])

    def test_a_wrong_method_is_405_method_not_allowed_with_allow(self):
        parsed, headers = self.assertError(
            exchange(self.server.port, b"DELETE /rank HTTP/1.1\r\nHost: x\r\n\r\n"), 405,
            "method_not_allowed")
        self.assertEqual(headers.get("allow"), "POST")
        self.assertIn("DELETE", parsed["error"]["message"])
        self.assertError(exchange(self.server.port, b"POST /healthz HTTP/1.1\r\nHost: x\r\n"
                                  b"Content-Length: 0\r\n\r\n"), 405, "method_not_allowed")

    def test_a_body_over_the_limit_is_413_payload_too_large(self):
        size = 2 * 1024 * 1024  # the limit is 1 MiB
        head = ("POST /rank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % size).encode()
        self.assertError(exchange(self.server.port, head + b"{" * 4096), 413,
                         "payload_too_large")

    def test_a_head_over_the_limit_is_431_headers_too_large(self):
        data = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (32 * 1024) + b"\r\n\r\n"
        self.assertError(exchange(self.server.port, data), 431, "headers_too_large")
        many = b"".join(b"X-%d: v\r\n" % i for i in range(200))
        self.assertError(exchange(self.server.port,
                                  b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"),
                         431, "headers_too_large")

    def test_the_server_serves_on_after_the_errors(self):
        status, content_type, text = self.server.request("GET", "/healthz")
        self.assertEqual((status, content_type), (200, "application/json"), text)


class UpstreamErrorMessageTest(serve_fixture.OwnServer):
    folder_prefix = "rankd-http-errors-"

    def test_a_redis_that_is_down_is_named_by_its_endpoint_and_its_address_only_logged(self):
        self.server = Server(self.store, self.redis)
        self.server.wait_ready()
        self.redis.stop()
        self.server.wait_ready(False)
        address, port = self.redis.address(), str(self.redis.port)
        messages = []
        deadline = time.time() + 10
        while len(messages) < 3 and time.time() < deadline:
            status, r = self.server.rank({"plan": "feed", "viewer_id": 1, "deadline_ms": 5000})
            if status == 502:
                self.assertEqual(r["error"]["code"], "upstream_error", r)
                messages.append(r["error"]["message"])
        self.assertTrue(messages, "no 502 with Redis down")
        for message in messages:
            self.assertIn("Redis endpoint graph", message)
            self.assertNotIn(address, message)
            self.assertNotIn(port, message)
            self.assertNotIn("127.0.0.1", message)
        # The address and the whole cause are in the log, next to the endpoint's name (the
        # reader thread may not have queued the line yet when the 502 arrives: wait for it).
        deadline = time.time() + 10
        while True:
            logged = [e.get("message", "") for e in self.server.drain_log()
                      if e.get("event") == "diagnostic"]
            found = [m for m in logged if "Redis endpoint graph" in m and address in m]
            if found or time.time() > deadline:
                break
            time.sleep(0.02)
        self.assertTrue(found, logged[-5:])


if __name__ == "__main__":
    serve_fixture.configure(sys.argv[1], sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
