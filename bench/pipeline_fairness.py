#!/usr/bin/python3
"""What a deep pipeline costs other clients, with and without `pipeline-nice`.

A well-behaved client (this process) GETs a 256 KiB value, one request at a time, idle and then
while another process streams pipelines of 100,000 SET/GET commands (small values, replies
checked byte for byte) at the same server. Runs alternate between `--pipeline-nice 0` (pipelined
requests share the engine pool) and `--pipeline-nice 10` (they run on threads at nice 10), a
fresh server each run, so both see the same machine; compare them within one invocation.

Usage: bench/pipeline_fairness.py [--server build/bin/larder-server] [--rounds 3] [--gets 1000]
Prints one row per run and the mean of each setting. Starts its own servers on free ports in
temp dirs and removes them. The probe and the pipeliner are Python (Debian's python3), so on a
2-core machine they compete with the server for CPU; that contention is what is measured."""
import argparse
import os
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import server_harness  # noqa: E402
from server_harness import (  # noqa: E402
    ServerProcess, encode, keep_big_buffers_on_the_heap, set_get_pipeline)

PIPELINE = 100_000


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    return bytes(buf)


def pipeliner(port, seconds):
    """Child mode: pipelines of PIPELINE commands for `seconds`; after each one prints the
    commands per second so far."""
    request, expected = set_get_pipeline(PIPELINE)
    sock = socket.create_connection(("127.0.0.1", port))
    start, rounds = time.time(), 0
    while time.time() - start < seconds:
        sender = threading.Thread(target=sock.sendall, args=(request,))
        sender.start()
        got = recv_exact(sock, len(expected))
        sender.join()
        if got != expected:
            sys.exit("pipeline replies differ from the expected bytes")
        rounds += 1
        print(rounds * PIPELINE / (time.time() - start), flush=True)


def probe(port, value, gets):
    """Sequential GETs of `probe`; returns sorted latencies in ms. Any wrong reply aborts."""
    want = b"$%d\r\n" % len(value) + value + b"\r\n"
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request = encode("GET", "probe")
    lat = []
    for _ in range(gets):
        t0 = time.perf_counter()
        sock.sendall(request)
        reply = recv_exact(sock, len(want))
        lat.append((time.perf_counter() - t0) * 1e3)
        if reply != want:
            sys.exit("the well-behaved client got wrong bytes")
    sock.close()
    return sorted(lat)


def pct(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def run(nice, gets):
    server = ServerProcess(["--unixsocket", "", "--pipeline-nice", str(nice)])
    pipe = None
    try:
        port = server.start(timeout=30).port
        value = os.urandom(256 << 10)
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(encode("SET", "probe", value))
            if recv_exact(s, 5) != b"+OK\r\n":
                sys.exit("SET probe failed")
        idle = probe(port, value, gets)
        pipe = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--pipeliner",
                                 str(port), "--seconds", "10"], stdout=subprocess.PIPE)
        time.sleep(1.0)  # let the pipeline reach a steady state
        during = probe(port, value, gets)
        pipe.terminate()
        lines = pipe.communicate()[0].split()
        return idle, during, float(lines[-1]) if lines else 0.0
    finally:
        if pipe and pipe.poll() is None:
            pipe.kill()
        server.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=server_harness.SERVER)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gets", type=int, default=1000)
    ap.add_argument("--pipeliner", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=10, help=argparse.SUPPRESS)
    args = ap.parse_args()
    server_harness.SERVER = args.server
    if args.pipeliner:
        pipeliner(args.pipeliner, args.seconds)
        return
    keep_big_buffers_on_the_heap()  # time the server, not this process's page faults
    rows = {0: [], 10: []}
    print("| pipeline-nice | idle p50 ms | idle p99 ms | during p50 ms | during p99 ms | "
          "p99 ratio | pipeline kcmd/s |")
    print("|---|---|---|---|---|---|---|")
    for _ in range(args.rounds):
        for nice in (0, 10):
            idle, during, rate = run(nice, args.gets)
            row = (pct(idle, 50), pct(idle, 99), pct(during, 50), pct(during, 99), rate / 1e3)
            rows[nice].append(row)
            print("| %d | %.2f | %.2f | %.2f | %.2f | %.1fx | %.0f |" % (
                (nice,) + row[:4] + (row[3] / row[1], row[4])), flush=True)
    for nice, rs in rows.items():
        mean = [sum(r[i] for r in rs) / len(rs) for i in range(5)]
        print("| mean %d | %.2f | %.2f | %.2f | %.2f | %.1fx | %.0f |" % (
            (nice,) + tuple(mean[:4]) + (mean[3] / mean[1], mean[4])))


if __name__ == "__main__":
    main()
