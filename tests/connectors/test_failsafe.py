"""A dead or stalled store costs larder.Client / larder.AsyncClient a miss, never a hang or an
exception: the real larder-server is SIGKILLed in the middle of batches of GETs, and SIGSTOPped
(it stops reading its sockets); every call must return (within a generous multiple of the
client's timeout: a liveness check, not a performance one), answer a value byte-exact or a
miss, and calls must succeed again soon after the server is back. The measured figures are
printed."""
import asyncio
import logging
import os
import signal
import threading
import time
import unittest

import helpers  # noqa: F401 - puts the package on sys.path
import redis
from helpers import SERVERS, MiB
from larder import AsyncClient, Client
from larder import failsafe

logging.getLogger("larder.client").setLevel(logging.ERROR)  # outages are logged by design
TIMEOUT = 0.5
# A call may wait on connect, send and receive in turn: each is bounded by TIMEOUT.
HANG = 3 * TIMEOUT + 2.0


def setUpModule():
    # ctest runs this module alone (connectors_python_failsafe), the others beside other tests.
    if os.environ.get("LARDER_FAILSAFE_SEPARATELY"):
        raise unittest.SkipTest("run alone by ctest's connectors_python_failsafe")
# The stores are filled through a client of its own whose timeout covers moving a whole
# 32 MiB pipeline on a loaded machine (the client's documented contract: `timeout` must cover
# one pipeline; redis.asyncio bounds a pipeline's whole send by it). The calls under test use
# TIMEOUT, which a 32 MiB put can exceed when the machine is busy.
FILL_TIMEOUT = 30
VALUE = 4 * MiB
KEYS = [f"fs:{i}" for i in range(8)]


def value_of(key):
    return (key.encode() * (VALUE // len(key) + 1))[:VALUE]


def recovery_seconds(call, want):
    """Seconds until call() answers `want` (polling every 10 ms, 10 s at most)."""
    start = time.monotonic()
    while time.monotonic() - start < 10:
        if call() == want:
            return time.monotonic() - start
        time.sleep(0.01)
    return float("inf")


def reads_through_a_kill(srv, read_once):
    """Calls read_once() in a loop on a thread while `srv` is SIGKILLed 0.3 s in, and stops
    1 s after the kill. Returns (seconds per call, results, exceptions raised, whether the loop
    was still running HANG + 5 s after it was told to stop)."""
    durations, results, errors, stop = [], [], [], threading.Event()

    def reader():
        while not stop.is_set():
            t = time.monotonic()
            try:
                results.append(read_once())
            except Exception as e:  # noqa: BLE001 - any exception is the failure
                errors.append(e)
            durations.append(time.monotonic() - t)

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.3)
    srv.stop(signal.SIGKILL)
    time.sleep(1.0)
    stop.set()
    thread.join(HANG + 5)
    return durations, results, errors, thread.is_alive()


class BreakerTest(unittest.TestCase):
    def test_backoff_doubles_to_its_cap_and_a_success_resets_it(self):
        now = [0.0]
        b = failsafe.Breaker(clock=lambda: now[0])
        waits = []
        for _ in range(6):
            b.failed(OSError("down"))
            self.assertFalse(b.closed())
            start = now[0]
            while not b.closed():
                now[0] += 0.001
            waits.append(round(now[0] - start, 2))
        self.assertEqual(waits, [0.05, 0.1, 0.2, 0.4, 0.4, 0.4])
        self.assertLess(failsafe.MAX_BACKOFF, 0.5, "calls must succeed within 1 s of a restart")
        b.succeeded()
        self.assertTrue(b.closed())
        self.assertEqual(b.failures, 6)

    def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends(self):
        logger = logging.getLogger("larder.client")
        b = failsafe.Breaker(clock=lambda: 0.0)
        with self.assertLogs(logger, "WARNING") as logs:
            for _ in range(3):
                b.failed(OSError("refused"))
            b.succeeded()
            b.succeeded()
        self.assertEqual(len(logs.output), 2, logs.output)
        self.assertIn("store unreachable (OSError: refused)", logs.output[0])
        self.assertIn("answers again after 3 failed tries", logs.output[1])


class ClientFailsafeTest(unittest.TestCase):
    def setUp(self):
        self.srv = SERVERS["larder"](budget=512 * MiB).start()
        self.url = f"larder://127.0.0.1:{self.srv.port}?timeout={TIMEOUT}"
        self.fill_url = f"larder://127.0.0.1:{self.srv.port}?timeout={FILL_TIMEOUT}"

    def tearDown(self):
        if self.srv.proc is not None and self.srv.alive():
            self.srv.proc.send_signal(signal.SIGCONT)
        self.srv.cleanup()

    def fill(self):
        with Client(self.fill_url) as filler:
            self.assertTrue(filler.put_many([(k, value_of(k)) for k in KEYS]))
            filler.redis.execute_command("SAVE")  # durable: the values are there after a SIGKILL

    def check_batch(self, values):
        for k, v in zip(KEYS, values):
            self.assertTrue(v is None or v == value_of(k), f"wrong bytes for {k}")

    def test_killed_mid_batch_then_restarted(self):
        self.fill()
        c = Client(self.url)
        durations, _, errors, hung = reads_through_a_kill(
            self.srv, lambda: self.check_batch(c.get_many(KEYS)))
        self.assertFalse(hung, "a get_many hung on a dead server")
        self.assertEqual(errors, [])
        self.assertLess(max(durations), HANG)
        self.assertGreater(c.failures, 0)
        self.assertIsNone(c.get(KEYS[0]))  # a miss, not an exception
        self.assertFalse(c.put("fs:new", b"x" * 100))
        self.srv.start()
        back = recovery_seconds(lambda: c.get(KEYS[0]), value_of(KEYS[0]))
        print(f"\nkill: {len(durations)} batches, longest {max(durations):.3f}s; "
              f"back {back:.3f}s after restart")
        self.assertLess(back, 2.0)
        c.close()

    def test_stalled_server_costs_misses_then_recovers(self):
        self.fill()
        c = Client(self.url)
        self.srv.proc.send_signal(signal.SIGSTOP)
        t = time.monotonic()
        self.check_batch(c.get_many(KEYS))
        first = time.monotonic() - t
        t = time.monotonic()
        self.assertIsNone(c.get(KEYS[1]))  # answered at once: back-off running
        self.assertEqual(c.prefix_count(KEYS), 0)
        self.assertFalse(c.exists(KEYS[2]))
        rest = time.monotonic() - t
        self.assertLess(first, HANG)
        self.srv.proc.send_signal(signal.SIGCONT)
        back = recovery_seconds(lambda: c.get(KEYS[3]), value_of(KEYS[3]))
        print(f"\nstall: first call {first:.3f}s, the next three {rest:.3f}s; back {back:.3f}s")
        self.assertLess(back, 2.0)
        self.assertEqual(c.prefix_count(KEYS), len(KEYS))
        c.close()

    def kill_connections_for(self, seconds):
        """Has the server drop every client connection every 50 ms for `seconds`."""
        admin = redis.Redis(host="127.0.0.1", port=self.srv.port)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            admin.client_kill_filter(_type="normal", skipme=True)
            time.sleep(0.05)
        admin.close()

    def test_connections_dropped_under_many_threads_never_raise_into_callers(self):
        c = Client(self.url)
        small = {f"d{i}".encode(): f"value of d{i}".encode() * 100 for i in range(8)}
        self.assertTrue(c.put_many(small))
        errors, stop = [], threading.Event()

        def caller():
            while not stop.is_set():
                try:
                    for k, v in zip(small, c.get_many(small)):
                        self.assertIn(v, (None, small[k]), "wrong bytes")
                    self.assertIn(c.get(b"d0"), (None, small[b"d0"]))
                    c.prefix_count(list(small))
                except Exception as e:  # noqa: BLE001 - any exception is the failure
                    errors.append(e)
        threads = [threading.Thread(target=caller) for _ in range(8)]
        for t in threads:
            t.start()
        try:
            self.kill_connections_for(2.0)
        finally:
            stop.set()
        for t in threads:
            t.join(HANG + 5)
        self.assertEqual(errors, [])
        self.assertLess(recovery_seconds(lambda: c.get(b"d1"), small[b"d1"]), 2.0)
        c.close()

    def test_connections_dropped_under_many_tasks_never_raise_into_callers(self):
        small = {f"a{i}".encode(): f"value of a{i}".encode() * 100 for i in range(8)}

        with Client(self.fill_url) as filler:  # before the connections start being dropped
            self.assertTrue(filler.put_many(small))

        async def run(stop):
            c = AsyncClient(self.url)
            errors = []

            async def caller():
                while not stop.is_set():
                    try:
                        for k, v in zip(small, await c.get_many(small)):
                            self.assertIn(v, (None, small[k]), "wrong bytes")
                        await c.prefix_count(list(small))
                    except Exception as e:  # noqa: BLE001 - any exception is the failure
                        errors.append(e)
            await asyncio.gather(*(caller() for _ in range(16)))
            start = time.monotonic()
            while await c.get(b"a1") != small[b"a1"] and time.monotonic() - start < 10:
                await asyncio.sleep(0.01)
            await c.close()
            return errors, time.monotonic() - start

        stop = threading.Event()

        def killer():
            try:
                self.kill_connections_for(2.0)
            finally:
                stop.set()
        thread = threading.Thread(target=killer)
        thread.start()
        errors, back = asyncio.run(run(stop))
        thread.join()
        self.assertEqual(errors, [])
        self.assertLess(back, 2.0)

    def test_fail_open_off_raises_as_redis_py(self):
        c = Client(self.url, fail_open=False)
        self.srv.stop(signal.SIGKILL)
        with self.assertRaises(failsafe.UNREACHABLE):
            c.get(KEYS[0])
        c.close()

    def test_async_client_killed_and_stalled(self):
        self.fill()

        async def run():
            c = AsyncClient(self.url)
            self.srv.proc.send_signal(signal.SIGSTOP)
            t = time.monotonic()
            self.check_batch(await c.get_many(KEYS))
            stalled = time.monotonic() - t
            self.srv.proc.send_signal(signal.SIGCONT)
            self.srv.stop(signal.SIGKILL)
            t = time.monotonic()
            self.assertIsNone(await c.get(KEYS[0]))
            self.assertEqual(await c.prefix_count(KEYS), 0)
            dead = time.monotonic() - t
            self.srv.start()
            start = time.monotonic()
            while await c.get(KEYS[0]) != value_of(KEYS[0]) and time.monotonic() - start < 10:
                await asyncio.sleep(0.01)
            back = time.monotonic() - start
            await c.close()
            return stalled, dead, back

        stalled, dead, back = asyncio.run(run())
        print(f"\nasync: stalled {stalled:.3f}s, dead {dead:.3f}s, back {back:.3f}s")
        self.assertLess(stalled, HANG)
        self.assertLess(dead, HANG)
        self.assertLess(back, 2.0)

    def test_async_put_to_a_stalled_server_is_not_stored_and_does_not_hang(self):
        """A 32 MiB pipeline to a server that stopped reading: the sliced send waits on a
        drain that never comes, and the put answers False within the timeout, not a hang. The
        cause logged is the write's timeout: the connection is aborted, not closed gracefully
        (which would wait for the unsent bytes and time out a second time, "closing")."""
        items = [(k, value_of(k)) for k in KEYS]

        async def run():
            c = AsyncClient(self.url)
            fill = AsyncClient(self.fill_url)
            self.assertTrue(await fill.put("fs:warm", b"x"))  # connections made, then stop
            self.srv.proc.send_signal(signal.SIGSTOP)
            t = time.monotonic()
            stored = await c.put_many(items)
            stalled = time.monotonic() - t
            self.srv.proc.send_signal(signal.SIGCONT)
            self.assertTrue(await fill.put_many(items))
            got = await fill.get_many(KEYS)
            await c.close()
            await fill.close()
            return stored, stalled, got

        with self.assertLogs("larder.client", "WARNING") as logs:
            stored, stalled, got = asyncio.run(run())
        print(f"\nasync put, stalled: {stalled:.3f}s")
        self.assertIn("Timeout writing to socket", logs.output[0])
        self.assertFalse(stored)
        self.assertLess(stalled, HANG)
        self.assertEqual(got, [value_of(k) for k in KEYS])


if __name__ == "__main__":
    unittest.main()
