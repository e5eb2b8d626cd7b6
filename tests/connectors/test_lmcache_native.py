"""larder.lmcache_native driven exactly as LMCache's MP server drives a native_plugin
(NativeConnectorL2Adapter): the factory is called with keyword arguments only, event_fd() once,
a demux thread polls it for POLLIN and calls drain_completions() (never reading the fd itself),
submits come from other threads with lists of str keys and 1-D byte memoryviews of equal
length, GET buffers are LMCache's (here: bytearrays it keeps until the completion), completions
are (future_id, ok, error, per-key bools | None).

Every contract test runs twice: on the in-process store, and over a running larder-server's unix
socket (`LarderConnector(server=...)`). The server mode must also never stall LMCache: the
server is SIGKILLed in the middle of GET batches and SIGSTOPped, and every batch must complete
(a failure with misses) within a bound, then succeed again soon after the server is back."""
import gc
import os
import shutil
import signal
import tempfile
import threading
import time
import unittest

import helpers  # noqa: F401 - puts the package and the native module on sys.path
from helpers import SERVERS, MiB
from server_harness import wait_for

from larder import lmcache_native
from lmcache_mp import Demux  # LMCache's demux loop (tests/compat/lmcache)
# The same timeout and liveness bound as the Python clients' failsafe tests.
from test_failsafe import HANG, TIMEOUT, reads_through_a_kill, recovery_seconds

CHUNK = 16 * MiB
REQUIRED = ("event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close")


def chunk(key, size=CHUNK):
    return (key.encode() * (size // len(key) + 1))[:size]


class LmcacheNativeTest(unittest.TestCase):
    """The contract, on the in-process store."""

    def make_plugin(self):
        self.dir = tempfile.mkdtemp(prefix="larder-native-plugin-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        return lmcache_native.LarderConnector(path=os.path.join(self.dir, "store"),
                                              max_disk_bytes=2048 * MiB)

    def setUp(self):
        self.plugin = self.make_plugin()
        self.demux = Demux(self.plugin)

    def tearDown(self):
        self.demux.close()
        self.plugin.close()

    def test_exactly_one_of_path_and_server(self):
        for kw in ({}, {"path": "/tmp/x", "server": "/tmp/x.sock"}):
            with self.assertRaises(ValueError):
                lmcache_native.LarderConnector(**kw)

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

    def test_buffers_the_caller_dropped_are_kept_until_drained(self):
        key = "dropped"
        fid = self.plugin.submit_batch_set([key], [memoryview(chunk(key, MiB))])
        gc.collect()  # the only reference to the value is the plugin's
        self.assertEqual(self.demux.wait(fid)[:2], (True, ""))
        buf = bytearray(MiB)
        fid = self.plugin.submit_batch_get([key], [memoryview(buf)])
        self.assertEqual(self.demux.wait(fid)[2], [True])
        self.assertTrue(buf == chunk(key, MiB))

    def test_empty_batches_complete_and_close_is_final(self):
        fid = self.plugin.submit_batch_exists([])
        self.assertEqual(self.demux.wait(fid), (True, "", []))
        self.demux.close()
        self.plugin.close()
        with self.assertRaises(RuntimeError):
            self.plugin.submit_batch_exists(["k"])

    def drain_until(self, fid):
        """The completion of `fid`, drained by hand (the test's demux thread is stopped)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in self.plugin.drain_completions():
                if c[0] == fid:
                    return c
            time.sleep(0.01)
        self.fail(f"future {fid} never completed")

    def test_a_buffer_cannot_be_resized_until_its_batch_is_drained(self):
        self.demux.close()  # completions stay queued until this test drains them
        buf = bytearray(MiB)
        fid = self.plugin.submit_batch_get(["absent"], [buf])
        with self.assertRaises(BufferError):
            buf.clear()  # a worker may still write into it
        self.assertEqual(self.drain_until(fid)[3], [False])
        buf.clear()  # drained: the plugin has let go of it

    def test_strided_buffers_are_refused_and_nothing_is_written(self):
        buf = bytearray(b"." * 16)
        for view in (memoryview(buf)[::2], memoryview(buf)[7::-1]):
            with self.assertRaises(BufferError):
                self.plugin.submit_batch_get(["k"], [view])
            with self.assertRaises(BufferError):
                self.plugin.submit_batch_set(["k"], [view])
        self.assertEqual(buf, bytearray(b"." * 16))

    def test_after_close_event_fd_raises_and_drain_returns_at_once(self):
        self.demux.close()
        fid = self.plugin.submit_batch_exists(["k"])
        self.plugin.close()  # runs the queued batch first
        with self.assertRaisesRegex(RuntimeError, "closed"):
            self.plugin.event_fd()
        r, w = os.pipe()  # may take the closed eventfd's number: must not be read
        try:
            os.write(w, b"someone else's bytes")
            self.assertEqual([c[0] for c in self.plugin.drain_completions()], [fid])
            self.assertEqual(self.plugin.drain_completions(), [])
            self.assertEqual(os.read(r, 64), b"someone else's bytes")
        finally:
            os.close(r)
            os.close(w)

    def test_a_plugin_needs_a_store(self):
        from larder.native import _native
        with self.assertRaisesRegex(TypeError, "needs a larder_native.Store, not object"):
            _native.LmcachePlugin(object())

    def test_worker_counts_out_of_range_are_refused(self):
        for workers in (-1, 257):
            with self.assertRaisesRegex(ValueError, "workers must be 1 to 256"):
                self.make_plugin_with(workers=workers)

    def make_plugin_with(self, **kw):
        return lmcache_native.LarderConnector(path=tempfile.mkdtemp(dir=self.dir), **kw)


class LmcacheNativeCloseTest(unittest.TestCase):
    """LMCache's close() keeps the object: what was acknowledged must be on disk (the WAL is
    off) and the directory unlocked without waiting for the object to be freed."""

    def test_close_closes_the_store_it_opened(self):
        self.dir = tempfile.mkdtemp(prefix="larder-native-close-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        plugin = lmcache_native.LarderConnector(path=os.path.join(self.dir, "store"),
                                                max_disk_bytes=2048 * MiB)
        demux = Demux(plugin)
        keys = [f"closed:{i}" for i in range(4)]
        fid = plugin.submit_batch_set(keys, [memoryview(chunk(k)) for k in keys])
        self.assertEqual(demux.wait(fid)[:2], (True, ""))
        demux.close()
        plugin.close()
        from larder.native import Store
        with Store(os.path.join(self.dir, "store")) as reopened:  # was Busy: LOCK held
            self.assertEqual([reopened.get(k.encode()) for k in keys],
                             [chunk(k) for k in keys])


class LmcacheNativeServerModeTest(LmcacheNativeTest):
    """The same contract over a running larder-server's unix socket."""

    def make_plugin(self):
        self.srv = SERVERS["larder"](budget=2048 * MiB).start()
        self.addCleanup(self.srv.cleanup)
        return lmcache_native.LarderConnector(server=self.srv.unixsocket, timeout=5.0)

    def test_bad_server_addresses_are_refused_at_once(self):
        for server in ("no-port", "host:", ":6379", "[::1]", "[::1:6379", "::1]:6379"):
            with self.assertRaises(ValueError):
                lmcache_native.LarderConnector(server=server)
        for timeout in (0, float("nan"), float("inf")):
            with self.assertRaisesRegex(ValueError, "finite number of seconds"):
                lmcache_native.LarderConnector(server=self.srv.unixsocket, timeout=timeout)

    def make_plugin_with(self, **kw):
        return lmcache_native.LarderConnector(server=self.srv.unixsocket, **kw)

    def test_an_ipv6_address_is_written_in_brackets(self):
        with self.assertWarnsRegex(UserWarning, "not reachable yet"):  # nobody listens there
            plugin = lmcache_native.LarderConnector(server="[::1]:1", timeout=0.5)  # parses
        plugin.close()

    def test_a_busy_server_is_a_warning_not_a_refusal(self):
        srv = SERVERS["larder"](budget=512 * MiB, args=("--maxclients", "1")).start()
        self.addCleanup(srv.cleanup)
        def take_the_slot():  # the start's own probe may not have left yet
            conn = srv.raw()
            if conn.call("PING") == b"+PONG\r\n":
                return conn
            conn.close()
            return None
        taken = wait_for(take_the_slot)
        self.addCleanup(taken.close)
        with self.assertWarnsRegex(UserWarning, "not reachable yet"):  # not ValueError
            plugin = lmcache_native.LarderConnector(server=srv.unixsocket)
        plugin.close()

    def test_a_wrong_or_missing_password_is_refused_when_the_plugin_is_made(self):
        srv = SERVERS["larder"](budget=512 * MiB, password="sesame").start()
        self.addCleanup(srv.cleanup)
        with self.assertRaisesRegex(ValueError, "AUTH refused: WRONGPASS"):
            lmcache_native.LarderConnector(server=srv.unixsocket, password="wrong")
        with self.assertRaisesRegex(ValueError, "PING refused: NOAUTH"):
            lmcache_native.LarderConnector(server=srv.unixsocket)
        plugin = lmcache_native.LarderConnector(server=srv.unixsocket, password="sesame")
        plugin.close()

    def test_over_tcp(self):
        plugin = lmcache_native.LarderConnector(server=f"127.0.0.1:{self.srv.port}")
        demux = Demux(plugin)
        try:
            fid = plugin.submit_batch_set(["tcp-a"], [memoryview(chunk("tcp-a", MiB))])
            self.assertEqual(demux.wait(fid)[:2], (True, ""))
            buf = bytearray(MiB)
            fid = plugin.submit_batch_get(["tcp-a", "tcp-b"], [memoryview(buf), memoryview(buf)])
            ok, _, per_key = demux.wait(fid)
            self.assertEqual(per_key, [True, False])
        finally:
            demux.close()
            plugin.close()


KEYS = [f"nfs:{i}" for i in range(8)]


class LmcacheNativeServerFailsafeTest(unittest.TestCase):
    """A dead or stalled larder-server costs the server-mode plugin failed completions with
    misses, each within HANG; batches succeed again within 2 s of the server coming back."""

    def setUp(self):
        self.srv = SERVERS["larder"](budget=512 * MiB).start()
        self.addCleanup(self.srv.cleanup)  # also when the rest of setUp fails
        self.plugin = lmcache_native.LarderConnector(server=self.srv.unixsocket,
                                                     timeout=TIMEOUT, workers=2)
        self.demux = Demux(self.plugin)
        fid = self.plugin.submit_batch_set(KEYS, [memoryview(chunk(k, 4 * MiB)) for k in KEYS])
        ok, error, _ = self.demux.wait(fid)
        self.assertTrue(ok, error)
        self.srv.client().execute_command("SAVE")  # durable: still there after a SIGKILL

    def tearDown(self):
        if self.srv.proc is not None and self.srv.alive():
            self.srv.proc.send_signal(signal.SIGCONT)
        self.demux.close()
        self.plugin.close()

    def get_batch(self):
        """(seconds, ok, per_key) of one GET batch of KEYS; every hit is checked."""
        bufs = [bytearray(4 * MiB) for _ in KEYS]
        t = time.monotonic()
        fid = self.plugin.submit_batch_get(KEYS, [memoryview(b) for b in bufs])
        ok, _, per_key = self.demux.wait(fid, timeout=30)
        took = time.monotonic() - t
        for k, b, hit in zip(KEYS, bufs, per_key):
            self.assertTrue(not hit or b == chunk(k, 4 * MiB), f"wrong bytes for {k}")
        return took, ok, per_key

    def recovery_seconds(self):
        return recovery_seconds(lambda: self.get_batch()[2], [True] * len(KEYS))

    def test_killed_mid_batch_then_restarted(self):
        durations, results, errors, hung = reads_through_a_kill(self.srv, self.get_batch)
        self.assertFalse(hung, "a batch never completed")
        self.assertEqual(errors, [])
        self.assertLess(max(durations), HANG)
        failed = [not ok for _, ok, _ in results]
        self.assertTrue(any(failed), "batches against a dead server must fail")
        took, ok, per_key = self.get_batch()
        self.assertEqual((ok, per_key), (False, [False] * len(KEYS)))
        self.srv.start()
        back = self.recovery_seconds()
        print(f"\nnative plugin, kill: {len(durations)} batches, longest {max(durations):.3f}s; "
              f"back {back:.3f}s after restart")
        self.assertLess(back, 2.0)

    def test_stalled_server_costs_misses_then_recovers(self):
        self.srv.proc.send_signal(signal.SIGSTOP)
        first, ok, per_key = self.get_batch()
        self.assertEqual((ok, per_key), (False, [False] * len(KEYS)))
        t = time.monotonic()
        fid = self.plugin.submit_batch_exists(KEYS)
        self.assertEqual(self.demux.wait(fid, timeout=30)[2], [False] * len(KEYS))
        fid = self.plugin.submit_batch_set(["nfs:new"], [memoryview(b"x" * 100)])
        self.assertFalse(self.demux.wait(fid, timeout=30)[0])
        rest = time.monotonic() - t
        self.assertLess(first, HANG)
        self.assertLess(rest, 2 * HANG)
        self.srv.proc.send_signal(signal.SIGCONT)
        back = self.recovery_seconds()
        print(f"\nnative plugin, stall: first batch {first:.3f}s, the next two {rest:.3f}s; "
              f"back {back:.3f}s")
        self.assertLess(back, 2.0)


if __name__ == "__main__":
    unittest.main()
