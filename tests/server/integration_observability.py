"""What operators point at Larder, checked against larder-server and, where the behaviour is
Redis's, against redis-server 7 in the same test: SLOWLOG, the latency monitor, LATENCY
HISTOGRAM, INFO commandstats/latencystats, MONITOR (raw, redis-py and redis-cli), CLIENT PAUSE
(WRITE and ALL, replies kept in order), the Prometheus endpoint (checked by `promtool check
metrics`), `redis-cli --stat`, the new string and keyspace commands through redis-py and
redis-cli in RESP2 and RESP3 (INFO's layout and redis_exporter: integration_monitoring)."""
import re
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from server_harness import RedisProcess, ServerProcess, encode, free_port, wait_for


def stop_when_done(test, proc):
    """Kills the subprocess (and closes its pipe) when the test ends."""
    def stop():
        proc.kill()
        proc.wait()
        proc.stdout.close()
    test.addCleanup(stop)


def cmdstat(client, name):
    """INFO commandstats' cmdstat_<name> as redis-py parses it ({"calls": ..., ...}), or None."""
    return client.info("commandstats").get("cmdstat_" + name)


class BothServers(unittest.TestCase):
    """A larder-server and a redis-server 7 for the class; redis-py clients to each."""

    @classmethod
    def setUpClass(cls):
        cls.larder = ServerProcess(["--unixsocket", ""]).start()
        cls.redis = RedisProcess(["--enable-debug-command", "local"]).start()
        cls.servers = [cls.larder, cls.redis]

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            s.cleanup()

    def clients(self, raw=False):
        """A redis-py client (or a RawClient) to each server, closed when the test ends."""
        out = [s.raw() if raw else s.client() for s in self.servers]
        for c in out:
            self.addCleanup(c.close)
        return out


class SlowLogTest(BothServers):
    def test_entries_keep_arguments_as_redis_does(self):
        for c in self.clients():
            c.config_set("slowlog-log-slower-than", 0)
            c.config_set("slowlog-max-len", 4)
            c.slowlog_reset()
            c.client_setname("slow-one")
            c.set("s:" + "k" * 200, "v")
            c.execute_command("MSET", *["a%d" % i for i in range(40)])
            c.set("s:big", b"z" * 70000)  # SET may give its value's buffer to the engine
            c.get("s:x")
        larder, redis = (c.slowlog_get(10) for c in self.clients())
        self.assertEqual(len(larder), 4)  # slowlog-max-len
        self.assertEqual([e["command"] for e in larder], [e["command"] for e in redis])
        for entry in larder:
            self.assertGreaterEqual(entry["duration"], 0)
            self.assertGreater(entry["start_time"], time.time() - 60)
        args = [e["command"] for e in larder]
        self.assertIn(b"z" * 128 + b"... (69872 more bytes)", args[1])
        self.assertIn(b"... (10 more arguments)", args[2])
        self.assertIn(b"... (74 more bytes)", args[3])
        for c in self.clients():
            c.config_set("slowlog-max-len", 128)

    def test_raw_entry_shape_matches_redis_in_resp2_and_resp3(self):
        for proto in (2, 3):
            conns = [s.raw() for s in self.servers]
            for c in conns:
                self.addCleanup(c.close)
                c.call("HELLO", str(proto))
                c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
                c.call("CONFIG", "SET", "slowlog-max-len", "10")
                c.call("SLOWLOG", "RESET")
                c.call("CLIENT", "SETNAME", "shape")
                c.call("GET", "nothing")
            larder, redis = (c.call("SLOWLOG", "GET", "1") for c in conns)

            def shape(reply):
                # id, timestamp, duration, [args], "ip:port", "name": without the numbers and
                # the client's port
                reply = re.sub(rb":\d+\r\n", b":N\r\n", reply)
                return re.sub(rb"127\.0\.0\.1:\d+", b"ADDR", reply)

            self.assertEqual(shape(larder), shape(redis), proto)
            self.assertIn(b"shape", larder)

    def test_negative_threshold_logs_nothing(self):
        for c in self.clients():
            c.config_set("slowlog-log-slower-than", -1)
            c.slowlog_reset()
            c.set("x", "1")
            self.assertEqual(c.slowlog_len(), 0)


class LatencyTest(BothServers):
    def test_latency_monitor_records_commands_over_the_threshold(self):
        larder, redis = self.clients()
        larder.config_set("latency-monitor-threshold", 1)
        redis.config_set("latency-monitor-threshold", 1)
        for c in (larder, redis):
            c.execute_command("LATENCY", "RESET")
        larder.set("big", b"x" * (64 << 20))  # 64 MiB: well over a millisecond to store
        redis.execute_command("DEBUG", "SLEEP", "0.01")
        wait_for(lambda: larder.execute_command("LATENCY", "LATEST"))
        for c, event in ((larder, b"command"), (redis, b"command")):
            latest = c.execute_command("LATENCY", "LATEST")
            self.assertEqual(latest[0][0], event)
            self.assertEqual(len(latest[0]), 4)
            self.assertGreaterEqual(latest[0][3], latest[0][2])
            history = c.execute_command("LATENCY", "HISTORY", "command")
            self.assertEqual(len(history[0]), 2)
            self.assertEqual(c.execute_command("LATENCY", "RESET", "command", "nope"), 1)
            self.assertEqual(c.execute_command("LATENCY", "LATEST"), [])
        self.assertIn(b"command", larder.execute_command("LATENCY", "DOCTOR"))

    def test_histogram_has_redis_shape(self):
        conns = [s.raw() for s in self.servers]
        for c in conns:
            self.addCleanup(c.close)
            c.call("HELLO", "3")
            c.call("CONFIG", "RESETSTAT")
            c.call("SET", "h", "v")
        larder, redis = (re.sub(rb":\d+\r\n", b":N\r\n", c.call("LATENCY", "HISTOGRAM", "set"))
                         for c in conns)
        # %1 $3 set %2 calls :1 histogram_usec %<buckets> ...: the bucket counts may differ
        self.assertEqual(larder.split(b"histogram_usec")[0], redis.split(b"histogram_usec")[0])


class CommandStatsTest(BothServers):
    def test_calls_failures_and_rejections_count_as_in_redis(self):
        for c in self.clients():
            c.config_resetstat()
            c.set("cs", "abc")
            c.get("cs")
            c.get("cs")
            with self.assertRaises(Exception):
                c.incr("cs")  # INCRBY (redis-py's INCR), which fails: not an integer
            with self.assertRaises(Exception):
                c.execute_command("GET")  # rejected: arity
        larder, redis = self.clients()
        for name in ("set", "get", "incrby"):
            mine, theirs = cmdstat(larder, name), cmdstat(redis, name)
            for field in ("calls", "rejected_calls", "failed_calls"):
                self.assertEqual(mine[field], theirs[field], (name, field))
        self.assertIn("latency_percentiles_usec_get", larder.info("latencystats"))
        self.assertNotIn("cmdstat_get", larder.info("default"))
        everything = larder.execute_command("INFO", "everything")
        self.assertIn("cmdstat_get", str(everything))

    def test_error_replies_count_by_code_as_in_redis(self):
        conns = [s.raw() for s in self.servers]
        for c in conns:
            self.addCleanup(c.close)
            c.call("CONFIG", "RESETSTAT")
            c.call("SET", "es", "abc")
            c.call("INCR", "es")  # ERR not an integer
            c.call("NOSUCHCOMMAND")  # ERR unknown command
            c.call("GET")  # ERR wrong number of arguments
            c.call("EXEC")  # ERR EXEC without MULTI
            c.call("MULTI")
            c.call("GET")  # queued with an error: EXECABORT at EXEC
            c.call("EXEC")
            c.call("CONFIG", "SET", "requirepass", "pw")
            c.call("CLIENT", "SETNAME", "x y")  # ERR Client names cannot contain spaces...
            anon = self.servers[conns.index(c)].raw()
            anon.call("GET", "es")  # NOAUTH
            anon.close()
            c.call("AUTH", "pw")
            c.call("CONFIG", "SET", "requirepass", "")
        larder, redis = (c.call("INFO", "errorstats") for c in conns)
        self.assertEqual(larder, redis)
        self.assertIn(b"errorstat_NOAUTH:count=1", larder)
        self.assertIn(b"errorstat_EXECABORT:count=1", larder)
        totals = [int(re.search(rb"total_error_replies:(\d+)", c.call("INFO", "stats")).group(1))
                  for c in conns]
        self.assertEqual(totals[0], totals[1])
        self.assertIn(b"# Errorstats", conns[0].call("INFO"))
        conns[0].call("CONFIG", "RESETSTAT")
        self.assertNotIn(b"errorstat_", conns[0].call("INFO", "errorstats"))


class MonitorTest(BothServers):
    SCRIPT = [["SET", "m:k", b'a"b\x01\n'], ["SET", "m:big", b"y" * 70000], ["GET", "m:k"],
              ["AUTH", "pw"],
              ["HELLO", "2", "AUTH", "default", "pw"], ["MULTI"], ["INCR", "m:n"], ["EXEC"],
              ["CLIENT", "LIST"], ["CLIENT", "SETNAME", "mon"], ["CONFIG", "GET", "port"],
              ["PING"]]
    # admin commands and subcommands are not fed, as in Redis (CLIENT SETNAME is, LIST is not)
    HIDDEN = 2

    def monitored_lines(self, server):
        mon = server.raw()
        self.addCleanup(mon.close)
        self.assertEqual(mon.call("MONITOR"), b"+OK\r\n")
        other = server.raw()
        self.addCleanup(other.close)
        for cmd in self.SCRIPT:
            other.call(*cmd)
        lines = [mon.reply() for _ in range(len(self.SCRIPT) - self.HIDDEN)]
        # "+<time> [0 127.0.0.1:<port>] ..." -> the part after the address
        return [line.split(b"] ", 1)[1] for line in lines], lines[0]

    def test_lines_match_redis(self):
        (larder, first), (redis, _) = (self.monitored_lines(s) for s in self.servers)
        self.assertEqual(larder, redis)
        self.assertEqual(larder[-2:], [b'"CLIENT" "SETNAME" "mon"\r\n', b'"PING"\r\n'])
        self.assertRegex(first, rb"^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] ")

    def test_resp3_feed_lines_stay_simple_strings(self):
        # RESP3 has no push type for MONITOR: Redis sends the same "+..." lines, and
        # `redis-cli -3 monitor` reads them as such.
        for server in self.servers:
            with self.subTest(server=type(server).__name__):
                mon = server.raw()
                self.addCleanup(mon.close)
                self.assertTrue(mon.call("HELLO", "3").startswith(b"%"))
                self.assertEqual(mon.call("MONITOR"), b"+OK\r\n")
                other = server.raw()
                self.addCleanup(other.close)
                other.call("PING")
                line = mon.reply()
                self.assertTrue(line.startswith(b"+") and line.endswith(b'"PING"\r\n'), line)

    def test_redis_py_and_redis_cli_read_the_feed(self):
        client = self.larder.client()
        self.addCleanup(client.close)
        with client.monitor() as m:
            self.larder.client().set("py:k", "v")
            self.assertEqual(m.next_command()["command"], "SET py:k v")
        cli = subprocess.Popen(["redis-cli", "-p", str(self.larder.port), "MONITOR"],
                               stdout=subprocess.PIPE)
        stop_when_done(self, cli)
        self.assertEqual(cli.stdout.readline().strip(), b"OK")
        self.assertIn(b"flags=O", client.execute_command("CLIENT", "LIST"))
        client.get("cli:k")
        # CLIENT LIST came first, but as an admin subcommand it is not in the feed
        self.assertTrue(cli.stdout.readline().endswith(b'"GET" "cli:k"\n'))


class ClientPauseTest(BothServers):
    def held(self, conn, timeout):
        """True if no reply arrives within `timeout` seconds."""
        conn.sock.settimeout(timeout)
        try:
            return not conn.sock.recv(1, socket.MSG_PEEK)
        except socket.timeout:
            return True
        finally:
            conn.sock.settimeout(10)

    def test_write_pause_holds_writes_in_order_and_serves_reads(self):
        for server in self.servers:
            with self.subTest(server=type(server).__name__):
                admin, app = server.raw(), server.raw()
                self.addCleanup(admin.close)
                self.addCleanup(app.close)
                app.call("SET", "p:x", "1")
                self.assertEqual(admin.call("CLIENT", "PAUSE", "20000", "WRITE"), b"+OK\r\n")
                self.assertEqual(app.call("GET", "p:x"), b"$1\r\n1\r\n")
                app.send(encode("SET", "p:x", "5") + encode("GET", "p:x") + encode("INCR", "p:x"))
                self.assertTrue(self.held(app, 0.3))
                self.assertEqual(admin.call("CLIENT", "UNPAUSE"), b"+OK\r\n")
                self.assertEqual([app.reply() for _ in range(3)],
                                 [b"+OK\r\n", b"$1\r\n5\r\n", b":6\r\n"])

    def test_pause_answers_once_the_writes_already_running_have_ended(self):
        # Redis runs one command at a time, so once CLIENT PAUSE has answered, every write that
        # began before it has ended. Larder's writes run on engine threads; its PAUSE waits for
        # them. A 32 MiB SET synced to disk (wal-sync) runs long enough to be caught running,
        # and INFO counts a command once it has run.
        durable = ServerProcess(["--unixsocket", "", "--wal", "yes", "--wal-sync", "yes"]).start()
        self.addCleanup(durable.cleanup)
        value = b"v" * (32 << 20)
        for server in (durable, self.redis):
            with self.subTest(server=type(server).__name__):
                admin = server.raw()
                self.addCleanup(admin.close)
                writers = [server.raw() for _ in range(2)]
                for w in writers:
                    self.addCleanup(w.close)
                ids = [w.call("CLIENT", "ID")[1:-2].decode() for w in writers]

                def set_calls():
                    m = re.search(rb"cmdstat_set:calls=(\d+)", admin.call("INFO", "commandstats"))
                    return int(m.group(1)) if m else 0

                def began():
                    listed = admin.call("CLIENT", "LIST", "ID", *ids).decode().splitlines()
                    lines = [l for l in listed if l.startswith("id=")]
                    return len(lines) == len(ids) and all(" cmd=set " in l for l in lines)

                before = set_calls()
                for i, w in enumerate(writers):
                    w.send(encode("SET", "pause:w%d" % i, value))
                wait_for(began, interval=0.001)
                self.assertEqual(admin.call("CLIENT", "PAUSE", "30000", "WRITE"), b"+OK\r\n")
                self.assertEqual(set_calls(), before + len(writers))
                self.assertEqual(admin.call("CLIENT", "UNPAUSE"), b"+OK\r\n")
                self.assertEqual([w.reply() for w in writers], [b"+OK\r\n"] * len(writers))

    def test_all_pause_holds_every_command_until_it_ends(self):
        # Nothing ends an ALL pause early (CLIENT UNPAUSE is held too): the reply cannot come
        # before the pause's end, however slow the machine.
        for server in self.servers:
            with self.subTest(server=type(server).__name__):
                admin, app = server.raw(), server.raw()
                self.addCleanup(admin.close)
                self.addCleanup(app.close)
                start = time.monotonic()
                self.assertEqual(admin.call("CLIENT", "PAUSE", "700", "ALL"), b"+OK\r\n")
                self.assertEqual(app.call("PING"), b"+PONG\r\n")
                # The pause ends at a whole millisecond of the server's clock: up to 1 ms
                # before 700 ms after the moment it was set.
                self.assertGreaterEqual(time.monotonic() - start, 0.699)


class MetricsEndpointTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.larder = ServerProcess(["--unixsocket", "", "--metrics-port",
                                    str(cls.metrics_port)]).start()

    @classmethod
    def tearDownClass(cls):
        cls.larder.cleanup()

    def url(self, path="/metrics"):
        return "http://127.0.0.1:%d%s" % (self.metrics_port, path)

    def scrape(self):
        with urllib.request.urlopen(self.url(), timeout=10) as r:
            self.assertEqual(r.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
            return r.read().decode()

    def sample(self, text, name):
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None

    def test_promtool_accepts_the_page(self):
        c = self.larder.client()
        self.addCleanup(c.close)
        c.set("m:a", b"x" * 4096)
        c.get("m:a")
        c.get("m:missing")
        page = self.scrape()
        check = subprocess.run(["promtool", "check", "metrics"], input=page.encode(),
                               capture_output=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout + check.stderr, b"")  # no lint complaint either
        for name in ("larder_max_disk_bytes", "larder_disk_bytes", "larder_hits_total",
                     "larder_misses_total", "larder_evicted_keys_total", "larder_corruptions_total",
                     "larder_bytes_read_total", "larder_bytes_written_total",
                     "larder_pubsub_channels", "larder_pubsub_patterns"):
            self.assertIsNotNone(self.sample(page, name), name)
        self.assertIn('larder_command_duration_seconds_bucket{cmd="get",le="+Inf"}', page)
        c.execute_command("CONFIG", "RESETSTAT")
        with self.assertRaises(Exception):
            c.execute_command("NOSUCHCOMMAND")
        page = self.scrape()
        self.assertEqual(self.sample(page, 'larder_errors_total{code="ERR"}'), 1)
        self.assertEqual(self.sample(page, "larder_error_replies_total"), 1)

    def test_figures_follow_the_traffic_and_agree_with_info(self):
        c = self.larder.client()
        self.addCleanup(c.close)
        c.set("m:b", "v")
        before = self.sample(self.scrape(), "larder_hits_total")
        for _ in range(5):
            c.get("m:b")
        page = self.scrape()
        self.assertEqual(self.sample(page, "larder_hits_total"), before + 5)
        calls = self.sample(page, 'larder_command_calls_total{cmd="get"}')
        self.assertEqual(calls, cmdstat(c, "get")["calls"])
        self.assertEqual(self.sample(page, "larder_max_disk_bytes"), 256 << 20)

    def test_other_requests_get_http_errors(self):
        for path, method, status in (("/", "GET", 404), ("/metrics", "POST", 405)):
            req = urllib.request.Request(self.url(path), method=method, data=b"" if method == "POST" else None)
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(e.exception.code, status)
        with socket.create_connection(("127.0.0.1", self.metrics_port), timeout=10) as s:
            s.sendall(b"\x00garbage\r\n\r\n")
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 400 "))
        self.assertEqual(self.larder.client().ping(), True)


class RedisCliTest(BothServers):
    """The new commands through redis-cli (RESP2 and -3) print the same on both servers."""

    COMMANDS = [["SET", "c:f", "1.5"], ["INCRBYFLOAT", "c:f", "2.25"], ["SET", "c:a", "ohmytext"],
                ["SET", "c:b", "mynewtext"], ["LCS", "c:a", "c:b"],
                ["LCS", "c:a", "c:b", "IDX", "WITHMATCHLEN"], ["COPY", "c:a", "c:c"],
                ["GET", "c:c"], ["DUMP", "c:a"], ["DEL", "c:d"], ["SLOWLOG", "LEN"],
                ["LATENCY", "LATEST"], ["CLIENT", "PAUSE", "0", "WRITE"], ["CLIENT", "UNPAUSE"]]

    def cli(self, server, *args):
        r = subprocess.run(["redis-cli", "-p", str(server.port)] + list(args),
                           capture_output=True, timeout=30)
        return r.stdout

    def test_outputs_match_redis(self):
        for s in self.servers:
            self.cli(s, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
        for proto in ([], ["-3"]):
            for cmd in self.COMMANDS:
                with self.subTest(proto=proto, cmd=cmd):
                    larder, redis = (self.cli(s, *proto, *cmd) for s in self.servers)
                    self.assertEqual(larder, redis)
        dumped = self.larder.client().dump("c:a")
        self.assertEqual(self.redis.client().restore("c:r", 0, dumped), b"OK")
        self.assertEqual(self.redis.client().get("c:r"), b"ohmytext")

    def test_stat_mode_reads_info(self):
        proc = subprocess.Popen(["redis-cli", "-p", str(self.larder.port), "--stat", "-i", "0.2"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        stop_when_done(self, proc)
        header = proc.stdout.readline() + proc.stdout.readline()
        row = proc.stdout.readline()
        self.assertIn(b"keys", header)
        self.assertIn(b"requests", header)
        self.assertRegex(row, rb"^\s*\d+\s+\S+\s+\d+\s+\d+\s+\d+ ")



if __name__ == "__main__":
    unittest.main()
