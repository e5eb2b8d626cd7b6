"""larder-server against Redis 7, byte for byte, where the behaviour is Redis's: the expiry
options of SET, GETEX, SETEX/PSETEX and EXPIRE* (one parser, commands/expiry.h), the
generated HELP and error replies of container commands (commands/subcommands.h), and the rest
of the string and keyspace family (INCRBYFLOAT, LCS, COPY, DUMP/RESTORE) with the error replies
of SLOWLOG, LATENCY and CLIENT PAUSE, in RESP2 and RESP3; transactions (what MULTI queues,
refuses or runs at once), SHUTDOWN's options, CLIENT LIST/KILL filters, SCAN cursors, KEYS
patterns and the cross-protocol guard. Every case compares the raw replies."""
import re
import unittest

from server_harness import BesideRedisCase

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
    ["MEMORY", "USAGE", "k", "SAMPLES", "-5"],
    ["CLIENT", "SETNAME", "a b"], ["MEMORY", "PURGE"], ["MEMORY", "PURGE", "x"],
    # Keys by subcommand (cluster mode routes by them).
    ["COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"], ["COMMAND", "GETKEYS", "MEMORY", "PURGE"],
    ["COMMAND", "GETKEYS", "MEMORY", "USAGE"],
    ["COMMAND", "GETKEYS", "OBJECT", "HELP"], ["COMMAND", "GETKEYS", "OBJECT", "FREQ", "k"],
]
HELP_OF = ["CLIENT", "CONFIG", "OBJECT", "MEMORY", "COMMAND"]

# A call of every keyed command Redis has too, for COMMAND GETKEYS / GETKEYSANDFLAGS.
KEYED_CALLS = [
    ["GET", "k"], ["SET", "k", "v"], ["SET", "k", "v", "EX", "5", "get"], ["SETNX", "k", "v"],
    ["GETSET", "k", "v"], ["SETEX", "k", "1", "v"], ["PSETEX", "k", "1", "v"], ["GETEX", "k"],
    ["GETDEL", "k"], ["MGET", "a", "b"], ["MSET", "a", "1", "b", "2"],
    ["MSETNX", "a", "1", "b", "2"], ["STRLEN", "k"], ["GETRANGE", "k", "0", "1"],
    ["SUBSTR", "k", "0", "1"], ["APPEND", "k", "v"], ["SETRANGE", "k", "0", "v"], ["INCR", "k"],
    ["DECR", "k"], ["INCRBY", "k", "1"], ["DECRBY", "k", "1"], ["INCRBYFLOAT", "k", "1"],
    ["LCS", "a", "b"], ["DEL", "a", "b"], ["UNLINK", "a"], ["EXISTS", "a", "b"], ["TYPE", "k"],
    ["EXPIRE", "k", "1"], ["PEXPIRE", "k", "1"], ["EXPIREAT", "k", "1"], ["PEXPIREAT", "k", "1"],
    ["TTL", "k"], ["PTTL", "k"], ["EXPIRETIME", "k"], ["PEXPIRETIME", "k"], ["PERSIST", "k"],
    ["TOUCH", "a", "b"], ["RENAME", "a", "b"], ["RENAMENX", "a", "b"], ["OBJECT", "ENCODING", "k"],
    ["OBJECT", "FREQ", "k"], ["MEMORY", "USAGE", "k"], ["COPY", "a", "b"], ["DUMP", "k"],
    ["RESTORE", "k", "0", "x"], ["WATCH", "a", "b"], ["MOVE", "k", "0"], ["GETBIT", "k", "0"],
    ["SETBIT", "k", "0", "1"], ["BITCOUNT", "k"], ["BITPOS", "k", "1"],
    ["BITOP", "AND", "d", "a", "b"], ["BITFIELD", "k", "GET", "i8", "0"],
    ["BITFIELD", "k", "OVERFLOW", "SAT", "GET", "i8", "0", "incrby", "u2", "0", "1"],
    ["BITFIELD_RO", "k", "GET", "i8", "0"]]

# Sequences whose every reply must match, run in RESP2 and in RESP3 on keys of their own.
FAMILY_SEQUENCES = {
    "COMMAND GETKEYS and GETKEYSANDFLAGS": (
        [["COMMAND", "GETKEYSANDFLAGS"] + c for c in KEYED_CALLS] +
        [["COMMAND", "GETKEYS"] + c for c in KEYED_CALLS] +
        [["COMMAND", "GETKEYSANDFLAGS", "ping"], ["COMMAND", "GETKEYSANDFLAGS", "nosuch", "k"],
         ["COMMAND", "GETKEYSANDFLAGS", "get"], ["COMMAND", "GETKEYSANDFLAGS", "memory", "usage"],
         ["COMMAND", "GETKEYSANDFLAGS"]]),
    "incrbyfloat": [
        ["SET", "f", "10.50"], ["INCRBYFLOAT", "f", "0.1"], ["INCRBYFLOAT", "f", "-5.0e3"],
        ["INCRBYFLOAT", "f", "abc"], ["INCRBYFLOAT", "f", " 1"], ["INCRBYFLOAT", "f", "inf"],
        ["INCRBYFLOAT", "f", "1e5000"], ["INCRBYFLOAT", "f", "0x10"], ["INCRBYFLOAT", "f", ""],
        ["INCRBYFLOAT", "new", "3"], ["INCRBYFLOAT", "new", "-3"], ["GET", "new"],
        ["SET", "s", "abc"], ["INCRBYFLOAT", "s", "1"], ["SET", "f", "5e3"],
        ["INCRBYFLOAT", "f", "2.0e2"], ["INCRBYFLOAT", "f", "1.5e-20"],
        ["SET", "f", "1", "EX", "100"], ["INCRBYFLOAT", "f", "1"], ["TTL", "f"],
        ["INCRBYFLOAT", "f"],
    ],
    "lcs": [
        ["SET", "k1", "ohmytext"], ["SET", "k2", "mynewtext"], ["LCS", "k1", "k2"],
        ["LCS", "k1", "k2", "LEN"], ["LCS", "k1", "k2", "IDX"],
        ["LCS", "k1", "k2", "IDX", "WITHMATCHLEN"], ["LCS", "k1", "k2", "idx", "minmatchlen", "4"],
        ["LCS", "k1", "k2", "IDX", "MINMATCHLEN", "-3", "WITHMATCHLEN"],
        ["LCS", "k1", "k2", "LEN", "IDX"], ["LCS", "k1", "nokey"], ["LCS", "nokey", "no2", "IDX"],
        ["LCS", "k1", "k2", "MINMATCHLEN", "x"], ["LCS", "k1", "k2", "FOO"],
        ["LCS", "k1", "k2", "MINMATCHLEN"], ["LCS", "k1", "k2", "WITHMATCHLEN"], ["LCS", "k1"],
    ],
    "copy": [
        ["SET", "src", "v", "EX", "100"], ["COPY", "src", "dst"], ["TTL", "dst"],
        ["COPY", "src", "dst"], ["SET", "src", "w"], ["COPY", "src", "dst", "REPLACE"],
        ["GET", "dst"], ["TTL", "dst"], ["COPY", "src", "src"], ["COPY", "missing", "dst"],
        ["COPY", "src", "dst", "DB", "0", "REPLACE"], ["COPY", "src", "dst", "DB", "x"],
        ["COPY", "src", "dst", "FOO"], ["COPY", "src", "dst", "DB"], ["COPY", "src"],
        ["COPY", "src", "dst", "DB", "99999999999"], ["COPY", "src", "dst", "DB", "-2147483649"],
        ["COPY", "src", "dst", "DB", "-1"],
    ],
    "dump": [
        ["SET", "d", "hello"], ["DUMP", "d"], ["DUMP", "missing"], ["SET", "n", "12345"],
        ["DUMP", "n"], ["SET", "n", "-70000"], ["DUMP", "n"], ["SET", "e", ""], ["DUMP", "e"],
        ["SET", "n", "2147483648"], ["DUMP", "n"], ["DUMP"],
    ],
    "diagnostics": [
        ["SLOWLOG", "GET", "-2"], ["SLOWLOG", "GET", "x"], ["SLOWLOG", "GET", "1", "2"],
        ["SLOWLOG", "FOO"], ["SLOWLOG"], ["SLOWLOG", "LEN", "x"], ["LATENCY", "FOO"],
        ["LATENCY", "HISTORY"], ["LATENCY", "RESET"], ["LATENCY", "LATEST"],
        ["LATENCY", "HISTORY", "command"], ["CLIENT", "PAUSE", "x"], ["CLIENT", "PAUSE", "-1"],
        ["CLIENT", "PAUSE", "10", "FOO"], ["CLIENT", "PAUSE", "10", "WRITE", "x"],
        ["CLIENT", "PAUSE"], ["CLIENT", "PAUSE", "0"], ["CLIENT", "UNPAUSE"],
        ["CLIENT", "UNPAUSE", "x"], ["MONITOR", "x"], ["SLOWLOG", "HELP"],
    ],
}

# RESTORE, each with the payload Redis's DUMP gave for "hello" ("P"), a corrupted copy ("BAD")
# or garbage; every reply must match.
RESTORE_SEQUENCE = [
    ["RESTORE", "r", "0", "P"], ["GET", "r"], ["RESTORE", "r", "0", "P"],
    ["RESTORE", "r", "0", "P", "REPLACE"], ["RESTORE", "r2", "-1", "P"],
    ["RESTORE", "r2", "x", "P"], ["RESTORE", "r2", "0", "garbage"], ["RESTORE", "r2", "0", "BAD"],
    ["RESTORE", "r2", "0", "P", "FOO"], ["RESTORE", "r2", "0", "P", "IDLETIME", "-1"],
    ["RESTORE", "r2", "0", "P", "FREQ", "300"], ["RESTORE", "r2", "0", "P", "IDLETIME", "1", "FREQ", "5"],
    ["RESTORE", "r2", "0", "P", "IDLETIME", "10", "REPLACE"], ["RESTORE", "r3", "100000", "P"],
    ["RESTORE", "r4", "1", "P", "ABSTTL"], ["EXISTS", "r4"], ["RESTORE", "r", "1", "P", "ABSTTL", "REPLACE"],
    ["EXISTS", "r"], ["RESTORE", "r", "0", "P", "FREQ"], ["RESTORE", "r", "0"],
    ["RESTORE", "r5", "99999999999999", "P", "ABSTTL"], ["PEXPIRETIME", "r5"],
]

# Sequences each run on a fresh connection to each server (a transaction's state is the
# connection's); every reply must match.
SESSION_SEQUENCES = {
    "transaction refuses SAVE and SHUTDOWN": [
        ["DEL", "t:a"], ["MULTI"], ["SET", "t:a", "1"], ["SAVE"], ["SHUTDOWN"], ["EXEC"],
        ["GET", "t:a"]],
    "transaction queues AUTH and UNWATCH": [["MULTI"], ["UNWATCH"], ["AUTH", "x"], ["EXEC"]],
    "a refused EXEC discards the transaction": [
        ["DEL", "t:b"], ["MULTI"], ["SET", "t:b", "1"], ["EXEC", "x"], ["GET", "t:b"], ["EXEC"]],
    "a refused EXEC outside a transaction": [["EXEC", "x"], ["EXEC"], ["DISCARD"]],
    # A COUNT past any keyspace here: one call walks it all, and the cursor is 0 on both.
    "an empty pattern matches no key": [
        ["SET", "t:e", "1"], ["KEYS", ""], ["SCAN", "0", "MATCH", "", "COUNT", "100000000"],
        ["SCAN", "0", "MATCH", "", "MATCH", "t:e", "COUNT", "100000000"], ["KEYS", "t:e"]],
    "COMMAND LIST filters and GETKEYS of subcommands": [
        ["COMMAND", "LIST", "FOO"], ["COMMAND", "LIST", "FILTERBY"],
        ["COMMAND", "LIST", "FILTERBY", "PATTERN"], ["COMMAND", "LIST", "FILTERBY", "X", "y"],
        ["COMMAND", "LIST", "FILTERBY", "MODULE", "m"],
        ["COMMAND", "LIST", "FILTERBY", "PATTERN", "GETD*"],
        ["COMMAND", "LIST", "FILTERBY", "PATTERN", "OBJECT|F*"],
        ["COMMAND", "GETKEYS", "object", "encoding"], ["COMMAND", "GETKEYS", "object", "foo", "k"],
        ["COMMAND", "GETKEYS", "object", "help"], ["COMMAND", "GETKEYS", "object", "freq", "k"],
        ["COMMAND", "GETKEYS", "memory", "usage"], ["COMMAND", "GETKEYS", "memory", "usage", "k"],
        # Whether it has keys is checked before its arity.
        ["COMMAND", "GETKEYS", "config", "get"], ["COMMAND", "GETKEYS", "object", "help", "x"],
        ["COMMAND", "GETKEYS", "client", "id", "x"], ["COMMAND", "GETKEYS", "dbsize", "x"],
        ["COMMAND", "GETKEYS", "object"], ["COMMAND", "GETKEYS", "memory"]],
    "slowlog-log-slower-than's range": [
        ["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
        ["CONFIG", "GET", "slowlog-log-slower-than"],
        ["CONFIG", "SET", "slowlog-log-slower-than", "10000"]],
    "nested MULTI and WATCH inside MULTI": [
        ["MULTI"], ["MULTI"], ["WATCH", "x"], ["SET", "t:c", "1"], ["EXEC"]],
    "SHUTDOWN options": [
        ["SHUTDOWN", "NOSAVE", "SAVE"], ["SHUTDOWN", "ABORT", "x"], ["SHUTDOWN", "SAVE", "ABORT"],
        ["SHUTDOWN", "NOW", "FOO"], ["SHUTDOWN", "ABORT"], ["PING"]],
    "SETRANGE of nothing": [
        ["SET", "t:s", "abc"], ["SETRANGE", "t:s", "600000000", ""],
        ["SETRANGE", "t:none", "600000000", ""], ["SETRANGE", "t:s", "600000000", "x"],
        ["GET", "t:s"]],
    "CLIENT filters": [
        ["CLIENT", "LIST", "TYPE", "foo"], ["CLIENT", "LIST", "ID", "abc"],
        ["CLIENT", "LIST", "ID", "1", "x"], ["CLIENT", "LIST", "FOO"],
        ["CLIENT", "LIST", "TYPE", "master"], ["CLIENT", "LIST", "ID", "999999"],
        ["CLIENT", "KILL", "SKIPME", "maybe"], ["CLIENT", "KILL", "TYPE", "foo"],
        ["CLIENT", "KILL", "TYPE", "master"], ["CLIENT", "KILL", "USER", "nobody"],
        ["CLIENT", "KILL", "LADDR", "1.2.3.4:5"], ["CLIENT", "KILL", "USER", "default", "ID", "99999"],
        ["CLIENT", "NO-EVICT", "maybe"], ["CLIENT", "NO-EVICT", "on"]],
    "ROLE of a master without replicas": [["ROLE"], ["ROLE", "master"], ["ROLE"]],
    "WAIT, sharded Pub/Sub, CONFIG SET": [
        ["WAIT", "0", "abc"], ["WAIT", "x", "0"], ["WAIT", "0", "-1"], ["PUBSUB", "SHARDCHANNELS"],
        ["PUBSUB", "SHARDCHANNELS", "a*"], ["PUBSUB", "SHARDCHANNELS", "a", "b"],
        ["PUBSUB", "SHARDNUMSUB", "a", "b"], ["PUBSUB", "SHARDNUMSUB"],
        ["CONFIG", "SET", "timeout", "0", "tcp-keepalive"],
        ["CONFIG", "SET", "maxclients", "0", "nosuch", "1"],
        ["CONFIG", "SET", "maxclients", "0", "daemonize", "yes"]],
    "CONFIG GET by name and by pattern": [
        ["CONFIG", "GET", "TIMEOUT"], ["CONFIG", "GET", "TIMEOUT", "timeout"],
        ["CONFIG", "GET", "timeout", "TIMEOUT"], ["CONFIG", "GET", "TIME*"],
        ["CONFIG", "GET", "TIMEOUT", "time*"], ["CONFIG", "GET", "nosuch"],
        ["CONFIG", "GET", "time\\out"]],
    "CONFIG SET of an empty list": [
        ["CONFIG", "SET", "latency-tracking-info-percentiles", ""],
        ["CONFIG", "GET", "latency-tracking-info-percentiles"],
        ["CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"]],
    "a transaction with a malformed subcommand aborts at EXEC": [
        ["DEL", "t:m"], ["MULTI"], ["OBJECT", "ENCODING"], ["SET", "t:m", "1"],
        ["CLIENT", "NOSUCH"], ["CONFIG", "GET"], ["EXEC"], ["GET", "t:m"]],
    "SELECT of a database index out of range": [
        ["SELECT", "99999999999"], ["SELECT", "-2147483649"], ["SELECT", "-1"], ["SELECT", "x"],
        ["SELECT", "1"], ["SELECT", "0"]],
    "MOVE and SWAPDB with one database": [
        ["SET", "t:mv", "v"], ["MOVE", "t:mv", "0"], ["MOVE", "t:mv", "1"], ["MOVE", "t:mv", "x"],
        ["MOVE", "t:mv", "-1"], ["MOVE", "t:mv", "99999999999"], ["MOVE", "t:none", "0"],
        ["MOVE", "t:mv"], ["GET", "t:mv"], ["SWAPDB", "0", "0"], ["SWAPDB", "0", "1"],
        ["SWAPDB", "1", "1"], ["SWAPDB", "x", "0"], ["SWAPDB", "0", "x"], ["SWAPDB", "x", "y"],
        ["SWAPDB", "99999999999", "0"], ["SWAPDB", "-1", "0"], ["SWAPDB", "0"], ["GET", "t:mv"]],
    "CLIENT UNBLOCK of a client that is not blocked": [
        ["CLIENT", "UNBLOCK", "5"], ["CLIENT", "UNBLOCK", "x"], ["CLIENT", "UNBLOCK", "x", "foo"],
        ["CLIENT", "UNBLOCK", "5", "error"], ["CLIENT", "UNBLOCK", "5", "TIMEOUT"],
        ["CLIENT", "UNBLOCK", "5", "error", "1"], ["CLIENT", "UNBLOCK"]],
    "BGSAVE in a transaction is scheduled": [["MULTI"], ["BGSAVE"], ["EXEC"]],
    "MONITOR is refused in a transaction": [
        ["MULTI"], ["MONITOR"], ["EXEC"], ["PING"]],
    "expiry times round to the nearest second": [
        ["SET", "t:e", "v", "PXAT", "4102444800600"], ["EXPIRETIME", "t:e"],
        ["PEXPIRETIME", "t:e"], ["PEXPIREAT", "t:e", "4102444800499"], ["EXPIRETIME", "t:e"]],
    "APPEND past proto-max-bulk-len": [
        ["CONFIG", "SET", "proto-max-bulk-len", "1mb"], ["SET", "t:a", "x" * 1048000],
        ["APPEND", "t:a", "y" * 1000], ["APPEND", "t:a", "y" * 576], ["STRLEN", "t:a"],
        ["APPEND", "t:a", "y"], ["STRLEN", "t:a"], ["CONFIG", "SET", "proto-max-bulk-len", "512mb"]],
    "the empty key is absent to reads and removals": [
        ["DEL", ""], ["SET", "t:x", "1"], ["GET", ""], ["GETDEL", ""], ["GETEX", "", "EX", "5"],
        ["DUMP", ""], ["GETRANGE", "", "0", "-1"], ["LCS", "", "t:x"], ["STRLEN", ""],
        ["EXISTS", "", "t:x"], ["TTL", ""], ["EXPIRE", "", "10"], ["PERSIST", ""],
        ["OBJECT", "FREQ", ""], ["TOUCH", "", "t:x"], ["MGET", "", "t:x"], ["DEL", "", "t:x"],
        ["UNLINK", ""], ["TYPE", ""]],
    "CLUSTER with the cluster disabled": [
        ["CLUSTER", "FOO"], ["CLUSTER", "HELP"], ["CLUSTER", "HELP", "x"], ["CLUSTER", "INFO", "x"],
        ["CLUSTER", "KEYSLOT"], ["CLUSTER", "INFO"]],
}

# SCAN cursors as Redis reads them (strtoul): accepted or "invalid cursor" alike (the cursor
# values a scan returns are each server's own).
SCAN_CURSORS = ["0", "-1", "", "+0", "-5", "-", "18446744073709551615", "18446744073709551616",
                "1x", " 1", "007"]

# KEYS patterns whose bracket corners Redis's matcher answers in its own way; the key sets
# must match (KEYS lists in no set order).
GLOB_KEYS = ["g:hallo", "g:h^", "g:ho", "g:h-llo", "g:h]llo", "g:hello", "g:h\\llo"]
GLOB_PATTERNS = ["g:h[a-]llo", "g:h[a-]*", "g:h[-a]llo", "g:h[]a]llo", "g:h[z-a]llo", "g:h[a",
                 "g:h[^a-z]llo", "g:h[!a]llo", "g:h[\\]]llo", "g:h\\", "g:h[\\\\]llo"]



class RedisParityTest(BesideRedisCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.conns = [cls.larder.raw(), cls.redis.raw()]
        cls.addClassCleanup(lambda: [c.close() for c in cls.conns])  # before the servers stop

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

    def test_command_info_key_positions_as_redis(self):
        for name in ("get", "mset", "del", "object", "memory", "client", "command"):
            with self.subTest(command=name):
                # The reply's integers: arity, then first key, last key, step.
                larder, redis = [re.findall(rb":(-?\d+)\r\n", r)[1:4]
                                 for r in self.on_both("COMMAND", "INFO", name)]
                self.assertEqual(larder, redis)

    def test_keyed_calls_name_every_keyed_command_of_both_servers(self):
        # So that GETKEYS / GETKEYSANDFLAGS parity covers a keyed command as soon as it exists.
        larder, redis = (s.client().command() for s in (self.larder, self.redis))
        keyed = {name for name, info in larder.items()
                 if int(info["first_key_pos"]) > 0 and name in redis}
        self.assertEqual(keyed - {call[0].lower() for call in KEYED_CALLS}, set())

    def test_expiry_conditions_follow_the_current_expiry_as_redis(self):
        for i, seq in enumerate(CONDITION_SEQUENCES):
            key = "cond:%d" % i
            self.fresh(key)
            for cmd in seq:
                with self.subTest(cmd=" ".join(cmd)):
                    self.assert_same(*[key if a == "k" else a for a in cmd])

    def test_client_info_names_a_subcommand_as_redis(self):
        def last_command(reply):
            return [f for f in reply.split(b" ") if f.startswith(b"cmd=")]
        larder, redis = self.on_both("CLIENT", "INFO")
        self.assertEqual(last_command(larder), [b"cmd=client|info"])
        self.assertEqual(last_command(larder), last_command(redis))
        own_lines = []
        for conn in self.conns:
            cid = conn.call("client", "id")[1:-2]
            own_lines += [line for line in conn.call("client", "list").split(b"\n")
                          if line.startswith(b"id=" + cid + b" ")]
        self.assertEqual([last_command(line) for line in own_lines], [[b"cmd=client|list"]] * 2)

    def test_client_list_shows_a_transaction_as_redis(self):
        def fields(line):
            return [f for f in line.split(b" ") if f.split(b"=")[0] in (b"flags", b"multi")]
        seen = []
        for srv in (self.larder, self.redis):
            tx, watcher = srv.raw(), srv.raw()
            cid = tx.call("CLIENT", "ID")[1:-2]
            tx.call("MULTI")
            tx.call("SET", "tx:a", "1")
            tx.call("GET", "tx:a")
            line = next(line for line in watcher.call("CLIENT", "LIST").split(b"\n")
                        if line.startswith(b"id=" + cid + b" "))
            tx.call("DISCARD")
            seen.append(fields(line))
            tx.close()
            watcher.close()
        self.assertEqual(seen[0], [b"flags=x", b"multi=2"])
        self.assertEqual(seen[0], seen[1])

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


    def assert_sequence_on_fresh_connections(self, seq, first=(), **labels):
        """Runs `seq` on a new connection to each server (after the commands `first`, replies
        unchecked) and compares every reply."""
        conns = [self.larder.raw(), self.redis.raw()]
        try:
            for cmd in first:
                for c in conns:
                    c.call(*cmd)
            for cmd in seq:
                with self.subTest(cmd=" ".join(cmd), **labels):
                    larder, redis = (c.call(*cmd) for c in conns)
                    self.assertEqual(larder, redis)
        finally:
            for c in conns:
                c.close()

    def test_string_and_keyspace_family_reply_as_redis_in_resp2_and_resp3(self):
        for proto in (2, 3):
            for family, seq in FAMILY_SEQUENCES.items():
                self.assert_sequence_on_fresh_connections(
                    seq, first=[["HELLO", str(proto)]], proto=proto, family=family)

    def test_restore_takes_redis_payloads_and_replies_as_redis(self):
        self.redis_raw = self.conns[1]
        self.assertEqual(self.redis_raw.call("SET", "payload", "hello"), b"+OK\r\n")
        dumped = self.redis_raw.call("DUMP", "payload")
        payload = dumped[dumped.index(b"\r\n") + 2:-2]
        bad = payload[:-1] + bytes([payload[-1] ^ 1])
        for c in self.conns:
            c.call("DEL", "r", "r2", "r3", "r4", "r5")
        for cmd in RESTORE_SEQUENCE:
            args = [payload if a == "P" else bad if a == "BAD" else a for a in cmd]
            with self.subTest(cmd=" ".join(cmd)):
                self.assertEqual(*self.on_both(*args))
        for ttl in self.on_both("PTTL", "r3"):
            self.assertTrue(99000 <= int(ttl[1:-2]) <= 100000, ttl)

    def test_dump_payloads_cross_between_larder_and_redis(self):
        values = [b"hello", b"12345", b"x" * 1000, bytes(range(256)) * 300, b""]
        for i, value in enumerate(values):
            key = "cross:%d" % i
            with self.subTest(size=len(value)):
                for src, dst in (self.conns, self.conns[::-1]):
                    self.assertEqual(src.call("SET", key, value), b"+OK\r\n")
                    dumped = src.call("DUMP", key)
                    payload = dumped[dumped.index(b"\r\n") + 2:-2]
                    self.assertEqual(dst.call("RESTORE", key, "0", payload, "REPLACE"), b"+OK\r\n")
                    self.assertEqual(dst.call("GET", key), src.call("GET", key))

    def test_info_keyspace_counts_keys_with_a_ttl_as_redis(self):
        def keyspace(conn):
            reply = conn.call("INFO", "keyspace").decode()
            line = next(l for l in reply.split("\r\n") if l.startswith("db0:"))
            return dict(f.split("=") for f in line[len("db0:"):].split(","))

        for c in self.conns:
            c.call("FLUSHALL")
            c.call("SET", "ks:a", "v", "EX", "100")
            c.call("SET", "ks:b", "v", "PX", "300000")
            c.call("SET", "ks:c", "v")
            c.call("SET", "ks:d", "v", "EX", "50")
            c.call("PERSIST", "ks:d")
            c.call("SET", "ks:e", "v", "EX", "50")
            c.call("SET", "ks:e", "w")  # an overwrite drops the TTL
        larder, redis = (keyspace(c) for c in self.conns)
        self.assertEqual((larder["keys"], larder["expires"]), (redis["keys"], redis["expires"]))
        self.assertEqual(larder["expires"], "2")
        # Larder's avg_ttl is exact (Redis's is a running estimate from expiry sampling).
        self.assertTrue(190000 <= int(larder["avg_ttl"]) <= 200000, larder)

    def test_session_sequences_reply_as_redis(self):
        for name, seq in SESSION_SEQUENCES.items():
            self.assert_sequence_on_fresh_connections(seq, sequence=name)

    def test_scan_cursors_parse_as_redis(self):
        for cursor in SCAN_CURSORS:
            with self.subTest(cursor=cursor):
                larder, redis = self.on_both("SCAN", cursor, "COUNT", "1")
                if redis.startswith(b"-"):
                    self.assertEqual(larder, redis)
                else:
                    self.assertTrue(larder.startswith(b"*2\r\n"), larder)

    def test_keys_patterns_match_as_redis(self):
        for c in self.conns:
            for key in GLOB_KEYS:
                c.call("SET", key, "1")
        for pattern in GLOB_PATTERNS:
            with self.subTest(pattern=pattern):
                larder, redis = (sorted(self.larder_keys(c.call("KEYS", pattern)))
                                 for c in self.conns)
                self.assertEqual(larder, redis)

    @staticmethod
    def larder_keys(reply):
        """The keys of a raw KEYS reply (an array of bulk strings)."""
        lines = reply.split(b"\r\n")
        return [lines[i] for i in range(2, len(lines) - 1, 2)]

    def test_http_request_lines_close_the_connection_without_a_reply(self):
        # Cross-protocol scripting: Redis (and Larder) drop a connection that sends "POST" or
        # "Host:" at once, saying nothing.
        for request in (b"POST / HTTP/1.1\r\n", b"*2\r\n$5\r\nHost:\r\n$1\r\nx\r\n"):
            for server in (self.larder, self.redis):
                with self.subTest(request=request, server=type(server).__name__):
                    c = server.raw()
                    try:
                        c.send(request)
                        self.assertTrue(c.closed_by_server())
                        self.assertEqual(c.buf, b"")
                    finally:
                        c.close()
        self.assertIn("Possible SECURITY ATTACK detected", self.larder.read_log())

    def test_a_refused_mset_sets_nothing(self):
        # Larder refuses the empty key (Redis accepts it: docs/operations.md): MSET and MSETNX
        # check every pair before writing one.
        c = self.conns[0]
        c.call("DEL", "ms:a", "ms:b")
        for cmd in ("MSET", "MSETNX"):
            with self.subTest(cmd=cmd):
                self.assertEqual(c.call(cmd, "ms:a", "1", "", "2", "ms:b", "3"),
                                 b"-ERR empty key\r\n")
                self.assertEqual(c.call("EXISTS", "ms:a", "ms:b"), b":0\r\n")
        # A bad pair is refused before MSETNX looks for the keys.
        c.call("SET", "ms:a", "0")
        self.assertEqual(c.call("MSETNX", "ms:a", "1", "", "2"), b"-ERR empty key\r\n")
        c.call("DEL", "ms:a")

    def test_slowlog_redacts_a_password_given_by_config_set(self):
        for c in self.conns:
            with self.subTest(server=c):
                c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
                c.call("SLOWLOG", "RESET")
                try:
                    self.assertEqual(c.call("CONFIG", "SET", "requirepass", "s3cret"),
                                     b"+OK\r\n")
                    c.call("AUTH", "s3cret")
                    logged = c.call("SLOWLOG", "GET", "5")
                finally:
                    c.call("CONFIG", "SET", "requirepass", "", "slowlog-log-slower-than", "10000")
                self.assertNotIn(b"s3cret", logged)
                self.assertIn(b"$11\r\nrequirepass\r\n$10\r\n(redacted)", logged)

    def test_timeout_spares_subscribers_and_monitors(self):
        for server in (self.larder, self.redis):
            with self.subTest(server=type(server).__name__):
                idle, subscriber, monitor = server.raw(), server.raw(), server.raw()
                try:
                    idle.call("CONFIG", "SET", "timeout", "1")
                    subscriber.call("SUBSCRIBE", "ch")
                    monitor.call("MONITOR")
                    self.assertTrue(idle.closed_by_server(timeout=10))
                    self.assertEqual(subscriber.call("PING"),
                                     b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
                    self.assertFalse(monitor.closed_by_server(timeout=0.5))
                finally:
                    for conn in (idle, subscriber, monitor):
                        conn.close()
                    admin = server.raw()
                    admin.call("CONFIG", "SET", "timeout", "0")
                    admin.close()
        # The shared connections idled meanwhile, and were closed as idle clients.
        for c in self.conns:
            c.close()
        type(self).conns = [self.larder.raw(), self.redis.raw()]

    def test_restore_of_another_type_is_refused_with_an_actionable_error(self):
        self.conns[1].call("DEL", "alist")
        self.conns[1].call("RPUSH", "alist", "a", "b")
        dumped = self.conns[1].call("DUMP", "alist")
        payload = dumped[dumped.index(b"\r\n") + 2:-2]
        reply = self.conns[0].call("RESTORE", "alist", "0", payload)
        self.assertTrue(reply.startswith(b"-ERR DUMP payload holds a Redis list"), reply)
        self.assertIn(b"Larder stores strings only", reply)
        self.assertEqual(self.conns[0].call("EXISTS", "alist"), b":0\r\n")


if __name__ == "__main__":
    unittest.main()
