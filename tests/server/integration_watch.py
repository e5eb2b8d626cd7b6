"""WATCH, as Redis 7 runs it: each scenario runs the same steps on larder-server and on Redis 7,
two connections each (A watches, B changes keys behind its back), and every reply must be byte
for byte Redis's: EXEC runs its transaction, or answers a null reply when a watched key was
changed, deleted, expired or flushed since it was watched. Then optimistic locking through
redis-py's own WATCH helper, with clients racing to increment one counter: no update is lost."""
import re
import threading
import time
import unittest

from server_harness import BesideRedisCase, ServerProcess, wait_for

__all__ = ["WatchAsRedisTest", "OptimisticLockingTest"]  # imported by integration_test

# A scenario: steps of (connection, command...), "A" or "B" (or "S", a subscriber), or ("sleep",
# seconds). "k" holds "v" with no expiry when it starts, "m" and "n" are missing, "t" holds "1".
TX = [("A", "MULTI"), ("A", "SET", "k", "tx"), ("A", "EXEC"), ("A", "GET", "k")]
SCENARIOS = {
    "unchanged key: EXEC runs": [("A", "WATCH", "k")] + TX,
    "another client's SET aborts": [("A", "WATCH", "k"), ("B", "SET", "k", "b")] + TX,
    "SET of a missing key aborts": [("A", "WATCH", "m"), ("B", "SET", "m", "1")] + TX,
    "the watcher's own SET aborts": [("A", "WATCH", "k"), ("A", "SET", "k", "x")] + TX,
    "reads change nothing": [("A", "WATCH", "k", "m"), ("B", "GET", "k"), ("B", "EXISTS", "m"),
                             ("B", "TTL", "k"), ("B", "TOUCH", "k"), ("B", "STRLEN", "k")] + TX,
    "DEL aborts": [("A", "WATCH", "k"), ("B", "DEL", "k")] + TX,
    "DEL of a missing key does not": [("A", "WATCH", "m"), ("B", "DEL", "m")] + TX,
    "UNLINK aborts": [("A", "WATCH", "k"), ("B", "UNLINK", "k")] + TX,
    "EXPIRE aborts": [("A", "WATCH", "k"), ("B", "EXPIRE", "k", "100")] + TX,
    "a refused EXPIRE does not": [("A", "WATCH", "k"), ("B", "EXPIRE", "k", "100", "XX")] + TX,
    "PERSIST aborts": [("B", "EXPIRE", "k", "100"), ("A", "WATCH", "k"), ("B", "PERSIST", "k")]
    + TX,
    "PERSIST of no expiry does not": [("A", "WATCH", "k"), ("B", "PERSIST", "k")] + TX,
    "SET NX that sets nothing does not": [("A", "WATCH", "k"), ("B", "SET", "k", "w", "NX")] + TX,
    "SET XX of a missing key does not": [("A", "WATCH", "m"), ("B", "SET", "m", "w", "XX")] + TX,
    "SETNX aborts": [("A", "WATCH", "m"), ("B", "SETNX", "m", "w")] + TX,
    "SETNX that sets nothing does not": [("A", "WATCH", "k"), ("B", "SETNX", "k", "w")] + TX,
    "the same value again aborts": [("A", "WATCH", "k"), ("B", "SET", "k", "v")] + TX,
    "INCR aborts": [("A", "WATCH", "t"), ("B", "INCR", "t")] + TX,
    "APPEND aborts": [("A", "WATCH", "k"), ("B", "APPEND", "k", "x")] + TX,
    "SETRANGE aborts": [("A", "WATCH", "k"), ("B", "SETRANGE", "k", "0", "z")] + TX,
    "INCRBYFLOAT aborts": [("A", "WATCH", "t"), ("B", "INCRBYFLOAT", "t", "0.5")] + TX,
    "GETDEL aborts": [("A", "WATCH", "k"), ("B", "GETDEL", "k")] + TX,
    "GETEX with a time aborts": [("A", "WATCH", "k"), ("B", "GETEX", "k", "EX", "100")] + TX,
    "GETEX alone does not": [("A", "WATCH", "k"), ("B", "GETEX", "k")] + TX,
    "GETSET aborts": [("A", "WATCH", "k"), ("B", "GETSET", "k", "w")] + TX,
    "MSET of the key aborts": [("A", "WATCH", "k"), ("B", "MSET", "t", "2", "k", "w")] + TX,
    "MSETNX that sets nothing does not": [("A", "WATCH", "m"), ("B", "MSETNX", "k", "1", "m", "2")]
    + TX,
    "MSETNX of the key aborts": [("A", "WATCH", "m"), ("B", "MSETNX", "n", "1", "m", "2")] + TX,
    "RENAMENX onto the key aborts": [("A", "WATCH", "m"), ("B", "RENAMENX", "t", "m")] + TX,
    "RENAMENX refused does not": [("A", "WATCH", "k"), ("B", "RENAMENX", "t", "k")] + TX,
    "a key BITFIELD creates unannounced does not": [
        ("A", "WATCH", "m"), ("B", "BITFIELD", "m", "OVERFLOW", "FAIL", "SET", "i8", "0", "999"),
        ("B", "EXISTS", "m")] + TX,
    "SETBIT aborts": [("A", "WATCH", "k"), ("B", "SETBIT", "k", "0", "1")] + TX,
    "SETBIT that changes nothing does not": [("A", "WATCH", "k"), ("B", "SETBIT", "k", "0", "0")]
    + TX,
    "BITOP onto the key aborts": [("A", "WATCH", "m"), ("B", "BITOP", "OR", "m", "k")] + TX,
    "RENAME onto the key aborts": [("A", "WATCH", "k"), ("B", "RENAME", "t", "k")] + TX,
    "RENAME of the key aborts": [("A", "WATCH", "k"), ("B", "RENAME", "k", "m")] + TX,
    "COPY onto the key aborts": [("A", "WATCH", "k"), ("B", "COPY", "t", "k", "REPLACE")] + TX,
    "a COPY refused does not": [("A", "WATCH", "k"), ("B", "COPY", "t", "k")] + TX,
    "another client's transaction aborts": [
        ("A", "WATCH", "k"), ("B", "MULTI"), ("B", "SET", "k", "b"), ("B", "EXEC")] + TX,
    "the transaction's own writes do not": [
        ("A", "WATCH", "k"), ("A", "MULTI"), ("A", "SET", "k", "a"), ("A", "INCR", "t"),
        ("A", "EXEC"), ("A", "MGET", "k", "t")],
    "a key watched twice": [("A", "WATCH", "k", "k"), ("A", "WATCH", "k")] + TX,
    "one of several keys changed aborts": [
        ("A", "WATCH", "m", "t"), ("A", "WATCH", "k"), ("B", "INCR", "t")] + TX,
    "UNWATCH forgets": [("A", "WATCH", "k"), ("A", "UNWATCH"), ("B", "SET", "k", "b")] + TX,
    "UNWATCH queued in MULTI": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "MULTI"), ("A", "UNWATCH"),
        ("A", "SET", "k", "tx"), ("A", "EXEC"), ("A", "GET", "k")],
    "DISCARD forgets": [("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "MULTI"),
                        ("A", "DISCARD")] + TX,
    "EXEC forgets, whatever it answered": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b")] + TX + [("B", "SET", "k", "c")] + TX,
    "an EXECABORT forgets": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "MULTI"), ("A", "NOSUCHCOMMAND"),
        ("A", "EXEC")] + TX,
    "EXEC with arguments forgets": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "MULTI"), ("A", "EXEC", "x")] + TX,
    "EXEC without MULTI keeps the watch": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "EXEC")] + TX,
    "DISCARD without MULTI keeps the watch": [
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"), ("A", "DISCARD")] + TX,
    "WATCH inside MULTI is refused, the transaction goes on": [
        ("A", "MULTI"), ("A", "WATCH", "k"), ("A", "SET", "k", "tx"), ("A", "EXEC")],
    "RESET forgets": [("A", "WATCH", "k"), ("A", "RESET"), ("B", "SET", "k", "b")] + TX,
    "expiry after WATCH aborts": [
        ("B", "PEXPIRE", "k", "700"), ("A", "WATCH", "k"), ("sleep", 1.0)] + TX,
    "a key already expired when watched does not": [
        ("B", "PEXPIRE", "k", "100"), ("sleep", 0.3), ("A", "WATCH", "k"), ("B", "GET", "k")]
    + TX,
    "FLUSHALL of a watched key aborts": [("A", "WATCH", "k"), ("B", "FLUSHALL")] + TX,
    "FLUSHALL with the key missing does not": [("A", "WATCH", "m"), ("B", "FLUSHALL")] + TX,
    "published notifications change nothing": [
        ("B", "CONFIG", "SET", "notify-keyspace-events", "KEA"), ("S", "PSUBSCRIBE", "__key*"),
        ("A", "WATCH", "k", "m"), ("B", "GET", "m"), ("B", "SET", "t", "2"),
        ("B", "CONFIG", "SET", "notify-keyspace-events", "")] + TX,
    "nor do they hide a change": [
        ("B", "CONFIG", "SET", "notify-keyspace-events", "KEA"), ("S", "PSUBSCRIBE", "__key*"),
        ("A", "WATCH", "k"), ("B", "SET", "k", "b"),
        ("B", "CONFIG", "SET", "notify-keyspace-events", "")] + TX,
    "CLIENT LIST flags a changed watch": [
        ("A", "WATCH", "k"), ("A", "CLIENT", "INFO"), ("B", "SET", "k", "b"),
        ("A", "CLIENT", "INFO"), ("A", "MULTI"), ("A", "CLIENT", "INFO"), ("A", "EXEC"),
        ("A", "CLIENT", "INFO")],
}


def only_flags(reply):
    """A CLIENT INFO line cut to its flags (its address, ages and memory differ); any other
    reply as it is."""
    match = re.search(rb"\bid=\d+ .* (flags=\w+) ", reply)
    return match.group(1) if match else reply


class WatchAsRedisTest(BesideRedisCase):
    def run_scenario(self, steps, protocol):
        """The replies of each server to `steps`, on fresh connections A and B."""
        replies = []
        for server in (self.larder, self.redis):
            conns = {"A": server.raw(), "B": server.raw(), "S": server.raw()}
            self.assertEqual(conns["B"].call("FLUSHALL"), b"+OK\r\n")
            conns["B"].call("MSET", "k", "v", "t", "1")
            conns["A"].call("HELLO", str(protocol))
            got = []
            for who, *cmd in steps:
                if who == "sleep":
                    time.sleep(cmd[0])
                else:
                    got.append(only_flags(conns[who].call(*cmd)))
            for c in conns.values():
                c.close()
            replies.append(got)
        return replies

    def test_exec_answers_as_redis_after_every_kind_of_change(self):
        for protocol in (2, 3):
            for name, steps in SCENARIOS.items():
                with self.subTest(scenario=name, protocol=protocol):
                    larder, redis = self.run_scenario(steps, protocol)
                    commands = [" ".join(map(str, s)) for s in steps if s[0] != "sleep"]
                    for command, mine, theirs in zip(commands, larder, redis):
                        self.assertEqual(mine, theirs, command)

    def test_a_changed_key_makes_exec_answer_null_and_run_nothing(self):
        # Pinned apart from the comparison: the scenarios would pass if both servers ignored
        # WATCH.
        for protocol, null in ((2, b"*-1\r\n"), (3, b"_\r\n")):
            larder, _ = self.run_scenario(SCENARIOS["another client's SET aborts"], protocol)
            self.assertEqual(larder[-2:], [null, b"$1\r\nb\r\n"])  # B's value, not "tx"

    def test_info_counts_watching_clients_and_keys(self):
        a, b = self.larder.raw(), self.larder.raw()
        try:
            self.assertEqual(a.call("WATCH", "x", "y"), b"+OK\r\n")
            self.assertEqual(b.call("WATCH", "y"), b"+OK\r\n")
            info = b.call("INFO", "clients")
            self.assertIn(b"watching_clients:2\r\n", info)
            self.assertIn(b"total_watched_keys:2\r\n", info)
            b.call("UNWATCH")
            a.close()  # a closed connection's watches go with it, once the server sees it
            wait_for(lambda: b"watching_clients:0\r\n" in b.call("INFO", "clients"))
            self.assertIn(b"total_watched_keys:0\r\n", b.call("INFO", "clients"))
            # A client whose watched key changed watches nothing more (as Redis 7 drops it).
            self.assertEqual(b.call("WATCH", "x", "y"), b"+OK\r\n")
            self.assertEqual(b.call("SET", "y", "1"), b"+OK\r\n")
            info = b.call("INFO", "clients")
            self.assertIn(b"watching_clients:0\r\n", info)
            self.assertIn(b"total_watched_keys:0\r\n", info)
        finally:
            b.close()


class OptimisticLockingTest(unittest.TestCase):
    """Clients add to one counter by WATCH, GET, MULTI, SET, EXEC, retrying when EXEC answers
    null (redis-py's `transaction` helper): every increment must count once, however they
    interleave. With a WATCH that never fails an EXEC, increments would be lost."""

    CLIENTS, INCREMENTS = 4, 150

    def test_racing_read_modify_write_transactions_lose_no_update(self):
        with ServerProcess(["--unixsocket", ""]).start() as srv:
            first = srv.client()
            first.set("counter", 0)

            def add_one(pipe):
                value = int(pipe.get("counter"))
                pipe.multi()
                pipe.set("counter", value + 1)

            def worker():
                r = srv.client()
                for _ in range(self.INCREMENTS):
                    r.transaction(add_one, "counter")  # retries on WatchError
                r.close()

            threads = [threading.Thread(target=worker) for _ in range(self.CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(int(first.get("counter")), self.CLIENTS * self.INCREMENTS)
            first.close()


if __name__ == "__main__":
    unittest.main()
