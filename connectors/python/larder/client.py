"""Larder over RESP, on redis-py (Debian's python3-redis 4.3 or later).

`Client` (blocking) and `AsyncClient` (asyncio) add what a KV-cache connector needs on top of
plain GET/SET: batched puts, gets and existence checks in one round trip each (pipelines, not
MULTI), and the one-round-trip prefix lookup `LARDER.PREFIX`. Against a server without that
command (Redis, Kvrocks) the prefix lookup falls back to one pipeline of EXISTS, so both
clients work with any RESP server.

URLs: `larder://[[user]:password@]host[:port][/db][?ttl=seconds&timeout=seconds]` (TCP) and
`larder+unix:///path/to/larder.sock[?password=...&ttl=seconds&timeout=seconds]` (unix socket);
`redis://`, `rediss://` and `unix://` URLs are accepted unchanged. `ttl` (seconds) is the
default expiry of every put; none by default, and a put's own `ttl=0` stores without expiry.
`timeout` (seconds, default 1; a given one must be a positive, finite number) bounds every wait
on the socket, and with `max_connections` also the wait for a free connection of the pool
(callers beyond `max_connections` wait for one, up to `timeout`, rather than fail at once).
redis-py's asyncio client bounds a whole write and a whole reply by it, not each wait: a
`put_many` therefore goes as pipelines of at most `PIPELINE_BYTES` of values (a larger value
alone), so `timeout` must cover moving one such pipeline or one value (1 s: 32 MB/s, or one
80 MiB value at 80 MB/s).
Large values want hiredis installed beside redis-py (its C reply parser reads them several times
faster than redis-py's own: docs/lmcache.md); the asyncio client sends them in slices
(_SlicedSend).
`prefix_count` is one round trip with LARDER.PREFIX; keys of several cluster slots (refused
with CROSSSLOT) or a server without it take a second, the pipeline of EXISTS.

Neither client stalls or raises into its caller when the store is down, restarting or stalled:
such a call answers "nothing" (a miss, False, 0) within about `timeout`, and calls succeed again
within a second of the store coming back (failsafe.py; `fail_open=False` restores plain
redis-py behaviour). Errors the server answers still raise `redis.ResponseError`.
"""
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis
import redis.asyncio

from .failsafe import DEFAULT_TIMEOUT, UNREACHABLE, Breaker, pool_exhausted

PREFIX_COMMAND = "LARDER.PREFIX"
DEFAULT_URL = "larder://127.0.0.1:6379"
_SCHEMES = {"larder": "redis", "larder+unix": "unix", "redis": "redis", "rediss": "rediss",
            "unix": "unix"}


def parse_url(url):
    """(redis-py URL, default ttl in seconds or None); ValueError on an unknown scheme or a
    bad ttl or timeout."""
    redis_url, ttl, _ = _parse(url)
    return redis_url, ttl


def _parse(url):
    """(redis-py URL, ttl or None, timeout in seconds or None)."""
    parts = urlsplit(url)
    scheme = _SCHEMES.get(parts.scheme)
    if scheme is None:
        raise ValueError(f"unsupported URL scheme in {url!r}: use larder://host:port or "
                         "larder+unix:///path/to/socket")
    query = parse_qsl(parts.query, keep_blank_values=True)
    ttl = timeout = None
    rest = []
    for k, v in query:
        if k == "ttl":
            if not v.isdigit() or int(v) <= 0:
                raise ValueError(f"ttl must be a positive number of seconds, not {v!r}")
            ttl = int(v)
        elif k == "timeout":
            timeout = _positive_seconds(v)
        else:
            rest.append((k, v))
    query = f"?{urlencode(rest)}" if rest else ""
    return f"{scheme}://{parts.netloc}{parts.path}{query}", ttl, timeout


def _positive_seconds(v):
    try:
        seconds = float(v)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"timeout must be a positive number of seconds, not {v!r}")
    return seconds


def _redis_kwargs(redis_url, timeout, kwargs):
    """redis-py's keyword arguments with the socket waits bounded by `timeout` (unless the
    caller set them). Debian's redis-py 4.3 has no connect timeout for unix sockets (a unix
    connect does not wait on the peer anyway)."""
    out = dict(kwargs)
    out.setdefault("socket_timeout", timeout)
    if not redis_url.startswith("unix:"):
        out.setdefault("socket_connect_timeout", timeout)
    return out


def _set_args(ttl):
    return {"ex": ttl} if ttl else {}


def _put_ttl(ttl, default):
    """A put's expiry: its own `ttl` (0 = none), or the client's default when it has none."""
    return default if ttl is None else ttl


def _make_pool(module, redis_url, max_connections, timeout, kwargs):
    """redis-py's pool (`module`: redis or redis.asyncio) for `redis_url`. With
    `max_connections`, callers beyond it wait up to `timeout` for a free connection (redis-py's
    default pool raises "Too many connections" at once, which the fail-safe would take for an
    unreachable store); unbounded without. An asyncio pool's connections send in slices
    (_SlicedSend)."""
    kwargs = _redis_kwargs(redis_url, timeout, kwargs)
    if max_connections is None:
        pool = module.ConnectionPool.from_url(redis_url, **kwargs)
    else:
        pool = module.BlockingConnectionPool.from_url(
            redis_url, max_connections=max_connections, timeout=timeout, **kwargs)
    if module is redis.asyncio:
        pool.connection_class = _sliced_send(pool.connection_class)
    return pool


# What an asyncio connection hands its transport at a time: see _SlicedSend.
SEND_SLICE = 256 << 10


class _SlicedSend:
    """Mixed into a redis.asyncio connection class: a command's pieces larger than SEND_SLICE
    (redis-py packs each large value as a piece of its own) go to the transport in slices of
    SEND_SLICE, each drained before the next, the small ones between them together. redis-py
    hands the whole packed pipeline to `StreamWriter.writelines`; Python 3.11's asyncio
    (Debian 12's) joins that into one new bytes object, and its socket transport keeps what the
    socket did not take at once in a bytearray that it shifts down after every send, so moving
    a 32 MiB pipeline cost far more than its bytes (bench/python_client.py). Sliced, nothing is
    joined and the transport never holds more than a slice. The whole send stays bounded by
    redis-py's `socket_timeout`, as before; a send cut short (that timeout, a cancelled task)
    aborts the connection, which redis-py then drops: closing it gracefully would wait, up to
    the connect timeout, for bytes that a stalled server is not reading."""

    async def _send_packed_command(self, command):
        writer = self._writer
        try:
            await _send_sliced(writer, command)
        except BaseException:
            writer.transport.abort()
            raise


async def _send_sliced(writer, command):
    small = []
    for piece in command:
        view = memoryview(piece).cast("B")
        if view.nbytes <= SEND_SLICE:
            small.append(piece)
            continue
        if small:
            writer.writelines(small)
            small = []
        for start in range(0, view.nbytes, SEND_SLICE):
            writer.write(view[start:start + SEND_SLICE])
            await writer.drain()
    if small:
        writer.writelines(small)
    await writer.drain()


def _sliced_send(connection_class):
    """`connection_class` with _SlicedSend's send; itself unchanged when its redis-py version
    has no `_send_packed_command` to replace (an unknown version keeps its own send)."""
    if not hasattr(connection_class, "_send_packed_command") or \
            issubclass(connection_class, _SlicedSend):
        return connection_class
    return type(f"Sliced{connection_class.__name__}", (_SlicedSend, connection_class), {})


# The value bytes one pipeline of puts carries at most (one larger value goes alone): see the
# module's note on `timeout`.
PIPELINE_BYTES = 32 << 20


def _value_bytes(v):
    if isinstance(v, memoryview):
        return v.nbytes
    return len(v) if isinstance(v, (bytes, bytearray, str)) else 0


def _put_pipelines(items):
    """The (key, value) pairs of `items` (a dict or an iterable of pairs, taken lazily: a
    generator's values are made one pipeline at a time) in lists of at most PIPELINE_BYTES of
    values, a larger value alone."""
    batch, size = [], 0
    for k, v in (items.items() if hasattr(items, "items") else items):
        n = _value_bytes(v)
        if batch and size + n > PIPELINE_BYTES:
            yield batch
            batch, size = [], 0
        batch.append((k, v))
        size += n
    if batch:
        yield batch


def _set_pipelines(client, items, ttl):
    """(pipeline, its keys) per PIPELINE_BYTES of `items`: SET with `ttl` queued, not sent;
    `client` is a redis.Redis or redis.asyncio.Redis."""
    ex = _set_args(ttl)
    for batch in _put_pipelines(items):
        pipe = client.pipeline(transaction=False)
        for k, v in batch:
            pipe.set(k, v, **ex)
        yield pipe, [k for k, _ in batch]


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


def _is_crossslot(err):
    return str(err).startswith("CROSSSLOT")


class _Settings:
    """What Client and AsyncClient take from their arguments and URL alike: the default ttl,
    the socket timeout, fail-open and its breaker."""

    def _configure(self, url, ttl, timeout, fail_open):
        """Sets the shared state; returns the redis-py URL."""
        redis_url, url_ttl, url_timeout = _parse(url)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"ttl must be a positive whole number of seconds, not {ttl!r}")
        self.ttl = ttl if ttl is not None else url_ttl
        if timeout is not None:
            timeout = _positive_seconds(timeout)
        self.timeout = timeout or url_timeout or DEFAULT_TIMEOUT
        self.fail_open = fail_open
        self.breaker = Breaker()
        self._has_prefix = True
        return redis_url

    def _prefix_refused(self, err):
        """After LARDER.PREFIX was answered `err`: re-raises it unless the pipeline of EXISTS
        can answer instead (a server without the command, learnt once; keys of several cluster
        slots, this call only)."""
        if _is_unknown_command(err):
            self._has_prefix = False
        elif not _is_crossslot(err):
            raise err

    def _failed(self, err):
        if pool_exhausted(err):
            self.breaker.skipped()  # this client's pool was busy; the store answered
        else:
            self.breaker.failed(err)

    @property
    def failures(self):
        """Calls answered "nothing" because the store was unreachable or too slow."""
        return self.breaker.failures


class Client(_Settings):
    """A blocking Larder client; thread-safe (redis-py's connection pool)."""

    def __init__(self, url=DEFAULT_URL, ttl=None, max_connections=None, timeout=None,
                 fail_open=True, **redis_kwargs):
        redis_url = self._configure(url, ttl, timeout, fail_open)
        self.redis = redis.Redis(connection_pool=_make_pool(
            redis, redis_url, max_connections, self.timeout, redis_kwargs))

    def _call(self, nothing, fn, *args, **kwargs):
        """fn(*args, **kwargs), or `nothing` when the store is unreachable (see failsafe.py)."""
        if not self.fail_open:
            return fn(*args, **kwargs)
        if not self.breaker.closed():
            self.breaker.skipped()
            return nothing
        try:
            result = fn(*args, **kwargs)
        except UNREACHABLE as e:
            # redis-py has dropped the failed connection; a pooled one the server closed is
            # found and replaced when it is next taken. Other threads' connections are theirs
            # to fail on: closing them here would break their calls mid-reply.
            self._failed(e)
            return nothing
        self.breaker.succeeded()
        return result

    def close(self):
        self.redis.close()
        self.redis.connection_pool.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def put(self, key, value, ttl=None):
        """SET key value [EX ttl]; True once stored, False if the store was unreachable;
        raises redis.ResponseError when the server refuses. `ttl` in seconds; None = the
        client's default, 0 = no expiry."""
        return self._call(False, self.redis.set, key, value,
                          **_set_args(_put_ttl(ttl, self.ttl)))

    def get(self, key):
        return self._call(None, self.redis.get, key)

    def get_into(self, key, buffer):
        """Copies the value into `buffer` (writable, at least the value's size); returns the
        size, or None on a miss. redis-py reads into its own bytes first, so this is one copy
        more than the in-process larder.native.Store.get_into."""
        v = self.get(key)
        if v is None:
            return None
        view = memoryview(buffer).cast("B")
        if len(v) > len(view):
            raise ValueError(f"buffer of {len(view)} bytes is too small for {len(v)} bytes")
        view[:len(v)] = v
        return len(v)

    def exists(self, key):
        return bool(self._call(0, self.redis.exists, key))

    def delete(self, *keys):
        return self._call(0, self.redis.delete, *keys)

    def put_many(self, items, ttl=None):
        """All (key, value) pairs (a dict or an iterable of pairs) in pipelines of at most
        PIPELINE_BYTES each; True once all are stored, False if the store was unreachable
        (those of the pipelines before stay stored). A put the server refuses does not stop
        the others: redis.ResponseError names the refused ones once all were sent."""
        keys, replies = [], []
        for pipe, sent in _set_pipelines(self.redis, items, _put_ttl(ttl, self.ttl)):
            got = self._call(None, pipe.execute, raise_on_error=False)
            if got is None:
                return False
            keys += sent
            replies += got
        _check_puts(keys, replies)
        return True

    def get_many(self, keys):
        """One round trip; a value or None per key, in order."""
        keys = list(keys)
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.get(k)
        return self._call([None] * len(keys), pipe.execute)

    def exists_many(self, keys):
        keys = list(keys)
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.exists(k)
        return [bool(x) for x in self._call([0] * len(keys), pipe.execute)]

    def prefix_count(self, keys):
        """How many leading keys exist, in one round trip (a pipeline of EXISTS where the
        server has no LARDER.PREFIX, or the keys span cluster slots)."""
        keys = list(keys)
        if not keys:
            return 0
        if self._has_prefix:
            try:
                return int(self._call(0, self.redis.execute_command, PREFIX_COMMAND, *keys))
            except redis.ResponseError as e:
                self._prefix_refused(e)
        return _leading(self.exists_many(keys))


class AsyncClient(_Settings):
    """The asyncio twin of Client (redis.asyncio); use from one event loop."""

    def __init__(self, url=DEFAULT_URL, ttl=None, max_connections=None, timeout=None,
                 fail_open=True, **redis_kwargs):
        redis_url = self._configure(url, ttl, timeout, fail_open)
        kwargs = dict(redis_kwargs)
        kwargs.setdefault("socket_connect_timeout", self.timeout)  # asyncio's unix has one
        self.redis = redis.asyncio.Redis(connection_pool=_make_pool(
            redis.asyncio, redis_url, max_connections, self.timeout, kwargs))

    async def _call(self, nothing, fn, *args, **kwargs):
        """await fn(*args, **kwargs), or `nothing` when the store is unreachable."""
        if not self.fail_open:
            return await fn(*args, **kwargs)
        if not self.breaker.closed():
            self.breaker.skipped()
            return nothing
        try:
            result = await fn(*args, **kwargs)
        except UNREACHABLE as e:
            self._failed(e)  # as Client._call: the failed connection is already dropped
            return nothing
        self.breaker.succeeded()
        return result

    async def close(self):
        await self.redis.close()
        await self.redis.connection_pool.disconnect()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def put(self, key, value, ttl=None):
        return await self._call(False, self.redis.set, key, value,
                                **_set_args(_put_ttl(ttl, self.ttl)))

    async def get(self, key):
        return await self._call(None, self.redis.get, key)

    async def exists(self, key):
        return bool(await self._call(0, self.redis.exists, key))

    async def delete(self, *keys):
        return await self._call(0, self.redis.delete, *keys)

    async def put_many(self, items, ttl=None):
        keys, replies = [], []
        for pipe, sent in _set_pipelines(self.redis, items, _put_ttl(ttl, self.ttl)):
            got = await self._call(None, pipe.execute, raise_on_error=False)
            if got is None:
                return False
            keys += sent
            replies += got
        _check_puts(keys, replies)
        return True

    async def get_many(self, keys):
        keys = list(keys)
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.get(k)
        return await self._call([None] * len(keys), pipe.execute)

    async def exists_many(self, keys):
        keys = list(keys)
        pipe = self.redis.pipeline(transaction=False)
        for k in keys:
            pipe.exists(k)
        return [bool(x) for x in await self._call([0] * len(keys), pipe.execute)]

    async def prefix_count(self, keys):
        keys = list(keys)
        if not keys:
            return 0
        if self._has_prefix:
            try:
                return int(await self._call(0, self.redis.execute_command, PREFIX_COMMAND,
                                            *keys))
            except redis.ResponseError as e:
                self._prefix_refused(e)
        return _leading(await self.exists_many(keys))

    async def scan_keys(self, match="*", count=1000):
        """Every key matching `match` (SCAN; keys written meanwhile may or may not appear)."""
        async def scan():
            return [k async for k in self.redis.scan_iter(match=match, count=count)]
        return await self._call([], scan)
