"""The two servers every LMCache compatibility test runs against: larder-server (through
tests/server/server_harness.py) and Debian's redis-server 7 as the reference. Both are started
on a free port with a temp directory (and a unix socket), given the same memory/disk budget,
and always stopped and removed by cleanup()."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "server"))
import server_harness  # noqa: E402

MiB = server_harness.MiB


class LarderServer(server_harness.ServerProcess):
    """larder-server. `budget` is max-disk-bytes (eviction-policy lru-reuse by default)."""
    name = "larder"

    def __init__(self, budget=1024 * MiB, password=None, args=()):
        super().__init__()
        self.unixsocket = os.path.join(self.tmp, "larder.sock")
        self.args = ["--max-disk-bytes", str(budget), "--unixsocket", self.unixsocket]
        if password:
            self.args += ["--requirepass", password]
        self.args += list(args)


class RedisServer(server_harness.RedisProcess):
    """redis-server 7 without persistence; `budget` is maxmemory with allkeys-lru, Redis's
    usual cache set-up."""
    name = "redis"

    def __init__(self, budget=1024 * MiB, password=None, args=()):
        super().__init__()
        self.unixsocket = os.path.join(self.tmp, "redis.sock")
        self.args = ["--unixsocket", self.unixsocket, "--unixsocketperm", "700",
                     "--maxmemory", str(budget), "--maxmemory-policy", "allkeys-lru",
                     "--proto-max-bulk-len", "512mb", "--client-query-buffer-limit", "1gb"]
        if password:
            self.args += ["--requirepass", password]
        self.args += list(args)


SERVERS = {"larder": LarderServer, "redis": RedisServer}
