"""LMCache's MP-mode `resp` L2 adapter (`--l2-adapter '{"type": "resp", "host": ..., "port": ...,
"num_workers": 8, "max_capacity_gb": ...}'`) as LMCache runs it (lmcache_mp.py), against
larder-server and redis-server 7 in the same run: batches of 4 MiB chunks split over 8
connections, lookups with misses, loads byte-exact into caller buffers, LMCache's own eviction
by DEL once usage passes max_capacity_gb, and AUTH with the adapter's username/password.

Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v test_lmcache_mp
"""
import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from lmcache_mp import GiB, MpAdapter, MpRespClient, mp_key  # noqa: E402
from servers import MiB, LarderServer, RedisServer  # noqa: E402

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CHUNK = 4 * MiB
_BODY = os.urandom(CHUNK)


def chunk_of(key):
    return hashlib.sha256(key.encode()).digest() + _BODY[32:]


def keys_for(first, n):
    return [mp_key(MODEL, hashlib.sha256(b"%d" % i).digest()) for i in range(first, first + n)]


class MpResp:
    SERVER = None

    def adapter(self, max_capacity_gb=0.0, password=None, username="", budget=1024 * MiB):
        srv = self.SERVER(budget=budget, password=password)
        self.addCleanup(srv.cleanup)
        srv.start()
        client = MpRespClient("127.0.0.1", srv.port, num_workers=8, username=username,
                              password=password or "")
        a = MpAdapter(client, max_capacity_gb)
        self.addCleanup(a.close)
        return srv, a

    def test_store_lookup_load_with_misses_byte_exact(self):
        srv, a = self.adapter()
        keys = keys_for(0, 24)
        for lo in range(0, 24, 8):
            ok, error = a.store(keys[lo:lo + 8], [memoryview(chunk_of(k)) for k in keys[lo:lo + 8]])
            self.assertTrue(ok, error)
        absent = keys_for(1000, 4)
        # LMCache looks up a prefix: present chunks, then the ones it never stored.
        hits, error = a.lookup(keys[:12] + absent)
        self.assertEqual(hits, [True] * 12 + [False] * 4, error)
        bufs = [bytearray(CHUNK) for _ in range(16)]
        per_key, error = a.load(keys[4:16] + absent, [memoryview(b) for b in bufs])
        self.assertEqual(per_key, [True] * 12 + [False] * 4, error)
        for k, b in zip(keys[4:16], bufs):
            self.assertTrue(b == chunk_of(k), f"wrong bytes for {k}")
        per_key, error = a.delete(keys[:2] + absent[:1])
        self.assertEqual(per_key, [True, True, False], error)
        self.assertEqual(a.lookup(keys[:3])[0], [False, False, True])
        self.assertTrue(srv.alive())

    def test_lmcache_evicts_by_del_at_max_capacity_gb(self):
        capacity_gb = 128 * MiB / GiB
        srv, a = self.adapter(max_capacity_gb=capacity_gb)
        keys = keys_for(0, 96)  # 3x the capacity
        for lo in range(0, 96, 8):
            batch = keys[lo:lo + 8]
            ok, error = a.store(batch, [memoryview(chunk_of(k)) for k in batch])
            self.assertTrue(ok, error)
            # A returning prefix reloads the first chunks, so they stay the most recent.
            per_key, error = a.load(keys[:4], [memoryview(bytearray(CHUNK)) for _ in range(4)])
            self.assertEqual(per_key, [True] * 4, error)
        self.assertLessEqual(a.usage(), 128 * MiB)
        self.assertGreater(a.deleted, 0)
        held = [k for k in keys if k in a.sizes]
        gone = [k for k in keys if k not in a.sizes]
        self.assertEqual(a.lookup(held)[0], [True] * len(held), "a kept chunk is missing")
        self.assertEqual(a.lookup(gone)[0], [False] * len(gone), "a deleted chunk answers")
        bufs = [bytearray(CHUNK) for _ in held]
        per_key, error = a.load(held, [memoryview(b) for b in bufs])
        self.assertEqual(per_key, [True] * len(held), error)
        for k, b in zip(held, bufs):
            self.assertTrue(b == chunk_of(k), f"wrong bytes for {k}")
        self.assertTrue(set(keys[:4]) <= set(held), "the reused prefix was evicted")
        sys.stderr.write(f"\n  [{self.SERVER.name}] MP resp: 96 x 4 MiB into max_capacity_gb "
                         f"{capacity_gb:g}: {a.deleted} deleted by LMCache, {len(held)} held\n")

    def test_auth_with_username_and_password(self):
        srv, a = self.adapter(password="s3cret", username="default")
        keys = keys_for(0, 8)
        self.assertTrue(a.store(keys, [memoryview(chunk_of(k)) for k in keys])[0])
        self.assertEqual(a.lookup(keys)[0], [True] * 8)


class OnLarder(MpResp, unittest.TestCase):
    SERVER = LarderServer


class OnRedis(MpResp, unittest.TestCase):
    SERVER = RedisServer


if __name__ == "__main__":
    unittest.main()
