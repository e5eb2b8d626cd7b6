#!/usr/bin/python3
"""Prefix lookup latency on loopback: how long LMCache waits to learn how many leading chunks
of a prompt are cached, for a prefix of --keys chunks, all present (the worst case for the
sequential path: it never stops early).

  larder.prefix     one LARDER.PREFIX k1 .. kN command (larder.Client.prefix_count; the
                    larder:// connector's batched_async_contains)
  exists pipeline   N EXISTS in one pipeline (the same client against a server without
                    LARDER.PREFIX, e.g. Redis)
  exists sequential N EXISTS, one round trip each (LMCache's stock redis:// connector)

Usage: bench/prefix_lookup.py [--server build/bin/larder-server] [--keys 512] [--rounds 200]
Starts its own larder-server on a free port with a temp dir and removes both at the end.
Each sample is one whole lookup through redis-py (Debian's python3-redis), client time
included, as LMCache would see it."""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "connectors", "python"))
from larder import Client  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import server_harness  # noqa: E402
from server_harness import ServerProcess  # noqa: E402


def percentiles(samples_s):
    ms = sorted(s * 1000 for s in samples_s)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def measure(fn, rounds, expect):
    fn()  # warm-up: connections made, code paths hot
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        got = fn()
        samples.append(time.perf_counter() - t)
        if got != expect:
            sys.exit(f"wrong answer: {got} leading keys, expected {expect}")
    return percentiles(samples)


def leading(flags):
    return next((i for i, f in enumerate(flags) if not f), len(flags))


def sequential_exists(client, keys):
    n = 0
    for k in keys:  # LMCache's redis connector: one EXISTS per chunk, stop at the first miss
        if not client.redis.exists(k):
            break
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=512)
    ap.add_argument("--server", default=server_harness.SERVER)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--value-bytes", type=int, default=256 << 10)
    args = ap.parse_args()
    server_harness.SERVER = args.server
    server = ServerProcess(["--max-disk-bytes", "1gb"], limits=())
    try:
        port = server.start(timeout=30).port
        client = Client(f"larder://127.0.0.1:{port}")
        keys = [f"vllm@model@1@0@{i:064x}".encode() for i in range(args.keys)]
        value = os.urandom(args.value_bytes)
        for i in range(0, len(keys), 64):
            client.put_many([(k, value) for k in keys[i:i + 64]])
        rows = [("larder.prefix (1 round trip)", measure(
                    lambda: client.prefix_count(keys), args.rounds, args.keys)),
                ("exists pipeline (1 round trip)", measure(
                    lambda: leading(client.exists_many(keys)), args.rounds, args.keys)),
                ("exists sequential (N round trips)", measure(
                    lambda: sequential_exists(client, keys), max(args.rounds // 10, 5),
                    args.keys))]
        print(f"prefix lookup of {args.keys} present keys, loopback, redis-py "
              f"{__import__('redis').__version__}, p50/p99 over {args.rounds} lookups "
              f"({max(args.rounds // 10, 5)} for the sequential path)\n")
        print("| method | p50 ms | p99 ms |\n|---|---|---|")
        for name, (p50, p99) in rows:
            print(f"| {name} | {p50:.3f} | {p99:.3f} |")
        seq, one = rows[2][1][0], rows[0][1][0]
        print(f"\nlarder.prefix is {seq / one:.0f}x faster than sequential EXISTS (p50)")
        client.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
