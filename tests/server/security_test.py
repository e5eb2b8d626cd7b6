"""Security defaults of larder-server: loopback bind unless configured, protected mode,
requirepass / AUTH (both forms), unixsocketperm, the options CONFIG SET may not change, and no
path traversal through commands. (integration_robustness.py covers NOAUTH/WRONGPASS and the
DENIED reply to a non-loopback client.)
Run: LARDER_SERVER=... /usr/bin/python3 -m unittest -v security_test"""
import os
import shutil
import socket
import stat
import tempfile
import unittest

from integration_robustness import non_loopback_ip
from server_harness import ServerProcess

# What CONFIG SET may change; everything else (dir, bind, port, unixsocket*, logfile, pidfile,
# wal, the disk budget, ...) is fixed at start. Keep docs/reliability.md in step.
RUNTIME_MUTABLE = {
    "maxclients", "timeout", "tcp-keepalive", "protected-mode", "requirepass",
    "proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit", "loglevel",
    "notify-keyspace-events", "tracking-table-max-keys", "slowlog-log-slower-than",
    "slowlog-max-len",
    "latency-monitor-threshold", "latency-tracking", "latency-tracking-info-percentiles",
    "sendfile", "inline-get-max-bytes", "tls-cert-file", "tls-key-file", "tls-ca-cert-file",
    "tls-ca-cert-dir", "tls-auth-clients", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
    "tls-prefer-server-ciphers", "tls-key-file-pass", "tls-dh-params-file", "tls-session-caching",
    "tls-session-cache-size", "tls-session-cache-timeout",
}
IMMUTABLE_ERR = b"-ERR CONFIG SET failed (possibly related to argument '%s') - can't set " \
                b"immutable config\r\n"


def config_get_all(rc):
    reply = rc.call("CONFIG", "GET", "*")
    lines = reply.split(b"\r\n")
    items = [lines[i] for i in range(2, len(lines) - 1, 2)]  # the bulk payloads
    return dict(zip(items[0::2], items[1::2]))


class SecurityTest(unittest.TestCase):
    def test_binds_loopback_by_default(self):
        with ServerProcess(["--unixsocket", ""]).start() as srv:
            rc = srv.raw()
            self.assertEqual(rc.call("CONFIG", "GET", "bind"),
                             b"*2\r\n$4\r\nbind\r\n$9\r\n127.0.0.1\r\n")
            self.assertEqual(rc.call("CONFIG", "GET", "protected-mode"),
                             b"*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n")
            rc.close()
            ip = non_loopback_ip()
            if ip is not None:
                with self.assertRaises(ConnectionRefusedError):
                    socket.create_connection((ip, srv.port), timeout=5).close()

    def test_remote_client_with_password_must_auth(self):
        ip = non_loopback_ip()
        if ip is None:
            self.skipTest("no non-loopback IPv4 address")
        with ServerProcess(["--bind", ip, "127.0.0.1", "--requirepass", "pw"]).start() as srv:
            s = socket.create_connection((ip, srv.port), timeout=5)
            s.sendall(b"GET k\r\n")
            self.assertEqual(s.recv(200), b"-NOAUTH Authentication required.\r\n")
            s.sendall(b"AUTH default pw\r\nGET k\r\n")
            got = b""
            while got.count(b"\r\n") < 2:
                got += s.recv(200)
            self.assertEqual(got, b"+OK\r\n$-1\r\n")
            s.close()

    def test_requirepass_set_at_runtime(self):
        with ServerProcess(["--unixsocket", ""]).start() as srv:
            rc = srv.raw()
            self.assertTrue(rc.call("AUTH", "x").startswith(
                b"-ERR AUTH <password> called without any password configured"))
            self.assertEqual(rc.call("CONFIG", "SET", "requirepass", "n3w pass"), b"+OK\r\n")
            self.assertEqual(rc.call("PING"), b"+PONG\r\n")  # this connection stays authenticated
            other = srv.raw()
            self.assertEqual(other.call("PING"), b"-NOAUTH Authentication required.\r\n")
            self.assertEqual(other.call("AUTH", "default", "wrong"),
                             b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
            self.assertEqual(other.call("AUTH", "default", "n3w pass"), b"+OK\r\n")
            self.assertEqual(other.call("PING"), b"+PONG\r\n")
            other.close()
            for bad in ("a\nrequirepass b", "a\rb", "x" * 513):
                self.assertTrue(rc.call("CONFIG", "SET", "requirepass", bad).startswith(
                    b"-ERR CONFIG SET failed (possibly related to argument 'requirepass')"), bad)
            rc.close()

    def test_password_survives_rewrite_without_injecting_options(self):
        tmp = tempfile.mkdtemp(prefix="larder-sec-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with ServerProcess(["--unixsocket", ""], conf_text="port 0\n", tmp=tmp).start() as srv:
            tricky = 'p "q\' dir /etc #'
            rc = srv.raw()
            self.assertEqual(rc.call("CONFIG", "SET", "requirepass", tricky), b"+OK\r\n")
            self.assertEqual(rc.call("CONFIG", "REWRITE"), b"+OK\r\n")
            rc.close()
            self.assertEqual(srv.stop(), 0)
            srv.start()
            rc = srv.raw()
            self.assertEqual(rc.call("AUTH", tricky), b"+OK\r\n")
            self.assertEqual(rc.call("CONFIG", "GET", "dir")[-len(b"/data\r\n"):], b"/data\r\n")
            rc.close()

    def test_unixsocketperm(self):
        for perm in (0o700, 0o660):
            tmp = tempfile.mkdtemp(prefix="larder-sec-")
            self.addCleanup(shutil.rmtree, tmp, True)
            path = os.path.join(tmp, "larder.sock")
            srv = ServerProcess(["--unixsocket", path, "--unixsocketperm", "%o" % perm],
                                tmp=tmp).start()
            try:
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), perm)
                self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))
            finally:
                srv.cleanup()

    def test_only_documented_options_change_at_runtime(self):
        with ServerProcess(["--unixsocket", ""]).start() as srv:
            rc = srv.raw()
            options = config_get_all(rc)
            self.assertIn(b"dir", options)
            mutable = set()
            for name, value in options.items():
                reply = rc.call("CONFIG", "SET", name, value)  # its own value: harmless
                if reply == b"+OK\r\n":
                    mutable.add(name.decode())
                else:
                    self.assertEqual(reply, IMMUTABLE_ERR % name, name)
            self.assertEqual(mutable, RUNTIME_MUTABLE)
            for name, value in (("dir", "/etc"), ("dir", "../.."), ("logfile", "/etc/passwd"),
                                ("pidfile", "/tmp/x.pid"), ("unixsocket", "/tmp/x.sock"),
                                ("bind", "0.0.0.0"), ("daemonize", "yes"), ("wal", "no")):
                self.assertEqual(rc.call("CONFIG", "SET", name, value),
                                 IMMUTABLE_ERR % name.encode(), name)
            self.assertEqual(rc.call("CONFIG", "REWRITE"),
                             b"-ERR The server is running without a config file\r\n")
            rc.close()

    def test_no_path_traversal_through_commands(self):
        srv = ServerProcess(["--unixsocket", ""]).start()
        outside = tempfile.mkdtemp(prefix="larder-outside-")
        try:
            before = sorted(os.listdir(srv.tmp))
            rc = srv.raw()
            keys = ["../../../../etc/passwd", "/etc/shadow", os.path.join(outside, "pwned"),
                    "..\\..\\x", "a/../../b", "nul\x00byte", "~root/.ssh/authorized_keys",
                    "data/../../../tmp/evil", "CURRENT", "MANIFEST-000001", "LOCK"]
            for i, k in enumerate(keys):
                v = b"value-%d" % i
                self.assertEqual(rc.call("SET", k, v), b"+OK\r\n", k)
                self.assertEqual(rc.call("GET", k), b"$%d\r\n%s\r\n" % (len(v), v), k)
            self.assertEqual(rc.call("RENAME", keys[0], "../../../tmp/renamed"), b"+OK\r\n")
            self.assertEqual(rc.call("SAVE"), b"+OK\r\n")
            for cmd in (("MODULE", "LOAD", "/tmp/x.so"), ("DEBUG", "RELOAD"),
                        ("SLAVEOF", "127.0.0.1", "1"), ("REPLICAOF", "127.0.0.1", "1"),
                        ("MIGRATE", "h", "1", "k", "0", "1"),
                        ("EVAL", "return 1", "0"), ("SCRIPT", "LOAD", "x")):
                self.assertTrue(rc.call(*cmd).startswith(b"-ERR unknown command"), cmd)
            # RESTORE takes a payload, never a path: anything else is refused, nothing written.
            self.assertEqual(rc.call("RESTORE", "k", "0", "../../etc/passwd"),
                             b"-ERR DUMP payload version or checksum are wrong\r\n")
            # The store's own files are not keys and keys are not files.
            self.assertEqual(rc.call("EXISTS", "CURRENT"), b":1\r\n")
            self.assertEqual(rc.call("DEL", "CURRENT", "LOCK"), b":2\r\n")
            self.assertEqual(rc.call("PING"), b"+PONG\r\n")
            rc.close()
            self.assertEqual(os.listdir(outside), [])
            self.assertEqual(sorted(os.listdir(srv.tmp)), before)
            self.assertEqual(srv.stop(), 0)
            srv.start()  # the data directory still opens: nothing of it was overwritten
            rc = srv.raw()
            self.assertEqual(rc.call("GET", "/etc/shadow"), b"$7\r\nvalue-1\r\n")
            rc.close()
        finally:
            srv.cleanup()
            os.rmdir(outside)


if __name__ == "__main__":
    unittest.main()
