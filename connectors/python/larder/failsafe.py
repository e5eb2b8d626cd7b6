"""What keeps a dead or stalled store from stalling the caller.

An inference server must not wait on its KV-cache tier: a store that is down, restarting or not
reading its socket must cost a miss, quickly, never a hang or an exception in the serving loop.
`Client` and `AsyncClient` (client.py) therefore

* bound every wait on the socket by `timeout` (connect, send, receive: redis-py's
  `socket_connect_timeout` and `socket_timeout`; its asyncio client bounds a whole write or
  reply, so batches of puts go as pipelines of at most 32 MiB: client.py), so a call against
  a stalled server returns within about `timeout`;
* turn a connection failure or a timeout into the call's "nothing" answer (None, False, 0, or
  False for a put that was not stored), counted in `failures`, with `last_error` kept;
* after a failure, answer "nothing" at once, without touching the network, for a back-off that
  starts at `MIN_BACKOFF` and doubles per consecutive failure up to `MAX_BACKOFF`; the first call
  after it tries the server again (a connection the server closed meanwhile is replaced when
  it is taken from the pool). `MAX_BACKOFF` is under half a second so that calls succeed
  again within a second of the server coming back;
* log one warning (logger `larder.client`) when calls start answering "nothing", with the
  error, and one when the store answers again: a misconfiguration (a wrong port, a missing
  password) shows in the log, not only as a zero hit rate.

A caller that waited `timeout` for a free connection of a client's pool (`max_connections`)
answers "nothing" too, counted in `failures`, but without the back-off: the store itself
answered the others. Errors the server answers (a refused SET, a wrong-type reply) are not
failures of the store being reachable: they still raise `redis.ResponseError`.
`fail_open=False` turns all of this off (every error raises, as plain redis-py does).
"""
import logging
import time

import redis

logger = logging.getLogger("larder.client")

MIN_BACKOFF = 0.05
MAX_BACKOFF = 0.4
DEFAULT_TIMEOUT = 1.0

# What "the store is unreachable or too slow" looks like from redis-py.
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, OSError)

# What redis-py's BlockingConnectionPool raises when no pooled connection came free within its
# timeout: the caller's own pool is busy, not the store down.
_POOL_EXHAUSTED = "No connection available."


def pool_exhausted(err):
    """Whether `err` says the client's pool had no free connection in time."""
    return isinstance(err, redis.ConnectionError) and str(err) == _POOL_EXHAUSTED


class Breaker:
    """Consecutive-failure back-off shared by a client's calls (thread-safe enough: races only
    shift when the next try happens)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.failures = 0        # calls answered "nothing" because the store was unreachable
        self.last_error = None   # the last such error, for logs and tests
        self._streak = 0
        self._retry_at = 0.0

    def closed(self):
        """True when calls may try the server."""
        return self.clock() >= self._retry_at

    def skipped(self):
        """Counts a call answered without trying (back-off running)."""
        self.failures += 1

    def failed(self, err):
        self.failures += 1
        self.last_error = err
        self._streak += 1
        backoff = min(MAX_BACKOFF, MIN_BACKOFF * (2 ** (self._streak - 1)))
        self._retry_at = self.clock() + backoff
        if self._streak == 1:
            logger.warning("larder: store unreachable (%s: %s); calls answer a miss until it "
                           "answers again", type(err).__name__, err)

    def succeeded(self):
        if self._streak:
            logger.warning("larder: store answers again after %d failed tries", self._streak)
        self._streak = 0
        self._retry_at = 0.0
