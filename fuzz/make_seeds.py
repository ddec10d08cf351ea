#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/): a handful of valid
replies as Redis sends them, each prefixed with the option bytes the target reads first.
Run from anywhere: python3 fuzz/make_seeds.py"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"


class Simple(str):
    """A simple string ('+'), as opposed to a bulk string (str)."""


class Map(dict):
    """A RESP3 map ('%'); written as a flat array in RESP2."""


def resp(value, resp3=True) -> bytes:
    if value is None:
        return b"_\r\n" if resp3 else b"$-1\r\n"
    if isinstance(value, bool):
        return b"#t\r\n" if value else b"#f\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, float):
        return b",%r\r\n" % value
    if isinstance(value, Simple):
        return b"+" + value.encode() + b"\r\n"
    if isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        return b"$%d\r\n%s\r\n" % (len(data), data)
    if isinstance(value, Map):
        items = [x for kv in value.items() for x in kv]
        if not resp3:
            return resp(items, resp3)
        return b"%%%d\r\n" % len(value) + b"".join(resp(x, resp3) for x in items)
    if isinstance(value, list):
        return b"*%d\r\n" % len(value) + b"".join(resp(x, resp3) for x in value)
    raise TypeError(value)


def node(letter, port, role, health="online"):
    return Map({"id": letter * 40, "port": port, "ip": "127.0.0.1", "endpoint": "127.0.0.1",
                "role": role, "replication-offset": 72156, "health": health})


SHARDS = [
    Map({"slots": [0, 5460], "nodes": [node("a", 7000, "master"), node("d", 7003, "replica")]}),
    Map({"slots": [5461, 10922, 16000, 16001],
         "nodes": [node("e", 7004, "replica", "loading"), node("b", 7001, "master")]}),
    Map({"slots": [10923, 15999, 16002, 16383], "nodes": [node("c", 7002, "master")]}),
]


def slots_node(letter, port):
    return ["127.0.0.1", port, letter * 40, Map({"hostname": "node-" + letter})]


SLOTS = [
    [0, 5460, slots_node("a", 7000), slots_node("d", 7003)],
    [5461, 10922, slots_node("b", 7001)],
    [10923, 16383, slots_node("c", 7002)],
]
SLOTS_OLD = [[0, 8191, ["10.0.0.1", 6379]], [8192, 16383, [None, 6380, "f" * 40]]]
KEYS = b"{user1}a\n{user1}b\nfoo\nbar\n\n{}x"

SEEDS = {
    "reply_parser": {
        "resp2_array": b"\x00\x07" + resp([Simple("OK"), "hello", -42, None, [1, [2, "x"]]], False),
        "resp3_types": b"\x01\x11" + resp(Map({"pi": 3.14, "set": [True, False]}))
        + b"~2\r\n(12345678901234567890\r\n=7\r\ntxt:abc\r\n,inf\r\n,-nan\r\n_\r\n",
        "attribute_push": b"\x01\x03|1\r\n+ttl\r\n:10\r\n$1\r\nx\r\n>2\r\n+message\r\n$2\r\nhi\r\n",
        "errors_and_nulls": b"\x02\x09-ERR unknown command\r\n!11\r\nSYNTAX x\r\ny\r\n$-1\r\n*-1\r\n"
        b"-MOVED 3999 127.0.0.1:6381\r\n",
        "tiny_limits": b"\x04\x21*2\r\n*2\r\n*1\r\n:1\r\n$20\r\n01234567890123456789\r\n:5\r\n",
        "cluster_shards": b"\x06\x42" + resp(SHARDS),
    },
    "slot_map": {
        "shards_resp3": b"\x00" + resp(SHARDS) + KEYS,
        "shards_resp2": b"\x00" + resp(SHARDS, False) + KEYS,
        "slots_redis7": b"\x00" + resp(SLOTS) + KEYS,
        "slots_old": b"\x00" + resp(SLOTS_OLD, False) + b"\x12\x34a\nb",
        "shards_tls_hostname": b"\x01" + resp([Map({"slots": [0, 16383], "nodes": [
            Map({"id": "a" * 40, "tls-port": 7100, "ip": "10.0.0.1", "endpoint": "?",
                 "hostname": "redis-a", "role": "master", "health": "online"})]})]) + KEYS,
    },
    "http_request_parser": {
        "get": b"\x00GET /feed?user=7&k=20 HTTP/1.1\r\nHost: rankd\r\nAccept: */*\r\n\r\n",
        "post_body": b"\x02POST /rank HTTP/1.1\r\nHost: rankd\r\nContent-Type: application/json\r\n"
        b"Content-Length: 13\r\nExpect: 100-continue\r\n\r\n{\"user\": 42}\n",
        "pipelined": b"\x04GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n"
        b"Connection: close\r\n\r\nHEAD /c HTTP/1.1\r\nhost:  h \r\n\r\n",
        "http10_keep_alive": b"\x06GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "small_limits": b"\x01PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
    },
}

for target, seeds in SEEDS.items():
    directory = ROOT / target
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in seeds.items():
        (directory / name).write_bytes(data)
