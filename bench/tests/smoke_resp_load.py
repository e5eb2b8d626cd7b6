"""bench_resp_load: resp-load against a real larder-server on a few small values.

Checks that every phase (set, get, cold, exists) reports all its requests with no wrong
reply, and that the value check can fail: after one key is overwritten behind resp-load's
back, a `get` phase must report exactly one wrong reply and exit 1. The server and its temp
directory are removed by tearDown (and the server dies with this process)."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.environ["LARDER_SOURCE_DIR"], "tests", "server"))
from server_harness import ServerProcess  # noqa: E402

RESP_LOAD = os.environ["RESP_LOAD"]
KEYS, SIZE = 12, 300_000


class RespLoadSmoke(unittest.TestCase):
    def setUp(self):
        self.srv = ServerProcess()
        self.srv.start()

    def tearDown(self):
        self.srv.stop()
        self.srv.cleanup()

    def run_load(self, phases, conns=2, pipeline=2):
        cmd = [RESP_LOAD, "--port", str(self.srv.port), "--phases", phases, "--size", str(SIZE),
               "--keys", str(KEYS), "--conns", str(conns), "--pipeline", str(pipeline),
               "--exists_ops", "30", "--cold_dir", os.path.join(self.srv.tmp, "data"),
               "--server_pid", str(self.srv.proc.pid), "--save_after_set", "--label", "t"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        return p.returncode, {r["phase"]: r for r in rows}, p.stderr

    def test_every_phase_reads_back_the_right_bytes(self):
        rc, rows, err = self.run_load("set,get,cold,exists")
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(rows), ["cold", "exists", "get", "set"])
        for phase in ("set", "get", "cold"):
            self.assertEqual(rows[phase]["ops"], KEYS, phase)
            self.assertEqual(rows[phase]["bad"], 0, phase)
            self.assertGreater(rows[phase]["gbs"], 0, phase)
        self.assertEqual(rows["exists"]["ops"], 30)
        self.assertEqual(rows["exists"]["bad"], 0)
        # SET + SAVE wrote at least the values to the device (blob files, WAL off).
        self.assertGreaterEqual(rows["set"]["device_per_value_byte"], 0.9)

    def test_a_wrong_value_is_counted_and_fails_the_run(self):
        rc, _, err = self.run_load("set", conns=1, pipeline=1)
        self.assertEqual(rc, 0, err)
        # Same length, different bytes: only a check of the bytes themselves can see it.
        c = self.srv.raw()
        try:
            self.assertEqual(c.call("SET", "load:5", b"x" * SIZE), b"+OK\r\n")
        finally:
            c.close()
        rc, rows, err = self.run_load("get")
        self.assertEqual(rc, 1, err)
        self.assertEqual(rows["get"]["bad"], 1)
        self.assertIn("1 wrong replies", err)


if __name__ == "__main__":
    unittest.main()
