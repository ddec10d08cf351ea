"""A Redis Cluster on loopback ports in a folder, for `make demo-cluster` and its test: masters
with a replica each, created by `redis-cli --cluster create`, every node a redis-server process
stopped by PID. Nodes can be killed (SIGKILL) and started again on the same port and cluster
config file, so that a killed master rejoins as a replica of the node that took its slots.

Standard library only (Debian's python3).
"""
import os
import random
import signal
import socket
import subprocess
import time

from resp_client import RedisError, call

CLUSTER_SLOTS = 16384


def port_pair_is_free(port):
    """`port` and its cluster bus port (port + 10000) are both free on loopback."""
    for p in (port, port + 10000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


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
    """One redis-server of the cluster, on a fixed port, its cluster config file in the folder."""

    def __init__(self, folder, port, node_timeout_ms):
        self.folder, self.port, self.node_timeout_ms = folder, port, node_timeout_ms
        self.proc = None

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        """Starts the server (again: it reads its cluster config file and rejoins) and waits until
        it answers PING."""
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.folder, "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes-%d.conf" % self.port,
             "--cluster-node-timeout", str(self.node_timeout_ms),
             # Reads go on while the cluster is down (from a master's failure until its replica
             # is promoted): a replica keeps answering its master's slots (READONLY).
             "--cluster-allow-reads-when-down", "yes",
             "--logfile", "redis-%d.log" % self.port],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if call(self.port, "PING", timeout=1) == "PONG":
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server on %s did not start (log: %s)" % (
                    self.address, os.path.join(self.folder, "redis-%d.log" % self.port)))
            time.sleep(0.02)

    def kill(self):
        """SIGKILL: the node is gone at once, as a crashed host would be."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


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
                port = random.randrange(20000, 45000)
                if port not in ports and port_pair_is_free(port):
                    ports.add(port)
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
