#!/usr/bin/python3
"""Slot migration at GB scale: how long other clients' GETs stall while a range of slots moves.

Two larder-server nodes in cluster mode (topology pushed as kvrocks-controller pushes it). Node
0 holds `--gib` GiB of `--value-mib` MiB values in slots 0..`--slots`-1, plus values in slots
outside that range; readers (redis-py RedisCluster, one thread each) GET keys outside the range
and inside it, checking every byte, while `CLUSTERX MIGRATE 0-<slots-1> <node 1>` moves the
range; the controller's poll of CLUSTER INFO ends it, and the new topology is pushed. Prints one
JSON line: the migration's seconds and GB/s, and per reader the GETs during the migration, the
longest and p99 GET, and wrong bytes (must be 0).

Run: /usr/bin/python3 bench/cluster_migration.py --server build/bin/larder-server [--gib 2]
"""
import argparse
import json
import logging
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
from cluster_harness import Cluster, cluster_info  # noqa: E402
import server_harness  # noqa: E402

MiB = 1 << 20


def keys_in(rc, first, last, count, prefix):
    """`count` keys whose slots are in [first, last]."""
    out, i = [], 0
    while len(out) < count:
        key = f"{prefix}:{i}"
        if first <= rc.keyslot(key) <= last:
            out.append(key)
        i += 1
    return out


def value_of(key, size):
    """A value that names its key in its first bytes (so a value of another key is caught)."""
    head = key.encode() + b":"
    return head + os.urandom(size - len(head))


def fill(rc, keys, size):
    values = {}
    for key in keys:
        values[key] = value_of(key, size)
        rc.set(key, values[key])
    return values


class Reader(threading.Thread):
    """GETs random keys of `values` until stopped, timing each and checking its bytes."""

    def __init__(self, cluster, values, name):
        super().__init__(daemon=True)
        self.cluster, self.values, self.name = cluster, values, name
        self.stop = threading.Event()
        self.samples = []  # (start, seconds)
        self.wrong = 0
        self.errors = 0

    def run(self):
        rc = self.cluster.client()
        keys = list(self.values)
        i = 0
        while not self.stop.is_set():
            key = keys[i % len(keys)]
            i += 7
            started = time.monotonic()
            try:
                got = rc.get(key)
            except Exception:  # counted: a redirect storm or a refused read is a finding
                self.errors += 1
                continue
            self.samples.append((started, time.monotonic() - started))
            if got != self.values[key]:
                self.wrong += 1
        rc.close()

    def during(self, t0, t1):
        lat = sorted(s for start, s in self.samples if t0 <= start <= t1)
        if not lat:
            return {"reader": self.name, "gets": 0}
        return {"reader": self.name, "gets": len(lat), "max_ms": round(lat[-1] * 1000, 1),
                "p99_ms": round(lat[int(0.99 * (len(lat) - 1))] * 1000, 1),
                "wrong": self.wrong, "errors": self.errors}


def run(args):
    # redis-py logs every MOVED it follows, with a traceback; following them is the point.
    logging.getLogger("redis").setLevel(logging.CRITICAL)
    server_harness.SERVER = args.server
    budget_mib = max(256, int(args.gib * 3 * 1024))
    with Cluster(2, args=("--max-disk-bytes", f"{budget_mib}mb")).start() as cluster:
        cluster.push()
        rc = cluster.client()
        last = args.slots - 1
        size = args.value_mib * MiB
        count = max(1, int(args.gib * 1024 / args.value_mib))
        moving = fill(rc, keys_in(rc, 0, last, count, "mv"), size)
        staying = fill(rc, keys_in(rc, args.slots, 8191, min(32, count), "st"), size)
        elsewhere = fill(rc, keys_in(rc, 8192, 16383, min(32, count), "nd"), size)
        readers = [Reader(cluster, staying, "other slots, source node"),
                   Reader(cluster, elsewhere, "other node"),
                   Reader(cluster, moving, "migrating slots")]
        for r in readers:
            r.start()
        time.sleep(1)
        source = cluster.nodes[0].client()
        t0 = time.monotonic()
        assert source.execute_command("CLUSTERX", "MIGRATE", f"0-{last}",
                                      cluster.ids[1]) == b"OK"
        while cluster_info(cluster.nodes[0])["migrating_state"] == "start":
            time.sleep(0.05)  # the controller polls every second; finer here to time it
        t1 = time.monotonic()
        state = cluster_info(cluster.nodes[0])["migrating_state"]
        cluster.move(0, last, 1)
        cluster.push()
        time.sleep(1)
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join()
        rc.close()
        moved = len(moving) * size
        return {"migration": {"slots": args.slots, "keys": len(moving), "bytes": moved,
                              "state": state, "seconds": round(t1 - t0, 2),
                              "gb_per_s": round(moved / (t1 - t0) / 1e9, 2)},
                "readers": [r.during(t0, t1) for r in readers]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "bin", "larder-server"))
    ap.add_argument("--gib", type=float, default=2, help="GiB of values in the migrating slots")
    ap.add_argument("--value-mib", type=int, default=4)
    ap.add_argument("--slots", type=int, default=1000, help="slots migrated (0..slots-1)")
    out = run(ap.parse_args())
    print(json.dumps(out))
    bad = [r for r in out["readers"] if r.get("wrong")]
    sys.exit(1 if bad or out["migration"]["state"] != "success" else 0)


if __name__ == "__main__":
    main()
