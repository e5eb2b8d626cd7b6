#!/usr/bin/python3
"""GB/s of the `larder` Python package's batched puts and gets (what the larder:// LMCache
connector does with a chunk batch) against a larder-server on loopback, beside redis-py's own
asyncio pipeline on the same server:

  AsyncClient          larder.AsyncClient.put_many / get_many (the connector's path)
  AsyncClient pyparse  the same with redis-py's pure-Python reply parser (shown only when
                       hiredis is installed, which redis-py then uses by default)
  Client               larder.Client, the blocking twin
  redis.asyncio        one redis.asyncio pipeline of SETs / GETs per batch, as redis-py
                       sends it (no sliced send)

Each round stores and reads back --batch-mib MiB of values of each --sizes, every peer in
turn on the same keys, --rounds times; the median of the rounds is printed. Every value read
is compared with the one written, and every put is read back, outside the timed region; a
wrong or missing value fails the run (exit 1).

Usage: bench/python_client.py [--server build/bin/larder-server] [--sizes 1,4,16]
           [--batch-mib 32] [--rounds 6] [--json]
Starts its own larder-server on a free port with a temp dir and removes both at the end."""
import argparse
import asyncio
import json
import os
import statistics
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "connectors", "python"))
import redis  # noqa: E402
import redis.asyncio  # noqa: E402
from larder import AsyncClient, Client  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import server_harness  # noqa: E402
from server_harness import ServerProcess  # noqa: E402

MiB = 1 << 20
TIMEOUT = 60  # seconds: a slow round is measured, not failed


def hiredis_loaded():
    return getattr(redis.utils, "HIREDIS_AVAILABLE", False)


class AsyncPeer:
    """Runs an async client's coroutines on a loop of its own."""

    def __init__(self, make):
        self.loop = asyncio.new_event_loop()
        self.client = self.loop.run_until_complete(self._make(make))

    @staticmethod
    async def _make(make):
        return make()

    def put(self, items):
        return self.loop.run_until_complete(self.client.put_many(items))

    def get(self, keys):
        return self.loop.run_until_complete(self.client.get_many(keys))

    def close(self):
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


class RedisAsyncioPeer:
    """redis-py's own asyncio pipeline: the send every redis.asyncio user gets."""

    def __init__(self, url):
        self.loop = asyncio.new_event_loop()
        self.redis = redis.asyncio.Redis.from_url(url, socket_timeout=TIMEOUT)

    def put(self, items):
        async def run():
            pipe = self.redis.pipeline(transaction=False)
            for k, v in items:
                pipe.set(k, v)
            return all(r is True for r in await pipe.execute())
        return self.loop.run_until_complete(run())

    def get(self, keys):
        async def run():
            pipe = self.redis.pipeline(transaction=False)
            for k in keys:
                pipe.get(k)
            return await pipe.execute()
        return self.loop.run_until_complete(run())

    def close(self):
        self.loop.run_until_complete(self.redis.close())
        self.loop.close()


class SyncPeer:
    def __init__(self, url):
        self.client = Client(url, timeout=TIMEOUT)

    def put(self, items):
        return self.client.put_many(items)

    def get(self, keys):
        return self.client.get_many(keys)

    def close(self):
        self.client.close()


def make_peers(url):
    larder_url = url.replace("redis://", "larder://") + f"?timeout={TIMEOUT}"
    peers = {"AsyncClient": AsyncPeer(lambda: AsyncClient(larder_url))}
    if hiredis_loaded():
        peers["AsyncClient pyparse"] = AsyncPeer(lambda: AsyncClient(
            larder_url, parser_class=redis.asyncio.connection.PythonParser))
    peers["Client"] = SyncPeer(larder_url)
    peers["redis.asyncio"] = RedisAsyncioPeer(url)
    return peers


def run_size(peers, check, size, batch_bytes, rounds, errors):
    """{peer: {"put": [GB/s...], "get": [...]}} over `rounds` rounds of one batch each."""
    n = max(1, batch_bytes // size)
    keys = [f"pc:{size}:{i}".encode() for i in range(n)]
    gbs = {name: {"put": [], "get": []} for name in peers}
    for r in range(rounds):
        for name, peer in peers.items():
            values = [os.urandom(64) + bytes([r, i % 256]) * ((size - 64) // 2) for i in range(n)]
            t = time.perf_counter()
            ok = peer.put(list(zip(keys, values)))
            gbs[name]["put"].append(n * size / (time.perf_counter() - t) / 1e9)
            if not ok or check.get_many(keys) != values:
                errors.append(f"{name}: put of {n} x {size} B not stored as written")
            t = time.perf_counter()
            got = peer.get(keys)
            gbs[name]["get"].append(n * size / (time.perf_counter() - t) / 1e9)
            if got != values:
                errors.append(f"{name}: get of {n} x {size} B did not return what was written")
    return gbs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=server_harness.SERVER)
    ap.add_argument("--sizes", default="1,4,16", help="value sizes in MiB, comma separated")
    ap.add_argument("--batch-mib", type=float, default=32)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    server_harness.SERVER = args.server
    sizes = [int(float(s) * MiB) for s in args.sizes.split(",")]
    server = ServerProcess(["--max-disk-bytes", "4gb"], limits=())
    errors = []
    try:
        url = f"redis://127.0.0.1:{server.start(timeout=30).port}"
        peers = make_peers(url)
        check = Client(url.replace("redis://", "larder://"), timeout=TIMEOUT)
        rows = []
        for size in sizes:
            for name, by_op in run_size(peers, check, size, int(args.batch_mib * MiB),
                                        args.rounds, errors).items():
                rows.append({"peer": name, "value": size, "batch": int(args.batch_mib * MiB),
                             "rounds": args.rounds, "hiredis": hiredis_loaded(),
                             "put_gbs": statistics.median(by_op["put"]),
                             "get_gbs": statistics.median(by_op["get"])})
        for peer in peers.values():
            peer.close()
        check.close()
    finally:
        server.cleanup()
    print_rows(rows, args)
    for e in errors:
        print("error:", e, file=sys.stderr)
    return 1 if errors else 0


def print_rows(rows, args):
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return
    print(f"larder Python client, loopback, redis-py {redis.__version__}, hiredis "
          f"{'loaded' if hiredis_loaded() else 'not installed'}, batches of {args.batch_mib:g} "
          f"MiB, median of {args.rounds} rounds\n")
    print("| peer | value | put GB/s | get GB/s |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['peer']} | {row['value'] / MiB:g} MiB | {row['put_gbs']:.3f} | "
              f"{row['get_gbs']:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
