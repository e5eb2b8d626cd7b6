"""Larder clusters for tests: N larder-server nodes with `cluster-enabled yes` on loopback, and
the topology pushed exactly as kvrocks-controller pushes it (store/cluster_node.go
SyncClusterInfo): to every node, `CLUSTERX SETNODEID <id>` then
`CLUSTERX SETNODES "<nodes>" <version>`, each line `<id> <host> <port> master - <ranges>`
ending in '\\n', a range written `a-b` or `n` (store/slot.go), the slots split as
store.CalculateSlotRanges splits them (16384 // n each, the last node the rest)."""
import random
import string

from server_harness import RawClient, ServerProcess

SLOTS = 16384


def cluster_info(node, password=None):
    """`CLUSTER INFO` of a node (a ServerProcess) as {field: value}, as the controller reads it."""
    raw = node.client(password=password).execute_command("CLUSTER", "INFO")
    text = raw.decode() if isinstance(raw, bytes) else raw
    # Kvrocks's migration lines put a space after the colon; the controller trims it.
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.split("\r\n")
                                      if ":" in line)}


def node_id():
    """A node id as the controller makes one (util.GenerateNodeID: 40 random alphanumerics)."""
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(40))


def even_ranges(n):
    size = SLOTS // n
    return [(i * size, SLOTS - 1 if i == n - 1 else (i + 1) * size - 1) for i in range(n)]


def range_text(first, last):
    return str(first) if first == last else f"{first}-{last}"


class Cluster:
    """`n` larder-server nodes; `owned[i]` is node i's list of (first, last) slot ranges.
    `password`: every node's requirepass, which push() and client() authenticate with."""

    def __init__(self, n=3, args=(), password=None):
        self.password = password
        auth = ["--requirepass", password] if password else []
        self.nodes = [ServerProcess(["--cluster-enabled", "yes"] + auth + list(args))
                      for _ in range(n)]
        self.ids = [node_id() for _ in range(n)]
        self.owned = [[r] for r in even_ranges(n)]
        self.version = 0

    def start(self):
        for node in self.nodes:
            node.start()
        return self

    def cleanup(self):
        for node in self.nodes:
            node.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    def nodes_text(self):
        lines = ""
        for node, nid, ranges in zip(self.nodes, self.ids, self.owned):
            slots = " ".join(range_text(a, b) for a, b in ranges)
            lines += f"{nid} 127.0.0.1 {node.port} master - {slots}\n"
        return lines

    def push(self):
        """A new version of the topology to every node, as the controller sends it."""
        self.version += 1
        text = self.nodes_text()
        for node, nid in zip(self.nodes, self.ids):
            if not node.alive():
                continue
            raw = RawClient(node.port)
            try:
                if self.password:
                    assert raw.call("AUTH", self.password) == b"+OK\r\n"
                assert raw.call("CLUSTERX", "SETNODEID", nid) == b"+OK\r\n"
                assert raw.call("CLUSTERX", "SETNODES", text, str(self.version)) == b"+OK\r\n"
            finally:
                raw.close()

    def move(self, first, last, to):
        """Records slots first..last as node `to`'s (the controller's metadata change)."""
        for ranges in self.owned:
            kept = []
            for a, b in ranges:
                if b < first or a > last:
                    kept.append((a, b))
                    continue
                if a < first:
                    kept.append((a, first - 1))
                if b > last:
                    kept.append((last + 1, b))
            ranges[:] = kept
        self.owned[to].append((first, last))
        self.owned[to].sort()

    def owner_of(self, slot):
        for i, ranges in enumerate(self.owned):
            if any(a <= slot <= b for a, b in ranges):
                return i
        return None

    def startup_nodes(self):
        from redis.cluster import ClusterNode
        return [ClusterNode("127.0.0.1", node.port) for node in self.nodes]

    def client(self, **kw):
        from redis.cluster import RedisCluster
        if self.password:
            kw.setdefault("password", self.password)
        return RedisCluster(startup_nodes=self.startup_nodes(), **kw)
