"""larder.lmcache_connector against a live larder-server (and Redis 7 for the fallbacks), with
stand-ins for LMCache's CacheEngineKey, MemoryObj and local CPU backend that behave as LMCache's
do (to_string(), byte_array, get_shape/get_dtype/get_memory_format, allocate). The real LMCache
base classes are used only where lmcache is importable; it is not installable here."""
import asyncio
import logging
import math
import os
import random
import signal
import threading
import time
import unittest
from unittest import mock

import helpers
import redis
import redis.utils
from helpers import SERVERS, MiB
from larder import chunk_format
from larder.lmcache_connector import HAVE_LMCACHE, LarderConnector, LarderConnectorAdapter
from test_failsafe import FILL_TIMEOUT, HANG, TIMEOUT, reads_through_a_kill, recovery_seconds

logging.getLogger("larder.lmcache").setLevel(logging.ERROR)  # bad values are logged by design
ITEM = {"bfloat16": 2, "float32": 4, "uint8": 1}


class Key:
    def __init__(self, name):
        self.name = name

    def to_string(self):
        return f"vllm@model@1@0@{self.name}"


class MemoryObj:
    def __init__(self, shape, dtype="bfloat16", fmt=1, data=None):
        self.shape, self.dtype, self.fmt = list(shape), dtype, fmt
        n = math.prod(shape) * ITEM[dtype]
        self.byte_array = bytearray(data if data is not None else n)

    def get_shape(self):
        return self.shape

    def get_dtype(self):
        return self.dtype

    def get_memory_format(self):
        return self.fmt


class GroupedMemoryObj(MemoryObj):
    """A hybrid-attention model's chunk as LMCache holds it: one tensor per KV-cache group,
    their bytes one after another in one buffer, get_shapes()/get_dtypes() one entry each."""

    def __init__(self, shapes, dtypes, fmt=1, data=None):
        super().__init__(shapes[0], dtypes[0], fmt, b"")
        self.shapes, self.dtypes = [list(s) for s in shapes], list(dtypes)
        n = sum(math.prod(s) * ITEM[d] for s, d in zip(shapes, dtypes))
        self.byte_array = bytearray(data if data is not None else n)

    def get_shapes(self):
        return self.shapes

    def get_dtypes(self):
        return self.dtypes


class CpuBackend:
    def __init__(self, fail=False):
        self.fail, self.allocations, self.released = fail, 0, 0

    def allocate(self, shapes, dtypes, fmt):
        # As LMCache's allocators (_adapt_shapes_and_dtypes): a torch.Size (a tuple) is one
        # shape, a list is a list of shapes, one per dtype.
        assert isinstance(shapes, list) == isinstance(dtypes, list), (shapes, dtypes)
        assert not isinstance(shapes, list) or len(shapes) == len(dtypes) > 1, (shapes, dtypes)
        self.allocations += 1
        if self.fail:
            return None
        if isinstance(shapes, list):
            m = GroupedMemoryObj(shapes, dtypes, fmt)
        else:
            m = MemoryObj(shapes, dtypes, fmt)
        m.ref_count_down = self.release
        return m

    def release(self):
        self.released += 1


def chunk(shape, dtype="bfloat16"):
    return MemoryObj(shape, dtype, 1, os.urandom(math.prod(shape) * ITEM[dtype]))


class OnLmcacheLoop:
    """LMCache's event loop on its own thread, a CPU backend, and connectors made on the loop."""

    def start_loop(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.backend = CpuBackend()

    def make(self, url, config=None):
        async def create():  # redis.asyncio objects belong to the loop they are made on
            return LarderConnector(url, self.loop, self.backend, config=config)
        return self.wait(create())

    def tearDown(self):
        self.wait(self.conn.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

    def wait(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)


class ConnectorOn(OnLmcacheLoop):
    server = None

    @classmethod
    def setUpClass(cls):
        cls.srv = SERVERS[cls.server](budget=512 * MiB).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def setUp(self):
        self.start_loop()
        self.conn = self.make(f"larder://127.0.0.1:{self.srv.port}")
        self.wait(self.conn.client.redis.flushall())

    def test_put_get_round_trip_keeps_shape_dtype_format_and_bytes(self):
        m = chunk([2, 32, 256, 8, 128])  # 2 MiB of bfloat16, LMCache's KV_2LTD-like shape
        self.wait(self.conn.put(Key("c0"), m))
        got = self.wait(self.conn.get(Key("c0")))
        self.assertEqual((got.shape, got.dtype, got.fmt), (m.shape, m.dtype, m.fmt))
        self.assertEqual(bytes(got.byte_array), bytes(m.byte_array))
        self.assertTrue(self.wait(self.conn.exists(Key("c0"))))
        self.assertTrue(self.conn.exists_sync(Key("c0")))
        self.assertFalse(self.conn.exists_sync(Key("c1")))

    def test_an_unfull_last_chunk_keeps_its_real_shape(self):
        m = chunk([2, 32, 77, 8, 128])  # 77 of 256 tokens
        self.wait(self.conn.put(Key("tail"), m))
        got = self.wait(self.conn.get(Key("tail")))
        self.assertEqual(got.shape, [2, 32, 77, 8, 128])
        self.assertEqual(bytes(got.byte_array), bytes(m.byte_array))

    def test_a_value_that_is_not_a_chunk_is_a_miss_never_a_tensor(self):
        good = chunk([4, 64])
        value = self.conn._encode(good)
        bad = {"short": b"LKV1", "magic": b"XXXX" + bytes(value[4:]),
               "truncated": bytes(value[:-1]), "longer": bytes(value) + b"\0",
               "foreign": os.urandom(4096)}
        for name, v in bad.items():
            self.wait(self.conn.client.redis.set(Key(name).to_string(), v))
        allocations = self.backend.allocations
        for name in bad:
            self.assertIsNone(self.wait(self.conn.get(Key(name))), name)
        self.assertEqual(self.conn.format_errors, len(bad))
        self.assertEqual(self.backend.allocations, allocations)  # nothing allocated for them

    def test_no_cpu_memory_is_a_miss(self):
        self.wait(self.conn.put(Key("m"), chunk([8, 8])))
        self.backend.fail = True
        self.assertIsNone(self.wait(self.conn.get(Key("m"))))

    def test_batched_contains_is_the_leading_run_of_hits(self):
        keys = [Key(f"p{i}") for i in range(8)]
        self.wait(self.conn.batched_put(keys[:5] + keys[6:], [chunk([16, 16]) for _ in range(7)]))
        self.assertEqual(self.wait(self.conn.batched_async_contains("req", keys)), 5)
        objs = self.wait(self.conn.batched_get(keys))
        self.assertEqual([o is not None for o in objs], [True] * 5 + [False] + [True] * 2)
        self.assertEqual(len(self.wait(self.conn.batched_get_non_blocking("req", keys))), 5)

    def test_a_non_blocking_load_allocates_nothing_after_the_first_miss(self):
        keys = [Key(f"n{i}") for i in range(6)]
        self.wait(self.conn.batched_put([keys[0], keys[2], keys[3]],
                                        [chunk([16, 16]) for _ in range(3)]))
        allocations = self.backend.allocations
        self.assertEqual(len(self.wait(self.conn.batched_get_non_blocking("req", keys))), 1)
        self.assertEqual(self.backend.allocations - allocations, 1)

    def test_error_replies_are_misses_and_refused_puts_never_raise(self):
        self.wait(self.conn.put(Key("e"), chunk([8, 8])))

        async def refused(*args, **kw):
            raise redis.ResponseError("CLUSTERDOWN Hash slot not served")
        for name in ("get", "get_many", "exists", "prefix_count", "delete", "scan_keys", "put",
                     "put_many"):
            setattr(self.conn.client, name, refused)
        self.assertIsNone(self.wait(self.conn.get(Key("e"))))
        self.assertEqual(self.wait(self.conn.batched_get([Key("e"), Key("f")])), [None, None])
        self.assertEqual(self.wait(self.conn.batched_get_non_blocking("l", [Key("e")])), [])
        self.assertFalse(self.wait(self.conn.exists(Key("e"))))
        self.assertEqual(self.wait(self.conn.batched_async_contains("l", [Key("e")])), 0)
        self.assertEqual(self.wait(self.conn.list()), [])
        self.assertFalse(self.conn.remove_sync(Key("e")))
        self.assertEqual(self.conn.read_errors, 7)
        self.wait(self.conn.put(Key("g"), chunk([8, 8])))
        self.wait(self.conn.batched_put([Key("g")], [chunk([8, 8])]))
        self.assertEqual(self.conn.put_errors, 2)

    def test_a_chunk_that_cannot_be_loaded_is_a_miss_and_its_memory_goes_back(self):
        self.wait(self.conn.put(Key("big"), chunk([64, 64])))
        backend_allocate = self.backend.allocate
        self.backend.allocate = lambda *a: _shrunk(backend_allocate(*a))  # too small a buffer
        released = self.backend.released
        self.assertIsNone(self.wait(self.conn.get(Key("big"))))
        self.assertEqual((self.backend.released - released, self.conn.read_errors), (1, 1))

    def test_a_chunk_of_several_groups_round_trips_group_by_group(self):
        shapes, dtypes = [[2, 4, 16, 64], [2, 4, 9, 32], [6]], ["bfloat16", "float32", "uint8"]
        size = sum(math.prod(s) * ITEM[d] for s, d in zip(shapes, dtypes))
        m = GroupedMemoryObj(shapes, dtypes, 1, os.urandom(size))
        self.wait(self.conn.put(Key("groups"), m))
        got = self.wait(self.conn.get(Key("groups")))
        self.assertEqual((got.get_shapes(), got.get_dtypes(), got.fmt), (shapes, dtypes, 1))
        self.assertEqual(bytes(got.byte_array), bytes(m.byte_array))
        self.assertEqual(self.conn.put_errors + self.conn.format_errors, 0)
        one = GroupedMemoryObj([[8, 8]], ["float32"], 1, os.urandom(256))  # get_shapes() of 1
        self.wait(self.conn.put(Key("one"), one))
        value = self.wait(self.conn.client.get(Key("one").to_string()))
        self.assertEqual(bytes(value[:4]), chunk_format.MAGIC)  # as before groups existed
        self.assertEqual(self.wait(self.conn.get(Key("one"))).shape, [8, 8])

    def test_a_memory_object_whose_groups_do_not_match_its_bytes_is_not_stored(self):
        odd = GroupedMemoryObj([[8, 8], [8, 8]], ["bfloat16", "bfloat16"])
        odd.dtypes = ["bfloat16"]  # one dtype for two shapes
        short = GroupedMemoryObj([[8, 8], [8, 8]], ["bfloat16", "bfloat16"])
        short.byte_array = short.byte_array[:-1]
        for name, m in (("odd", odd), ("short", short)):
            self.wait(self.conn.put(Key(name), m))
            self.assertFalse(self.wait(self.conn.exists(Key(name))), name)
        self.assertEqual(self.conn.put_errors, 2)

    def test_remove_list_ping_and_ttl(self):
        self.wait(self.conn.put(Key("r"), chunk([4])))
        self.assertIn(Key("r").to_string(), self.wait(self.conn.list()))
        self.assertTrue(self.conn.remove_sync(Key("r")))
        self.assertFalse(self.conn.remove_sync(Key("r")))
        self.assertEqual(self.wait(self.conn.ping()), 0)

        class Config:
            extra_config = {"larder.ttl_seconds": 120}
        timed = self.make(f"larder://127.0.0.1:{self.srv.port}", Config())
        self.wait(timed.put(Key("t"), chunk([4])))
        self.assertTrue(0 < self.wait(timed.client.redis.ttl(Key("t").to_string())) <= 120)
        self.wait(timed.close())

    def test_puts_go_in_pipelines_of_32_mib_encoded_as_they_go(self):
        # redis-py's asyncio client bounds a whole pipeline's write by the timeout: a batch of
        # a long prompt goes in pieces, and is not copied whole before the first is sent.
        from larder import client as client_module
        sizes, encoded_before_send = [], []
        real_pipeline = self.conn.client.redis.pipeline

        def counting_pipeline(*a, **kw):
            pipe = real_pipeline(*a, **kw)
            real_execute = pipe.execute

            async def execute(*ea, **ekw):
                sizes.append(sum(len(cmd[0][2]) for cmd in pipe.command_stack))
                encoded_before_send.append(encodes[0])
                return await real_execute(*ea, **ekw)
            pipe.execute = execute
            return pipe
        encodes = [0]
        real_encode = self.conn._encode

        def counting_encode(m):
            encodes[0] += 1
            return real_encode(m)
        self.conn.client.redis.pipeline = counting_pipeline
        self.conn._encode = counting_encode
        chunks = [chunk([3 * MiB])] * 24  # 24 chunks of 6 MiB: 144 MiB
        keys = [Key(f"pipe{i}") for i in range(24)]
        self.wait(self.conn.batched_put(keys, chunks))
        del self.conn.client.redis.pipeline  # the lookup's own pipeline (Redis) is not counted
        self.assertEqual(self.conn.put_errors, 0)
        self.assertGreater(len(sizes), 1)
        self.assertTrue(all(s <= client_module.PIPELINE_BYTES for s in sizes), sizes)
        self.assertLess(encoded_before_send[0], 24, "the whole batch was encoded first")
        self.assertEqual(self.wait(self.conn.batched_async_contains("l", keys)), 24)

    def test_a_chunk_that_cannot_be_encoded_leaves_the_rest_of_its_batch_stored(self):
        bad = chunk([8])
        bad.get_dtype = lambda: None
        keys = [Key("enc0"), Key("enc1"), Key("enc2")]
        self.wait(self.conn.batched_put(keys, [chunk([8]), bad, chunk([8])]))
        self.assertEqual(self.conn.put_errors, 1)
        self.assertEqual([self.wait(self.conn.exists(k)) for k in keys], [True, False, True])

    def test_lookups_and_pings_do_not_queue_behind_puts(self):
        # Every put permit taken (puts in flight): a lookup and LMCache's ping still answer.
        async def hold_put_permits():
            for _ in range(LarderConnector.PUT_CONNECTIONS):
                await self.conn.put_sem.acquire()
        self.wait(hold_put_permits())
        self.assertEqual(self.wait(self.conn.batched_async_contains("l", [Key("none")])), 0)
        self.assertEqual(self.wait(self.conn.ping()), 0)

        async def hold_read_permits():  # and every read permit too: the ping still answers
            while not self.conn.sem.locked():
                await self.conn.sem.acquire()
        self.wait(hold_read_permits())
        self.assertEqual(self.wait(asyncio.wait_for(self.conn.ping(), 5)), 0)

    def test_a_bad_ttl_in_the_config_is_refused_when_the_connector_is_made(self):
        for bad in (-1, 0.5, "1d", True):
            class Config:
                extra_config = {"larder.ttl_seconds": bad}
            with self.subTest(ttl=bad), self.assertRaisesRegex(ValueError, "ttl must be"):
                self.make(f"larder://127.0.0.1:{self.srv.port}", Config())

    def test_a_connector_made_without_hiredis_says_so(self):
        url = f"larder://127.0.0.1:{self.srv.port}"
        with mock.patch.object(redis.utils, "HIREDIS_AVAILABLE", False), \
                self.assertLogs("larder.lmcache", "WARNING") as logs:
            self.wait(self.make(url).close())
        self.assertIn("pip install hiredis", logs.output[0])
        with mock.patch.object(redis.utils, "HIREDIS_AVAILABLE", True), \
                self.assertNoLogs("larder.lmcache", "WARNING"):
            self.wait(self.make(url).close())

    def test_a_reply_that_is_not_bytes_is_a_miss(self):
        self.assertIsNone(self.conn._decode("k", "text, not bytes"))
        self.assertEqual(self.conn.format_errors, 1)

    def test_ping_reports_an_unreachable_server_as_an_error_code(self):
        dead = self.make(f"larder://127.0.0.1:{helpers.SERVERS and _closed_port()}")
        self.assertEqual(self.wait(dead.ping()), 1)
        self.wait(dead.close())


def _shrunk(memory_obj):
    memory_obj.byte_array = memory_obj.byte_array[:4]
    return memory_obj


def _closed_port():
    import server_harness
    return server_harness.free_port()


class ConnectorOnLarder(ConnectorOn, unittest.TestCase):
    server = "larder"


class ConnectorOnRedis(ConnectorOn, unittest.TestCase):
    """The same connector works against any RESP server (prefix lookup by EXISTS pipeline)."""
    server = "redis"


class ConnectorFailsafeTest(OnLmcacheLoop, unittest.TestCase):
    """The larder:// connector inside LMCache's event loop when larder-server is SIGKILLed in
    the middle of batched_get calls, or SIGSTOPped: every call returns within the failsafe
    tests' bound, with byte-exact chunks or misses and no exception, and loads succeed again
    within 2 s of the server coming back."""

    def setUp(self):
        self.srv = SERVERS["larder"](budget=512 * MiB).start()
        self.addCleanup(self.srv.cleanup)
        self.start_loop()
        self.keys = [Key(f"fs{i}") for i in range(8)]
        self.chunks = [chunk([2, 4, 256, 8, 128]) for _ in self.keys]  # 4 MiB each
        filler = self.make(f"larder://127.0.0.1:{self.srv.port}?timeout={FILL_TIMEOUT}")
        self.wait(filler.batched_put(self.keys, self.chunks))
        self.wait(filler.client.redis.execute_command("SAVE"))
        self.assertEqual(self.wait(filler.batched_async_contains("l", self.keys)), len(self.keys))
        self.wait(filler.close())
        self.conn = self.make(f"larder://127.0.0.1:{self.srv.port}?timeout={TIMEOUT}")

    def tearDown(self):
        if self.srv.alive():
            self.srv.proc.send_signal(signal.SIGCONT)
        super().tearDown()

    def load(self):
        """One batched_get of every key; the number of hits, each checked byte-exact."""
        got = self.wait(self.conn.batched_get(self.keys))
        for g, m in zip(got, self.chunks):
            self.assertTrue(g is None or bytes(g.byte_array) == bytes(m.byte_array),
                            "wrong bytes")
        return sum(g is not None for g in got)

    def test_killed_mid_batch_then_restarted(self):
        durations, _, errors, hung = reads_through_a_kill(self.srv, self.load)
        self.assertFalse(hung, "a batched_get hung on a dead server")
        self.assertEqual(errors, [])
        self.assertLess(max(durations), HANG)
        self.assertEqual(self.load(), 0)  # misses, not an exception
        self.srv.start()
        back = recovery_seconds(self.load, len(self.keys))
        print(f"\nlarder://, kill: {len(durations)} batches, longest {max(durations):.3f}s; "
              f"back {back:.3f}s after restart")
        self.assertLess(back, 2.0)

    def test_stalled_server_costs_misses(self):
        self.srv.proc.send_signal(signal.SIGSTOP)
        t = time.monotonic()
        self.assertEqual(self.load(), 0)
        self.assertEqual(self.wait(self.conn.batched_async_contains("l", self.keys)), 0)
        stalled = time.monotonic() - t
        self.srv.proc.send_signal(signal.SIGCONT)
        back = recovery_seconds(self.load, len(self.keys))
        print(f"\nlarder://, stall: {stalled:.3f}s for a load and a lookup; back {back:.3f}s")
        self.assertLess(stalled, 2 * HANG)
        self.assertLess(back, 2.0)


class AdapterTest(unittest.TestCase):
    def test_claims_larder_urls_only(self):
        a = LarderConnectorAdapter()
        self.assertTrue(a.can_parse("larder://127.0.0.1:6379"))
        self.assertTrue(a.can_parse("larder+unix:///run/larder.sock"))
        self.assertFalse(a.can_parse("redis://127.0.0.1:6379"))
        self.assertFalse(a.can_parse("lm://h:1"))

    def test_chunk_header_round_trip(self):
        h = chunk_format.encode_header([(2, 3)], ["float32"], 7)
        # One group: LKV1, byte for byte as the connector has always written it.
        self.assertEqual(h, b"LKV1\x23\x00\x02\x07\x07\x00\x00\x00" + (2).to_bytes(8, "little")
                         + (3).to_bytes(8, "little") + b"float32")
        shapes, dtypes, fmt, payload = chunk_format.decode(h + bytes(24))
        self.assertEqual((shapes, dtypes, fmt, len(payload)), ([(2, 3)], ["float32"], 7, 24))
        h = chunk_format.encode_header([(2, 3), (5,)], ["float32", "uint8"], 1)
        shapes, dtypes, fmt, payload = chunk_format.decode(h + bytes(29))
        self.assertEqual((shapes, dtypes, fmt, len(payload)),
                         ([(2, 3), (5,)], ["float32", "uint8"], 1, 29))
        for shapes, dtypes, error in (([(2,)], ["complex64"], "unsupported dtype"),
                                      ([(2,), (3,)], ["uint8"], "one of each per group"),
                                      ([], [], "one of each per group"),
                                      ([(2,), ()], ["uint8"] * 2, "1 to 8 dimensions")):
            with self.assertRaisesRegex(ValueError, error):
                chunk_format.encode_header(shapes, dtypes, 0)

    def test_a_malformed_header_of_several_groups_is_refused(self):
        good = chunk_format.encode_header([(2, 3), (5,)], ["float32", "uint8"], 1) + bytes(29)
        groups_at, first_ndim_at = 6, 12
        cases = {"no groups": (groups_at, 0), "more groups than described": (groups_at, 3),
                 "fewer groups than described": (groups_at, 1),
                 "a group of 9 dimensions": (first_ndim_at, 9), "reserved byte": (7, 1)}
        for name, (at, byte) in cases.items():
            bad = bytearray(good)
            bad[at] = byte
            with self.assertRaises(chunk_format.ChunkFormatError, msg=name):
                chunk_format.decode(bad)
        for cut in (1, 30, len(good) - 30):  # short payload; header cut inside
            with self.assertRaises(chunk_format.ChunkFormatError, msg=cut):
                chunk_format.decode(good[:-cut])

    def test_any_damage_to_a_chunk_is_refused_or_describes_its_payload_exactly(self):
        rng = random.Random(66)
        good = [chunk_format.encode_header([(2, 3), (5,)], ["float32", "uint8"], 1) + bytes(29),
                chunk_format.encode_header([(4, 1)], ["bfloat16"], 2) + bytes(8)]
        for _ in range(3000):
            bad = bytearray(rng.choice(good))
            for _ in range(rng.randint(1, 3)):
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            if rng.random() < 0.2:
                del bad[rng.randrange(len(bad) + 1):]  # cut short
            try:
                shapes, dtypes, _, payload = chunk_format.decode(bad)
            except chunk_format.ChunkFormatError:
                continue  # any other exception fails the test
            self.assertEqual(len(payload), chunk_format.payload_size(shapes, dtypes), bytes(bad))

    @unittest.skipUnless(HAVE_LMCACHE, "lmcache is not installed (pip-only; not on Debian): "
                         "the connector ran against its stand-in base classes")
    def test_real_lmcache_base_classes(self):
        from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector
        self.assertTrue(issubclass(LarderConnector, RemoteConnector))


if __name__ == "__main__":
    unittest.main()
