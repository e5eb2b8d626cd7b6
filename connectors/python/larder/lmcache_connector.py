"""An LMCache remote-storage plugin for Larder: `LarderConnectorAdapter` claims
`larder://host:port` and `larder+unix:///path/to/socket` URLs and creates a `LarderConnector`,
LMCache's `RemoteConnector` over `larder.AsyncClient`.

What it does beyond LMCache's stock `redis://` connector (docs/lmcache.md has the figures):
* one key per chunk (chunk_format: the shape, dtype and format travel in front of the bytes),
  so a get is one round trip, nothing can be orphaned, and unfull chunks keep their shape;
* `batched_async_contains` is one `LARDER.PREFIX` round trip for the whole prefix;
* `batched_get` / `batched_put` / `batched_get_non_blocking` are one pipeline each;
* an optional TTL (`?ttl=seconds` in the URL, or extra_config `larder.ttl_seconds`).

Enable it in the LMCache config:

    remote_url: "larder://127.0.0.1:6379"
    remote_serde: "naive"
    remote_storage_plugins: ["larder"]
    extra_config:
      remote_storage_plugin.larder.module_path: larder.lmcache_connector
      remote_storage_plugin.larder.class_name: LarderConnectorAdapter

LMCache's base classes are used when LMCache is importable; without it (tests, tools) the
module defines minimal stand-ins with the same names, so the connector logic still runs.
"""
import asyncio
import logging

import redis

from . import chunk_format
from .client import AsyncClient

try:  # pragma: no cover - exercised only where LMCache is installed
    from lmcache.v1.storage_backend.connector import ConnectorAdapter, ConnectorContext
    from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector
    HAVE_LMCACHE = True
except ImportError:
    HAVE_LMCACHE = False

    class ConnectorAdapter:  # noqa: D101 - stand-in for lmcache's
        def __init__(self, schema=""):
            self.schema = schema

        def can_parse(self, url):
            return self.schema != "" and url.startswith(self.schema)

    class ConnectorContext:  # noqa: D101
        def __init__(self, url, loop, local_cpu_backend, config=None, metadata=None,
                     plugin_name=None):
            self.url, self.loop, self.local_cpu_backend = url, loop, local_cpu_backend
            self.config, self.metadata, self.plugin_name = config, metadata, plugin_name

    class RemoteConnector:  # noqa: D101
        pass

logger = logging.getLogger("larder.lmcache")
SCHEMES = ("larder://", "larder+unix://")


def _dtype_name(dtype):
    return str(dtype).removeprefix("torch.")


def _dtype_from_name(name):
    try:
        import torch
        return getattr(torch, name)
    except ImportError:
        return name


def _fmt_code(fmt):
    return int(getattr(fmt, "value", fmt))


def _fmt_from_code(code):
    if HAVE_LMCACHE:
        from lmcache.v1.memory_management import MemoryFormat
        return MemoryFormat(code)
    return code


def _byte_view(memory_obj):
    view = memory_obj.byte_array
    view = view if isinstance(view, memoryview) else memoryview(view)
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class LarderConnector(RemoteConnector):
    """LMCache RemoteConnector on a Larder server. Keys are CacheEngineKey.to_string()."""

    MAX_CONNECTIONS = 150  # as LMCache's redis connector

    def __init__(self, url, loop, local_cpu_backend, config=None, metadata=None):
        ttl = None
        extra = getattr(config, "extra_config", None) or {}
        if extra.get("larder.ttl_seconds"):
            ttl = int(extra["larder.ttl_seconds"])
        self.client = AsyncClient(url, ttl=ttl, max_connections=self.MAX_CONNECTIONS)
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
        self.sem = asyncio.Semaphore(self.MAX_CONNECTIONS)
        self.format_errors = 0  # values that were not well-formed chunks (served as misses)
        self.put_errors = 0  # puts the server refused (logged, never raised into LMCache)

    # --- encoding -------------------------------------------------------------------------

    @staticmethod
    def _encode(memory_obj):
        header = chunk_format.encode_header(
            tuple(memory_obj.get_shape()), _dtype_name(memory_obj.get_dtype()),
            _fmt_code(memory_obj.get_memory_format()))
        return header + _byte_view(memory_obj)

    def _decode(self, key_str, value):
        """A MemoryObj filled from a stored value, or None (miss, bad value, no memory)."""
        if value is None:
            return None
        try:
            shape, dtype, fmt, payload = chunk_format.decode(value)
        except chunk_format.ChunkFormatError as e:
            self.format_errors += 1
            logger.warning("larder: %s is not a valid chunk (%s); treated as a miss", key_str, e)
            return None
        memory_obj = self.local_cpu_backend.allocate(
            list(shape), _dtype_from_name(dtype), _fmt_from_code(fmt))
        if memory_obj is None:
            logger.warning("larder: no CPU memory for %s; treated as a miss", key_str)
            return None
        view = _byte_view(memory_obj)
        if len(view) < len(payload):
            logger.warning("larder: allocated %d bytes for a %d-byte chunk %s", len(view),
                           len(payload), key_str)
            if hasattr(memory_obj, "ref_count_down"):
                memory_obj.ref_count_down()  # back to LMCache's allocator
            return None
        view[:len(payload)] = payload
        return memory_obj

    # --- RemoteConnector ------------------------------------------------------------------

    async def exists(self, key):
        async with self.sem:
            return await self.client.exists(key.to_string())

    def exists_sync(self, key):
        return asyncio.run_coroutine_threadsafe(self.exists(key), self.loop).result()

    async def get(self, key):
        k = key.to_string()
        async with self.sem:
            value = await self.client.get(k)
        return self._decode(k, value)

    def _refused(self, what, err):
        self.put_errors += 1
        logger.warning("larder: %s refused by the server (%s); not stored", what, err)

    async def put(self, key, memory_obj):
        # An unreachable store is already a quiet False (the client's fail-safe); a refusal
        # (a full disk, a value over the limit) is logged, not raised into LMCache's loop.
        try:
            async with self.sem:
                await self.client.put(key.to_string(), self._encode(memory_obj))
        except redis.ResponseError as e:
            self._refused(key.to_string(), e)

    async def list(self):
        return [k.decode(errors="replace") for k in await self.client.scan_keys()]

    async def close(self):
        await self.client.close()

    def support_ping(self):
        return True

    async def ping(self):
        try:
            return 0 if await self.client.redis.ping() else 1
        except Exception:  # noqa: BLE001 - LMCache expects an error code
            return 1

    def support_batched_get(self):
        return True

    async def batched_get(self, keys):
        names = [k.to_string() for k in keys]
        async with self.sem:
            values = await self.client.get_many(names)
        return [self._decode(n, v) for n, v in zip(names, values)]

    def support_batched_put(self):
        return True

    async def batched_put(self, keys, memory_objs):
        items = [(k.to_string(), self._encode(m)) for k, m in zip(keys, memory_objs)]
        try:
            async with self.sem:
                await self.client.put_many(items)
        except redis.ResponseError as e:
            self._refused(f"a batch of {len(items)} puts", e)

    def support_batched_async_contains(self):
        return True

    async def batched_async_contains(self, lookup_id, keys, pin=False):
        async with self.sem:
            return await self.client.prefix_count([k.to_string() for k in keys])

    def support_batched_get_non_blocking(self):
        return True

    async def batched_get_non_blocking(self, lookup_id, keys):
        """The consecutive hits from the first key on (what a prefix load can use)."""
        hits = []
        for obj in await self.batched_get(keys):
            if obj is None:
                break
            hits.append(obj)
        return hits

    def remove_sync(self, key):
        async def remove():
            async with self.sem:
                return await self.client.delete(key.to_string())
        return bool(asyncio.run_coroutine_threadsafe(remove(), self.loop).result())


class LarderConnectorAdapter(ConnectorAdapter):
    """Claims larder:// and larder+unix:// remote URLs for LMCache's ConnectorManager."""

    def __init__(self):
        super().__init__("larder://")

    def can_parse(self, url):
        return url.startswith(SCHEMES)

    def create_connector(self, context):
        logger.info("larder: creating connector for %s", context.url)
        return LarderConnector(context.url, context.loop, context.local_cpu_backend,
                               config=context.config, metadata=context.metadata)
