"""The bitmap commands beside Redis 7, byte for byte, in RESP2 and RESP3: their edges, fixed
here (integration_differential.py draws them at random too). Each sequence runs on fresh keys;
its keyspace events (key misses too) must be Redis's as well."""
import unittest

from server_harness import BesideRedisCase

__all__ = ["BitmapAsRedisTest"]  # imported by integration_test

SEQUENCES = {
    "GETBIT and SETBIT": [
        ["SETBIT", "b", "7", "1"], ["GET", "b"], ["GETBIT", "b", "7"], ["GETBIT", "b", "100"],
        ["SETBIT", "b", "7", "1"], ["SETBIT", "b", "7", "0"], ["SETBIT", "b", "20", "0"],
        ["STRLEN", "b"], ["GETBIT", "nokey", "0"], ["SETBIT", "b", "-1", "1"],
        ["SETBIT", "b", "1", "2"], ["SETBIT", "b", "1", "01"], ["GETBIT", "b", "#1"],
        ["SETBIT", "b", "4294967296", "1"], ["SETBIT", "b", "x", "1"]],
    "SETBIT keeps the expiry": [
        ["SET", "b", "a", "EX", "1000"], ["SETBIT", "b", "0", "1"], ["TTL", "b"]],
    "BITCOUNT": [
        ["SET", "b", "foobar"], ["BITCOUNT", "b"], ["BITCOUNT", "b", "0", "0"],
        ["BITCOUNT", "b", "1", "1"], ["BITCOUNT", "b", "-2", "-1"], ["BITCOUNT", "b", "5", "30"],
        ["BITCOUNT", "b", "1", "1", "BYTE"], ["BITCOUNT", "b", "5", "30", "BIT"],
        ["BITCOUNT", "b", "-5", "-1", "bit"], ["BITCOUNT", "b", "-1", "-5"],
        ["BITCOUNT", "b", "-1", "-5", "FOO"], ["BITCOUNT", "b", "0"],
        ["BITCOUNT", "b", "0", "1", "BIT", "x"], ["BITCOUNT", "b", "a", "1"],
        ["BITCOUNT", "nokey", "a", "b"], ["SET", "e", ""], ["BITCOUNT", "e"]],
    "BITPOS": [
        ["SET", "b", b"\xff\xf0\x00"], ["BITPOS", "b", "0"], ["BITPOS", "b", "1", "2"],
        ["BITPOS", "b", "1", "2", "-1", "BYTE"], ["BITPOS", "b", "1", "7", "15", "BIT"],
        ["SET", "f", b"\xff\xff\xff"], ["BITPOS", "f", "0"], ["BITPOS", "f", "0", "0"],
        ["BITPOS", "f", "0", "0", "-1"], ["BITPOS", "f", "0", "0", "-1", "BIT"],
        ["BITPOS", "nokey", "0"], ["BITPOS", "nokey", "1"], ["BITPOS", "b", "2"],
        ["BITPOS", "b", "1", "a"], ["BITPOS", "b", "1", "0", "a", "bar"],
        ["BITPOS", "b", "1", "0", "1", "BIT", "x"], ["SET", "e", ""], ["BITPOS", "e", "0"],
        ["BITPOS", "b", "0", "5"], ["BITPOS", "b", "1", "-100", "-50"]],
    "BITOP": [
        ["SET", "a", "foobar"], ["SET", "c", "abcdef\x01"], ["BITOP", "AND", "d", "a", "c"],
        ["GET", "d"], ["BITOP", "OR", "d", "a", "c", "nokey"], ["GET", "d"],
        ["BITOP", "XOR", "d", "a", "c"], ["GET", "d"], ["BITOP", "NOT", "d", "a"], ["GET", "d"],
        ["SET", "d", "x", "EX", "100"], ["BITOP", "AND", "d", "a"], ["TTL", "d"],
        ["BITOP", "OR", "d", "nokey", "nokey2"], ["EXISTS", "d"],
        ["BITOP", "NOT", "d", "a", "c"], ["BITOP", "NAND", "d", "a"], ["BITOP", "AND", "d"]],
    "BITFIELD": [
        ["BITFIELD", "f", "SET", "i8", "0", "100", "GET", "u4", "0", "INCRBY", "i5", "#1", "20"],
        ["GET", "f"], ["BITFIELD", "f", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT",
                       "INCRBY", "u2", "102", "5", "OVERFLOW", "FAIL", "INCRBY", "u2", "102", "1"],
        ["BITFIELD", "f", "SET", "u8", "0", "-1", "OVERFLOW", "SAT", "SET", "u8", "8", "-1",
         "SET", "i8", "16", "-1000", "OVERFLOW", "WRAP", "SET", "i8", "24", "200"],
        ["BITFIELD", "f", "INCRBY", "i64", "0", "9223372036854775807",
         "INCRBY", "i64", "0", "9223372036854775807", "GET", "u63", "1"],
        ["BITFIELD", "f", "INCRBY", "i8", "0", "0"],
        ["BITFIELD", "n", "OVERFLOW", "FAIL", "SET", "i8", "0", "1000"], ["EXISTS", "n"],
        ["BITFIELD", "m", "GET", "i8", "0"], ["EXISTS", "m"], ["BITFIELD", "f"],
        ["BITFIELD", "f", "GET", "u64", "0"], ["BITFIELD", "f", "GET", "I8", "0"],
        ["BITFIELD", "f", "GET", "i8"], ["BITFIELD", "f", "OVERFLOW", "bad"],
        ["BITFIELD", "f", "SET", "i8", "0", "x"], ["BITFIELD", "f", "GET", "i8", "-1"],
        ["BITFIELD", "f", "BOGUS", "i8", "0"], ["BITFIELD_RO", "f", "GET", "i16", "#1"],
        ["BITFIELD_RO", "f", "SET", "i8", "0", "1"], ["BITFIELD_RO", "f", "GET", "x", "0"]],
}


class BitmapAsRedisTest(BesideRedisCase):
    def events(self, server, seq, protocol):
        """The replies to `seq` and the keyspace events it caused, from one server."""
        c, sub = server.raw(), server.raw()
        try:
            c.call("FLUSHALL")
            c.call("CONFIG", "SET", "notify-keyspace-events", "KEAm")
            sub.call("PSUBSCRIBE", "__keyspace@0__:*")
            c.call("HELLO", str(protocol))
            replies = [c.call(*cmd) for cmd in seq]
            c.call("PUBLISH", "__keyspace@0__:end", "end")
            events = []
            while not (event := sub.reply()).endswith(b"$3\r\nend\r\n"):
                events.append(event)
            c.call("CONFIG", "SET", "notify-keyspace-events", "")
            return replies, events
        finally:
            c.close()
            sub.close()

    def test_replies_and_events_as_redis(self):
        for protocol in (2, 3):
            for name, seq in SEQUENCES.items():
                with self.subTest(sequence=name, protocol=protocol):
                    (larder, larder_events), (redis, redis_events) = (
                        self.events(s, seq, protocol) for s in (self.larder, self.redis))
                    for cmd, mine, theirs in zip(seq, larder, redis):
                        self.assertEqual(mine, theirs, cmd)
                    self.assertEqual(larder_events, redis_events)


if __name__ == "__main__":
    unittest.main()
