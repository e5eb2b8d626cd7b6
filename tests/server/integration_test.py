"""Integration tests of larder-server: the real binary, redis-py, redis-cli and raw sockets.
Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v integration_test
(Debian's python3-redis 4.3 is importable only by /usr/bin/python3.)"""
import os
import time
import unittest

from server_harness import ServerProcess, SharedServerCase, encode, wait_for
from integration_robustness import *  # noqa: F401,F403 (more TestCases)
from integration_bitmap import *  # noqa: F401,F403
from integration_client_io import *  # noqa: F401,F403
from integration_client_reply import *  # noqa: F401,F403
from integration_data_path import *  # noqa: F401,F403
from integration_differential import *  # noqa: F401,F403
from integration_lifecycle import *  # noqa: F401,F403
from integration_redis_parity import *  # noqa: F401,F403
from integration_tracking import *  # noqa: F401,F403
from integration_watch import *  # noqa: F401,F403


class CommandsTest(SharedServerCase):
    """Every command on one shared server (RESP2 unless stated)."""

    SERVER_ARGS = ["--unixsocket", "", "--maxclients", "200"]

    # --- connection ---
    def test_ping_echo(self):
        self.assertEqual(self.raw("PING"), b"+PONG\r\n")
        self.assertEqual(self.raw("PING", "hi"), b"$2\r\nhi\r\n")
        self.assertEqual(self.raw("ECHO", "x y"), b"$3\r\nx y\r\n")
        self.assertEqual(self.raw("ping", "a", "b"),
                         b"-ERR wrong number of arguments for 'ping' command\r\n")

    def test_select_quit(self):
        self.assertEqual(self.raw("SELECT", "0"), b"+OK\r\n")
        self.assertEqual(self.raw("SELECT", "1"), b"-ERR DB index is out of range\r\n")
        self.assertEqual(self.raw("SELECT", "x"),
                         b"-ERR value is not an integer or out of range\r\n")
        rc = self.srv.raw()
        self.assertEqual(rc.call("QUIT"), b"+OK\r\n")
        self.assertTrue(rc.closed_by_server())
        rc.close()

    def test_hello_resp3(self):
        rc = self.srv.raw()
        rep = rc.call("HELLO", "3")
        self.assertTrue(rep.startswith(b"%7\r\n$6\r\nserver\r\n$6\r\nlarder\r\n"), rep)
        self.assertIn(b"$5\r\nproto\r\n:3\r\n", rep)
        self.assertIn(b"$4\r\nmode\r\n$10\r\nstandalone\r\n", rep)
        self.assertIn(b"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n", rep)
        self.assertEqual(rc.call("GET", "hello-missing"), b"_\r\n")
        self.assertEqual(rc.call("SET", "hello-k", "v"), b"+OK\r\n")
        self.assertEqual(rc.call("GET", "hello-k"), b"$1\r\nv\r\n")
        self.assertTrue(rc.call("CONFIG", "GET", "port").startswith(b"%1\r\n"))
        self.assertEqual(rc.call("RESET"), b"+RESET\r\n")
        self.assertEqual(rc.call("GET", "hello-missing"), b"$-1\r\n")
        self.assertTrue(rc.call("HELLO", "2").startswith(b"*14\r\n"))
        self.assertEqual(rc.call("HELLO", "4"), b"-NOPROTO unsupported protocol version\r\n")
        rep = rc.call("HELLO", "3", "AUTH", "default", "any", "SETNAME", "me")
        self.assertTrue(rep.startswith(b"%7"), rep)
        self.assertEqual(rc.call("CLIENT", "GETNAME"), b"$2\r\nme\r\n")
        rc.close()

    def test_client(self):
        rc = self.srv.raw()
        cid = int(rc.call("CLIENT", "ID")[1:-2])
        self.assertEqual(rc.call("CLIENT", "GETNAME"), b"$-1\r\n")
        self.assertEqual(rc.call("CLIENT", "SETNAME", "worker1"), b"+OK\r\n")
        self.assertEqual(rc.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py"), b"+OK\r\n")
        self.assertEqual(rc.call("CLIENT", "SETINFO", "LIB-VER", "8.0"), b"+OK\r\n")
        # Redis 7.2's rule: a value that would break CLIENT LIST's fields is refused.
        self.assertEqual(rc.call("CLIENT", "SETINFO", "lib-name", "x\nid=1 name=fake"),
                         b"-ERR lib-name cannot contain spaces, newlines or special "
                         b"characters.\r\n")
        info = rc.call("CLIENT", "INFO")
        self.assertIn(b"id=%d " % cid, info)
        self.assertIn(b"name=worker1 ", info)
        self.assertIn(b"lib-name=redis-py lib-ver=8.0", info)
        self.assertIn(b"name=worker1", self.c("CLIENT", "LIST"))
        self.assertTrue(rc.call("CLIENT", "FOO").startswith(b"-ERR unknown subcommand 'FOO'"))
        self.assertEqual(self.raw("CLIENT", "KILL", "ID", str(cid)), b":1\r\n")
        self.assertTrue(rc.closed_by_server())
        rc.close()

    # --- strings ---
    def test_set_options(self):
        c = self.c
        self.assertTrue(c("SET", "s1", "a"))
        self.assertIsNone(c("SET", "s1", "b", "NX"))
        self.assertEqual(c("GET", "s1"), b"a")
        self.assertTrue(c("SET", "s1", "b", "XX"))
        self.assertIsNone(c("SET", "s1-missing", "b", "XX"))
        self.assertEqual(self.raw("SET", "s1", "c", "GET"), b"$1\r\nb\r\n")
        self.assertEqual(self.raw("SET", "s1-new", "c", "GET"), b"$-1\r\n")
        self.assertTrue(c("SET", "s2", "v", "EX", "100"))
        self.assertTrue(98000 < c("PTTL", "s2") <= 100000)
        self.assertTrue(c("SET", "s2", "w", "KEEPTTL"))
        self.assertGreater(c("TTL", "s2"), 90)
        self.assertTrue(c("SET", "s2", "w"))
        self.assertEqual(c("TTL", "s2"), -1)
        self.assertTrue(c("SET", "s3", "v", "PX", "100000"))
        self.assertTrue(c("SET", "s3", "v", "EXAT", str(int(time.time()) + 100)))
        self.assertTrue(c("SET", "s3", "v", "PXAT", str(int(time.time() * 1000) + 100000)))
        self.assertGreater(c("TTL", "s3"), 90)
        self.assertEqual(self.raw("SET", "s4", "v", "EX", "0"),
                         b"-ERR invalid expire time in 'set' command\r\n")
        self.assertEqual(self.raw("SET", "s4", "v", "EX", "ten"),
                         b"-ERR value is not an integer or out of range\r\n")
        self.assertEqual(self.raw("SET", "s4", "v", "NX", "XX"), b"-ERR syntax error\r\n")
        self.assertEqual(self.raw("SET", "s4", "v", "EX", "1", "PX", "1"), b"-ERR syntax error\r\n")
        self.assertEqual(self.raw("SET", "s4", "v", "BOGUS"), b"-ERR syntax error\r\n")
        self.assertEqual(self.raw("SET", "s4"),
                         b"-ERR wrong number of arguments for 'set' command\r\n")

    def test_string_family(self):
        c = self.c
        self.assertEqual(c("SETNX", "sf1", "a"), 1)
        self.assertEqual(c("SETNX", "sf1", "b"), 0)
        self.assertTrue(c("SETEX", "sf2", "100", "x"))
        self.assertGreater(c("TTL", "sf2"), 90)
        self.assertEqual(self.raw("SETEX", "sf2", "-1", "x"),
                         b"-ERR invalid expire time in 'setex' command\r\n")
        self.assertTrue(c("PSETEX", "sf3", "100000", "y"))
        self.assertGreater(c("PTTL", "sf3"), 90000)
        self.assertEqual(c("GETEX", "sf3", "PERSIST"), b"y")
        self.assertEqual(c("TTL", "sf3"), -1)
        self.assertEqual(c("GETEX", "sf3", "EX", "50"), b"y")
        self.assertTrue(40 < c("TTL", "sf3") <= 50)
        self.assertIsNone(c("GETEX", "sf-missing"))
        self.assertEqual(c("GETDEL", "sf3"), b"y")
        self.assertEqual(c("EXISTS", "sf3"), 0)
        self.assertTrue(c("MSET", "m1", "1", "m2", "2"))
        self.assertEqual(c("MGET", "m1", "nope", "m2"), [b"1", None, b"2"])
        self.assertEqual(c("MSETNX", "m3", "3", "m1", "x"), 0)
        self.assertEqual(c("EXISTS", "m3"), 0)
        self.assertEqual(c("MSETNX", "m3", "3", "m4", "4"), 1)
        self.assertEqual(self.raw("MSET", "a", "b", "c"),
                         b"-ERR wrong number of arguments for 'mset' command\r\n")
        c("SET", "gr", "Hello World")
        self.assertEqual(c("STRLEN", "gr"), 11)
        self.assertEqual(c("STRLEN", "nope"), 0)
        self.assertEqual(c("GETRANGE", "gr", "0", "4"), b"Hello")
        self.assertEqual(c("GETRANGE", "gr", "-5", "-1"), b"World")
        self.assertEqual(c("GETRANGE", "gr", "-1", "-5"), b"")
        self.assertEqual(c("GETRANGE", "gr", "5", "100"), b" World")
        self.assertEqual(c("GETRANGE", "nope", "0", "-1"), b"")
        self.assertEqual(c("APPEND", "ap", "ab"), 2)
        self.assertEqual(c("APPEND", "ap", "cd"), 4)
        self.assertEqual(c("GET", "ap"), b"abcd")
        self.assertEqual(c("SETRANGE", "sr", "3", "xy"), 5)
        self.assertEqual(c("GET", "sr"), b"\x00\x00\x00xy")
        self.assertEqual(c("SETRANGE", "sr", "0", "ab"), 5)
        self.assertEqual(c("GET", "sr"), b"ab\x00xy")
        self.assertEqual(self.raw("SETRANGE", "sr", "-1", "x"), b"-ERR offset is out of range\r\n")

    def test_incr_decr(self):
        c = self.c
        self.assertEqual(c("INCR", "cnt"), 1)
        self.assertEqual(c("INCRBY", "cnt", "10"), 11)
        self.assertEqual(c("DECR", "cnt"), 10)
        self.assertEqual(c("DECRBY", "cnt", "20"), -10)
        c("SET", "cnt2", "9223372036854775807")
        self.assertEqual(self.raw("INCR", "cnt2"),
                         b"-ERR increment or decrement would overflow\r\n")
        c("SET", "cnt3", "abc")
        self.assertEqual(self.raw("INCR", "cnt3"),
                         b"-ERR value is not an integer or out of range\r\n")
        self.assertEqual(self.raw("INCRBY", "cnt", "1.5"),
                         b"-ERR value is not an integer or out of range\r\n")

    # --- keys ---
    def test_del_exists_type(self):
        c = self.c
        c("MSET", "d1", "1", "d2", "2", "d3", "3")
        self.assertEqual(c("EXISTS", "d1", "d1", "d2", "nope"), 3)
        self.assertEqual(c("DEL", "d1", "nope"), 1)
        self.assertEqual(c("UNLINK", "d2", "d3"), 2)
        self.assertEqual(c("EXISTS", "d1", "d2", "d3"), 0)
        c("SET", "t1", "x")
        self.assertEqual(self.raw("TYPE", "t1"), b"+string\r\n")
        self.assertEqual(self.raw("TYPE", "nope"), b"+none\r\n")

    def test_expire_family(self):
        c = self.c
        c("SET", "e1", "v")
        self.assertEqual(c("TTL", "e1"), -1)
        self.assertEqual(c("TTL", "nope"), -2)
        self.assertEqual(c("PTTL", "nope"), -2)
        self.assertEqual(c("EXPIRE", "e1", "100", "XX"), 0)
        self.assertEqual(c("EXPIRE", "e1", "100", "NX"), 1)
        self.assertEqual(c("EXPIRE", "e1", "50", "GT"), 0)
        self.assertEqual(c("EXPIRE", "e1", "200", "GT"), 1)
        self.assertEqual(c("EXPIRE", "e1", "300", "LT"), 0)
        self.assertEqual(c("PEXPIRE", "e1", "150000", "LT"), 1)
        self.assertTrue(140 < c("TTL", "e1") <= 150)
        at = int(time.time()) + 500
        self.assertEqual(c("EXPIREAT", "e1", str(at)), 1)
        self.assertEqual(c("EXPIRETIME", "e1"), at)
        self.assertEqual(c("PEXPIREAT", "e1", str(at * 1000 + 7)), 1)
        self.assertEqual(c("PEXPIRETIME", "e1"), at * 1000 + 7)
        self.assertEqual(c("EXPIRETIME", "nope"), -2)
        self.assertEqual(c("PERSIST", "e1"), 1)
        self.assertEqual(c("PERSIST", "e1"), 0)
        self.assertEqual(c("EXPIRETIME", "e1"), -1)
        self.assertEqual(c("EXPIRE", "nope", "10"), 0)
        self.assertEqual(self.raw("EXPIRE", "e1", "ten"),
                         b"-ERR value is not an integer or out of range\r\n")
        self.assertEqual(c("PEXPIRE", "e1", "50"), 1)
        wait_for(lambda: c("GET", "e1") is None, timeout=30)
        c("SET", "e2", "v")
        self.assertEqual(c("EXPIRE", "e2", "-1"), 1)
        self.assertEqual(c("EXISTS", "e2"), 0)

    def test_touch_object_memory(self):
        c, raw = self.c, self.raw
        c("SET", "o1", "value")
        self.assertEqual(raw("OBJECT", "FREQ", "o1"), b":0\r\n")
        self.assertEqual(c("TOUCH", "o1", "nope"), 1)
        c("GET", "o1")
        self.assertEqual(raw("OBJECT", "FREQ", "o1"), b":2\r\n")
        self.assertEqual(raw("OBJECT", "ENCODING", "o1"), b"$3\r\nraw\r\n")
        self.assertEqual(raw("OBJECT", "REFCOUNT", "o1"), b":1\r\n")
        self.assertEqual(raw("OBJECT", "IDLETIME", "o1"), b":0\r\n")
        self.assertEqual(raw("OBJECT", "ENCODING", "nope"), b"$-1\r\n")
        self.assertGreaterEqual(int(raw("MEMORY", "USAGE", "o1")[1:]), 7)
        self.assertEqual(raw("MEMORY", "USAGE", "nope"), b"$-1\r\n")

    def test_memory_purge_unmaps_the_value_files(self):
        c = self.c
        value = b"m" * (1 << 20)
        c("SET", "mapped", value)
        c("SAVE")  # written to its file: a GET of a cached value then reads the file's mapping
        maps = "/proc/%d/maps" % c("INFO", "server")["process_id"]

        def value_file_mappings():
            with open(maps) as f:
                return sum("/values/" in line for line in f)
        self.assertEqual(c("GET", "mapped"), value)
        self.assertGreater(value_file_mappings(), 0)
        memory = c("INFO", "memory")
        self.assertLess(memory["used_memory"], memory["used_memory_rss"])
        self.assertEqual(self.raw("MEMORY", "PURGE"), b"+OK\r\n")
        self.assertEqual(value_file_mappings(), 0)
        self.assertEqual(c("GET", "mapped"), value)

    def test_scan_keys_rename(self):
        c = self.c
        for i in range(50):
            c("SET", "scan:%d" % i, "v")
        seen, cursor = set(), 0
        while True:
            cursor, keys = c("SCAN", cursor, "MATCH", "scan:*", "COUNT", "7")
            seen.update(keys)
            if int(cursor) == 0:
                break
        self.assertEqual(seen, {b"scan:%d" % i for i in range(50)})
        self.assertEqual(c("SCAN", "0", "TYPE", "hash")[1], [])
        self.assertEqual(self.raw("SCAN", "x"), b"-ERR invalid cursor\r\n")
        self.assertEqual(len(c("KEYS", "scan:*")), 50)
        self.assertEqual(len(c("KEYS", "scan:1?")), 10)
        self.assertIsNotNone(c("RANDOMKEY"))
        c("SET", "rn1", "v", "EX", "100")
        self.assertTrue(c("RENAME", "rn1", "rn2"))
        self.assertEqual(c("GET", "rn2"), b"v")
        self.assertGreater(c("TTL", "rn2"), 90)
        self.assertEqual(c("EXISTS", "rn1"), 0)
        self.assertEqual(self.raw("RENAME", "nope", "x"), b"-ERR no such key\r\n")
        c("SET", "rn3", "w")
        self.assertEqual(c("RENAMENX", "rn2", "rn3"), 0)
        self.assertEqual(c("RENAMENX", "rn2", "rn4"), 1)

    def test_larder_prefix(self):
        c = self.c
        c("MSET", "p0", "a", "p1", "b", "p3", "d")
        self.assertEqual(c("LARDER.PREFIX", "p0", "p1", "p2", "p3"), 2)
        self.assertEqual(c("LARDER.PREFIX", "nope", "p0"), 0)

    # --- server ---
    def test_info(self):
        info = self.raw("INFO").decode()
        for section in ("Server", "Clients", "Memory", "Persistence", "Stats", "Replication",
                        "CPU", "Keyspace", "Larder"):
            self.assertIn("# " + section, info)
        for field in ("redis_version:7.2.0", "larder_version:", "process_id:%d" % self.srv.proc.pid,
                      "tcp_port:%d" % self.srv.port, "uptime_in_seconds:", "connected_clients:",
                      "total_commands_processed:", "keyspace_hits:", "keyspace_misses:",
                      "role:master", "connected_slaves:0", "live_bytes:", "evicted_keys:",
                      "reinserted_bytes:", "corruptions:", "bytes_written:",
                      "instantaneous_ops_per_sec:", "instantaneous_input_kbps:",
                      "instantaneous_output_kbps:", "used_cpu_sys:", "used_cpu_user:"):
            self.assertIn(field, info)
        # io-threads 0 (the default): half the CPUs the server may run on, 1 or 2.
        io_threads = min(2, max(1, len(os.sched_getaffinity(self.srv.proc.pid)) // 2))
        self.assertIn("io_threads_active:%d\r\n" % io_threads, info)
        self.assertEqual(self.r.config_get("io-threads"), {"io-threads": "0"})
        self.assertEqual(self.r.info("server", "clients").keys() & {"redis_version", "maxclients",
                                                                    "used_cpu_sys"},
                         {"redis_version", "maxclients"})
        repl = self.raw("INFO", "replication").decode()
        self.assertIn("role:master", repl)
        self.assertNotIn("# Server", repl)
        self.c("SET", "ks", "v")
        self.assertRegex(self.raw("INFO", "keyspace").decode(), r"db0:keys=\d+,expires=\d+,avg_ttl=\d+")

    def test_instantaneous_ops_per_sec_follows_the_load(self):
        # The rate averages the server's last 4 once-a-second samples.
        deadline = time.monotonic() + 6
        pipe = self.r.pipeline(transaction=False)
        while time.monotonic() < deadline:
            for _ in range(200):
                pipe.ping()
            pipe.execute()
            if self.r.info("stats")["instantaneous_ops_per_sec"] > 100:
                break
        stats = self.r.info("stats")
        self.assertGreater(stats["instantaneous_ops_per_sec"], 100)
        self.assertGreater(stats["instantaneous_input_kbps"], 0)

    def test_config(self):
        c = self.c
        self.assertEqual(c("CONFIG", "GET", "port"), [b"port", str(self.srv.port).encode()])
        self.assertEqual(c("CONFIG", "GET", "maxclients"), [b"maxclients", b"200"])
        self.assertTrue(c("CONFIG", "SET", "maxclients", "300"))
        self.assertEqual(c("CONFIG", "GET", "maxclients"), [b"maxclients", b"300"])
        self.assertTrue(self.raw("CONFIG", "SET", "port", "1").startswith(
            b"-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable"))
        self.assertTrue(self.raw("CONFIG", "SET", "max-disk-bytes", "1gb").startswith(
            b"-ERR CONFIG SET failed (possibly related to argument 'max-disk-bytes')"))
        self.assertTrue(c("CONFIG", "RESETSTAT"))
        self.assertEqual(self.raw("CONFIG", "REWRITE"),
                         b"-ERR The server is running without a config file\r\n")
        self.assertTrue(c("CONFIG", "SET", "maxclients", "200"))

    def test_misc_server(self):
        c = self.c
        t = c("TIME")
        self.assertLess(abs(int(t[0]) - time.time()), 5)
        self.assertLess(abs(int(self.raw("LASTSAVE")[1:]) - time.time()), 3600)
        self.assertTrue(c("SAVE"))
        self.assertEqual(self.raw("BGSAVE"), b"+Background saving started\r\n")
        self.assertEqual(c("WAIT", "1", "0"), 0)
        self.assertIsInstance(c("DBSIZE"), int)

    def test_command(self):
        n = int(self.raw("COMMAND", "COUNT")[1:])
        self.assertGreater(n, 60)
        # LIST names subcommands too ("config|get"), as Redis 7's; COUNT only the commands.
        reply = self.raw("COMMAND", "LIST")
        listed = reply.split(b"\r\n")[2::2]  # the bulks' payloads
        self.assertEqual(len(listed), int(reply[1:reply.index(b"\r\n")]))
        self.assertEqual(len([x for x in listed if b"|" not in x]), n)
        self.assertEqual(listed[:1], [b"ping"])
        self.assertIn(b"config|get", listed)
        info = self.raw("COMMAND", "INFO", "get", "nope")
        self.assertTrue(info.startswith(b"*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*1\r\n+readonly\r\n"
                                        b":1\r\n:1\r\n:1\r\n"), info)
        self.assertTrue(info.endswith(b"$-1\r\n"))
        self.assertTrue(self.raw("COMMAND", "DOCS", "set").startswith(b"*2\r\n$3\r\nset\r\n*0"))
        self.assertIn(b"<malloc version=", self.raw("MEMORY", "MALLOC-STATS"))  # glibc's report
        resp3 = self.srv.raw()
        self.addCleanup(resp3.close)
        resp3.call("HELLO", "3")
        self.assertTrue(resp3.call("MEMORY", "MALLOC-STATS").startswith(b"="))  # verbatim text
        self.assertTrue(self.raw("COMMAND").startswith(b"*%d\r\n*10\r\n$4\r\nping" % n))

    def test_errors_exact(self):
        self.assertEqual(self.raw("FOO", "a", "b"),
                         b"-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n")
        self.assertEqual(self.raw("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
        self.assertEqual(self.raw("GET", "a", "b"),
                         b"-ERR wrong number of arguments for 'get' command\r\n")

    def test_multi_exec(self):
        rc = self.srv.raw()
        self.assertEqual(rc.call("MULTI"), b"+OK\r\n")
        self.assertEqual(rc.call("MULTI"), b"-ERR MULTI calls can not be nested\r\n")
        self.assertEqual(rc.call("SET", "tx1", "1"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("INCR", "tx1"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("GET", "tx1"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("EXEC"), b"*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n")
        self.assertEqual(rc.call("EXEC"), b"-ERR EXEC without MULTI\r\n")
        self.assertEqual(rc.call("MULTI"), b"+OK\r\n")
        self.assertEqual(rc.call("SET", "tx2", "1"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
        self.assertEqual(rc.call("EXEC"),
                         b"-EXECABORT Transaction discarded because of previous errors.\r\n")
        self.assertEqual(rc.call("EXISTS", "tx2"), b":0\r\n")
        self.assertEqual(rc.call("MULTI"), b"+OK\r\n")
        self.assertEqual(rc.call("SET", "tx3", "1"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("DISCARD"), b"+OK\r\n")
        self.assertEqual(rc.call("EXISTS", "tx3"), b":0\r\n")
        rc.close()
        p = self.r.pipeline(transaction=True)
        p.set("tx4", "a").append("tx4", "b").get("tx4")
        self.assertEqual(p.execute(), [True, 2, b"ab"])

    def test_flushdb_dbsize(self):
        with ServerProcess().start() as srv:
            r = srv.client()
            r.mset({"f1": "1", "f2": "2"})
            self.assertEqual(r.dbsize(), 2)
            self.assertTrue(r.execute_command("FLUSHDB"))
            self.assertEqual(r.dbsize(), 0)
            r.set("f3", "3")
            self.assertTrue(r.execute_command("FLUSHALL", "SYNC"))
            self.assertIsNone(r.get("f3"))
            r.close()

    def test_redis_cli(self):
        import subprocess
        cli = ["redis-cli", "-p", str(self.srv.port)]
        out = subprocess.run(cli + ["SET", "cli:k", "hello"], capture_output=True, timeout=20)
        self.assertEqual(out.stdout.strip(), b"OK")
        out = subprocess.run(cli + ["GET", "cli:k"], capture_output=True, timeout=20)
        self.assertEqual(out.stdout.strip(), b"hello")
        cmds = b"".join(encode("SET", "pipe:%d" % i, "val%d" % i) for i in range(1000))
        out = subprocess.run(cli + ["--pipe"], input=cmds, capture_output=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(b"errors: 0, replies: 1000", out.stdout)
        self.assertEqual(self.r.get("pipe:999"), b"val999")
        out = subprocess.run(cli + ["INFO", "server"], capture_output=True, timeout=20)
        self.assertIn(b"redis_version:7.2.0", out.stdout)


if __name__ == "__main__":
    unittest.main()
