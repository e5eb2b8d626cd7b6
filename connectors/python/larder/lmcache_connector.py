"""An LMCache remote-storage plugin for Larder: `LarderConnectorAdapter` claims
`larder://host:port` and `larder+unix:///path/to/socket` URLs and creates a `LarderConnector`,
LMCache's `RemoteConnector` over `larder.AsyncClient`.

What it does beyond LMCache's stock `redis://` connector (docs/lmcache.md has the figures):
* one key per chunk (chunk_format: the shape, dtype and format travel in front of the bytes,
  one shape and dtype per KV-cache group of a hybrid-attention model), so a get is one round
  trip, nothing can be orphaned, and unfull chunks keep their shape;
* `batched_async_contains` is one `LARDER.PREFIX` round trip for the whole prefix;
* `batched_get` / `batched_get_non_blocking` are one pipeline each, `batched_put` pipelines of
  at most 32 MiB (client.PIPELINE_BYTES), each chunk encoded as its pipeline goes;
* an optional TTL (`?ttl=seconds` in the URL, or extra_config `larder.ttl_seconds`);
* nothing raises into LMCache: an unreachable store, an error reply (a full disk, a cluster
  redirection), a value this LMCache cannot decode or no CPU memory for it is a miss (reads) or
  a put not stored. An unreachable store is counted in `client.failures` (the fail-safe);
  error replies and chunks that cannot be loaded or stored in `read_errors`, `format_errors`
  and `put_errors`; each kind is logged at most once per `LOG_INTERVAL` seconds. `larder://`
  addresses one node; a cluster's redirections are misses.

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
import time

import redis.utils

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
    except ImportError:
        return name
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise chunk_format.ChunkFormatError(f"dtype {name!r} is not one this torch knows")
    return dtype


def _shape_arg(shape):
    """The shape as LMCache's allocators take one: a torch.Size (a plain list would be read
    as a list of shapes)."""
    try:
        import torch
    except ImportError:
        return tuple(shape)  # torch.Size is a tuple
    return torch.Size(shape)


def _fmt_code(fmt):
    return int(getattr(fmt, "value", fmt))


def _fmt_from_code(code):
    if HAVE_LMCACHE:
        from lmcache.v1.memory_management import MemoryFormat
        try:
            return MemoryFormat(code)
        except ValueError:
            raise chunk_format.ChunkFormatError(f"memory format {code} is not one this LMCache "
                                                "knows") from None
    return code


def _release(memory_obj):
    if hasattr(memory_obj, "ref_count_down"):
        memory_obj.ref_count_down()  # back to LMCache's allocator


class _RateLimitedLog:
    """One warning per kind per `interval` seconds, with how many were not logged."""

    def __init__(self, interval):
        self.interval = interval
        self._next = {}
        self._quiet = {}

    def warning(self, kind, msg, *args):
        now = time.monotonic()
        if now < self._next.get(kind, 0.0):
            self._quiet[kind] = self._quiet.get(kind, 0) + 1
            return
        quiet = self._quiet.pop(kind, 0)
        suffix = f" ({quiet} more since the last such warning)" if quiet else ""
        logger.warning("larder: " + msg + suffix, *args)
        self._next[kind] = now + self.interval


def _groups(memory_obj):
    """(shapes, dtypes) of a memory object, one entry per KV-cache group: LMCache's
    get_shapes()/get_dtypes() where the object has them (a hybrid-attention model's chunk holds
    one tensor per group, their bytes one after another), else its one shape and dtype."""
    if hasattr(memory_obj, "get_shapes"):
        return list(memory_obj.get_shapes()), list(memory_obj.get_dtypes())
    return [memory_obj.get_shape()], [memory_obj.get_dtype()]


def _byte_view(memory_obj):
    view = memory_obj.byte_array
    view = view if isinstance(view, memoryview) else memoryview(view)
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class LarderConnector(RemoteConnector):
    """LMCache RemoteConnector on a Larder server. Keys are CacheEngineKey.to_string().

    Reads (lookups, loads: the time to first token waits on them) and puts have connections of
    their own, so a lookup never queues behind the puts of a long prompt; LMCache's health
    ping has one more, so a busy connector is never taken for a dead store."""

    MAX_CONNECTIONS = 150  # as LMCache's redis connector: reads and puts together
    PUT_CONNECTIONS = 50  # of them, at most this many puts (a put is a pipeline of <= 32 MiB)
    LOG_INTERVAL = 10.0

    def __init__(self, url, loop, local_cpu_backend, config=None, metadata=None):
        extra = getattr(config, "extra_config", None) or {}
        ttl = extra.get("larder.ttl_seconds")  # a positive whole number (ValueError here)
        if isinstance(ttl, str) and ttl.isdigit():
            ttl = int(ttl)  # a quoted YAML value, an environment override
        if ttl == 0 and not isinstance(ttl, bool):
            ttl = None  # 0: no expiry
        self.client = AsyncClient(url, ttl=ttl, max_connections=self.MAX_CONNECTIONS)
        self.pinger = AsyncClient(url, max_connections=1)
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
        self.sem = asyncio.Semaphore(self.MAX_CONNECTIONS - self.PUT_CONNECTIONS)
        self.put_sem = asyncio.Semaphore(self.PUT_CONNECTIONS)
        self.format_errors = 0  # values that were not chunks this LMCache can load (misses)
        self.read_errors = 0  # reads that failed with an error (misses, never raised)
        self.put_errors = 0  # puts not stored because of an error (never raised)
        self.log = _RateLimitedLog(self.LOG_INTERVAL)
        if not getattr(redis.utils, "HIREDIS_AVAILABLE", True):
            logger.warning("larder: hiredis is not installed, so redis-py parses replies in "
                           "Python and loads of large chunks run several times slower; "
                           "pip install hiredis (docs/lmcache.md)")

    # --- encoding -------------------------------------------------------------------------

    @staticmethod
    def _encode(memory_obj):
        shapes, dtypes = _groups(memory_obj)
        names = [_dtype_name(d) for d in dtypes]
        header = chunk_format.encode_header([tuple(s) for s in shapes], names,
                                            _fmt_code(memory_obj.get_memory_format()))
        size = chunk_format.payload_size(shapes, names)
        view = _byte_view(memory_obj)
        if len(view) < size:
            raise ValueError(f"a memory object of {len(view)} bytes for {size} bytes of tensors")
        return header + view[:size]

    def _decode(self, key_str, value):
        """A MemoryObj filled from a stored value, or None (miss, bad value, no memory)."""
        if value is None:
            return None
        try:
            shapes, names, fmt, payload = chunk_format.decode(value)
            shapes = [_shape_arg(s) for s in shapes]
            dtypes = [_dtype_from_name(n) for n in names]
            # One group as LMCache's allocators have always taken it (a shape, a dtype); several
            # as lists, one entry per group.
            args = ((shapes[0], dtypes[0]) if len(shapes) == 1 else (shapes, dtypes)) + (
                _fmt_from_code(fmt),)
        except (chunk_format.ChunkFormatError, TypeError, ValueError) as e:
            self.format_errors += 1
            self.log.warning("format", "%s is not a chunk this LMCache can load (%s); treated "
                             "as a miss", key_str, e)
            return None
        memory_obj = None
        try:
            memory_obj = self.local_cpu_backend.allocate(*args)
            if memory_obj is None:
                self.log.warning("memory", "no CPU memory for %s; treated as a miss", key_str)
                return None
            view = _byte_view(memory_obj)
            if len(view) < len(payload):
                raise ValueError(f"allocated {len(view)} bytes for a {len(payload)}-byte chunk")
            view[:len(payload)] = payload
            return memory_obj
        except Exception as e:  # noqa: BLE001 - a load must never raise into LMCache
            if memory_obj is not None:
                _release(memory_obj)
            self._read_failed(f"loading {key_str}", e)
            return None

    def _read_failed(self, what, err):
        self.read_errors += 1
        self.log.warning("read", "%s failed (%s: %s); treated as a miss", what,
                         type(err).__name__, err)

    # --- RemoteConnector ------------------------------------------------------------------

    async def _read(self, what, nothing, call):
        """await call() under the semaphore, or `nothing` when it raises (counted, logged)."""
        try:
            async with self.sem:
                return await call()
        except Exception as e:  # noqa: BLE001 - a read must never raise into LMCache
            self._read_failed(what, e)
            return nothing

    async def exists(self, key):
        k = key.to_string()
        return await self._read(f"EXISTS {k}", False, lambda: self.client.exists(k))

    def exists_sync(self, key):
        return asyncio.run_coroutine_threadsafe(self.exists(key), self.loop).result()

    async def get(self, key):
        k = key.to_string()
        return self._decode(k, await self._read(f"GET {k}", None, lambda: self.client.get(k)))

    def _refused(self, what, err):
        self.put_errors += 1
        self.log.warning("put", "%s not stored (%s: %s)", what, type(err).__name__, err)

    async def put(self, key, memory_obj):
        # An unreachable store is already a quiet False (the client's fail-safe); a refusal
        # (a full disk, a value over the limit) or a chunk that cannot be encoded is logged,
        # not raised into LMCache's loop.
        try:
            async with self.put_sem:  # encoded once it may go: queued puts hold no copy
                await self.client.put(key.to_string(), self._encode(memory_obj))
        except Exception as e:  # noqa: BLE001 - a put must never raise into LMCache
            self._refused(key.to_string(), e)

    async def list(self):
        keys = await self._read("SCAN", [], self.client.scan_keys)
        return [k.decode(errors="replace") for k in keys]

    async def close(self):
        await self.client.close()
        await self.pinger.close()

    def support_ping(self):
        return True

    async def ping(self):
        # Its own connection, not a permit: a ping waiting behind the transfers of a busy
        # connector would miss LMCache's ping timeout and have the store taken for dead.
        try:
            return 0 if await self.pinger.redis.ping() else 1
        except Exception:  # noqa: BLE001 - LMCache expects an error code
            return 1

    def support_batched_get(self):
        return True

    async def _get_many(self, names):
        return await self._read(f"a batch of {len(names)} GETs", [None] * len(names),
                                lambda: self.client.get_many(names))

    async def batched_get(self, keys):
        names = [k.to_string() for k in keys]
        values = await self._get_many(names)
        return [self._decode(n, v) for n, v in zip(names, values)]

    def support_batched_put(self):
        return True

    def _encoded(self, keys, memory_objs):
        """(name, value) per chunk, encoded as the pipelines take them; a chunk that cannot be
        encoded is counted and left out, the rest stored."""
        for k, m in zip(keys, memory_objs):
            try:
                value = self._encode(m)
            except Exception as e:  # noqa: BLE001 - a put must never raise into LMCache
                self._refused(k.to_string(), e)
                continue
            yield k.to_string(), value

    async def batched_put(self, keys, memory_objs):
        try:
            async with self.put_sem:
                await self.client.put_many(self._encoded(keys, memory_objs))
        except Exception as e:  # noqa: BLE001 - a put must never raise into LMCache
            self._refused(f"a batch of {len(keys)} puts", e)

    def support_batched_async_contains(self):
        return True

    async def batched_async_contains(self, lookup_id, keys, pin=False):
        names = [k.to_string() for k in keys]
        return await self._read(f"a prefix lookup of {len(names)} keys", 0,
                                lambda: self.client.prefix_count(names))

    def support_batched_get_non_blocking(self):
        return True

    async def batched_get_non_blocking(self, lookup_id, keys):
        """The consecutive hits from the first key on (what a prefix load can use); nothing is
        allocated for the values after the first miss."""
        names = [k.to_string() for k in keys]
        hits = []
        for name, value in zip(names, await self._get_many(names)):
            obj = self._decode(name, value)
            if obj is None:
                break
            hits.append(obj)
        return hits

    def remove_sync(self, key):
        k = key.to_string()
        removed = self._read(f"DEL {k}", 0, lambda: self.client.delete(k))
        return bool(asyncio.run_coroutine_threadsafe(removed, self.loop).result())


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
