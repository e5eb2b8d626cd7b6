"""larder.lmcache_native driven exactly as LMCache's MP server drives a native_plugin
(NativeConnectorL2Adapter): the factory is called with keyword arguments only, event_fd() once,
a demux thread polls it for POLLIN and calls drain_completions() (never reading the fd itself),
submits come from other threads with lists of str keys and 1-D byte memoryviews of equal
length, GET buffers are LMCache's (here: bytearrays it keeps until the completion), completions
are (future_id, ok, error, per-key bools | None)."""
import os
import select
import shutil
import tempfile
import threading
import unittest

import helpers  # noqa: F401 - puts the package and the native module on sys.path
from helpers import MiB

from larder import lmcache_native

CHUNK = 16 * MiB
REQUIRED = ("event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close")


def chunk(key, size=CHUNK):
    return (key.encode() * (size // len(key) + 1))[:size]


class Demux:
    """LMCache's demux loop: poll(500) on the eventfd, drain on POLLIN, hand results out."""

    def __init__(self, plugin):
        self.plugin = plugin
        self.results = {}
        self.cv = threading.Condition()
        self.stop = False
        self.poller = select.poll()
        self.poller.register(plugin.event_fd(), select.POLLIN)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop:
            if not self.poller.poll(500):
                continue
            for future_id, ok, error, per_key in self.plugin.drain_completions():
                with self.cv:
                    self.results[future_id] = (ok, error, per_key)
                    self.cv.notify_all()

    def wait(self, future_id, timeout=60):
        with self.cv:
            self.cv.wait_for(lambda: future_id in self.results, timeout)
            return self.results.pop(future_id)

    def close(self):
        self.stop = True
        self.thread.join(5)


class LmcacheNativeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="larder-native-plugin-")
        self.plugin = lmcache_native.LarderConnector(
            path=os.path.join(self.dir, "store"), max_disk_bytes=2048 * MiB)
        self.demux = Demux(self.plugin)

    def tearDown(self):
        self.demux.close()
        self.plugin.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_has_the_methods_lmcache_checks(self):
        for name in REQUIRED + ("submit_batch_delete",):
            self.assertTrue(callable(getattr(self.plugin, name)), name)

    def test_set_exists_get_delete_byte_exact_into_callers_buffers(self):
        model = "meta-llama/Llama-3.1-8B-Instruct@01000100@0@"
        keys = [f"{model}{i:064x}" for i in range(6)]
        sizes = [CHUNK, CHUNK, CHUNK, CHUNK, 32 * MiB, 32 * MiB]
        values = [bytearray(chunk(k, s)) for k, s in zip(keys, sizes)]
        # Two SET batches of equal-size buffers, as LMCache sends them.
        for lo, hi in ((0, 4), (4, 6)):
            fid = self.plugin.submit_batch_set(keys[lo:hi], [memoryview(v) for v in values[lo:hi]])
            ok, error, per_key = self.demux.wait(fid)
            self.assertTrue(ok, error)
            self.assertIsNone(per_key)

        absent = [f"{model}{i:064x}" for i in range(100, 102)]
        fid = self.plugin.submit_batch_exists(keys[:4] + absent)
        ok, _, per_key = self.demux.wait(fid)
        self.assertTrue(ok)
        self.assertEqual(per_key, [True] * 4 + [False] * 2)

        bufs = [bytearray(CHUNK) for _ in range(4)] + [bytearray(CHUNK)]
        fid = self.plugin.submit_batch_get(keys[:4] + absent[:1], [memoryview(b) for b in bufs])
        ok, error, per_key = self.demux.wait(fid)
        self.assertEqual(per_key, [True] * 4 + [False])
        for b, v in zip(bufs[:4], values[:4]):
            self.assertTrue(b == v, "wrong bytes")

        # A value whose size is not the buffer's is not loaded (LMCache loads fixed chunks).
        small = [bytearray(CHUNK)]
        fid = self.plugin.submit_batch_get(keys[4:5], [memoryview(b) for b in small])
        self.assertEqual(self.demux.wait(fid)[2], [False])

        fid = self.plugin.submit_batch_delete(keys[:2] + absent[:1])
        self.assertEqual(self.demux.wait(fid)[2], [True, True, False])
        fid = self.plugin.submit_batch_exists(keys[:3])
        self.assertEqual(self.demux.wait(fid)[2], [False, False, True])

    def test_many_batches_from_several_threads_all_complete_once(self):
        ids, lock = [], threading.Lock()

        def submitter(t):
            for i in range(20):
                k = f"t{t}-{i}"
                fid = self.plugin.submit_batch_set([k], [memoryview(chunk(k, 256 * 1024))])
                with lock:
                    ids.append(fid)

        threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(set(ids)), 80, "future ids are unique")
        for fid in ids:
            self.assertTrue(self.demux.wait(fid)[0])
        self.assertEqual(self.demux.results, {}, "each id completes exactly once")

    def test_empty_batches_complete_and_close_is_final(self):
        fid = self.plugin.submit_batch_exists([])
        self.assertEqual(self.demux.wait(fid), (True, "", []))
        self.demux.close()
        self.plugin.close()
        with self.assertRaises(RuntimeError):
            self.plugin.submit_batch_exists(["k"])


if __name__ == "__main__":
    unittest.main()
