"""Pub/Sub and keyspace notifications: larder-server beside Redis 7 where the behaviour is
Redis's (replies and message frames compared byte for byte, RESP2 and RESP3), with redis-py
and redis-cli as subscribers; Larder's own events (eviction, its generation class) and the
`pubsub` output limit on larder-server alone."""
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

from server_harness import RedisProcess, ServerProcess, encode, info_stat, wait_for

MiB = 1 << 20


def until_done(sub):
    """Every frame `sub` receives up to and including the message on channel "done"."""
    frames = []
    while True:
        frames.append(sub.reply())
        if b"$4\r\ndone\r\n" in frames[-1]:
            return frames


# Commands run while a subscriber listens to every keyspace and keyevent channel ("KEA"):
# Redis and Larder must send the same messages, in the same order.
# DUMP's payload of "hello", the same from Redis 7 and Larder.
HELLO_DUMP = b"\x00\x05hello\n\x00cr\xdfve4 \n"
NOTIFY_SCRIPT = [
    ["SET", "n:a", "1"], ["SET", "n:a", "2", "EX", "100"], ["EXPIRE", "n:a", "200"],
    ["PERSIST", "n:a"], ["PERSIST", "n:a"], ["INCR", "n:a"], ["INCRBY", "n:a", "5"],
    ["DECR", "n:a"], ["DECRBY", "n:a", "2"], ["APPEND", "n:a", "x"], ["SETRANGE", "n:a", "0", "y"],
    ["SETRANGE", "n:a", "0", ""], ["GETSET", "n:a", "z"], ["SETNX", "n:a", "q"],
    ["SETNX", "n:b", "q"], ["MSET", "n:c", "1", "n:d", "2"], ["MSETNX", "n:e", "1", "n:f", "2"],
    ["MSETNX", "n:e", "1", "n:z", "2"], ["SETEX", "n:g", "100", "v"],
    ["PSETEX", "n:h", "100000", "v"], ["GETEX", "n:g", "EX", "50"], ["GETEX", "n:g", "PERSIST"],
    ["GETEX", "n:g", "PERSIST"], ["GETEX", "n:g"], ["GETDEL", "n:h"], ["GETDEL", "n:h"],
    ["RENAME", "n:b", "n:bb"], ["RENAMENX", "n:bb", "n:a"], ["DEL", "n:c", "n:missing"],
    ["UNLINK", "n:d"], ["EXPIRE", "n:e", "-1"], ["PEXPIREAT", "n:f", "1"],
    ["EXPIRE", "n:a", "100", "NX"], ["EXPIRE", "n:a", "50", "GT"], ["SET", "n:i", "v", "KEEPTTL"],
    ["SET", "n:i", "w", "GET"], ["SET", "n:i", "v", "NX"], ["SET", "n:i", "v", "XX", "PX", "9000"],
    ["GETEX", "n:i", "EXAT", "1"], ["GET", "n:nothing"], ["MGET", "n:a", "n:nothing"],
    ["INCRBYFLOAT", "n:j", "1.5"], ["INCRBYFLOAT", "n:j", "x"], ["COPY", "n:j", "n:k"],
    ["COPY", "n:j", "n:k"], ["COPY", "n:j", "n:k", "REPLACE"], ["RESTORE", "n:l", "0", HELLO_DUMP],
    ["RESTORE", "n:l", "0", HELLO_DUMP], ["RESTORE", "n:l", "100000", HELLO_DUMP, "REPLACE"],
    ["RESTORE", "n:l", "1", HELLO_DUMP, "ABSTTL", "REPLACE"], ["LCS", "n:j", "n:nothing"],
]


class PubSubParityTest(unittest.TestCase):
    """The same commands on larder-server and redis-server 7; replies compared raw."""

    @classmethod
    def setUpClass(cls):
        cls.larder = ServerProcess(["--unixsocket", ""]).start()
        cls.redis = RedisProcess().start()
        cls.servers = [cls.larder, cls.redis]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.cleanup()

    def conns(self, n=1):
        """n raw connections per server, closed after the test: [[larder's], [redis's]]."""
        out = [[s.raw() for _ in range(n)] for s in self.servers]
        for pair in out:
            for c in pair:
                self.addCleanup(c.close)
        return out

    def same(self, conns, *args):
        """Sends args on each server's connection; asserts equal replies; returns Larder's."""
        replies = [c.call(*args) for c in conns]
        self.assertEqual(replies[0], replies[1], " ".join(map(str, args)))
        return replies[0]

    def test_subscribe_publish_and_the_subscribed_context_resp2(self):
        (sub_l, pub_l), (sub_r, pub_r) = self.conns(2)
        subs, pubs = [sub_l, sub_r], [pub_l, pub_r]
        for c in subs:
            c.send(b"*3\r\n$9\r\nSUBSCRIBE\r\n$2\r\nc1\r\n$2\r\nc2\r\n")
        self.assertEqual([c.reply() + c.reply() for c in subs][0],
                         b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n"
                         b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:2\r\n")
        self.same(subs, "PSUBSCRIBE", "c*")
        self.same(subs, "SUBSCRIBE", "c1")  # again: confirmed, count unchanged
        self.assertEqual(self.same(pubs, "PUBLISH", "c1", "hello"), b":2\r\n")
        self.same(pubs, "PUBLISH", "nobody", "x")
        self.assertEqual([c.reply() for c in subs][0],
                         b"*3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$5\r\nhello\r\n")
        self.assertEqual([c.reply() for c in subs][0],
                         b"*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nc1\r\n$5\r\nhello\r\n")
        for args in (["PING"], ["PING", "x"], ["GET", "k"], ["CLIENT", "ID"],
                     ["PUBLISH", "c1", "x"],
                     ["PSUBSCRIBE"], ["UNSUBSCRIBE", "c2"], ["PUNSUBSCRIBE", "nope"],
                     ["PUNSUBSCRIBE"], ["UNSUBSCRIBE"], ["UNSUBSCRIBE"], ["GET", "k"]):
            self.same(subs, *args)
        self.same(pubs, "PUBSUB", "NUMPAT")

    def test_pubsub_introspection_as_redis(self):
        (sub_l, pub_l), (sub_r, pub_r) = self.conns(2)
        subs, pubs = [sub_l, sub_r], [pub_l, pub_r]
        self.same(subs, "SUBSCRIBE", "intro")
        self.same(subs, "PSUBSCRIBE", "in*")
        for args in (["PUBSUB", "CHANNELS", "intr?"], ["PUBSUB", "CHANNELS", "zz*"],
                     ["PUBSUB", "NUMSUB", "intro", "none"], ["PUBSUB", "NUMSUB"],
                     ["PUBSUB", "NUMPAT"], ["PUBSUB", "NUMPAT", "x"], ["PUBSUB", "CHANNELS", "a", "b"],
                     ["PUBSUB", "FOO"], ["PUBSUB"], ["PUBLISH", "intro"], ["SUBSCRIBE"]):
            self.same(pubs, *args)
        for c in pubs:
            line = c.call("CLIENT", "LIST").decode()
            sub_line = [x for x in line.split("\n") if "cmd=psubscribe" in x]
            self.assertEqual(len(sub_line), 1, line)
            self.assertIn(" flags=P ", sub_line[0])
            self.assertIn(" sub=1 psub=1 ", sub_line[0])
        self.same(subs, "RESET")  # leaves every channel
        self.same(pubs, "PUBSUB", "NUMSUB", "intro")
        self.same(pubs, "PUBSUB", "NUMPAT")

    def test_resp3_subscriptions_are_pushes_and_any_command_runs(self):
        (sub_l, pub_l), (sub_r, pub_r) = self.conns(2)
        subs, pubs = [sub_l, sub_r], [pub_l, pub_r]
        for c in subs:
            c.call("HELLO", "3")
        self.assertEqual(self.same(subs, "SUBSCRIBE", "r3"),
                         b">3\r\n$9\r\nsubscribe\r\n$2\r\nr3\r\n:1\r\n")
        self.same(subs, "SET", "r3:k", "v")
        self.same(subs, "GET", "r3:k")
        self.same(subs, "PING")
        self.same(pubs, "PUBLISH", "r3", "m")
        self.assertEqual([c.reply() for c in subs][0], b">3\r\n$7\r\nmessage\r\n$2\r\nr3\r\n$1\r\nm\r\n")
        self.same(subs, "UNSUBSCRIBE")
        self.same(subs, "UNSUBSCRIBE")

    def test_subscribe_inside_multi_as_redis(self):
        (c_l,), (c_r,) = self.conns(1)
        conns = [c_l, c_r]
        for args in (["MULTI"], ["SUBSCRIBE", "m1"], ["EXEC"], ["PING"], ["RESET"]):
            self.same(conns, *args)

    def test_keyspace_notifications_match_redis(self):
        (sub_l, cmd_l), (sub_r, cmd_r) = self.conns(2)
        subs, cmds = [sub_l, sub_r], [cmd_l, cmd_r]
        self.same(cmds, "CONFIG", "SET", "notify-keyspace-events", "KEA")
        self.same(cmds, "CONFIG", "GET", "notify-keyspace-events")
        self.same(subs, "PSUBSCRIBE", "__key*__:*")
        self.same(subs, "SUBSCRIBE", "done")
        for args in NOTIFY_SCRIPT:
            self.same(cmds, *args)
        self.same(cmds, "CONFIG", "SET", "notify-keyspace-events", "Em")
        self.same(cmds, "GET", "n:nothing")
        self.same(cmds, "MGET", "n:a", "n:nothing")
        self.same(cmds, "PUBLISH", "done", "x")
        larder, redis = (until_done(s) for s in subs)
        self.assertGreater(len(redis), 60)
        self.assertEqual(larder, redis)
        self.same(cmds, "CONFIG", "SET", "notify-keyspace-events", "")

    def test_an_expired_key_is_announced_as_redis(self):
        (sub_l, cmd_l), (sub_r, cmd_r) = self.conns(2)
        subs, cmds = [sub_l, sub_r], [cmd_l, cmd_r]
        self.same(cmds, "CONFIG", "SET", "notify-keyspace-events", "Ex")
        self.same(subs, "SUBSCRIBE", "__keyevent@0__:expired")
        self.same(cmds, "SET", "x:short", "v", "PX", "30")
        time.sleep(0.2)
        self.same(cmds, "GET", "x:short")  # the read finds it expired, if nothing did before
        self.assertEqual([s.reply() for s in subs][0],
                         b"*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n"
                         b"$7\r\nx:short\r\n")
        # Set with an expiry already past (EXAT/PXAT): Redis removes it at its next expiry cycle
        # or read, with `expired`; Larder removes it at once, announcing it as well.
        self.same(cmds, "SET", "x:past", "v", "EXAT", "1")
        time.sleep(0.2)
        self.same(cmds, "GET", "x:past")
        self.assertEqual([s.reply() for s in subs][0],
                         b"*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:expired\r\n"
                         b"$6\r\nx:past\r\n")
        self.same(cmds, "CONFIG", "SET", "notify-keyspace-events", "")

    def test_notify_keyspace_events_values_as_redis(self):
        (c_l,), (c_r,) = self.conns(1)
        conns = [c_l, c_r]
        for flags in ("KEA", "KEAn", "Kx$g", "En", "Em", "g$lshzxetd", "mKg", ""):
            self.same(conns, "CONFIG", "SET", "notify-keyspace-events", flags)
            self.same(conns, "CONFIG", "GET", "notify-keyspace-events")
        replies = [c.call("CONFIG", "SET", "notify-keyspace-events", "KEz9") for c in conns]
        self.assertTrue(all(r.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                                         b"'notify-keyspace-events') - Invalid event class "
                                         b"character. Use 'Ag$lshzxeKEtmdn") for r in replies),
                        replies)
        self.same(conns, "CONFIG", "GET", "notify-keyspace-events")


class PubSubClientsTest(unittest.TestCase):
    """redis-py and redis-cli as subscribers of larder-server."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess(["--unixsocket", ""]).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def test_no_message_follows_the_last_unsubscribe(self):
        # Messages published while a client is subscribed, then UNSUBSCRIBE: whatever the
        # confirmation is followed by is a reply, never a message (the client is back in normal
        # RESP2 mode and reads the next reply as its command's). Redis beside it, as reference.
        redis_srv = RedisProcess().start()
        self.addCleanup(redis_srv.cleanup)
        for srv in (self.srv, redis_srv):
            with self.subTest(server=type(srv).__name__):
                self.assertEqual(self.wrong_replies_after_unsubscribe(srv, 60), 0)

    def wrong_replies_after_unsubscribe(self, srv, rounds):
        srv.client().set("unsub:k", "value")
        stop = threading.Event()

        def publish():
            conn = srv.raw()
            while not stop.is_set():
                conn.send(encode("PUBLISH", "unsub:", "m") * 50)
                for _ in range(50):
                    conn.reply()
            conn.close()

        publishers = [threading.Thread(target=publish) for _ in range(2)]
        for t in publishers:
            t.start()
        wrong = 0
        try:
            for _ in range(rounds):
                conn = srv.raw()
                conn.call("SUBSCRIBE", "unsub:")
                time.sleep(0.002)
                conn.send(encode("UNSUBSCRIBE", "unsub:"))
                while not conn.reply().startswith(b"*3\r\n$11\r\nunsubscribe"):
                    pass  # messages before the confirmation are the subscribed mode's
                wrong += conn.call("GET", "unsub:k") != b"$5\r\nvalue\r\n"
                conn.close()
        finally:
            stop.set()
            for t in publishers:
                t.join()
        return wrong

    def test_resp3_gets_every_message_its_publish_counted(self):
        # RESP3 reads pushes apart from replies: a message PUBLISH counted for the subscriber is
        # delivered, even when it comes after the UNSUBSCRIBE confirmation. Redis beside it.
        redis_srv = RedisProcess().start()
        self.addCleanup(redis_srv.cleanup)
        for srv in (self.srv, redis_srv):
            with self.subTest(server=type(srv).__name__):
                for rnd in range(30):
                    counted, delivered = self.messages_around_unsubscribe(srv, f"r3:{rnd}")
                    self.assertEqual(delivered, counted, f"round {rnd}")

    def messages_around_unsubscribe(self, srv, channel):
        stop = threading.Event()
        counted = [0]

        def publish():
            conn = srv.raw()
            while not stop.is_set():
                conn.send(encode("PUBLISH", channel, "m") * 20)
                counted[0] += sum(conn.reply() == b":1\r\n" for _ in range(20))
            conn.close()

        conn = srv.raw()
        conn.call("HELLO", "3")
        conn.call("SUBSCRIBE", channel)
        publisher = threading.Thread(target=publish)
        publisher.start()
        delivered = 0
        try:
            time.sleep(0.005)
            conn.send(encode("UNSUBSCRIBE", channel))
            while True:
                frame = conn.reply()
                if frame.startswith(b">3\r\n$11\r\nunsubscribe"):
                    break
                delivered += frame.startswith(b">3\r\n$7\r\nmessage")
        finally:
            stop.set()
            publisher.join()
        # Every counted message was queued before the confirmation: it comes before PONG.
        conn.send(encode("PING"))
        while (frame := conn.reply()) != b"+PONG\r\n":
            delivered += frame.startswith(b">3\r\n$7\r\nmessage")
        conn.close()
        return counted[0], delivered

    def test_events_of_one_key_come_in_the_order_its_writes_were_applied(self):
        # SET and DEL of one key race on two connections; the last event a subscriber sees for
        # the key must tell whether the key exists (docs/routing.md: apply events in order).
        r = self.srv.client()
        self.addCleanup(r.close)
        r.config_set("notify-keyspace-events", "E$g")
        self.addCleanup(r.config_set, "notify-keyspace-events", "")
        sub = self.srv.client().pubsub()
        self.addCleanup(sub.close)
        sub.psubscribe("__keyevent@0__:*")
        self.assertIsNotNone(sub.get_message(timeout=5))
        wrong = []
        for rnd in range(20):
            key = f"race:{rnd}"
            writers = self.racing_writers(key)
            for t in writers:
                t.start()
            for t in writers:
                t.join()
            r.publish("__keyevent@0__:marker", key)
            last = None
            while True:
                m = sub.get_message(timeout=5)
                self.assertIsNotNone(m, "the marker never came")
                if m["type"] != "pmessage" or m["data"].decode() != key:
                    continue
                event = m["channel"].decode().rsplit(":", 1)[1]
                if event == "marker":
                    break
                last = event
            if r.exists(key) != (last == "set"):
                wrong.append((key, last))
        self.assertEqual(wrong, [])

    def racing_writers(self, key):
        setter, deleter = self.srv.client(), self.srv.client()
        self.addCleanup(setter.close)
        self.addCleanup(deleter.close)
        return [threading.Thread(target=lambda: [setter.set(key, "v") for _ in range(200)]),
                threading.Thread(target=lambda: [deleter.delete(key) for _ in range(200)])]

    def test_redis_py_pubsub(self):
        r = self.srv.client()
        self.addCleanup(r.close)
        p = r.pubsub()
        self.addCleanup(p.close)
        p.subscribe("py:chan")
        p.psubscribe("py:*")
        got = [p.get_message(timeout=5) for _ in range(2)]
        self.assertEqual([m["type"] for m in got], ["subscribe", "psubscribe"])
        self.assertEqual(r.publish("py:chan", b"payload"), 2)
        self.assertEqual(r.pubsub_numsub("py:chan"), [(b"py:chan", 1)])
        self.assertEqual(r.pubsub_numpat(), 1)
        self.assertEqual(r.pubsub_channels(), [b"py:chan"])
        msgs = [p.get_message(timeout=5) for _ in range(2)]
        self.assertEqual({(m["type"], m["data"]) for m in msgs},
                         {("message", b"payload"), ("pmessage", b"payload")})
        p.unsubscribe()
        p.punsubscribe()
        self.assertEqual(p.get_message(timeout=5)["type"], "unsubscribe")
        self.assertEqual(p.get_message(timeout=5)["type"], "punsubscribe")
        self.assertEqual(r.publish("py:chan", b"x"), 0)

    def redis_cli_subscriber(self, *extra):
        cli = subprocess.Popen(["redis-cli", "-p", str(self.srv.port), *extra, "SUBSCRIBE",
                                "cli:chan"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(cli.communicate)
        self.addCleanup(cli.kill)
        r = self.srv.client()
        self.addCleanup(r.close)
        self.assertTrue(wait_for(lambda: r.pubsub_numsub("cli:chan")[0][1] == 1, timeout=10))
        self.assertEqual(r.publish("cli:chan", "from-larder"), 1)
        lines = []
        while "from-larder" not in lines:
            line = cli.stdout.readline()
            if not line:
                self.fail("redis-cli exited: %r" % cli.stderr.read())
            lines.append(line.decode().strip())
        return lines

    def test_redis_cli_subscribe_resp2(self):
        self.assertEqual(self.redis_cli_subscriber(),
                         ["subscribe", "cli:chan", "1", "message", "cli:chan", "from-larder"])

    def test_redis_cli_subscribe_resp3(self):
        self.assertEqual(self.redis_cli_subscriber("-3"),
                         ["subscribe", "cli:chan", "1", "message", "cli:chan", "from-larder"])


class KeyspaceEventsUnderLoadTest(unittest.TestCase):
    """A subscriber hears set, del, expired and evicted (and Larder's generation summaries)
    while 1,000 SETs fill a small budget and evict: every event, none invented."""

    def test_events_while_1000_sets_evict(self):
        value = os.urandom(256 * 1024)
        with ServerProcess(["--unixsocket", "", "--notify-keyspace-events", "E$gxeG",
                            "--maintenance-interval-ms", "100"],
                           limits=("--max-disk-bytes", "64mb", "--generation-bytes", "8mb",
                                   "--memtable-bytes", "16mb")).start() as srv:
            sub = srv.raw()
            self.addCleanup(sub.close)
            channels = ["set", "del", "expired", "evicted", "evicted-generation"]
            sub.call("SUBSCRIBE", *["__keyevent@0__:" + c for c in channels[1:]], "done")
            for _ in range(len(channels) - 1):  # the other confirmations
                sub.reply()
            sub.call("PSUBSCRIBE", "__keyevent@0__:se?")
            r = srv.client()
            self.addCleanup(r.close)
            pipe = r.pipeline(transaction=False)
            for i in range(1000):
                pipe.set("load:%d" % i, value, px=300 if i % 100 == 7 else None)
                if i % 100 == 99:
                    pipe.delete("load:%d" % (i - 1))
                    pipe.execute()
            short = [b"load:%d" % i for i in range(7, 1000, 100)]
            time.sleep(0.5)  # the short-lived keys expire
            for k in short:
                self.assertIsNone(r.get(k))  # removed now if nothing removed it before
            r.publish("done", "x")
            events = {c: [] for c in channels}
            generations = []
            for frame in until_done(sub)[:-1]:
                parts = frame.split(b"\r\n")
                channel, payload = parts[-4].decode(), parts[-2]
                event = channel.split(":", 1)[1]
                (generations if event == "evicted-generation" else events[event]).append(payload)
            info = r.info("stats")
            keys = {b"load:%d" % i for i in range(1000)}
            self.assertEqual(sorted(events["set"]), sorted(keys))
            self.assertEqual(len(events["del"]), 10)
            self.assertGreater(len(events["evicted"]), 0)
            self.assertEqual(len(events["evicted"]), info["evicted_keys"])
            self.assertEqual(len(set(events["evicted"])), len(events["evicted"]))
            for k in events["evicted"] + events["del"]:
                self.assertEqual(r.exists(k), 0, k)
            # Each short-lived key left once: evicted before its time, or expired.
            self.assertEqual(sorted(events["expired"] + [k for k in events["evicted"] if k in short]),
                             sorted(short))
            summed = sum(int(g.split(b" evicted_keys=")[1].split()[0]) for g in generations)
            self.assertEqual(summed, len(events["evicted"]))
            print("\n1000 SETs of 256 KiB in a 64 MiB budget: %d set, %d del, %d expired, "
                  "%d evicted events, %d generation summaries"
                  % (len(events["set"]), len(events["del"]), len(events["expired"]),
                     len(events["evicted"]), len(generations)), file=sys.stderr)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                                "examples"))
import prefix_map  # noqa: E402 (docs/examples/prefix_map.py, the router example)


class RouterExampleTest(unittest.TestCase):
    """docs/examples/prefix_map.py keeps an exact view of a node through writes, deletes,
    renames, expiry and eviction, with per-key evicted events or generation summaries only."""

    def run_traffic_and_compare(self, flags, verify_on_generation):
        """The view decides for itself (asking the node) whether it must re-check at a
        generation summary; `verify_on_generation` is what it must decide."""
        value = os.urandom(256 * 1024)
        with ServerProcess(["--unixsocket", "", "--notify-keyspace-events", flags],
                           limits=("--max-disk-bytes", "32mb", "--generation-bytes", "4mb",
                                   "--memtable-bytes", "16mb")).start() as srv:
            r = srv.client()
            self.addCleanup(r.close)
            for i in range(20):
                r.set("chunk:%d" % i, value)
            view = prefix_map.NodeView(srv.client())
            self.addCleanup(view.pubsub.close)
            self.assertEqual(view.verify_on_generation, verify_on_generation)
            self.assertEqual(len(view.keys), 20)
            r.set("short", "v", px=50)
            for i in range(20, 300):
                r.set("chunk:%d" % i, value)
                if i % 50 == 0:
                    r.delete("chunk:%d" % (i - 1))
            r.rename("chunk:299", "chunk:renamed")
            time.sleep(0.1)
            r.get("short")
            while view.drain(timeout=0.5):  # until the events stop coming
                pass
            actual = set(r.scan_iter(count=1000))
            self.assertGreater(info_stat(srv, "evicted_keys"), 100)
            self.assertEqual(view.keys, actual)
            request = ["chunk:%d" % i for i in range(280, 300)]
            self.assertEqual(prefix_map.best_node({"n1": view}, request),
                             ("n1", r.execute_command("LARDER.PREFIX", *request)))
            self.assertEqual(prefix_map.best_node({"n1": view}, ["chunk:0"]), (None, 0))

    def test_view_from_per_key_events(self):
        self.run_traffic_and_compare("E$gxe", verify_on_generation=False)

    def test_view_from_generation_summaries(self):
        self.run_traffic_and_compare("E$gxG", verify_on_generation=True)


class SlowSubscriberTest(unittest.TestCase):
    """A subscriber that stops reading is disconnected at the pubsub output limit, and GETs on
    other connections go on at the same rate meanwhile: GETs are timed while a publisher sends
    the same stream of messages to nobody, then to a stalled subscriber (both rates printed)."""

    def get_rate_while_flooding(self, srv, r):
        """GETs of 1 MiB per second while another thread publishes 250 messages of 64 KiB to
        slow:chan, one every 2 ms; and the receiver count of each message."""
        receivers = []

        def flood():
            pub = srv.client()
            for _ in range(250):
                receivers.append(pub.publish("slow:chan", b"m" * (64 * 1024)))
                time.sleep(0.002)
            pub.close()

        flooder = threading.Thread(target=flood)
        flooder.start()
        n, start = 0, time.monotonic()
        while flooder.is_alive():
            self.assertEqual(len(r.get("slow:value")), MiB)
            n += 1
        flooder.join()
        return n / (time.monotonic() - start), receivers

    def test_stalled_subscriber_is_dropped_at_its_limit(self):
        with ServerProcess(["--unixsocket", "", "--client-output-buffer-limit",
                            "pubsub", "8mb", "0", "0"]).start() as srv:
            r = srv.client()
            self.addCleanup(r.close)
            r.set("slow:value", os.urandom(MiB))
            alone, receivers = self.get_rate_while_flooding(srv, r)
            self.assertEqual(set(receivers), {0})
            stalled = srv.raw()
            self.addCleanup(stalled.close)
            stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.call("SUBSCRIBE", "slow:chan")  # and never reads again
            before = info_stat(srv, "client_output_buffer_limit_disconnections")
            beside, receivers = self.get_rate_while_flooding(srv, r)
            held = receivers.count(1)
            # Received until dropped: 8 MiB held by the server plus what the kernel buffered.
            self.assertEqual(receivers, [1] * held + [0] * (250 - held))
            self.assertGreater(held, 100)
            self.assertLess(held, 250)
            self.assertEqual(info_stat(srv, "client_output_buffer_limit_disconnections"),
                             before + 1)
            # Gone from the server (the kernel still trickles what it had sent into the stalled
            # socket's tiny window; reading that out would take minutes).
            self.assertEqual(r.pubsub_numsub("slow:chan"), [(b"slow:chan", 0)])
            self.assertNotIn(b"cmd=subscribe", r.execute_command("CLIENT", "LIST"))
            print("\nGET 1 MiB while 250 messages of 64 KiB are published: %.0f/s with no "
                  "subscriber, %.0f/s to a stalled subscriber (dropped after %d messages; "
                  "pubsub limit 8 MiB)" % (alone, beside, held), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
