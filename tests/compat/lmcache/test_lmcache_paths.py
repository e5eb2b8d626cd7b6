"""LMCache's three ways to a RESP store, each driven with its client's exact command sequence
and reply checks, against larder-server and against redis-server 7 in the same run (so the
tests prove the protocol, not Larder's quirks):

1. `redis://` and `unix://` — redis-py asyncio (Debian's 4.3), two keys per chunk, 150
   concurrent operations, orphan-metadata handling, eviction under 3x the budget.
2. `resp://` — the native C++ client's byte-exact behaviour: 8 IPv4 connections, writev SET,
   fixed-length replies, 2/16/32/80 MiB values, eviction under 3x the budget with not one
   error reply.
3. The handshakes of `valkey://` (valkey-glide) and redis-py >= 8 (`HELLO 3`, `CLIENT
   SETINFO`, `INFO REPLICATION`); the glide data path itself runs from Node in
   tests/compat/node/lmcache_valkey.test.mjs.

Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v test_lmcache_paths
"""
import asyncio
import os
import hashlib
import sys
import threading
import unittest

import redis

sys.path.insert(0, os.path.dirname(__file__))
from lmcache_clients import (Desync, NativeRespClient, RedisPyFlow,  # noqa: E402
                             lmcache_key, remote_metadata)
from servers import MiB, LarderServer, RedisServer  # noqa: E402

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


_BODY = os.urandom(80 * MiB)


def payload(key, size):
    """A key's value: its SHA-256 in the first 32 bytes of a random body shared by all keys,
    so every read can be checked (right key, right bytes) without keeping the values."""
    return b"".join(payload_parts(key, size))


def payload_parts(key, size):
    """payload(key, size) as its two parts, the body a view of the shared one: what the native
    client's SET sends and `is_payload` checks, with no copy of the value made (at 8 x 80 MiB,
    building and first touching such copies was most of the test's time on a VM)."""
    if isinstance(key, str):
        key = key.encode()
    return hashlib.sha256(key).digest(), memoryview(_BODY)[32:size]


def is_payload(buf, key, size):
    head, body = payload_parts(key, size)
    view = memoryview(buf)
    return len(view) == size and view[:32] == head and view[32:] == body


def run_threads(target, n):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported to the test thread
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


class LMCachePaths:
    """Mixed into one TestCase per server; SERVER is the server class."""
    SERVER = None

    def start(self, **kw):
        srv = self.SERVER(**kw)
        self.addCleanup(srv.cleanup)
        return srv.start()

    def note(self, msg):
        sys.stderr.write(f"\n  [{self.SERVER.name}] {msg}\n")

    # --- resp:// : LMCache's native C++ client ---------------------------------------------

    def test_native_client_exact_replies(self):
        srv = self.start(budget=2048 * MiB)
        for size in (2 * MiB, 16 * MiB, 32 * MiB, 80 * MiB):
            def worker(i, size=size):
                c = NativeRespClient(srv.port)
                try:
                    key = lmcache_key(MODEL, 0xABC000 + i * 7 + size).encode()
                    value = payload_parts(key, size)
                    buf = bytearray(size)
                    self.assertFalse(c.get_into(key, buf))
                    self.assertFalse(c.exists(key))
                    c.set(key, *value)
                    self.assertTrue(c.exists(key))
                    self.assertTrue(c.get_into(key, buf))
                    self.assertTrue(is_payload(buf, key, size), f"{size} bytes read back differ")
                    c.set(key, *value)  # write-once in practice, but a re-put must stay +OK
                    self.assertTrue(c.delete(key))
                    self.assertFalse(c.delete(key))
                    self.assertFalse(c.get_into(key, buf))
                    self.assertFalse(c.exists(key))
                finally:
                    c.close()
            run_threads(worker, 8)
        self.assertTrue(srv.alive())

    def test_native_client_auth_forms(self):
        srv = self.start(password="s3cret")
        c = NativeRespClient(srv.port, password="s3cret")
        c.set(b"k", b"v" * 1024)
        self.assertTrue(c.exists(b"k"))
        c.close()
        c = NativeRespClient(srv.port, username="default", password="s3cret")
        self.assertTrue(c.exists(b"k"))
        c.close()
        with self.assertRaises(Desync):
            NativeRespClient(srv.port, password="wrong")

    def test_native_client_three_times_the_budget(self):
        budget, size = 256 * MiB, 16 * MiB
        srv = self.start(budget=budget)
        per_worker = (3 * budget) // size // 8
        keys = [[lmcache_key(MODEL, 0x5000 + w * 100 + j).encode() for j in range(per_worker)]
                for w in range(8)]

        def writer(w):
            c = NativeRespClient(srv.port)
            buf = bytearray(size)
            try:
                for j, key in enumerate(keys[w]):
                    c.set(key, *payload_parts(key, size))  # Desync on anything but +OK
                    if j:  # a reuse of the previous chunk, as a returning prefix would
                        if c.get_into(keys[w][j - 1], buf):
                            self.assertTrue(is_payload(buf, keys[w][j - 1], size))
            finally:
                c.close()
        run_threads(writer, 8)

        c = NativeRespClient(srv.port)
        # Eviction may still be running (the maintenance pass runs once a second) and only
        # removes keys, so EXISTS, GET, EXISTS of one key go from present to absent at most once,
        # never back. A fault: GET misses a key EXISTS finds both before and after it.
        buf, hits = bytearray(size), 0
        for key in [k for ks in keys for k in ks]:
            before = c.exists(key)
            got = c.get_into(key, buf)
            after = c.exists(key)
            if got:
                self.assertTrue(is_payload(buf, key, size), "a read returned wrong bytes")
                hits += 1
            self.assertTrue(before or not got, "GET found a key EXISTS did not: %r" % key)
            self.assertFalse(before and not got and after, "EXISTS finds a key GET misses: %r" % key)
        c.close()
        total = 8 * per_worker
        self.note(f"native client: {total} x 16 MiB written into a 256 MiB budget, "
                  f"{hits} readable afterwards, no error reply")
        self.assertGreater(hits, 0)
        self.assertLess(hits, total, "nothing was evicted: the budget was not enforced")
        self.assertTrue(srv.alive())

    # --- redis:// and unix:// : LMCache's RedisConnector (redis-py asyncio) ----------------

    def test_redis_py_two_key_flow_150_concurrent(self):
        srv = self.start()
        keys = [lmcache_key(MODEL, 0x7000 + i) for i in range(150)]

        async def flow():
            f = RedisPyFlow(f"redis://127.0.0.1:{srv.port}")
            try:
                await asyncio.gather(*(f.put(k, payload(k, MiB)) for k in keys))
                self.assertEqual(await asyncio.gather(*(f.exists(k) for k in keys)), [True] * 150)
                got = await asyncio.gather(*(f.get(k) for k in keys))
                for k, v in zip(keys, got):
                    self.assertEqual(v, payload(k, MiB))
                self.assertEqual(await f.contains_prefix(keys), 150)
                gap = keys[:100] + [lmcache_key(MODEL, 0xDEAD)] + keys[100:]
                self.assertEqual(await f.contains_prefix(gap), 100)
                # The payload vanishes under the metadata: get is a miss and removes it.
                await f.r.delete(keys[3] + "kv_bytes")
                self.assertIsNone(await f.get(keys[3]))
                self.assertEqual(f.orphans_deleted, 1)
                self.assertFalse(await f.exists(keys[3]))
                self.assertEqual(await f.contains_prefix(keys), 3)
            finally:
                await f.close()
        asyncio.run(flow())

    def test_redis_py_unix_socket(self):
        srv = self.start()
        key = lmcache_key(MODEL, 0x1234)

        async def flow():
            f = RedisPyFlow(f"unix://{srv.unixsocket}")
            try:
                await f.put(key, payload(key, 4 * MiB))
                self.assertTrue(await f.exists(key))
                self.assertEqual(await f.get(key), payload(key, 4 * MiB))
            finally:
                await f.close()
        asyncio.run(flow())

    def test_redis_py_three_times_the_budget(self):
        budget, size = 256 * MiB, 4 * MiB
        srv = self.start(budget=budget)
        keys = [lmcache_key(MODEL, 0x9000 + i) for i in range(3 * budget // size)]

        async def flow():
            f = RedisPyFlow(f"redis://127.0.0.1:{srv.port}")
            try:
                for i in range(0, len(keys), 16):
                    await asyncio.gather(*(f.put(k, payload(k, size)) for k in keys[i:i + 16]))
                    if i:  # returning users reuse an earlier chunk
                        self.assertIn(await f.get(keys[i - 16]), (None, payload(keys[i - 16], size)))
                # Orphans: metadata readable while its payload is gone.
                plain = redis.Redis(unix_socket_path=srv.unixsocket)
                # The payload first: eviction removes the pair together, so a payload found
                # missing before its metadata is found present is an orphan, whatever eviction
                # does meanwhile.
                orphans = sum(1 for k in keys if not plain.exists(k + "kv_bytes")
                              and plain.exists(k + "metadata"))
                plain.close()
                hits = 0
                for k in keys:
                    v = await f.get(k)
                    if v is not None:
                        self.assertEqual(v, payload(k, size))
                        hits += 1
                return orphans, hits
            finally:
                await f.close()
        orphans, hits = asyncio.run(flow())
        self.note(f"redis-py: {len(keys)} x 4 MiB chunks into a 256 MiB budget, {hits} "
                  f"readable, {orphans} orphan metadata keys")
        self.assertGreater(hits, 0)
        self.assertLess(hits, len(keys))
        if self.SERVER is LarderServer:
            # Larder evicts <k>metadata with <k>kv_bytes (evict_together); Redis's LRU
            # evicts them independently, which is LMCache PR #426's bug.
            self.assertEqual(orphans, 0, "metadata outlived its payload")

    # --- handshakes of valkey-glide and redis-py >= 8 ------------------------------------

    def test_resp3_handshakes(self):
        srv = self.start(password="pw")
        raw = self.raw(srv)
        self.addCleanup(raw.close)
        self.assertTrue(raw.call("HELLO", "3").startswith(b"-NOAUTH"))
        hello = raw.call("HELLO", "3", "AUTH", "default", "pw")
        self.assertTrue(hello.startswith(b"%"), hello[:40])
        self.assertIn(b"$5\r\nproto\r\n:3\r\n", hello)
        self.assertIn(b"role\r\n$6\r\nmaster\r\n", hello)
        # Both clients ignore an error here (Redis 7.0 has no SETINFO); it must not break.
        for arg in ("LIB-NAME", "LIB-VER"):
            self.assertRegex(raw.call("CLIENT", "SETINFO", arg, "x"), rb"^(\+OK|-ERR [^\r\n]*)\r\n$")
        info = raw.call("INFO", "REPLICATION")
        self.assertTrue(info.startswith(b"="), info[:20])  # RESP3 verbatim string
        self.assertIn(b"role:master\r\n", info)
        self.assertEqual(raw.call("PING"), b"+PONG\r\n")
        self.assertEqual(raw.call("SET", "k", "v", "EX", "86400"), b"+OK\r\n")
        self.assertEqual(raw.call("GET", "k"), b"$1\r\nv\r\n")
        self.assertEqual(raw.call("GET", "nope"), b"_\r\n")  # RESP3 null after HELLO 3
        self.assertEqual(raw.call("EXISTS", "k"), b":1\r\n")

    def raw(self, srv):
        from server_harness import RawClient
        return RawClient(srv.port)


class OnLarder(LMCachePaths, unittest.TestCase):
    SERVER = LarderServer


class OnRedis(LMCachePaths, unittest.TestCase):
    SERVER = RedisServer


if __name__ == "__main__":
    unittest.main()
