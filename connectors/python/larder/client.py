"""Larder over RESP, on redis-py (Debian's python3-redis 4.3 or later).

`Client` (blocking) and `AsyncClient` (asyncio) add what a KV-cache connector needs on top of
plain GET/SET: batched puts, gets and existence checks in one round trip each (pipelines, not
MULTI), and the one-round-trip prefix lookup `LARDER.PREFIX`. Against a server without that
command (Redis, Kvrocks) the prefix lookup falls back to one pipeline of EXISTS, so both
clients work with any RESP server.

URLs: `larder://[[user]:password@]host[:port][/db][?ttl=seconds]` (TCP) and
`larder+unix:///path/to/larder.sock[?password=...&ttl=seconds]` (unix socket); `redis://`,
`rediss://` and `unix://` URLs are accepted unchanged. `ttl` (seconds) is the default expiry
of every put; none by default.
"""
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis
import redis.asyncio

PREFIX_COMMAND = "LARDER.PREFIX"
DEFAULT_URL = "larder://127.0.0.1:6379"
_SCHEMES = {"larder": "redis", "larder+unix": "unix", "redis": "redis", "rediss": "rediss",
            "unix": "unix"}


def parse_url(url):
    """(redis-py URL, default ttl in seconds or None); ValueError on an unknown scheme or a
    bad ttl."""
    parts = urlsplit(url)
    scheme = _SCHEMES.get(parts.scheme)
    if scheme is None:
        raise ValueError(f"unsupported URL scheme in {url!r}: use larder://host:port or "
                         "larder+unix:///path/to/socket")
    query = parse_qsl(parts.query, keep_blank_values=True)
    ttl = None
    rest = []
    for k, v in query:
        if k == "ttl":
            if not v.isdigit() or int(v) <= 0:
                raise ValueError(f"ttl must be a positive number of seconds, not {v!r}")
            ttl = int(v)
        else:
            rest.append((k, v))
    query = f"?{urlencode(rest)}" if rest else ""
    return f"{scheme}://{parts.netloc}{parts.path}{query}", ttl


def _set_args(ttl):
    return {"ex": ttl} if ttl else {}


def _items(items):
    return list(items.items()) if hasattr(items, "items") else list(items)


def _check_puts(keys, replies):
    failed = [(k, r) for k, r in zip(keys, replies) if r is not True]
    if failed:
        k, r = failed[0]
        raise redis.ResponseError(f"{len(failed)} of {len(keys)} puts failed; first {k!r}: {r}")


def _leading(flags):
    n = 0
    for f in flags:
        if not f:
            break
        n += 1
    return n


def _is_unknown_command(err):
    return "unknown command" in str(err).lower()


class Client:
    """A blocking Larder client; thread-safe (redis-py's connection pool)."""

    def __init__(self, url=DEFAULT_URL, ttl=None, max_connections=None, **redis_kwargs):
        redis_url, url_ttl = parse_url(url)
        self.ttl = ttl if ttl is not None else url_ttl
        self.redis = redis.Redis.from_url(redis_url, max_connections=max_connections,
                                          **redis_kwargs)
        self._has_prefix = True

    def close(self):
        self.redis.close()
        self.redis.connection_pool.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def put(self, key, value, ttl=None):
        """SET key value [EX ttl]; raises redis.ResponseError when the server refuses."""
        self.redis.set(key, value, **_set_args(ttl or self.ttl))

    def get(self, key):
        return self.redis.get(key)

    def get_into(self, key, buffer):
        """Copies the value into `buffer` (writable, at least the value's size); returns the
        size, or None on a miss. redis-py reads into its own bytes first, so this is one copy
        more than the in-process larder.native.Store.get_into."""
        v = self.redis.get(key)
        if v is None:
            return None
        view = memoryview(buffer).cast("B")
        if len(v) > len(view):
            raise ValueError(f"buffer of {len(view)} bytes is too small for {len(v)} bytes")
        view[:len(v)] = v
        return len(v)

    def exists(self, key):
        return bool(self.redis.exists(key))

    def delete(self, *keys):
        return self.redis.delete(*keys)

    def put_many(self, items, ttl=None):
        """One round trip for all (key, value) pairs (a dict or an iterable of pairs)."""
        items = _items(items)
        pipe = self.redis.pipeline(transaction=False)
        for k, v in items:
            pipe.set(k, v, **_set_args(ttl or self.ttl))
        _check_puts([k for k, _ in items], pipe.execute(raise_on_error=False))

    def get_many(self, keys):
        """One round trip; a value or None per key, in order."""
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.get(k)
        return pipe.execute()

    def exists_many(self, keys):
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.exists(k)
        return [bool(x) for x in pipe.execute()]

    def prefix_count(self, keys):
        """How many leading keys exist, in one round trip."""
        keys = list(keys)
        if not keys:
            return 0
        if self._has_prefix:
            try:
                return int(self.redis.execute_command(PREFIX_COMMAND, *keys))
            except redis.ResponseError as e:
                if not _is_unknown_command(e):
                    raise
                self._has_prefix = False
        return _leading(self.exists_many(keys))


class AsyncClient:
    """The asyncio twin of Client (redis.asyncio); use from one event loop."""

    def __init__(self, url=DEFAULT_URL, ttl=None, max_connections=None, **redis_kwargs):
        redis_url, url_ttl = parse_url(url)
        self.ttl = ttl if ttl is not None else url_ttl
        self.redis = redis.asyncio.Redis.from_url(redis_url, max_connections=max_connections,
                                                  **redis_kwargs)
        self._has_prefix = True

    async def close(self):
        await self.redis.close()
        await self.redis.connection_pool.disconnect()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def put(self, key, value, ttl=None):
        await self.redis.set(key, value, **_set_args(ttl or self.ttl))

    async def get(self, key):
        return await self.redis.get(key)

    async def exists(self, key):
        return bool(await self.redis.exists(key))

    async def delete(self, *keys):
        return await self.redis.delete(*keys)

    async def put_many(self, items, ttl=None):
        items = _items(items)
        pipe = self.redis.pipeline(transaction=False)
        for k, v in items:
            pipe.set(k, v, **_set_args(ttl or self.ttl))
        _check_puts([k for k, _ in items], await pipe.execute(raise_on_error=False))

    async def get_many(self, keys):
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.get(k)
        return await pipe.execute()

    async def exists_many(self, keys):
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.exists(k)
        return [bool(x) for x in await pipe.execute()]

    async def prefix_count(self, keys):
        keys = list(keys)
        if not keys:
            return 0
        if self._has_prefix:
            try:
                return int(await self.redis.execute_command(PREFIX_COMMAND, *keys))
            except redis.ResponseError as e:
                if not _is_unknown_command(e):
                    raise
                self._has_prefix = False
        return _leading(await self.exists_many(keys))

    async def scan_keys(self, match="*", count=1000):
        """Every key matching `match` (SCAN; keys written meanwhile may or may not appear)."""
        return [k async for k in self.redis.scan_iter(match=match, count=count)]
