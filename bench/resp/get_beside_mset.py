#!/usr/bin/python3
"""GET latency beside MSETs of large values, for one or more larder-server builds.

An MSET is atomic: it writes its values first, then holds the server's exclusive lock while it
writes their index records, and every command with a key waits for that hold: what the MSET
does under it is how long a GET beside it may stall. Each round starts every build in turn on
a fresh data directory and runs, against it, one client GETting a 1 KiB key in a loop while
another sends `--msets` MSETs of `--values` x `--value-bytes` (0.3 s apart); it prints each
build's GET p50/p99/max and the MSETs' median time per round, and the median over the rounds
of each build's worst GET.

    bench/resp/get_beside_mset.py [--rounds 3] [--budget 1gb] [--] build/bin/larder-server \
        /tmp/base/larder-server

Extra server arguments go in --server-args (one string). Needs Debian's python3-redis.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, budget, extra):
    port = free_port()
    data = tempfile.mkdtemp(prefix="larder-mset-")
    proc = subprocess.Popen([binary, "--port", str(port), "--dir", data, "--unixsocket", "",
                             "--max-disk-bytes", budget] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            return proc, data, client, port
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(binary + " did not start")
            time.sleep(0.05)


def stop(proc, data):
    proc.terminate()
    proc.wait(30)
    shutil.rmtree(data, ignore_errors=True)


def one_run(port, args):
    """GET latencies (ms) while the MSETs run, sorted, and each MSET's time (ms)."""
    writer = redis.Redis(port=port)
    writer.set("small", b"s" * 1024)
    value = b"x" * args.value_bytes
    done = threading.Event()
    latencies = []
    msets = []

    def reader():
        c = redis.Redis(port=port)
        while not done.is_set():
            t = time.monotonic()
            c.get("small")
            latencies.append((time.monotonic() - t) * 1e3)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for m in range(args.msets):
            t = time.monotonic()
            writer.mset({"m%d:%d" % (m, i): value for i in range(args.values)})
            msets.append((time.monotonic() - t) * 1e3)
            time.sleep(0.3)
    finally:
        done.set()
        thread.join()
    return sorted(latencies), msets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("servers", nargs="+", help="larder-server binaries")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", default="1gb", help="max-disk-bytes (default 1gb)")
    ap.add_argument("--msets", type=int, default=3)
    ap.add_argument("--values", type=int, default=8)
    ap.add_argument("--value-bytes", type=int, default=16 << 20)
    ap.add_argument("--server-args", default="", help="more larder-server arguments")
    args = ap.parse_args()
    extra = args.server_args.split()
    maxima = {s: [] for s in args.servers}
    print("| round | server | GETs | p50 ms | p99 ms | max ms | MSET ms (median) |")
    print("|---|---|---|---|---|---|---|")
    for r in range(args.rounds):
        order = args.servers if r % 2 == 0 else list(reversed(args.servers))
        for binary in order:
            proc, data, _, port = start(binary, args.budget, extra)
            try:
                lat, msets = one_run(port, args)
            finally:
                stop(proc, data)
            maxima[binary].append(lat[-1])
            print("| %d | %s | %d | %.2f | %.2f | %.1f | %.0f |" % (
                r + 1, binary, len(lat), lat[len(lat) // 2], lat[int(len(lat) * 0.99)], lat[-1],
                statistics.median(msets)))
    for binary in args.servers:
        print("median of the rounds' max, %s: %.1f ms" % (binary, statistics.median(maxima[binary])))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
