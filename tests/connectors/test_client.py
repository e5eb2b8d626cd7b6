"""larder.Client / larder.AsyncClient against a live larder-server and, for the prefix-lookup
fallback, against Redis 7 (which has no LARDER.PREFIX)."""
import asyncio
import os
import threading
import unittest

import helpers
import redis
import redis.asyncio
from helpers import SERVERS, MiB
from larder import AsyncClient, Client, parse_url
from larder import client as client_module
from larder.client import SEND_SLICE


class ParseUrlTest(unittest.TestCase):
    def test_schemes_map_to_redis_py_urls(self):
        self.assertEqual(parse_url("larder://127.0.0.1:7000"), ("redis://127.0.0.1:7000", None))
        self.assertEqual(parse_url("larder://:pw@h:1/0?ttl=30"), ("redis://:pw@h:1/0", 30))
        self.assertEqual(parse_url("larder+unix:///run/l.sock?password=x&ttl=5"),
                         ("unix:///run/l.sock?password=x", 5))
        self.assertEqual(parse_url("redis://h:2"), ("redis://h:2", None))

    def test_bad_urls_name_the_problem(self):
        with self.assertRaisesRegex(ValueError, "unsupported URL scheme"):
            parse_url("http://h:1")
        for bad in ("0", "-3", "abc", ""):
            with self.assertRaisesRegex(ValueError, "ttl must be a positive number"):
                parse_url(f"larder://h:1?ttl={bad}")


class RecordingWriter:
    """A StreamWriter that keeps what it was given, in order: ("one", bytes) per write,
    ("several", their bytes) per writelines, ("drained", None) per drain."""

    def __init__(self):
        self.calls = []

    def write(self, data):
        self.calls.append(("one", bytes(data)))

    def writelines(self, pieces):
        self.calls.append(("several", b"".join(bytes(p) for p in pieces)))

    async def drain(self):
        self.calls.append(("drained", None))


class SlicedSendTest(unittest.TestCase):
    def send(self, pieces):
        conn = client_module._sliced_send(redis.asyncio.Connection)()
        conn._writer = RecordingWriter()
        asyncio.run(conn._send_packed_command(pieces))
        return conn._writer.calls

    def test_large_pieces_go_in_drained_slices_in_order(self):
        big = os.urandom(2 * SEND_SLICE + 3)
        pieces = [b"*3\r\n$3\r\nSET", memoryview(big), b"\r\n", b"tail"]
        calls = self.send(pieces)
        self.assertEqual(b"".join(d for _, d in calls if d), b"".join(bytes(p) for p in pieces))
        writes = [d for kind, d in calls if kind == "one"]
        self.assertEqual([len(d) for d in writes], [SEND_SLICE, SEND_SLICE, 3])
        for i, (kind, _) in enumerate(calls):
            if kind == "one":
                self.assertEqual(calls[i + 1][0], "drained")  # each slice drained before the next
        self.assertEqual(calls[0], ("several", pieces[0]))  # small pieces together
        self.assertEqual(calls[-2:], [("several", b"\r\ntail"), ("drained", None)])

    def test_small_commands_are_one_write(self):
        self.assertEqual(self.send([b"*1\r\n$4\r\nPING\r\n"]),
                         [("several", b"*1\r\n$4\r\nPING\r\n"), ("drained", None)])

    def test_every_asyncio_connection_class_sends_sliced(self):
        for url in ("larder://127.0.0.1:1", "larder+unix:///tmp/none.sock"):
            c = AsyncClient(url)
            self.assertTrue(issubclass(c.redis.connection_pool.connection_class,
                                       client_module._SlicedSend), url)
        self.assertIs(client_module._sliced_send(object), object)  # nothing to replace


class ClientOn:
    """The same checks on each server; prefix_count must agree whichever way it is answered."""
    server = None

    @classmethod
    def setUpClass(cls):
        cls.srv = SERVERS[cls.server](budget=512 * MiB).start()
        cls.url = f"larder://127.0.0.1:{cls.srv.port}"

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def setUp(self):
        self.c = Client(self.url)
        self.c.redis.flushall()

    def tearDown(self):
        self.c.close()

    def test_put_get_exact_and_get_into(self):
        v = os.urandom(2 * MiB)
        self.c.put(b"k", v)
        self.assertEqual(self.c.get(b"k"), v)
        buf = bytearray(2 * MiB + 10)
        self.assertEqual(self.c.get_into(b"k", buf), len(v))
        self.assertEqual(bytes(buf[:len(v)]), v)
        with self.assertRaisesRegex(ValueError, "too small"):
            self.c.get_into(b"k", bytearray(10))
        self.assertIsNone(self.c.get_into(b"none", buf))

    def test_batches_are_exact_and_in_order(self):
        items = {f"b{i}".encode(): os.urandom(300_000 + i) for i in range(12)}
        self.c.put_many(items)
        keys = list(items) + [b"none"]
        self.assertEqual(self.c.get_many(keys), list(items.values()) + [None])
        self.assertEqual(self.c.exists_many(keys), [True] * 12 + [False])

    def test_prefix_count_stops_at_the_first_miss(self):
        self.c.put_many({b"p0": b"x", b"p1": b"x", b"p3": b"x"})
        self.assertEqual(self.c.prefix_count([b"p0", b"p1", b"p2", b"p3"]), 2)
        self.assertEqual(self.c.prefix_count([b"p2", b"p0"]), 0)
        self.assertEqual(self.c.prefix_count([]), 0)

    def test_default_ttl_from_the_url(self):
        with Client(self.url + "?ttl=100") as c:
            c.put(b"t", b"v")
            self.assertTrue(0 < c.redis.ttl(b"t") <= 100)
        self.c.put(b"n", b"v")
        self.assertEqual(self.c.redis.ttl(b"n"), -1)

    def test_ttl_zero_stores_without_the_default_expiry(self):
        with Client(self.url + "?ttl=100") as c:
            c.put(b"z", b"v", ttl=0)
            c.put_many({b"zm": b"v"}, ttl=0)
            self.assertEqual([c.redis.ttl(b"z"), c.redis.ttl(b"zm")], [-1, -1])

    def test_a_bad_timeout_is_refused_when_the_client_is_made(self):
        for bad in (-1, float("inf"), float("nan")):
            with self.assertRaisesRegex(ValueError, "timeout must be a positive number"):
                Client(self.url, timeout=bad)

    def test_callers_beyond_max_connections_wait_for_one_rather_than_miss(self):
        self.c.put(b"shared", b"v" * 100_000)
        with Client(self.url, max_connections=2) as c:
            answers, lock = [], threading.Lock()

            def reader():
                for _ in range(50):
                    v = c.get(b"shared")
                    with lock:
                        answers.append(v is not None)
            threads = [threading.Thread(target=reader) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual((answers.count(True), c.failures), (300, 0))

    def test_a_busy_pool_answers_a_miss_without_backing_off(self):
        with Client(self.url, max_connections=1, timeout=0.2) as c:
            self.assertTrue(c.put(b"p", b"v"))
            held = c.redis.connection_pool.get_connection("GET")
            self.assertIsNone(c.get(b"p"))  # waited 0.2 s for the one connection
            c.redis.connection_pool.release(held)
            self.assertEqual((c.get(b"p"), c.failures), (b"v", 1))  # no back-off after it

    def test_async_client_same_answers(self):
        async def run():
            async with AsyncClient(self.url) as c:
                await c.put_many([(b"a0", b"1"), (b"a1", b"2")])
                self.assertEqual(await c.get_many([b"a0", b"a1", b"zz"]), [b"1", b"2", None])
                self.assertEqual(await c.prefix_count([b"a0", b"a1", b"a2"]), 2)
                self.assertTrue(await c.exists(b"a0"))
                self.assertEqual(await c.delete(b"a0"), 1)
                self.assertEqual(sorted(await c.scan_keys()), [b"a1"])
        asyncio.run(run())

    def test_async_client_large_values_exact(self):
        """Values of many send slices, not a multiple of one, beside small ones, in one
        pipeline and over several (PIPELINE_BYTES), read by each reply parser redis-py has
        here (hiredis's when installed, and its own)."""
        values = {b"s": b"x", b"m": os.urandom(3 * MiB + 7), b"e": b""}
        values.update({b"b%d" % i: os.urandom(9 * MiB + i) for i in range(4)})
        parsers = {redis.asyncio.connection.PythonParser}
        if redis.utils.HIREDIS_AVAILABLE:
            parsers.add(redis.asyncio.connection.HiredisParser)

        async def run(parser):
            async with AsyncClient(self.url, timeout=30, parser_class=parser) as c:
                self.assertTrue(await c.put_many(values))
                self.assertEqual(await c.get_many(list(values)), list(values.values()))
        for parser in parsers:
            with self.subTest(parser=parser.__name__):
                asyncio.run(run(parser))


class ClientOnLarder(ClientOn, unittest.TestCase):
    server = "larder"

    def test_prefix_count_is_one_larder_prefix_command(self):
        self.c.put(b"q0", b"x")
        sent = []
        real = self.c.redis.execute_command

        def spy(*args, **kw):
            sent.append(args[0])
            return real(*args, **kw)
        self.c.redis.execute_command = spy
        self.c.exists_many = None  # the pipeline fallback must not be used
        self.assertEqual(self.c.prefix_count([b"q0", b"q1"]), 1)
        self.assertEqual(sent, ["LARDER.PREFIX"])

    def test_a_refused_put_raises_with_the_servers_message(self):
        with self.assertRaises(redis.ResponseError):
            self.c.put_many([(b"ok", b"v"), (b"", b"v")])  # empty key: refused by the server
        self.assertEqual(self.c.get(b"ok"), b"v")

    def test_a_refused_put_does_not_stop_the_pipelines_after_it(self):
        from larder import client as client_module
        big = b"b" * client_module.PIPELINE_BYTES  # one pipeline each
        with self.assertRaisesRegex(redis.ResponseError, "1 of 3 puts failed"):
            self.c.put_many([(b"", b"v"), (b"after1", big), (b"after2", big)])
        self.assertEqual([self.c.exists(k) for k in (b"after1", b"after2")], [True, True])


class ClientOnRedis(ClientOn, unittest.TestCase):
    server = "redis"

    def test_prefix_count_falls_back_to_exists_on_unknown_command(self):
        self.c.put(b"q0", b"x")
        self.assertEqual(self.c.prefix_count([b"q0", b"q1"]), 1)
        self.assertFalse(self.c._has_prefix)  # learnt once, not retried on every lookup


if __name__ == "__main__":
    unittest.main()
