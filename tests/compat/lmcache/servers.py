"""The two servers every LMCache compatibility test runs against: larder-server (through
tests/server/server_harness.py) and Debian's redis-server 7 as the reference. Both are started
on a free port with a temp directory (and a unix socket), given the same memory/disk budget,
and always stopped and removed by cleanup()."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "server"))
import server_harness  # noqa: E402

REDIS_SERVER = os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
MiB = 1 << 20


class LarderServer:
    """larder-server. `budget` is max-disk-bytes (eviction-policy lru-reuse by default)."""
    name = "larder"

    def __init__(self, budget=1024 * MiB, password=None, args=()):
        self.proc = server_harness.ServerProcess(args=list(args))
        self.tmp = self.proc.tmp
        self.unixsocket = os.path.join(self.tmp, "larder.sock")
        extra = ["--max-disk-bytes", str(budget), "--unixsocket", self.unixsocket]
        if password:
            extra += ["--requirepass", password]
        self.proc.args = extra + self.proc.args
        self.port = self.proc.port

    def start(self):
        self.proc.start()
        return self

    def alive(self):
        return self.proc.proc is not None and self.proc.proc.poll() is None

    def cleanup(self):
        self.proc.cleanup()


class RedisServer:
    """redis-server 7 without persistence; `budget` is maxmemory with allkeys-lru, Redis's
    usual cache set-up."""
    name = "redis"

    def __init__(self, budget=1024 * MiB, password=None, args=()):
        self.tmp = tempfile.mkdtemp(prefix="larder-redis-")
        self.port = server_harness.free_port()
        self.unixsocket = os.path.join(self.tmp, "redis.sock")
        self.cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", self.tmp,
                    "--unixsocket", self.unixsocket, "--unixsocketperm", "700",
                    "--maxmemory", str(budget), "--maxmemory-policy", "allkeys-lru",
                    "--proto-max-bulk-len", "512mb", "--client-query-buffer-limit", "1gb"]
        if password:
            self.cmd += ["--requirepass", password]
        self.cmd += list(args)
        self.proc = None

    def start(self, timeout=20):
        if not os.path.exists(REDIS_SERVER):
            raise RuntimeError(f"redis-server not found at {REDIS_SERVER}; "
                               "scripts/deps --test installs it (Debian redis-server)")
        self.log = open(os.path.join(self.tmp, "redis.log"), "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=server_harness._die_with_parent)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited: " + self._read_log())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start: " + self._read_log())

    def _read_log(self):
        with open(os.path.join(self.tmp, "redis.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cleanup(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.log.close()
            self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)


SERVERS = {"larder": LarderServer, "redis": RedisServer}
