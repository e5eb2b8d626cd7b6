"""LMCache's multi-process ("MP") `resp` L2 adapter as LMCache runs it, reproduced over the
byte-exact native client of lmcache_clients.py (see ../shared/reference/client-wire-behaviour.md,
section 1.5, and LMCache's lmcache/v1/distributed/l2_adapters/{resp_l2_adapter,
native_connector_l2_adapter}.py):

* MpRespClient — LMCacheRedisClient's MP surface: `num_workers` threads, each with one
  connection made once and never remade; `submit_batch_get/set/exists/delete` split a batch
  into `num_workers` tiles, each worker issues its tile's keys one request at a time; one
  eventfd signals completions; `drain_completions()` returns (future_id, ok, error, per-key
  bools | None). A reply the client cannot parse fails the tile (and would desync the real
  client's socket for good).
* Demux — NativeConnectorL2Adapter's demux thread: poll(500) on a native client's eventfd,
  drain_completions() on POLLIN (never reading the fd itself), results kept by future id. It
  serves every test and bench that drives a native client as LMCache does.
* MpAdapter — NativeConnectorL2Adapter's bookkeeping over a Demux: object keys are `<model>@<kv_rank:08x>@<group:x>@<chunk hash hex>`; usage is the
  bytes of keys stored (first store wins); with `max_capacity_gb` > 0, the least recently
  stored-or-loaded keys are deleted (DEL through the workers) until usage fits, as LMCache's L2
  eviction does through `delete()`.
"""
import collections
import os
import queue
import select
import threading

from lmcache_clients import NativeRespClient

GiB = 1 << 30


def mp_key(model, chunk_hash, kv_rank=0, group=0):
    return f"{model}@{kv_rank:08x}@{group:x}@{chunk_hash.hex()}"


class MpRespClient:
    def __init__(self, host, port, num_workers=8, username="", password=""):
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.lock = threading.Lock()
        self.next_id = 1
        self.pending = {}  # future id -> [tiles left, ok, error, per-key]
        self.done = []
        self.conns = [NativeRespClient(port, host, password=password or None,
                                       username=username or None) for _ in range(num_workers)]
        self.queues = [queue.Queue() for _ in range(num_workers)]
        self.threads = [threading.Thread(target=self._worker, args=(i,), daemon=True)
                        for i in range(num_workers)]
        for t in self.threads:
            t.start()

    def event_fd(self):
        return self.efd

    def submit_batch_get(self, keys, bufs):
        return self._submit("get", keys, bufs)

    def submit_batch_set(self, keys, bufs):
        return self._submit("set", keys, bufs)

    def submit_batch_exists(self, keys):
        return self._submit("exists", keys, None)

    def submit_batch_delete(self, keys):
        return self._submit("delete", keys, None)

    def drain_completions(self):
        with self.lock:
            try:
                os.eventfd_read(self.efd)
            except BlockingIOError:
                pass
            out, self.done = self.done, []
        return out

    def close(self):
        for q in self.queues:
            q.put(None)
        for t in self.threads:
            t.join()
        for c in self.conns:
            c.close()
        os.close(self.efd)

    def _submit(self, op, keys, bufs):
        n = len(self.queues)
        tiles = [list(range(i, len(keys), n)) for i in range(n)]
        tiles = [t for t in tiles if t]
        with self.lock:
            fid = self.next_id
            self.next_id += 1
            self.pending[fid] = [len(tiles), True, "", [False] * len(keys)]
        for w, tile in enumerate(tiles):
            self.queues[w].put((fid, op, tile, keys, bufs))
        if not tiles:
            self._finish(fid)
        return fid

    def _worker(self, w):
        conn = self.conns[w]
        while (job := self.queues[w].get()) is not None:
            fid, op, tile, keys, bufs = job
            results, error = {}, ""
            try:
                for i in tile:
                    key = keys[i].encode()
                    if op == "get":
                        results[i] = conn.get_into(key, bufs[i])
                    elif op == "set":
                        conn.set(key, bufs[i])
                        results[i] = True
                    elif op == "exists":
                        results[i] = conn.exists(key)
                    else:
                        results[i] = conn.delete(key)
            except Exception as e:  # noqa: BLE001 - the native client fails the tile
                error = str(e)
            with self.lock:
                entry = self.pending[fid]
                for i, r in results.items():
                    entry[3][i] = r
                if error:
                    entry[1], entry[2] = False, error
                entry[0] -= 1
                last = entry[0] == 0
            if last:
                self._finish(fid)

    def _finish(self, fid):
        with self.lock:
            _, ok, error, per_key = self.pending.pop(fid)
            self.done.append((fid, ok, error, per_key))
            os.eventfd_write(self.efd, 1)


class Demux:
    def __init__(self, client):
        self.client = client
        self.results = {}  # future id -> (ok, error, per-key bools | None), until waited for
        self.cv = threading.Condition()
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        poller = select.poll()
        poller.register(self.client.event_fd(), select.POLLIN)
        while not self.stop:
            if not poller.poll(500):
                continue
            for fid, ok, error, per_key in self.client.drain_completions():
                with self.cv:
                    self.results[fid] = (ok, error, per_key)
                    self.cv.notify_all()

    def wait(self, fid, timeout=120):
        """(ok, error, per_key) of future `fid`; TimeoutError if it never completes."""
        with self.cv:
            if not self.cv.wait_for(lambda: fid in self.results, timeout):
                raise TimeoutError(f"future {fid} never completed")
            return self.results.pop(fid)

    def close(self):
        self.stop = True
        self.thread.join(5)


class MpAdapter:
    """What NativeConnectorL2Adapter does around a native client; blocking calls for tests."""

    def __init__(self, client, max_capacity_gb=0.0):
        self.client = client
        self.capacity = int(max_capacity_gb * GiB)
        self.sizes = collections.OrderedDict()  # key -> bytes, least recently used first
        self.deleted = 0
        self.demux = Demux(client)
        self._wait = self.demux.wait

    def usage(self):
        return sum(self.sizes.values())

    def store(self, keys, bufs):
        ok, error, _ = self._wait(self.client.submit_batch_set(keys, bufs))
        if ok:
            for k, b in zip(keys, bufs):
                self.sizes.setdefault(k, len(b))
                self.sizes.move_to_end(k)
            self._evict()
        return ok, error

    def lookup(self, keys):
        ok, error, per_key = self._wait(self.client.submit_batch_exists(keys))
        return [bool(ok and p) for p in per_key], error

    def load(self, keys, bufs):
        ok, error, per_key = self._wait(self.client.submit_batch_get(keys, bufs))
        for k, hit in zip(keys, per_key):
            if hit and k in self.sizes:
                self.sizes.move_to_end(k)
        return per_key, error

    def delete(self, keys):
        ok, error, per_key = self._wait(self.client.submit_batch_delete(keys))
        for k, gone in zip(keys, per_key):
            if gone:
                self.sizes.pop(k, None)
        return per_key, error

    def _evict(self):
        if not self.capacity:
            return
        victims, excess = [], self.usage() - self.capacity
        for k, size in self.sizes.items():
            if excess <= 0:
                break
            victims.append(k)
            excess -= size
        if victims:
            per_key, _ = self.delete(victims)
            self.deleted += sum(per_key)
            for k in victims:  # a key the store had already dropped is gone either way
                self.sizes.pop(k, None)

    def close(self):
        self.demux.close()
        self.client.close()
