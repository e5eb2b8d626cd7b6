"""GB/s of LMCache's MP-mode L2 reads through each way Larder offers them, in one run: the
`native_plugin` over the in-process store and over a running larder-server's unix socket, the
MP `resp` adapter's wire pattern (LMCache's native client: `num_workers` connections, one
request at a time each; reproduced in Python by tests/compat/lmcache/lmcache_mp.py) against
larder-server, one file per chunk read with preadv, and the in-process engine's own batched
read (`Store.multi_get_into`, MultiGetInto), which the plugin is measured against.

Every peer reads all chunks in batches of --batch keys into the same caller-owned buffers
(allocated and touched before the clock starts), warm (in the page cache) and cold (after
Larder let go of its files' mappings, a sync and POSIX_FADV_DONTNEED on every data file),
--rounds times, peers on the same data in alternation so that the machine's drift falls on all
of them. Every value read is compared with what was written, outside the timed region; a wrong
or missing value is an error and the exit code is 1. The engine and the plugins verify XXH3
themselves; the files peer has no checksum, so it is an upper bound.

Prints one JSON object per (peer, pass) line:
  {"peer", "pass": "warm"|"cold", "chunk", "chunks", "batch", "rounds", "gbs"}

Run: /usr/bin/python3 bench/lmcache_plugin.py --native-dir build/python \
         --server build/bin/larder-server [--chunks 32 --chunk 16777216 --batch 16]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
sys.path.insert(0, os.path.join(ROOT, "tests", "compat", "lmcache"))
sys.path.insert(0, os.path.join(ROOT, "connectors", "python"))
import server_harness  # noqa: E402
from lmcache_mp import Demux, MpRespClient  # noqa: E402

MiB = 1 << 20
ERRORS = []


class Plugin:
    """A native client driven as LMCache's demux thread drives it (lmcache_mp.Demux)."""

    def __init__(self, plugin):
        self.plugin = plugin
        self.demux = Demux(plugin)
        self.wait = self.demux.wait

    def set(self, keys, values):
        ok, error, _ = self.wait(self.plugin.submit_batch_set(keys, [memoryview(v) for v in values]))
        if not ok:
            raise RuntimeError(error)

    def get(self, keys, bufs):
        return self.wait(self.plugin.submit_batch_get(keys, bufs))[2]

    def close(self):
        self.demux.close()
        self.plugin.close()


def value_of(i, size, body):
    return (b"%08d" % i) + body[8:size]


def drop_cache(top):
    """Sync, then drop every file under `top` from the page cache."""
    os.sync()
    server_harness.drop_page_cache(top)


def timed_pass(name, kind, read_batch, keys, values, bufs, args):
    """Seconds to read every key once in batches; every value checked outside the clock."""
    seconds = 0.0
    for lo in range(0, len(keys), args.batch):
        batch = keys[lo:lo + args.batch]
        start = time.monotonic()
        hits = read_batch(batch, bufs[:len(batch)])
        seconds += time.monotonic() - start
        for j, hit in enumerate(hits):
            if not hit or bufs[j] != values[lo + j]:
                ERRORS.append(f"{name} {kind}: key {lo + j} "
                              f"{'wrong bytes' if hit else 'missing'}")
    return seconds


def measure(peers, keys, values, bufs, data_dir, args, unmap=lambda: None):
    """`peers`: (name, read_batch) over the same data, measured in alternation: --rounds times,
    a warm pass of each in turn, then for each a cold pass with the cache dropped before it
    (after `unmap()`: Larder's mapped pages would stay cached). One row per (peer, pass) with
    the bytes of all rounds over their summed time."""
    seconds = {(name, kind): 0.0 for name, _ in peers for kind in ("warm", "cold")}
    for _ in range(args.rounds):
        for name, read_batch in peers:
            seconds[name, "warm"] += timed_pass(name, "warm", read_batch, keys, values, bufs, args)
        for name, read_batch in peers:
            unmap()
            drop_cache(data_dir)
            seconds[name, "cold"] += timed_pass(name, "cold", read_batch, keys, values, bufs, args)
    for (name, kind), secs in seconds.items():
        row = {"peer": name, "pass": kind, "chunk": args.chunk, "chunks": len(keys),
               "batch": args.batch, "rounds": args.rounds,
               "gbs": round(args.rounds * len(keys) * args.chunk / secs / 1e9, 4)}
        print(json.dumps(row), flush=True)


def engine_and_plugin(native, keys, values, bufs, work, args):
    path = os.path.join(work, "inproc")
    store = native.Store(path, max_disk_bytes=4 * len(keys) * args.chunk)
    plugin = Plugin(native.LmcachePlugin(store, workers=2))
    for lo in range(0, len(keys), args.batch):
        plugin.set(keys[lo:lo + args.batch], values[lo:lo + args.batch])
    store.flush()

    def engine_read(ks, bs):
        return [n == args.chunk for n in store.multi_get_into(ks, bs)]
    measure([("engine multi_get_into", engine_read), ("native_plugin in-process", plugin.get)],
            keys, values, bufs, path, args, unmap=store.unmap_files)
    plugin.close()
    store.close()


def server_peers(keys, values, bufs, work, args):
    from larder import lmcache_native
    server_harness.SERVER = args.server
    budget = str(4 * len(keys) * args.chunk)
    os.makedirs(os.path.join(work, "srv"))
    srv = server_harness.ServerProcess(
        args=["--unixsocket", os.path.join(work, "larder.sock")], tmp=os.path.join(work, "srv"),
        limits=("--max-disk-bytes", budget))
    srv.start()
    try:
        plugin = Plugin(lmcache_native.LarderConnector(server=os.path.join(work, "larder.sock"),
                                                       timeout=30.0))
        for lo in range(0, len(keys), args.batch):
            plugin.set(keys[lo:lo + args.batch], values[lo:lo + args.batch])
        srv.client().execute_command("SAVE")
        resp = Plugin(MpRespClient("127.0.0.1", srv.port, num_workers=8))
        admin = srv.client()
        measure([("native_plugin over larder-server", plugin.get),
                 ("resp (MP adapter wire pattern)", resp.get)], keys, values, bufs, srv.tmp, args,
                unmap=lambda: admin.execute_command("MEMORY", "PURGE"))
        plugin.close()
        resp.close()
    finally:
        srv.cleanup()


def files_peer(keys, values, bufs, work, args):
    top = os.path.join(work, "files")
    os.makedirs(top)
    for i, v in enumerate(values):
        with open(os.path.join(top, "%d" % i), "wb") as f:
            f.write(v)
    index = {k: os.path.join(top, "%d" % i) for i, k in enumerate(keys)}

    def read(ks, bs):
        out = []
        for k, b in zip(ks, bs):
            fd = os.open(index[k], os.O_RDONLY)
            try:
                out.append(os.preadv(fd, [b], 0) == len(b))
            finally:
                os.close(fd)
        return out
    measure([("files (one per chunk, preadv)", read)], keys, values, bufs, top, args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--native-dir", required=True, help="where larder_native is built")
    ap.add_argument("--server", required=True, help="the larder-server binary")
    ap.add_argument("--dir", default=None, help="scratch directory (removed at exit)")
    ap.add_argument("--chunk", type=int, default=16 * MiB)
    ap.add_argument("--chunks", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3, help="warm and cold passes per peer")
    args = ap.parse_args()
    sys.path.insert(0, args.native_dir)
    from larder import native

    work = tempfile.mkdtemp(prefix="larder-plugin-bench-", dir=args.dir)
    try:
        body = os.urandom(args.chunk)
        keys = ["bench-model@00000000@0@%064x" % i for i in range(args.chunks)]
        values = [value_of(i, args.chunk, body) for i in range(args.chunks)]
        bufs = [memoryview(bytearray(b"\1" * args.chunk)) for _ in range(args.batch)]
        engine_and_plugin(native, keys, values, bufs, work, args)
        server_peers(keys, values, bufs, work, args)
        files_peer(keys, values, bufs, work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for e in ERRORS[:20]:
        print("ERROR", e, file=sys.stderr)
    sys.exit(1 if ERRORS else 0)


if __name__ == "__main__":
    main()
