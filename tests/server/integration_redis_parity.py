"""larder-server against Redis 7, byte for byte, where the behaviour is Redis's: the expiry
options of SET, GETEX, SETEX/PSETEX and EXPIRE* (one parser, commands/expiry.h), and the
generated HELP and error replies of container commands (commands/subcommands.h). Every case
runs on a fresh key holding "v" on both servers and compares the raw replies."""
import unittest

from server_harness import RedisProcess, ServerProcess

BIG = "9223372036854775807"  # INT64_MAX

# Commands whose replies must be identical. "k" is the case's key (holding "v", no expiry).
EXPIRY_CASES = [
    # SET: options first (any syntax error wins), then the time argument.
    ["SET", "k", "v", "EX", "1", "EX", "100"],
    ["SET", "k", "v", "EX", "abc", "BOGUS"],
    ["SET", "k", "v", "EX", "abc"],
    ["SET", "k", "v", "EX", "1", "PX", "100"],
    ["SET", "k", "v", "NX", "NX"],
    ["SET", "k", "v", "XX", "NX"],
    ["SET", "k", "w", "GET", "GET"],
    ["SET", "k", "v", "KEEPTTL", "EX", "10"],
    ["SET", "k", "v", "EX", "10", "KEEPTTL"],
    ["SET", "k", "v", "EX"],
    ["SET", "k", "v", "PERSIST"],
    ["SET", "k", "v", "EX", "-5"],
    ["SET", "k", "v", "EX", "0"],
    ["SET", "k", "v", "EXAT", "0"],
    ["SET", "k", "v", "PX", BIG],
    ["SET", "k", "v", "EX", "9223372036854775"],
    ["SET", "k", "v", "EXAT", "99999999999999999"],
    ["SET", "k", "v", "pxat", "99999999999999", "xx", "get"],
    # GETSET (the replies of a write and of the read that follows)
    ["GETSET", "k", "w"],
    ["GETSET", "missing", "w"],
    ["GETSET", "k"],
    # GETEX: a missing key is a null reply before its time argument is read.
    ["GETEX", "missing", "EX", "-1"],
    ["GETEX", "k", "EX", "-1"],
    ["GETEX", "k", "PERSIST", "EX", "1"],
    ["GETEX", "k", "EX", "10", "EX", "20"],
    ["GETEX", "k", "KEEPTTL"],
    ["GETEX", "k", "PX", "0"],
    ["GETEX", "k", "EX"],
    ["GETEX", "k", "persist"],
    # SETEX / PSETEX
    ["SETEX", "k", "0", "v"],
    ["PSETEX", "k", "-1", "v"],
    ["SETEX", "k", "abc", "v"],
    ["SETEX", "k", "9223372036854775", "v"],
    ["PSETEX", "k", "100000", "v"],
    # EXPIRE*: options first, then the integer, then the key.
    ["EXPIRE", "k", "abc", "FOO"],
    ["EXPIRE", "missing", "abc"],
    ["EXPIRE", "missing", "10"],
    ["EXPIRE", "k", "10", "nx", "xx"],
    ["EXPIRE", "k", "10", "NX", "GT"],
    ["EXPIRE", "k", "10", "gt", "lt"],
    ["EXPIRE", "k", BIG],
    ["EXPIRE", "k", "-9223372036854776"],
    ["PEXPIRE", "k", BIG],
    ["EXPIREAT", "k", BIG],
    ["PEXPIREAT", "k", BIG],
    ["EXPIRE", "k", "100", "XX"],
    ["EXPIRE", "k", "100", "GT"],
    ["EXPIRE", "k", "100", "LT"],
    ["EXPIRE", "k", "-9223372036854775"],
]

# Sequences on one key: each command's reply must match (the expiry conditions against a key's
# current expiry).
CONDITION_SEQUENCES = [
    [["EXPIRE", "k", "100", "NX"], ["EXPIRE", "k", "50", "GT"], ["EXPIRE", "k", "200", "GT"],
     ["EXPIRE", "k", "300", "NX"], ["EXPIRE", "k", "300", "LT"], ["PEXPIRE", "k", "150000", "LT"],
     ["EXPIRE", "k", "100", "XX"], ["PERSIST", "k"], ["EXPIRE", "k", "100", "XX"],
     ["EXPIRE", "k", "-1"], ["EXISTS", "k"]],
    [["SET", "k", "v", "EX", "100"], ["SET", "k", "w", "KEEPTTL", "GET"], ["GETEX", "k", "PERSIST"],
     ["EXPIRE", "k", "10", "XX"]],
]

# Container commands: generated errors and HELP (Redis has more subcommands: header and footer
# only are compared for HELP).
CONTAINER_CASES = [
    ["CLIENT", "FOO"], ["CONFIG", "nope"], ["OBJECT", "nope", "k"], ["MEMORY", "nope"],
    ["COMMAND", "nope"], ["CONFIG", "GET"], ["CONFIG", "SET", "a"], ["CLIENT", "SETNAME"],
    ["OBJECT", "ENCODING"], ["CONFIG", "HELP", "x"], ["CLIENT", "KILL"], ["COMMAND", "COUNT", "x"],
    ["MEMORY", "USAGE", "k", "SAMPLES"], ["MEMORY", "USAGE", "k", "FOO", "1"],
    ["CLIENT", "SETNAME", "a b"],
]
HELP_OF = ["CLIENT", "CONFIG", "OBJECT", "MEMORY", "COMMAND"]


class RedisParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.larder = ServerProcess(["--unixsocket", ""]).start()
        cls.redis = RedisProcess().start()
        cls.conns = [cls.larder.raw(), cls.redis.raw()]

    @classmethod
    def tearDownClass(cls):
        for c in cls.conns:
            c.close()
        cls.larder.cleanup()
        cls.redis.cleanup()

    def on_both(self, *args):
        """(larder's reply, redis's reply) to one command."""
        return tuple(c.call(*args) for c in self.conns)

    def fresh(self, key):
        for c in self.conns:
            c.call("DEL", key)
            self.assertEqual(c.call("SET", key, "v"), b"+OK\r\n")

    def assert_same(self, *args):
        larder, redis = self.on_both(*args)
        self.assertEqual(larder, redis, " ".join(args))

    def test_expiry_options_reply_as_redis(self):
        for i, case in enumerate(EXPIRY_CASES):
            key = "parity:%d" % i
            with self.subTest(case=" ".join(case)):
                self.fresh(key)
                self.assert_same(*[key if a == "k" else a for a in case])
                self.assert_same("EXISTS", key)

    def test_expiry_conditions_follow_the_current_expiry_as_redis(self):
        for i, seq in enumerate(CONDITION_SEQUENCES):
            key = "cond:%d" % i
            self.fresh(key)
            for cmd in seq:
                with self.subTest(cmd=" ".join(cmd)):
                    self.assert_same(*[key if a == "k" else a for a in cmd])

    def test_ttls_set_by_the_options_agree(self):
        for args in (["EX", "1", "EX", "100"], ["PX", "100000"], ["EX", "100", "GET"]):
            with self.subTest(args=args):
                self.fresh("ttl")
                self.assert_same("SET", "ttl", "v", *args)
                for ttl in self.on_both("TTL", "ttl"):
                    self.assertIn(ttl, (b":99\r\n", b":100\r\n"))

    def test_container_errors_reply_as_redis(self):
        self.fresh("k")
        for case in CONTAINER_CASES:
            with self.subTest(case=" ".join(case)):
                self.assert_same(*case)

    def test_help_has_redis_header_and_footer(self):
        for cmd in HELP_OF:
            with self.subTest(cmd=cmd):
                larder, redis = (reply.split(b"\r\n") for reply in self.on_both(cmd, "HELP"))
                self.assertEqual(larder[1], redis[1])  # "+<CMD> <subcommand> ... are:"
                self.assertEqual(larder[-3:], redis[-3:])  # "+HELP", "+    Prints this help."
                count = int(larder[0][1:])
                self.assertEqual(count, len(larder) - 2)  # header, lines, "" after the last CRLF
                self.assertEqual(count % 2, 1)  # header + a (usage, help) pair per subcommand


if __name__ == "__main__":
    unittest.main()
