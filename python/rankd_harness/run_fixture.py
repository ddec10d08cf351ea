"""What the `rankd run` and `rankd serve` tests share: the example dataset written into a Redis
(redis_server.RedisServer in a temporary folder), the plan store of the example plans and
variants of it, the assignment bucket computed independently of rankd, and responses with their
clock readings removed.
"""
import hashlib
import json
import os
import shutil
import tempfile

from rankd_harness.redis_server import RedisServer

PLANS = ["blend", "feed", "feed_fresh", "feed_rules", "reels", "timeouts"]


def alive(pid):
    """Whether process `pid` is running (a zombie awaiting its parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# The dataset: viewer 1 follows users 2..9 and is recommended users 10..15; each user u posted
# media u*100+j, j < 4. Features vary with the id; some are missing, some malformed (dropped
# as null by the value rules), one title is spam, one author id is past 2^53. Viewer 1 has been
# shown SEEN (its set seen:1, which exclude_seen reads): followees' media 202, feed_rules' first
# row without the set, 302 and 701, and 1300, the newest item of recommended user 13 (feed_rules'
# discovery); no other viewer has a seen set.
FOLLOWEES = list(range(2, 10))
RECOMMENDED = list(range(10, 16))
SEEN = [202, 302, 701, 1300]


DIRTY_VIEWER = 77
DIRTY_MEDIA = [7000, 7001, 7002]


def media_of(user):
    return [user * 100 + j for j in range(4)]


def features_of(media):
    f = {}
    if media % 7 != 0:
        f["ctr"] = "%.3f" % ((media * 37 % 100) / 250)
    if media % 5 != 1:
        f["likes"] = str(media * 13 % 900)
    if media % 11 == 3:
        f["likes"] = "many"  # not an int: null
    f["age_hours"] = "%.2f" % ((media * 7 % 480) / 10) if media % 9 != 4 else "NaN"
    f["title"] = "buy now, a scam" if media % 13 == 0 else "clip %d" % media
    f["author_id"] = str(media // 100) if media != 203 else "9007199254740993"
    return f


def dataset():
    commands = [("FLUSHALL",), ("HSET", "user:1", "country", "fr", "verified", "true")]
    commands.append(("RPUSH", "follow:1", *FOLLOWEES))
    commands.append(("RPUSH", "recommendation:1", *RECOMMENDED))
    commands.append(("SADD", "seen:1", *SEEN))
    for user in FOLLOWEES + RECOMMENDED:
        commands.append(("HSET", "user:%d" % user, "country", "de", "verified", "0"))
        commands.append(("RPUSH", "media:%d" % user, *media_of(user)))
        for m in media_of(user):
            f = features_of(m)
            commands.append(("HSET", "media_features:%d" % m, *[x for kv in f.items() for x in kv]))
    for m in (9001, 9002, 9003):
        commands.append(("HSET", "media_features:%d" % m, "ctr", "0.5", "title", "pick %d" % m))
    # Viewer 66's followee list is a string: LRANGE answers WRONGTYPE.
    commands.append(("SET", "follow:66", "not a list"))
    # Viewer 77 follows user 70, whose media 7001 has a list where its features hash belongs:
    # the HMGET of every feature fetch over it answers WRONGTYPE (DIRTY_VIEWER).
    commands.append(("RPUSH", "follow:77", 70))
    commands.append(("HSET", "user:70", "country", "de", "verified", "0"))
    commands.append(("RPUSH", "media:70", *DIRTY_MEDIA))
    commands.append(("HSET", "media_features:7000", "ctr", "0.5", "age_hours", "1"))
    commands.append(("RPUSH", "media_features:7001", "not", "a", "hash"))
    commands.append(("HSET", "media_features:7002", "ctr", "0.25", "age_hours", "2"))
    return commands


def assignment_bucket(salt, viewer_id):
    """A viewer's bucket on a surface, as docs/experiments.md ("Assignment") defines it: FNV-1a 64
    over the salt's bytes, a 0x00 byte and the id's 8 bytes little-endian, splitmix64's
    finalizer, mod 10000. Computed here independently of rankd."""
    m64 = 2 ** 64 - 1
    x = 0xcbf29ce484222325
    for b in salt.encode() + b"\0" + (viewer_id & m64).to_bytes(8, "little"):
        x = ((x ^ b) * 0x100000001b3) & m64
    x ^= x >> 30
    x = (x * 0xbf58476d1ce4e5b9) & m64
    x ^= x >> 27
    x = (x * 0x94d049bb133111eb) & m64
    x ^= x >> 31
    return x % 10000


# The example plans a store holds besides PLANS: feed_gbdt scores the registry's tree model
# (registry/models/feed_ctr.txt), which the store holds too.
MODEL_PLANS = ["feed_gbdt"]
MODELS = ["feed_ctr"]
# Every plan write_store's store holds.
STORE_PLANS = sorted(PLANS + MODEL_PLANS)


def write_store(source, folder):
    """The plan store of the example plans (dsl/test/golden, the artifacts rankc builds) and the
    model one scores, as rankc build writes it."""
    store = os.path.join(folder, "plans")
    os.makedirs(os.path.join(store, "models"))
    models = []
    for name in MODELS:
        with open(os.path.join(source, "registry/models/%s.txt" % name), "rb") as f:
            data = f.read()
        with open(os.path.join(store, "models/%s.txt" % name), "wb") as f:
            f.write(data)
        models.append({"name": name, "path": "models/%s.txt" % name,
                       "sha256": hashlib.sha256(data).hexdigest()})
    index = []
    header = {"models": models}
    for name in STORE_PLANS:
        path = os.path.join(source, "dsl/test/golden/%s.json" % name)
        shutil.copy(path, os.path.join(store, name + ".json"))
        with open(path) as f:
            plan = json.load(f)
        index.append({"digest": plan["digest"], "name": name, "path": name + ".json"})
        header.update(registry_digest=plan["registry_digest"], schema_version=plan["schema_version"])
    with open(os.path.join(store, "index.json"), "w") as f:
        json.dump(dict(header, plans=index), f)
    return store


def write_plan_variant(store, name, change, as_name=None):
    """Rewrites the artifact of plan `name` in `store` by `change` (a function editing the plan),
    as plan `as_name` when given (a new plan, its artifact beside the others), with its digest
    recomputed and its index entry set (docs/plan-format.md, "Canonical JSON and digests": the
    example plans' numbers are written alike by json.dumps). Returns the new digest."""
    with open(os.path.join(store, name + ".json")) as f:
        plan = json.load(f)
    change(plan)
    plan["name"] = as_name or name
    plan.pop("digest")
    canonical = json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    plan["digest"] = hashlib.sha256(canonical.encode()).hexdigest()
    with open(os.path.join(store, plan["name"] + ".json"), "w") as f:
        json.dump(plan, f, indent=2, sort_keys=True)
    index_path = os.path.join(store, "index.json")
    with open(index_path) as f:
        index = json.load(f)
    entries = [e for e in index["plans"] if e["name"] != plan["name"]]
    entries.append({"digest": plan["digest"], "name": plan["name"], "path": plan["name"] + ".json"})
    index["plans"] = sorted(entries, key=lambda e: e["name"])
    with open(index_path, "w") as f:
        json.dump(index, f)
    return plan["digest"]


def slow_store(store, folder):
    """A copy of the example store whose timeouts plan's slow_ranker (a sleep, on_error skip)
    declares no timeout_ms and sleeps 3 s: only a default node timeout or the request's deadline
    cuts it (its digest recomputed)."""
    out = os.path.join(tempfile.mkdtemp(prefix="slow-", dir=folder), "plans")
    shutil.copytree(store, out)

    def no_timeout(plan):
        for node in plan["nodes"]:
            if node["id"] == "slow_ranker":
                del node["timeout_ms"]
                node["params"]["ms"] = 3000
                node["label"] = "sleeps 3 s, no timeout_ms"
    write_plan_variant(out, "timeouts", no_timeout)
    return out


def redis_with_dataset(source, prefix):
    """A temporary folder holding a Redis loaded with dataset() and the example plan store:
    (folder, redis, store). The caller stops the Redis and removes the folder."""
    folder = tempfile.mkdtemp(prefix=prefix)
    redis = RedisServer(folder)
    try:
        redis.commands(dataset())
        return folder, redis, write_store(source, folder)
    except Exception:
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)
        raise


def example_requests():
    return [json.dumps({"plan": p, "viewer_id": 1, "request_id": p, "explain": True,
                        "deadline_ms": 2000}) for p in PLANS]


def without_timings(response):
    """A response with explain's clock readings removed (they vary run to run)."""
    r = json.loads(response)
    for node in r.get("explain", {}).get("nodes", []):
        for k in ("start_us", "end_us", "cpu_us"):
            node.pop(k, None)
    if "explain" in r:
        r["explain"]["totals"].pop("cpu_us", None)
        r["explain"]["totals"].pop("elapsed_us", None)
    return r


def without_round_trips(response):
    """A response (as without_timings returns it) without its round-trip counts, the one
    figure that depends on how the commands reached Redis."""
    for node in response.get("explain", {}).get("nodes", []):
        node.pop("round_trips", None)
    if "explain" in response:
        response["explain"]["totals"].pop("round_trips", None)
    return response
