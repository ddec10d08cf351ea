"""Redis Clusters on loopback ports in a folder, every node a redis_server.RedisServer stopped by
PID:

- LocalCluster, for `make demo-cluster` and its test: masters with a replica each, created by
  `redis-cli --cluster create`. Nodes can be killed (SIGKILL) and started again on the same port
  and cluster config file, so that a killed master rejoins as a replica of the node that took its
  slots.
- RedisCluster, for the `rankd run` and `rankd datagen` tests: masters only, owning an even share
  of the slots each, joined as `redis-cli --cluster create` would; commands are written to the
  master owning their key.

Standard library only (Debian's python3).
"""
import subprocess
import time

from rankd_harness.redis_server import RedisServer, free_cluster_port
from rankd_harness.resp_client import RedisError, call

CLUSTER_SLOTS = 16384


class ClusterNodeView:
    """One line of CLUSTER NODES: id, address, role, its master's id, whether it is failed or up,
    and the slot ranges it serves."""

    def __init__(self, line):
        fields = line.split()
        self.id = fields[0]
        self.address = fields[1].split("@")[0]
        self.port = int(self.address.rsplit(":", 1)[1])
        flags = fields[2].split(",")
        self.master = "master" in flags
        self.failed = "fail" in flags
        self.suspected = "fail?" in flags
        self.master_id = fields[3] if fields[3] != "-" else None
        self.connected = fields[7] == "connected"
        self.slots = []
        for s in fields[8:]:
            if s.startswith("["):
                continue  # a slot being migrated
            first, _, last = s.partition("-")
            self.slots.append((int(first), int(last or first)))

    def serves(self, slot):
        return self.master and any(first <= slot <= last for first, last in self.slots)


def cluster_nodes(port):
    """The cluster as the node on `port` sees it: a ClusterNodeView per node."""
    text = call(port, "CLUSTER", "NODES")
    if isinstance(text, RedisError):
        raise RuntimeError("CLUSTER NODES on %d: %s" % (port, text))
    return [ClusterNodeView(line) for line in text.splitlines() if line.strip()]


class Node:
    """One redis-server of a LocalCluster, on a fixed port, its cluster config file in the
    folder."""

    def __init__(self, folder, port, node_timeout_ms):
        self.folder, self.port, self.node_timeout_ms = folder, port, node_timeout_ms
        self.server = None

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    @property
    def proc(self):
        return self.server.proc if self.server else None

    def start(self):
        """Starts the server (again: it reads its cluster config file and rejoins) and waits until
        it answers PING."""
        if self.server is not None:
            self.server.start()
            return
        self.server = RedisServer(
            self.folder, port=self.port, cluster=True, cluster_node_timeout_ms=self.node_timeout_ms,
            # Reads go on while the cluster is down (from a master's failure until its replica
            # is promoted): a replica keeps answering its master's slots (READONLY).
            extra_args=["--cluster-allow-reads-when-down", "yes"])

    def kill(self):
        """SIGKILL: the node is gone at once, as a crashed host would be."""
        self.server.kill()

    def stop(self):
        if self.server is not None:
            self.server.stop()

    def alive(self):
        return self.server is not None and self.server.alive()


class LocalCluster:
    """`masters` masters with `replicas` replicas each, on free loopback port pairs in `folder`.
    Stops every node it started if it cannot finish starting."""

    def __init__(self, folder, masters=3, replicas=1, node_timeout_ms=1000):
        self.folder = folder
        self.node_timeout_ms = node_timeout_ms
        self.nodes = []
        try:
            ports = set()
            while len(ports) < masters * (1 + replicas):
                ports.add(free_cluster_port())
            for port in sorted(ports):
                node = Node(folder, port, node_timeout_ms)
                self.nodes.append(node)
                node.start()
            created = subprocess.run(
                ["redis-cli", "--cluster", "create", *[n.address for n in self.nodes],
                 "--cluster-replicas", str(replicas), "--cluster-yes"],
                capture_output=True, text=True, timeout=60)
            if created.returncode != 0:
                raise RuntimeError("redis-cli --cluster create failed: %s" % (
                    created.stdout[-2000:] + created.stderr[-2000:]))
            self.wait_until_healthy(30)
        except BaseException:
            self.stop()
            raise

    def seeds(self):
        return [n.address for n in self.nodes]

    def endpoint(self):
        return "cluster:" + ",".join(self.seeds())

    def node_at(self, address):
        return next(n for n in self.nodes if n.address == address)

    def view(self, exclude=()):
        """CLUSTER NODES from the first live node not in `exclude` that answers."""
        for n in self.nodes:
            if n.alive() and n not in exclude:
                try:
                    return cluster_nodes(n.port)
                except (OSError, RuntimeError):
                    continue
        raise RuntimeError("no node of the cluster answers")

    def masters(self):
        return [self.node_at(v.address) for v in self.view() if v.master and v.slots]

    def healthy(self):
        """Every node up and agreeing the cluster is ok, every slot served by a master with a
        connected, in-sync replica."""
        for n in self.nodes:
            if not n.alive():
                return False
            try:
                if "cluster_state:ok" not in call(n.port, "CLUSTER", "INFO"):
                    return False
            except OSError:
                return False
        views = self.view()
        for v in views:
            if v.failed or v.suspected or not v.connected:
                return False
            if not v.master:
                info = call(v.port, "INFO", "replication")
                if "master_link_status:up" not in info:
                    return False
        masters = [v for v in views if v.master and v.slots]
        return all(any(r.master_id == m.id for r in views if not r.master) for m in masters)

    def wait_until_healthy(self, seconds):
        deadline = time.monotonic() + seconds
        while not self.healthy():
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not become healthy within %d s" % seconds)
            time.sleep(0.05)

    def stop(self):
        for n in self.nodes:
            n.stop()


def crc16(data):
    """CRC16-CCITT (XMODEM), the Redis Cluster key hash."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    key = key.encode() if isinstance(key, str) else key
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % CLUSTER_SLOTS


class RedisCluster:
    """Three masters owning a third of the slots each, joined as redis-cli --cluster create
    would; commands are written to the master owning their key."""

    def __init__(self, folder, masters=3):
        self.nodes = []
        try:
            for _ in range(masters):
                self.nodes.append(RedisServer(folder, cluster=True))
            for i, node in enumerate(self.nodes):
                first, last = self.first_slot(i), self.first_slot(i + 1) - 1
                node.commands([("CLUSTER", "SET-CONFIG-EPOCH", i + 1),
                               ("CLUSTER", "ADDSLOTSRANGE", first, last)])
            for i, node in enumerate(self.nodes):
                node.commands([("CLUSTER", "MEET", "127.0.0.1", other.port)
                               for other in self.nodes[i + 1:]])
            deadline = time.time() + 30
            for node in self.nodes:
                while "cluster_state:ok" not in node.reply_text("CLUSTER", "INFO"):
                    if time.time() > deadline:
                        raise RuntimeError("cluster node %s did not reach cluster_state:ok"
                                           % node.address())
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def first_slot(self, i):
        return CLUSTER_SLOTS * i // len(self.nodes)

    def owner(self, key):
        slot = key_slot(key)
        return next(n for i, n in reversed(list(enumerate(self.nodes))) if slot >= self.first_slot(i))

    def endpoint(self):
        return "cluster:" + ",".join(n.address() for n in self.nodes)

    def commands(self, commands):
        """FLUSHALL goes to every master; every other command to its key's master."""
        per_node = {id(n): [] for n in self.nodes}
        for c in commands:
            if c[0] == "FLUSHALL":
                for n in self.nodes:
                    per_node[id(n)].append(c)
            else:
                per_node[id(self.owner(c[1]))].append(c)
        for n in self.nodes:
            if per_node[id(n)]:
                n.commands(per_node[id(n)])
        return {n.address(): len(per_node[id(n)]) for n in self.nodes}

    def stop(self):
        for n in self.nodes:
            n.stop()
