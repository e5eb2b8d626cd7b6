"""larder-server and Redis 7 given the same random commands of the string and keyspace family,
reply for reply (a differential test): a few keys, values that are integers, floats, text or
binary, every option of SET, GETEX, EXPIRE and their errors, the bitmap commands (GETBIT,
SETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD), transactions (and WATCH, which the connection's
own writes make fail), over RESP2 and RESP3. The two servers' replies must be
byte for byte the same, but for a TTL's remaining time (the two servers read the clock a moment
apart). Every 500 commands the two keyspaces must hold the same keys and values, and the
keyspace events (`notify-keyspace-events KEAm`, key misses too) a subscriber received from each
must be the same, in the same order. DBSIZE is not drawn: Redis counts a key SET with an expiry
time already past until its expiry cycle removes it, where Larder no longer holds it. Two more
cases compare KEYS with random glob patterns, and inline commands with random quoting.

Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v
integration_differential. LARDER_DIFF_SEED=<n> replays a run (a failure prints its seed);
LARDER_DIFF_COMMANDS=<n> sets the commands per protocol (default 3000)."""
import os
import random
import re

from server_harness import BesideRedisCase

__all__ = ["DifferentialTest"]  # integration_test imports this module's TestCase

KEYS = ["d:a", "d:b", "d:c", "{d}x", "{d}y", "d:\xe9\x00"]
VALUES = ["0", "1", "-1", "17", "+5", " 1", "1 ", "007", "9223372036854775807",
          "-9223372036854775808", "9223372036854775808", "3.5", "-0.25", "1e3", "1.0e2", "0x10",
          "inf", "-inf", "nan", "abc", "hello world", "", "x" * 300, b"\x00\xff\r\n\x01"]
INTEGERS = ["0", "1", "-1", "5", "-7", "100", "9223372036854775807", "-9223372036854775808",
            "abc", "1.5", "", " 2"]
FLOATS = ["0", "1.5", "-0.5", "2", "1e3", "-1e308", "1e308", "inf", "nan", "abc", "3e-5"]
OFFSETS = ["0", "1", "2", "-1", "-3", "5", "-100", "100", "1000", "abc", "9223372036854775807"]
# Time arguments that delete the key or are refused (Draws.duration gives the others).
BAD_SECONDS = ["0", "-1", "abc", "9223372036854775807"]
UNIX_SECONDS = ["4102444800", "4102444801", "1", "abc"]  # 2100-01-01, and long past
EXPIRE_FLAGS = [[], ["NX"], ["XX"], ["GT"], ["LT"], ["NX", "XX"], ["GT", "LT"], ["FOO"]]
BIT_OFFSETS = ["0", "1", "7", "8", "13", "64", "300", "2000", "-1", "abc", "#1", "4294967296"]
FIELD_TYPES = ["i1", "i5", "i8", "i16", "i32", "i63", "i64", "u1", "u7", "u8", "u16", "u63",
               "u64", "I8", "i0", "x8"]
FIELD_OFFSETS = ["0", "1", "3", "7", "13", "100", "#0", "#1", "#5", "-1", "x"]
# Commands whose reply is a remaining or absolute time: compared to within the slack below.
TIMED = {"TTL": 2, "PTTL": 2000, "EXPIRETIME": 2, "PEXPIRETIME": 2000}


class Draws(random.Random):
    """A run's random source, which also hands out its expiry times."""

    def __init__(self, seed):
        self.times = 0
        super().__init__(seed)

    def duration(self, command):
        """A time argument for `command` (milliseconds for the P- commands and PX): now and
        then one of BAD_SECONDS, else 115 days, 60 s more or less than any time drawn before
        in the run. So no key expires during a run, and GT and LT compare a new expiry with
        the one before it the same way on both servers, however long passes between them."""
        if self.random() < 0.25:
            return self.choice(BAD_SECONDS)
        self.times += 1
        seconds = 10_000_000 + 60 * self.times * self.choice((1, -1))
        return str(seconds * 1000 if command.startswith("P") else seconds)


def set_options(rng):
    options = []
    for group in ([[], ["NX"], ["XX"]],
                  [[], ["EX", rng.duration("EX")], ["PX", rng.duration("PX")],
                   ["EXAT", rng.choice(UNIX_SECONDS)], ["KEEPTTL"], ["EX"]],
                  [[], ["GET"]]):
        options += rng.choice(group)
    if rng.random() < 0.1:
        rng.shuffle(options)  # in another order, as clients may send them
    return options


def bit_range(rng, units=("BYTE", "BIT", "bit", "FOO")):
    """BITCOUNT's and BITPOS's optional range: start, end and unit, each drawn or left out."""
    r = rng.random()
    if r < 0.3:
        return []
    start, end = rng.choice(OFFSETS), rng.choice(OFFSETS)
    if r < 0.4:
        return [start]
    return [start, end] + ([rng.choice(units)] if r > 0.7 else [])


def bitfield_ops(rng, read_only):
    ops = []
    for _ in range(rng.randint(0, 4)):
        kind = "GET" if read_only and rng.random() < 0.9 else rng.choice(
            ["GET", "SET", "INCRBY", "OVERFLOW", "set", "BOGUS"])
        if kind.upper() == "OVERFLOW":
            ops += [kind, rng.choice(["WRAP", "SAT", "FAIL", "fail", "NONE"])]
            continue
        ops += [kind, rng.choice(FIELD_TYPES), rng.choice(FIELD_OFFSETS)]
        if kind.upper() in ("SET", "INCRBY"):
            # Not INT64_MIN: Redis 7.0 saturates a SET of it (or of anything below an i63's
            # minimum) to the field's maximum (docs/operations.md).
            ops.append(rng.choice([i for i in INTEGERS if i != "-9223372036854775808"]))
    if rng.random() < 0.05:
        ops = ops[:-1]  # an operation short of an argument
    return ops


def random_command(rng):
    """One command of the family with arguments drawn to hit both its paths and its errors."""
    k, k2, v = rng.choice(KEYS), rng.choice(KEYS), rng.choice(VALUES)
    makers = [
        lambda: ["SET", k, v] + set_options(rng),
        lambda: ["GET", k],
        lambda: ["GETSET", k, v],
        lambda: ["GETDEL", k],
        lambda: ["GETEX", k] + rng.choice([[], ["PERSIST"], ["EX", rng.duration("EX")],
                                           ["EXAT", rng.choice(UNIX_SECONDS)], ["EX"]]),
        lambda: ["SETNX", k, v],
        lambda: [c := rng.choice(["SETEX", "PSETEX"]), k, rng.duration(c), v],
        lambda: ["MSET"] + [x for key in rng.sample(KEYS, rng.randint(1, 3))
                            for x in (key, rng.choice(VALUES))],
        lambda: ["MSETNX"] + [x for key in rng.sample(KEYS, rng.randint(1, 3))
                              for x in (key, rng.choice(VALUES))],
        lambda: ["MGET"] + rng.sample(KEYS, rng.randint(1, 4)),
        lambda: ["APPEND", k, v],
        lambda: ["STRLEN", k],
        lambda: [rng.choice(["GETRANGE", "SUBSTR"]), k, rng.choice(OFFSETS), rng.choice(OFFSETS)],
        lambda: ["SETRANGE", k, rng.choice(OFFSETS[:8]), v],
        lambda: [rng.choice(["INCR", "DECR"]), k],
        lambda: [rng.choice(["INCRBY", "DECRBY"]), k, rng.choice(INTEGERS)],
        lambda: ["INCRBYFLOAT", k, rng.choice(FLOATS)],
        lambda: [rng.choice(["DEL", "UNLINK", "EXISTS", "TOUCH"])]
        + rng.sample(KEYS, rng.randint(1, 3)),
        lambda: ["TYPE", k],
        lambda: [c := rng.choice(["EXPIRE", "PEXPIRE"]), k, rng.duration(c)]
        + rng.choice(EXPIRE_FLAGS),
        lambda: [rng.choice(["EXPIREAT", "PEXPIREAT"]), k, rng.choice(UNIX_SECONDS)]
        + rng.choice(EXPIRE_FLAGS),
        lambda: ["PERSIST", k],
        lambda: [rng.choice(list(TIMED)), k],
        lambda: [rng.choice(["RENAME", "RENAMENX"]), k, k2],
        lambda: ["COPY", k, k2] + rng.choice([[], ["REPLACE"], ["DB", "0"], ["DB", "1"]]),
        lambda: ["LCS", k, k2] + rng.choice([[], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"],
                                             ["IDX", "MINMATCHLEN", rng.choice(OFFSETS[:6])]]),
        lambda: ["EXISTS", k],
        lambda: ["GET", k],
        lambda: ["SET", k, rng.choice(INTEGERS)],
        lambda: ["SET", k, v, u := rng.choice(["EX", "PX"]), rng.duration(u)],
        lambda: [rng.choice(["MULTI", "EXEC"])],
        lambda: ["DISCARD"],
        lambda: ["WATCH"] + rng.sample(KEYS, rng.randint(1, 2)),
        lambda: ["UNWATCH"],
        lambda: ["GETBIT", k, rng.choice(BIT_OFFSETS)],
        lambda: ["SETBIT", k, rng.choice(BIT_OFFSETS[:8]), rng.choice(["0", "1", "1", "2", "01"])],
        lambda: ["SETBIT", k, rng.choice(BIT_OFFSETS), "1"],
        lambda: ["BITCOUNT", k] + bit_range(rng),
        lambda: ["BITPOS", k, rng.choice(["0", "1", "0", "1", "2", "x"])] + bit_range(rng),
        lambda: ["BITOP", rng.choice(["AND", "OR", "XOR", "NOT", "and", "FOO"]), k2]
        + rng.sample(KEYS, rng.randint(1, 3)),
        lambda: ["BITFIELD", k] + bitfield_ops(rng, False),
        lambda: ["BITFIELD_RO", k] + bitfield_ops(rng, True),
    ]
    return rng.choice(makers)()


def keys_of(reply):
    """The keys of a raw KEYS reply, sorted."""
    return sorted(re.findall(rb"\$\d+\r\n([^\r]*)\r\n", reply))


def close_enough(cmd, larder, redis):
    """TTL and friends: the same kind of reply (-2, -1, or a time) and times within TIMED's
    slack of each other; else byte for byte."""
    if larder == redis:
        return True
    if cmd[0] not in TIMED or not (larder.startswith(b":") and redis.startswith(b":")):
        return False
    a, b = int(larder[1:]), int(redis[1:])
    return min(a, b) >= 0 and abs(a - b) <= TIMED[cmd[0]]


class DifferentialTest(BesideRedisCase):
    def setUp(self):
        for server in (self.larder, self.redis):
            c = server.raw()
            self.assertEqual(c.call("FLUSHALL"), b"+OK\r\n")
            c.close()
        self.seed = int(os.environ.get("LARDER_DIFF_SEED") or random.randrange(1 << 32))
        self.commands = int(os.environ.get("LARDER_DIFF_COMMANDS") or 3000)

    def run_commands(self, protocol):
        rng = Draws(self.seed * 3 + protocol)
        conns = [self.larder.raw(), self.redis.raw()]
        self.addCleanup(lambda: [c.close() for c in conns])
        subscribers = [self.larder.raw(), self.redis.raw()]
        self.addCleanup(lambda: [c.close() for c in subscribers])
        for c, subscriber in zip(conns, subscribers):
            c.call("HELLO", str(protocol))
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEAm")
            subscriber.call("PSUBSCRIBE", "__key*__:*")
        recent, queuing = [], False
        for i in range(self.commands):
            cmd = random_command(rng)
            while queuing and cmd[0] in TIMED:  # EXEC's reply would hold it, compared exactly
                cmd = random_command(rng)
            larder, redis = (c.call(*cmd) for c in conns)
            if cmd[0] in ("MULTI", "EXEC", "DISCARD"):
                queuing = cmd[0] == "MULTI"
            recent = (recent + [cmd])[-12:]
            if not close_enough(cmd, larder, redis):
                self.fail(f"seed {self.seed} (LARDER_DIFF_SEED), RESP{protocol}, command {i}: "
                          f"{cmd!r}\n  larder: {larder!r}\n  redis:  {redis!r}\n"
                          f"  the commands before it: {recent[:-1]!r}")
            if i % 500 == 499 or i == self.commands - 1:
                self.assert_same_keyspace(conns, protocol, i)
                self.assert_same_events(conns, subscribers, protocol, i)

    def assert_same_keyspace(self, conns, protocol, i):
        for c in conns:
            c.call("DISCARD")  # a transaction the draw left open, on both
        where = f"seed {self.seed} (LARDER_DIFF_SEED), RESP{protocol}, after command {i}"
        larder, redis = (keys_of(c.call("KEYS", "*")) for c in conns)
        self.assertEqual(larder, redis, where)
        for key in KEYS:
            larder, redis = (c.call("GET", key) for c in conns)
            self.assertEqual(larder, redis, f"{where}: GET {key!r}")

    def assert_same_events(self, conns, subscribers, protocol, i):
        """The keyspace events each server published since the last check, in order, but for
        `expired`: Larder sends it when it finds the time passed, at once for a SET whose EXAT
        is past, where Redis sends it when a command or its expiry cycle comes to the key."""
        streams = []
        for c, subscriber in zip(conns, subscribers):
            c.call("PUBLISH", "__keyspace@0__:checkpoint", "end")
            events = []
            while not (event := subscriber.reply()).endswith(b"checkpoint\r\n$3\r\nend\r\n"):
                if not re.search(rb"(\nexpired|:expired\r\n\$\d+\r\n[^\r]*)\r\n$", event):
                    events.append(event)
            streams.append(events)
        where = f"seed {self.seed} (LARDER_DIFF_SEED), RESP{protocol}, after command {i}"
        for n, (larder, redis) in enumerate(zip(*streams)):
            self.assertEqual(larder, redis, f"{where}: event {n} of {len(streams[1])}")
        self.assertEqual(len(streams[0]), len(streams[1]), where)

    def test_random_keys_patterns_match_as_redis(self):
        """KEYS with random glob patterns (classes, ranges, negation, escapes, unclosed
        brackets) over random keys made of the same characters: the same keys match."""
        rng = random.Random(self.seed)
        conns = [self.larder.raw(), self.redis.raw()]
        self.addCleanup(lambda: [c.close() for c in conns])
        keys = {"".join(rng.choice("ab[]-^\\*?!") for _ in range(rng.randint(1, 5)))
                for _ in range(60)}
        for c in conns:
            c.call("MSET", *[x for key in keys for x in (key, "1")])
        for _ in range(400):
            pattern = "".join(rng.choice("ab[]-^\\*?!") for _ in range(rng.randint(1, 7)))
            larder, redis = (keys_of(c.call("KEYS", pattern)) for c in conns)
            self.assertEqual(larder, redis, f"seed {self.seed} (LARDER_DIFF_SEED): {pattern!r}")

    def test_random_inline_commands_reply_as_redis(self):
        """Inline commands (a line, as telnet sends it) with random quoting: double and single
        quotes, backslash and \\xHH escapes, unbalanced quotes, a quote closed and followed
        by more; the same reply, or the same protocol error, which closes the connection."""
        rng = random.Random(self.seed)
        for _ in range(500):
            quoting = rng.choice((0.03, 0.08, 0.2))  # how often a quote or backslash comes
            args = "".join(rng.choice("\"'\\" if rng.random() < quoting else "ab \tx41ng")
                           for _ in range(rng.randint(0, 16)))
            line = (rng.choice(["ECHO ", "ECHO", "echo  ", "EXISTS "]) + args).encode() + b"\r\n"
            replies = []
            for server in (self.larder, self.redis):
                c = server.raw()
                c.send(line)
                replies.append(c.reply())
                c.close()
            self.assertEqual(replies[0], replies[1],
                             f"seed {self.seed} (LARDER_DIFF_SEED): {line!r}")

    def test_random_string_commands_reply_as_redis_resp2(self):
        self.run_commands(2)

    def test_random_string_commands_reply_as_redis_resp3(self):
        self.run_commands(3)
