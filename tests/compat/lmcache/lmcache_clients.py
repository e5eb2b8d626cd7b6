"""Byte-exact reproductions of the ways LMCache talks to a RESP store (see
../shared/reference/client-wire-behaviour.md, sections 1.3, 1.5 and 1.7):

* NativeRespClient — LMCache's C++ RESP2 client (`resp://`, csrc/storage_backends/redis/):
  IPv4 TCP, no handshake (AUTH only with a password), one request at a time, SET sent with
  writev, replies read by fixed length: 5 bytes after SET, 4 after EXISTS/DEL, a `$<N>` header
  line then exactly N+2 bytes after GET. Any other byte sequence is a `Desync`, which is what
  the real client would suffer (it never reconnects).
* RedisPyFlow — LMCache's RedisConnector (`redis://`, `unix://`): redis-py asyncio, a pool of
  up to 150 connections behind a semaphore of 150, two keys per chunk with no separator.
"""
import asyncio
import socket
import struct

import redis.asyncio

# RemoteMetadata: native-endian int32 length, memory format, dtype code, shape[4] (28 bytes).
KV_2LTD, BFLOAT16 = 1, 3


def lmcache_key(model, chunk_hash, worker=0, world=1, dtype="bfloat16"):
    """CacheEngineKey.to_string(): model@world_size@worker_id@<hash hex>@dtype."""
    return f"{model}@{world}@{worker}@{chunk_hash:x}@{dtype}"


def remote_metadata(length, shape=(2, 32, 256, 1024)):
    return struct.pack("=7i", length, KV_2LTD, BFLOAT16, *shape)


def metadata_length(meta):
    return struct.unpack("=7i", meta)[0]


class Desync(Exception):
    """A reply the native client cannot parse: its connection would be lost for good."""


class NativeRespClient:
    def __init__(self, port, host="127.0.0.1", password=None, username=None, timeout=300):
        # The real client sets no timeout; a generous one keeps a broken server from hanging CI.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect((host, port))
            if password is not None:
                args = [b"AUTH"] + ([username.encode()] if username else []) + [password.encode()]
                self._send(self._command(*args))
                line = self._line()
                if not line.startswith(b"+OK\r\n"):
                    raise Desync(f"AUTH: {line!r}")
        except BaseException:
            self.sock.close()
            raise

    def close(self):
        self.sock.close()

    @staticmethod
    def _command(*args, tail_size=None):
        """The RESP array header and all arguments but a trailing value of tail_size bytes
        sent separately."""
        out = [b"*%d\r\n" % (len(args) + (tail_size is not None))]
        for a in args:
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        if tail_size is not None:
            out.append(b"$%d\r\n" % tail_size)
        return b"".join(out)

    def _send(self, *buffers):
        views = [memoryview(b).cast("B") for b in buffers if len(b)]
        while views:
            n = self.sock.sendmsg(views)  # writev
            while views and n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            if n:
                views[0] = views[0][n:]

    def _exact(self, n):
        buf = bytearray(n)
        self._recv_into(memoryview(buf))
        return bytes(buf)

    def _recv_into(self, view):
        got = 0
        while got < len(view):
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise Desync("connection closed by the server")
            got += n

    def _line(self):
        line = bytearray()
        while not line.endswith(b"\n"):
            b = self.sock.recv(1)
            if not b:
                raise Desync("connection closed by the server")
            line += b
            if len(line) > 64:
                raise Desync(f"header line too long: {bytes(line)!r}")
        return bytes(line)

    def set(self, key: bytes, *value_parts):
        """SET key to the value made of value_parts, sent with the command in one writev as
        the real client sends its value (parts spare the test building a copy of each value)."""
        size = sum(len(memoryview(p).cast("B")) for p in value_parts)
        self._send(self._command(b"SET", key, tail_size=size), *value_parts, b"\r\n")
        reply = self._exact(5)
        if reply != b"+OK\r\n":
            raise Desync(f"SET {key!r}: {reply!r}")

    def _int_reply(self, name, key):
        self._send(self._command(name, key))
        reply = self._exact(4)
        if reply not in (b":0\r\n", b":1\r\n"):
            raise Desync(f"{name.decode()} {key!r}: {reply!r}")
        return reply == b":1\r\n"

    def exists(self, key: bytes):
        return self._int_reply(b"EXISTS", key)

    def delete(self, key: bytes):
        return self._int_reply(b"DEL", key)

    def get_into(self, key: bytes, buf):
        """True and buf filled on a hit; False on a miss. `buf` is the fixed chunk size."""
        self._send(self._command(b"GET", key))
        header = self._line()
        if header == b"$-1\r\n":
            return False
        if header != b"$%d\r\n" % len(buf):
            raise Desync(f"GET {key!r}: header {header!r}, chunk size {len(buf)}")
        self._recv_into(memoryview(buf))
        if self._exact(2) != b"\r\n":
            raise Desync(f"GET {key!r}: no CRLF after the payload")
        return True


class RedisPyFlow:
    """LMCache's RedisConnector command sequences over redis-py asyncio."""

    MAX_CONNECTIONS = 150

    def __init__(self, url):
        self.pool = redis.asyncio.ConnectionPool.from_url(url, max_connections=self.MAX_CONNECTIONS)
        self.r = redis.asyncio.Redis(connection_pool=self.pool)
        self.sem = asyncio.Semaphore(self.MAX_CONNECTIONS)
        self.orphans_deleted = 0

    async def close(self):
        await self.r.close()
        await self.pool.disconnect()

    async def put(self, key, payload):
        async with self.sem:  # payload first, then metadata, two round trips
            await self.r.set(key + "kv_bytes", payload)
            await self.r.set(key + "metadata", remote_metadata(len(payload)))

    async def exists(self, key):
        async with self.sem:
            return bool(await self.r.exists(key + "metadata"))

    async def get(self, key):
        async with self.sem:
            meta = await self.r.get(key + "metadata")
            if meta is None:
                return None
            kv = await self.r.get(key + "kv_bytes")
        if kv is None:
            # "Key exists but KV cache does not exist": the connector deletes the metadata.
            self.orphans_deleted += 1
            async with self.sem:
                await self.r.delete(key + "metadata")
            return None
        if len(kv) != metadata_length(meta):
            raise AssertionError(f"{key}: {len(kv)} bytes, metadata says {metadata_length(meta)}")
        return kv

    async def contains_prefix(self, keys):
        """batched_async_contains: sequential EXISTS, stopping at the first miss."""
        hits = 0
        for key in keys:
            async with self.sem:
                if not await self.r.exists(key + "metadata"):
                    return hits
            hits += 1
        return hits
