"""A client's bytes in and out beside Redis 7: a pipeline sent whole before its replies are
read (also while another client that never reads holds as much input as it may), a slow
download under `timeout`, CLIENT KILL of oneself mid-pipeline, and the pre-AUTH
limits once the password is gone. Each case runs the same raw bytes against both servers."""
import socket
import time
import unittest

from server_harness import RedisProcess, ServerProcess, encode

MiB = 1 << 20


def wait_for_field(admin, client_name, field, at_least, timeout=30):
    """Polls CLIENT LIST until the client named `client_name` shows `field` >= `at_least`;
    returns its fields (the last seen, if the time ran out: the caller's assertion tells)."""
    deadline = time.time() + timeout
    while True:
        listing = admin.call("CLIENT", "LIST").decode()
        line = next(l for l in listing.split("\n") if " name=%s " % client_name in l)
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if int(fields[field]) >= at_least or time.time() > deadline:
            return fields
        time.sleep(0.05)


class ClientIoBesideRedisTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.larder = ServerProcess(["--unixsocket", ""]).start()
        cls.redis = RedisProcess().start()
        cls.servers = (("larder", cls.larder), ("redis", cls.redis))

    @classmethod
    def tearDownClass(cls):
        cls.larder.cleanup()
        cls.redis.cleanup()

    def test_a_pipeline_sent_whole_before_its_replies_are_read(self):
        # redis-py's pipeline().execute() and hiredis batching send every request first: the
        # replies of the GETs pass the server's output pause while the SETs' bytes are still
        # coming. The server must keep reading, or each side waits on the other for ever.
        value = b"v" * MiB
        for name, srv in self.servers:
            with self.subTest(server=name):
                setup = srv.raw()
                for i in range(100):
                    setup.send(encode("SET", f"pipe:g{i}", value))
                for _ in range(100):
                    self.assertEqual(setup.reply(), b"+OK\r\n")
                setup.close()
                rc = srv.raw()
                rc.sock.settimeout(120)  # a deadlock fails here instead of hanging the suite
                request = b"".join(encode("GET", f"pipe:g{i}") for i in range(100))
                request += b"".join(encode("SET", f"pipe:s{i}", value) for i in range(100))
                rc.sock.sendall(request)
                bulk = b"$%d\r\n" % MiB + value + b"\r\n"
                replies = [rc.reply() for _ in range(200)]
                self.assertTrue(all(r == bulk for r in replies[:100]), name)
                self.assertEqual(replies[100:], [b"+OK\r\n"] * 100, name)
                rc.close()

    def test_a_client_that_never_reads_does_not_stop_another_pipeline(self):
        # `hog` pauses its own output (GETs it never reads), then sends request bytes up to its
        # query buffer limit, which the server reads ahead and keeps. The pipeline of another
        # client, sent whole before its replies are read, must still complete: the read-ahead
        # of each client is bounded by its own limit, not by one budget the hog can hold.
        # Sizes in the proportions that matter (the hog near its limit, the other pipeline at half
        # of its own), small enough that moving them is not the test's time.
        big = b"b" * (16 * MiB)
        for name, srv in self.servers:
            with self.subTest(server=name):
                admin = srv.raw()
                self.addCleanup(admin.close)
                self.assertEqual(admin.call("CONFIG", "SET", "client-query-buffer-limit",
                                            "32mb"), b"+OK\r\n")
                self.addCleanup(admin.call, "CONFIG", "SET", "client-query-buffer-limit", "1gb")
                self.assertEqual(admin.call("SET", "hog:big", big), b"+OK\r\n")
                hog = srv.raw()
                self.addCleanup(hog.close)
                hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                hog.call("CLIENT", "SETNAME", "hog")
                hog.sock.sendall(encode("GET", "hog:big") * 3)
                paused = wait_for_field(admin, "hog", "omem", 16 * MiB)  # its output paused
                self.assertGreaterEqual(int(paused["omem"]), 16 * MiB, name)
                hog.sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nh\r\n$%d\r\n" % (50 * MiB) +
                                 b"h" * (30 * MiB))
                # and its input held (all but what the kernel's socket buffers may still hold)
                held = wait_for_field(admin, "hog", "qbuf", 22 * MiB)
                self.assertGreaterEqual(int(held["qbuf"]), 22 * MiB, name)
                rc = srv.raw()
                rc.sock.settimeout(60)  # a stall fails here instead of hanging the suite
                rc.sock.sendall(encode("GET", "hog:big") * 2 +
                                encode("SET", "hog:s1", b"s" * (8 * MiB)) +
                                encode("SET", "hog:s2", b"t" * (8 * MiB)))
                bulk_len = len(b"$%d\r\n" % len(big)) + len(big) + 2
                self.assertEqual([len(rc.reply()) for _ in range(2)], [bulk_len] * 2, name)
                self.assertEqual([rc.reply(), rc.reply()], [b"+OK\r\n"] * 2, name)
                rc.close()
                hog.close()
                self.assertEqual(admin.call("DEL", "hog:big", "hog:s1", "hog:s2"), b":3\r\n")

    def test_client_list_shows_a_partial_request_in_qbuf(self):
        # An operator looking for the client that holds memory: a SET whose 2 MiB of a 4 MiB
        # value arrived shows them in qbuf and tot-mem, as Redis shows them.
        for name, srv in self.servers:
            with self.subTest(server=name):
                admin = srv.raw()
                slow = srv.raw()
                slow.call("CLIENT", "SETNAME", "partial")
                slow.sock.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nqbuf\r\n$%d\r\n" % (4 * MiB) +
                                  b"q" * (2 * MiB))

                f = wait_for_field(admin, "partial", "qbuf", 2 * MiB)
                self.assertGreaterEqual(int(f["qbuf"]), 2 * MiB, (name, f))
                self.assertGreaterEqual(int(f["tot-mem"]), int(f["qbuf"]), (name, f))
                slow.close()
                admin.close()

    def test_a_slow_download_is_not_an_idle_client(self):
        # `timeout` closes clients idle that long; one reading a large reply slowly sends
        # nothing meanwhile, and is not idle (Redis counts every write as activity).
        size = 8 * MiB
        for name, srv in self.servers:
            with self.subTest(server=name):
                admin = srv.raw()
                self.assertEqual(admin.call("SET", "slow:big", b"b" * size), b"+OK\r\n")
                self.assertEqual(admin.call("CONFIG", "SET", "timeout", "1"), b"+OK\r\n")
                admin.close()  # idle from here on: `timeout` would close it
                self.addCleanup(self.set_timeout_off, srv)
                got = self.read_slowly(srv, encode("GET", "slow:big"), size + 16, seconds=3)
                self.assertEqual(len(got), len(b"$%d\r\n" % size) + size + 2, name)
                self.set_timeout_off(srv)

    @staticmethod
    def set_timeout_off(srv):
        admin = srv.raw()
        admin.call("CONFIG", "SET", "timeout", "0")
        admin.close()

    @staticmethod
    def read_slowly(srv, request, total, seconds):
        """Sends `request` on a connection with a small receive buffer and reads its `total`
        reply bytes paced to take at least `seconds` (the server's writes wait on the full
        buffer meanwhile); returns what arrived before the server closed."""
        sock = socket.create_connection(("127.0.0.1", srv.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.settimeout(30)
        sock.sendall(request)
        got = bytearray()
        began = time.monotonic()
        while len(got) < total:
            chunk = sock.recv(256 * 1024)
            if not chunk:
                break
            got += chunk
            time.sleep(max(0.0, began + seconds * len(got) / total - time.monotonic()))
        sock.close()
        return bytes(got)

    def test_client_kill_of_oneself_ends_after_the_replies_before_it(self):
        # The replies before it and its +OK are written whole, then the connection closes;
        # nothing pipelined after it runs.
        for name, srv in self.servers:
            with self.subTest(server=name):
                admin = srv.raw()
                self.assertEqual(admin.call("SET", "kill:ten", b"t" * (10 * MiB)), b"+OK\r\n")
                admin.call("DEL", "kill:after")
                rc = srv.raw()
                rc.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
                me = rc.call("CLIENT", "INFO").split(b" addr=")[1].split(b" ")[0].decode()
                rc.send(encode("GET", "kill:ten") + encode("CLIENT", "KILL", me) +
                        encode("SET", "kill:after", "1"))
                self.assertEqual(len(rc.reply()), len(b"$%d\r\n" % (10 * MiB)) + 10 * MiB + 2)
                self.assertEqual(rc.reply(), b"+OK\r\n", name)
                self.assertTrue(rc.closed_by_server(), name)
                rc.close()
                self.assertEqual(admin.call("EXISTS", "kill:after"), b":0\r\n", name)
                admin.close()

    def test_the_pre_auth_limits_end_with_the_password(self):
        # A client that connected while a password was set and never authenticated: once the
        # password is removed, it may send a command of any size (Redis's authRequired()).
        for name, srv in self.servers:
            with self.subTest(server=name):
                admin = srv.raw()
                self.assertEqual(admin.call("CONFIG", "SET", "requirepass", "pw"), b"+OK\r\n")
                self.assertEqual(admin.call("AUTH", "pw"), b"+OK\r\n")
                late = srv.raw()
                self.assertEqual(late.call("PING"), b"-NOAUTH Authentication required.\r\n")
                self.assertEqual(admin.call("CONFIG", "SET", "requirepass", ""), b"+OK\r\n")
                self.assertEqual(late.call("SET", "auth:big", "v" * 20000), b"+OK\r\n", name)
                self.assertEqual(late.call("STRLEN", "auth:big"), b":20000\r\n", name)
                late.close()
                admin.close()


if __name__ == "__main__":
    unittest.main()
