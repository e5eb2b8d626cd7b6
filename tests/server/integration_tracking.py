"""Client-side caching (CLIENT TRACKING) beside Redis 7: each scenario drives two or three
connections, one command at a time, on both servers, and every byte each connection receives
(replies, and the invalidation pushes or Pub/Sub messages between them) must be the same.
Default mode, NOLOOP, OPTIN/OPTOUT with CLIENT CACHING, BCAST with prefixes, REDIRECT to a RESP3
client and to a subscribed RESP2 one, a redirect target that disconnects, FLUSHALL, RESET, and
every refused option; then expiry, INFO's counters and CLIENT LIST's flags."""
import re
import threading
import time
import unittest

from server_harness import BesideRedisCase, ServerProcess, encode, wait_for

# Imported by integration_test.
__all__ = ["TrackingAsRedisTest", "TrackingUnderLoadTest", "TrackingEvictionTest"]

PAD = b"v" * (64 << 10)
INVALIDATE = b">2\r\n$10\r\ninvalidate\r\n"


def invalidated_keys(frame):
    """The keys a RESP3 invalidation push names (none for a null: everything)."""
    keys = re.findall(rb"\$\d+\r\n([^\r]*)\r\n", frame[len(INVALIDATE):])
    return [k.decode() for k in keys]

# A scenario: the protocol of each connection, then steps (connection, command). "{id:x}" in a
# command is connection x's client id on the server it runs on.
SCENARIOS = {
    "default mode": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on"]), ("a", ["GET", "k"]), ("b", ["SET", "k", "1"]),
        ("b", ["SET", "k", "2"]),  # forgotten after the first change: nothing more
        ("a", ["MGET", "k", "j", "i"]), ("b", ["MSET", "j", "1", "i", "2"]),
        ("a", ["SET", "k", "3"]),  # a change of its own, after its reply
        ("a", ["EXISTS", "k"]), ("b", ["INCR", "k"]),
        ("a", ["STRLEN", "k"]), ("b", ["APPEND", "k", "x"]),
        ("a", ["GETRANGE", "k", "0", "1"]), ("b", ["SETRANGE", "k", "0", "z"]),
        ("a", ["TTL", "k"]), ("b", ["EXPIRE", "k", "100"]),
        ("a", ["TYPE", "k"]), ("b", ["PERSIST", "k"]),
        ("a", ["GETBIT", "k", "1"]), ("b", ["SETBIT", "k", "1", "1"]),
        ("a", ["BITCOUNT", "k"]), ("a", ["GET", "dst"]), ("b", ["RENAME", "k", "dst"]),
        ("a", ["LCS", "dst", "j"]), ("b", ["COPY", "dst", "j", "REPLACE"]),
        ("a", ["GET", "dst"]), ("b", ["GETDEL", "dst"]),
        ("a", ["GET", "k"]), ("a", ["SET", "k", "v"]), ("b", ["GETEX", "k", "PX", "100000"]),
        ("a", ["GET", "k"]), ("b", ["DEL", "k", "nokey"]),
        ("a", ["GET", "w"]), ("b", ["SET", "w", "1", "NX"]), ("b", ["SET", "w", "1", "NX"]),
        ("a", ["GET", "w"]), ("b", ["BITOP", "NOT", "w", "i"]),
    ]),
    "writes that change nothing": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on"]), ("a", ["MGET", "k", "m"]),
        ("b", ["SET", "k", "1", "XX"]), ("b", ["DEL", "k"]), ("b", ["EXPIRE", "k", "5"]),
        ("b", ["INCR", "m"]), ("a", ["GET", "m"]), ("b", ["INCR", "m", "x"]),
    ]),
    "NOLOOP": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "NOLOOP"]), ("a", ["MGET", "k", "j"]),
        ("a", ["SET", "k", "1"]), ("b", ["SET", "k", "2"]), ("b", ["SET", "j", "2"]),
        ("a", ["CLIENT", "TRACKINGINFO"]),
    ]),
    "OPTIN": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "OPTIN"]), ("a", ["GET", "k"]),
        ("a", ["CLIENT", "CACHING", "yes"]), ("a", ["CLIENT", "TRACKINGINFO"]),
        ("a", ["GET", "j"]), ("a", ["GET", "i"]), ("b", ["MSET", "k", "1", "j", "1", "i", "1"]),
        ("a", ["CLIENT", "CACHING", "yes"]), ("a", ["CLIENT", "ID"]), ("a", ["GET", "k"]),
        ("b", ["SET", "k", "2"]),
        ("a", ["CLIENT", "CACHING", "yes"]), ("a", ["MULTI"]), ("a", ["GET", "i"]),
        ("a", ["GET", "j"]), ("a", ["EXEC"]), ("b", ["MSET", "i", "2", "j", "2"]),
        ("a", ["GET", "i"]), ("b", ["SET", "i", "3"]),  # EXEC ended CACHING's effect
        ("a", ["CLIENT", "CACHING", "yes"]), ("a", ["NOSUCH"]), ("a", ["GET", "k"]),
        ("b", ["SET", "k", "3"]),
        ("a", ["CLIENT", "CACHING", "no"]), ("a", ["CLIENT", "CACHING", "maybe"]),
        ("a", ["CLIENT", "TRACKING", "on", "OPTOUT"]),
    ]),
    "OPTOUT": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "OPTOUT"]), ("a", ["CLIENT", "CACHING", "no"]),
        ("a", ["CLIENT", "TRACKINGINFO"]), ("a", ["GET", "k"]), ("a", ["GET", "j"]),
        ("b", ["MSET", "k", "1", "j", "1"]), ("a", ["CLIENT", "CACHING", "yes"]),
        ("a", ["CLIENT", "TRACKING", "on", "OPTIN"]), ("a", ["CLIENT", "TRACKING", "off"]),
        ("a", ["CLIENT", "CACHING", "no"]),
    ]),
    "BCAST": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "s"]),
        ("a", ["CLIENT", "TRACKINGINFO"]),
        ("b", ["MSET", "user:2", "1", "user:1", "1", "other", "1", "s", "1", "sx", "2"]),
        ("b", ["DEL", "user:1", "user:1", "zz"]), ("a", ["SET", "user:9", "1"]),
        ("b", ["MULTI"]), ("b", ["SET", "sb", "1"]), ("b", ["SET", "sa", "1"]),
        ("b", ["INCR", "user:3"]), ("b", ["EXEC"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x"]),
        ("a", ["CLIENT", "TRACKINGINFO"]), ("b", ["SET", "xyz", "1"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "use"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:vip"]),
        ("a", ["CLIENT", "TRACKING", "on"]),
        ("a", ["CLIENT", "TRACKING", "off"]), ("b", ["SET", "user:1", "2"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST"]), ("b", ["SET", "anything", "2"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"]), ("a", ["SET", "mine", "1"]),
        ("b", ["SET", "theirs", "1"]),
    ]),
    "REDIRECT to RESP3": ({"a": 2, "b": 3, "c": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]),
        ("a", ["CLIENT", "GETREDIR"]), ("a", ["GET", "k"]), ("c", ["SET", "k", "1"]),
        ("a", ["GET", "k"]), ("a", ["SET", "k", "2"]), ("a", ["CLIENT", "TRACKINGINFO"]),
    ]),
    "REDIRECT to a subscribed RESP2 client": ({"a": 2, "b": 2, "c": 3}, [
        ("b", ["SUBSCRIBE", "__redis__:invalidate"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]), ("a", ["MGET", "k", "j"]),
        ("c", ["MSET", "k", "1", "j", "2"]), ("a", ["GET", "k"]), ("c", ["FLUSHALL"]),
    ]),
    "REDIRECT to an unsubscribed RESP2 client": ({"a": 3, "b": 2, "c": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]), ("a", ["GET", "k"]),
        ("c", ["SET", "k", "1"]), ("b", ["GET", "k"]),
    ]),
    "a redirect target that leaves": ({"a": 3, "b": 3, "c": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]), ("a", ["GET", "k"]),
        ("b", ["QUIT"]), ("c", ["SET", "k", "1"]), ("a", ["CLIENT", "TRACKINGINFO"]),
        ("a", ["GET", "k"]), ("c", ["SET", "k", "2"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]),
    ]),
    "RESP2 without a redirect is sent nothing": ({"a": 2, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on"]), ("a", ["GET", "k"]), ("b", ["SET", "k", "1"]),
        ("a", ["CLIENT", "TRACKINGINFO"]), ("a", ["FLUSHALL"]),
    ]),
    "FLUSHALL": ({"a": 3, "b": 3, "c": 3}, [
        ("a", ["CLIENT", "TRACKING", "on"]), ("b", ["CLIENT", "TRACKING", "on", "BCAST"]),
        ("c", ["FLUSHALL"]), ("a", ["FLUSHDB"]), ("b", ["FLUSHALL", "ASYNC"]),
        ("a", ["CLIENT", "TRACKING", "on", "NOLOOP"]), ("a", ["FLUSHALL"]),
    ]),
    "RESET and OFF": ({"a": 3, "b": 3}, [
        ("a", ["CLIENT", "TRACKING", "on", "OPTIN", "NOLOOP"]),
        ("a", ["CLIENT", "CACHING", "yes"]), ("a", ["GET", "k"]), ("a", ["RESET"]),
        ("a", ["CLIENT", "TRACKINGINFO"]), ("a", ["CLIENT", "GETREDIR"]),
        ("b", ["SET", "k", "1"]),  # RESET stopped the tracking, and a is RESP2 again
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]), ("a", ["GET", "k"]),
        ("a", ["CLIENT", "TRACKING", "off"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:b}"]),
        ("a", ["SET", "k", "2"]),  # the key read before OFF is still remembered
        ("a", ["SET", "k", "3"]),
    ]),
    "refused options": ({"a": 3}, [
        ("a", ["CLIENT", "TRACKING"]), ("a", ["CLIENT", "TRACKING", "maybe"]),
        ("a", ["CLIENT", "TRACKING", "on", "PREFIX", "a"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "OPTOUT"]),
        ("a", ["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "999999"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "0"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "-1"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "x"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:a}", "REDIRECT", "{id:a}"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT"]),
        ("a", ["CLIENT", "TRACKING", "on", "PREFIX"]),
        ("a", ["CLIENT", "TRACKING", "on", "BOGUS"]),
        ("a", ["CLIENT", "TRACKING", "off", "REDIRECT", "999999"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"]),
        ("a", ["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "a"]),
        ("a", ["CLIENT", "TRACKINGINFO"]), ("a", ["CLIENT", "CACHING", "yes"]),
        ("a", ["CLIENT", "CACHING"]), ("a", ["CLIENT", "GETREDIR", "x"]),
        ("a", ["CLIENT", "TRACKINGINFO", "x"]),
        ("a", ["CLIENT", "TRACKING", "on", "REDIRECT", "{id:a}"]),
        ("a", ["CLIENT", "GETREDIR"]), ("a", ["CLIENT", "TRACKING", "on", "OPTIN"]),
        ("a", ["CLIENT", "TRACKINGINFO"]),
    ]),
}


def is_reply(frame):
    """Whether a frame answers a command: not a RESP3 push, nor a RESP2 Pub/Sub message."""
    return not frame.startswith(b">") and not frame.startswith(b"*3\r\n$7\r\nmessage\r\n")


class TrackingAsRedisTest(BesideRedisCase):
    def run_scenario(self, server, protocols, steps):
        """Everything each connection received, step by step, client ids written `{id:x}`."""
        admin = server.raw()
        admin.call("FLUSHALL")
        admin.close()
        conns = {name: server.raw() for name in protocols}
        try:
            ids = {}
            for name, protocol in protocols.items():
                conns[name].call("HELLO", str(protocol))
                ids[name] = int(conns[name].call("CLIENT", "ID")[1:-2])
            transcript = []
            in_multi = set()  # a PING would be queued there: not synced
            for name, command in steps:
                transcript.append(b"%s> %s" % (name.encode(), " ".join(command).encode()))
                command = [re.sub(r"\{id:(\w)\}", lambda m: str(ids[m.group(1)]), a)
                           for a in command]
                verb = command[0].upper()
                if verb == "MULTI":
                    in_multi.add(name)
                elif verb in ("EXEC", "DISCARD"):
                    in_multi.discard(name)
                if verb == "SUBSCRIBE" and protocols[name] == 2:
                    conns[name].subscribed = True
                transcript += self.exchange(conns[name], command, name not in in_multi)
                for other in conns:
                    if other == name or conns[other] is None or other in in_multi:
                        continue
                    transcript += [b"%s: %s" % (other.encode(), f)
                                   for f in self.sync(conns[other])]
                if command[0] == "QUIT":
                    conns[name].close()
                    conns[name] = None
                    self.wait_gone(server, ids[name])
            text = b"\n".join(transcript)
            for name, id_ in ids.items():  # where a reply or push names a client
                where = rb"(GETREDIR\n:|CLIENT ID\n:|redirect\r\n:|redir-broken\r\n:)"
                text = re.sub(where + rb"%d\r\n" % id_,
                              rb"\1{id:%s}\r\n" % name.encode(), text)
            return text
        finally:
            for c in conns.values():
                if c is not None:
                    c.close()

    @staticmethod
    def wait_gone(server, client_id):
        """Returns once the server lists no client `client_id` (a closed connection)."""
        admin = server.raw()
        try:
            wait_for(lambda: b"id=%d " % client_id not in admin.call("CLIENT", "LIST", "ID",
                                                                      client_id),
                     timeout=10, interval=0.01)
        finally:
            admin.close()

    @staticmethod
    def tracking_clients(conn):
        info = conn.call("INFO", "clients").decode()
        return int(re.search(r"tracking_clients:(\d+)", info).group(1))

    def exchange(self, conn, command, sync):
        """The frames one command brings back: pushes before its reply, the reply, and (with
        `sync`) what follows it up to a PING's answer."""
        conn.send(encode(*command))
        frames = []
        while True:
            frames.append(conn.reply())
            if is_reply(frames[-1]):
                break
        if sync and command[0] != "QUIT":
            frames += self.sync(conn)
        return frames

    @staticmethod
    def sync(conn):
        """Everything the connection received before the answer to a command sent now: CLIENT
        GETNAME (a CLIENT command keeps CLIENT CACHING's effect), or PING once a RESP2
        connection subscribed (the one it may send)."""
        subscribed = getattr(conn, "subscribed", False)
        conn.send(encode("PING") if subscribed else encode("CLIENT", "GETNAME"))
        frames = []
        while True:
            frame = conn.reply()
            if frame in (b"*2\r\n$4\r\npong\r\n$0\r\n\r\n", b"$-1\r\n", b"_\r\n"):
                return frames
            frames.append(frame)

    def test_scenarios_as_redis(self):
        for name, (protocols, steps) in SCENARIOS.items():
            with self.subTest(scenario=name):
                larder, redis = (self.run_scenario(s, protocols, steps)
                                 for s in (self.larder, self.redis))
                self.assertEqual(larder.decode(errors="replace").split("\n"),
                                 redis.decode(errors="replace").split("\n"))

    def test_invalidation_is_really_sent(self):
        # Pinned apart from the comparison: a server that sent nothing would fail it only
        # through Redis.
        got = self.run_scenario(self.larder, {"a": 3, "b": 3}, [
            ("a", ["CLIENT", "TRACKING", "on"]), ("a", ["GET", "k"]), ("b", ["SET", "k", "1"])])
        self.assertIn(b"a: >2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", got)

    def tracked_expiry(self, server):
        """The frames a tracking client receives about a key of its that expires."""
        a, b = server.raw(), server.raw()
        try:
            a.call("HELLO", "3")
            b.call("SET", "exp", "1", "PX", "100")
            a.call("CLIENT", "TRACKING", "on")
            a.call("GET", "exp")
            time.sleep(0.3)
            b.call("GET", "exp")  # expired by now: removed by this read, or already
            return self.sync(a)
        finally:
            a.close()
            b.close()

    def test_expiry_invalidates(self):
        self.assertEqual(self.tracked_expiry(self.larder), self.tracked_expiry(self.redis))
        self.assertEqual(self.tracked_expiry(self.larder),
                         [b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nexp\r\n"])

    def counters(self, server):
        """INFO's tracking counters and CLIENT LIST's flags after a fixed sequence."""
        a, b, c = server.raw(), server.raw(), server.raw()
        try:
            # The connections of earlier tests are gone.
            wait_for(lambda: self.tracking_clients(a) == 0, timeout=10, interval=0.01)
            a.call("FLUSHALL")
            for conn in (a, b):
                conn.call("HELLO", "3")
            a.call("CLIENT", "TRACKING", "on")
            a.call("MGET", "k1", "k2", "k3")
            b.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p", "PREFIX", "q")
            c.call("CLIENT", "TRACKING", "on")
            c.call("MGET", "k1", "k4")
            c.call("SET", "k2", "1")
            info = {}
            for section in ("clients", "stats"):
                text = c.call("INFO", section).decode()
                info.update(re.findall(r"^(tracking_\w+):(\d+)", text, re.M))
            lines = c.call("CLIENT", "LIST").decode().split("\n")
            flags = sorted(re.search(r" flags=(\w+) ", line).group(1)
                           for line in lines if "flags=" in line)
            return info, flags
        finally:
            for conn in (a, b, c):
                conn.close()

    def test_info_and_client_list_as_redis(self):
        larder = self.counters(self.larder)
        self.assertEqual(larder, self.counters(self.redis))
        self.assertEqual(larder[0], {"tracking_clients": "3", "tracking_total_keys": "3",
                                     "tracking_total_items": "4",
                                     "tracking_total_prefixes": "2"})
        self.assertEqual(larder[1], ["t", "t", "tB"])



class TrackingUnderLoadTest(unittest.TestCase):
    """Larder runs commands of different connections at once: a client's cache, kept by the
    invalidations it is sent, must never keep a value a write replaced once that write was
    acknowledged and the client heard from the server after it."""

    KEYS = ["load:%d" % i for i in range(8)]

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess(["--unixsocket", ""]).start()
        cls.addClassCleanup(cls.srv.cleanup)

    @staticmethod
    def apply(frame, cache):
        """Takes one frame a tracking reader received: an invalidation drops keys (a null, all
        of them); returns the frame if it is a reply."""
        if not frame.startswith(INVALIDATE):
            return frame
        if frame == INVALIDATE + b"_\r\n":
            cache.clear()
        for key in invalidated_keys(frame):
            cache.pop(key, None)
        return None

    def read_reply(self, conn, cache):
        while True:
            reply = self.apply(conn.reply(), cache)
            if reply is not None:
                return reply

    def write_epochs(self, epochs):
        """Sets every key to "<epoch>:<64 KiB>", epoch after epoch, beside the reads (SET
        runs beside them, INCR would wait: read-modify-write); self.done is the last epoch
        whose writes were all acknowledged."""
        w = self.srv.raw()
        try:
            for epoch in range(1, epochs + 1):
                w.send(b"".join(encode("SET", k, b"%d:" % epoch + PAD) for k in self.KEYS))
                for _ in self.KEYS:
                    w.reply()
                self.done = epoch
        finally:
            w.close()

    def read(self, reader, cache, missing, whole):
        """Reads the missing keys into the cache: one MGET (`whole`: its first key is read
        long before its last), or GETs pipelined (served by the pool and the io thread)."""
        if whole:
            reader.send(encode("MGET", *missing))
            reply = self.read_reply(reader, cache)
            values = re.findall(rb"\$\d+\r\n(\d+):", reply)
            self.assertEqual(len(values), len(missing), reply[:100])
            cache.update(zip(missing, map(int, values)))
            return
        reader.send(b"".join(encode("GET", k) for k in missing))
        for key in missing:
            cache[key] = int(self.read_reply(reader, cache).split(b"\r\n")[1].split(b":")[0])

    def test_a_cache_never_keeps_a_stale_value(self):
        admin = self.srv.raw()
        admin.call("MSET", *[a for k in self.KEYS for a in (k, b"0:" + PAD)])
        reader = self.srv.raw()
        reader.call("HELLO", "3")
        reader.call("CLIENT", "TRACKING", "on")
        cache, rounds = {}, 0
        self.done = 0
        writer = threading.Thread(target=self.write_epochs, args=(400,))
        writer.start()
        try:
            while writer.is_alive() or rounds == 0:
                missing = [k for k in self.KEYS if k not in cache]
                if missing:
                    self.read(reader, cache, missing, rounds % 2 == 1)
                rounds += 1
                acknowledged = self.done  # then everything the server sent before: a sync
                reader.send(encode("CLIENT", "GETNAME"))
                self.read_reply(reader, cache)
                stale = {k: v for k, v in cache.items() if v < acknowledged}
                self.assertEqual(stale, {}, "cached values older than epoch %d" % acknowledged)
            self.assertGreater(rounds, 10)
        finally:
            writer.join()
            reader.close()
            admin.close()


class TrackingEvictionTest(unittest.TestCase):
    """What leaves without a command still reaches the clients that read it: keys evicted to
    keep the disk budget (by the tracking client's own writes, NOLOOP notwithstanding), and
    keys forgotten past tracking-table-max-keys."""

    def test_evicted_keys_are_invalidated(self):
        value = b"e" * (256 << 10)
        with ServerProcess(["--unixsocket", ""],
                           limits=("--max-disk-bytes", "64mb", "--generation-bytes", "8mb",
                                   "--memtable-bytes", "16mb")).start() as srv:
            c = srv.raw()
            self.addCleanup(c.close)
            c.call("HELLO", "3")
            c.call("CLIENT", "TRACKING", "on", "NOLOOP")
            read = ["ev:%d" % i for i in range(40)]
            for k in read:
                c.call("SET", k, value)
            c.call("MGET", *read)  # tracked
            invalidated = set()
            for i in range(40, 600):  # the client's own writes evict what it read
                c.send(encode("SET", "ev:%d" % i, value))
                while (frame := c.reply()).startswith(INVALIDATE):
                    invalidated.update(invalidated_keys(frame))
                self.assertEqual(frame, b"+OK\r\n")
            c.send(encode("CLIENT", "GETNAME"))
            while (frame := c.reply()) != b"_\r\n":
                invalidated.update(invalidated_keys(frame))
            gone = {k for k in read if c.call("EXISTS", k) == b":0\r\n"}
            self.assertGreater(len(gone), 0, "nothing was evicted")
            self.assertEqual(invalidated, gone)

    def test_table_limit_forgets_keys_with_an_invalidation(self):
        with ServerProcess(["--unixsocket", ""]).start() as srv:
            c = srv.raw()
            self.addCleanup(c.close)
            c.call("CONFIG", "SET", "tracking-table-max-keys", "3")
            c.call("HELLO", "3")
            c.call("CLIENT", "TRACKING", "on")
            keys = ["lim:%d" % i for i in range(5)]
            self.assertEqual(c.call("MGET", *keys), b"*5\r\n" + b"_\r\n" * 5)
            c.send(encode("CLIENT", "GETNAME"))
            forgotten = []
            while (frame := c.reply()) != b"_\r\n":
                self.assertTrue(frame.startswith(INVALIDATE), frame)
                forgotten += invalidated_keys(frame)
            self.assertEqual(len(forgotten), 2)
            self.assertLessEqual(set(forgotten), set(keys))
            self.assertIn(b"tracking_total_keys:3\r\n", c.call("INFO", "stats"))


if __name__ == "__main__":
    unittest.main()
