"""larder-server start-up, config file handling, restart and shutdown."""
import os
import signal
import subprocess
import tempfile
import time
import shutil
import unittest

from server_harness import SERVER, ServerProcess, free_port

SOURCE_DIR = os.environ.get("LARDER_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")


class LifecycleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="larder-life-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_bad_config_exits_1(self):
        conf = os.path.join(self.tmp, "bad.conf")
        with open(conf, "w") as f:
            f.write("port 6379\nprot 1\n")
        out = subprocess.run([SERVER, conf], capture_output=True, timeout=20)
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"bad.conf:2: unknown option 'prot'", out.stderr)
        out = subprocess.run([SERVER, "--port", "70000"], capture_output=True, timeout=20)
        self.assertEqual(out.returncode, 1)
        self.assertIn(b"option 'port'", out.stderr)

    def test_restart_keeps_data_and_sigterm_is_graceful(self):
        srv = ServerProcess(tmp=self.tmp).start()
        try:
            r = srv.client()
            big = os.urandom(3 << 20)
            r.set("keep:big", big)
            r.set("keep:small", "s", ex=1000)
            r.close()
            self.assertEqual(srv.stop(signal.SIGTERM), 0)
            self.assertIn("ready to accept connections on port %d" % srv.port, srv.read_log())
            srv.start()
            r = srv.client()
            self.assertEqual(r.get("keep:big"), big)
            self.assertEqual(r.get("keep:small"), b"s")
            self.assertGreater(r.ttl("keep:small"), 900)
            r.close()
            rc = srv.raw()
            rc.send(b"*1\r\n$8\r\nSHUTDOWN\r\n")
            self.assertTrue(rc.closed_by_server(timeout=20))
            rc.close()
            srv.proc.wait(20)
            self.assertEqual(srv.proc.returncode, 0)
            srv.stop()
            srv.start()
            r = srv.client()
            self.assertEqual(r.get("keep:big"), big)
            r.close()
        finally:
            srv.stop(signal.SIGKILL)

    def test_sighup_is_ignored_and_a_pidfile_that_cannot_be_written_is_logged(self):
        # As Redis: a closed terminal (SIGHUP) must not end the server without its shutdown.
        pidfile = os.path.join(self.tmp, "no-such-dir", "larder.pid")
        srv = ServerProcess(["--pidfile", pidfile], tmp=self.tmp).start()
        try:
            r = srv.client()
            r.set("k", "v")
            srv.proc.send_signal(signal.SIGHUP)
            time.sleep(0.3)
            self.assertIsNone(srv.proc.poll(), "SIGHUP ended the server")
            self.assertEqual(r.get("k"), b"v")
            r.close()
            self.assertIn("Failed to write PID file " + pidfile, srv.read_log())
            self.assertEqual(srv.stop(signal.SIGTERM), 0)
        finally:
            srv.stop(signal.SIGKILL)

    def test_config_set_rewrite_restart(self):
        with open(os.path.join(SOURCE_DIR, "conf", "larder.conf")) as f:
            conf_text = f.read()
        srv = ServerProcess(tmp=self.tmp, conf_text=conf_text)
        srv.start()
        try:
            r = srv.client()
            self.assertEqual(r.config_get("maxclients")["maxclients"], "10000")
            self.assertEqual(r.info("server")["config_file"], os.path.abspath(srv.conf))
            self.assertTrue(r.config_set("maxclients", "1234"))
            r.execute_command("CONFIG", "SET", "timeout", "3600", "requirepass", "pw")
            r.execute_command("AUTH", "pw")  # existing connections stay authenticated anyway
            self.assertTrue(r.execute_command("CONFIG", "REWRITE"))
            r.close()
            with open(srv.conf) as f:
                text = f.read()
            self.assertIn("maxclients 1234", text)
            self.assertIn("# Larder configuration file.", text)
            srv.stop()
            srv.start()
            r = srv.client(password="pw")
            self.assertEqual(r.config_get("maxclients")["maxclients"], "1234")
            self.assertEqual(r.config_get("timeout")["timeout"], "3600")
            r.close()
        finally:
            srv.stop(signal.SIGKILL)

    def test_unix_socket(self):
        path = os.path.join(self.tmp, "larder.sock")
        srv = ServerProcess(["--unixsocket", path, "--unixsocketperm", "700"], tmp=self.tmp)
        srv.start()
        try:
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o700)
            import redis
            r = redis.Redis(unix_socket_path=path)
            self.assertTrue(r.set("u", "1"))
            self.assertEqual(r.get("u"), b"1")
            self.assertIn(b"flags=U", r.execute_command("CLIENT", "INFO"))
            r.close()
        finally:
            srv.stop(signal.SIGKILL)


if __name__ == "__main__":
    unittest.main()
