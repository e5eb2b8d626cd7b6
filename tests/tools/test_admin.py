"""larder-admin against real data directories written by the engine (through `put`)."""
import fcntl
import glob
import os
import random
import shutil
import subprocess
import tempfile
import unittest

ADMIN = os.environ.get("LARDER_ADMIN", "")


def run(*args, stdin=b""):
    return subprocess.run([ADMIN, *args], input=stdin, capture_output=True, timeout=120)


@unittest.skipUnless(ADMIN and os.path.exists(ADMIN), "LARDER_ADMIN not set (run through ctest)")
class AdminTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="larder-admin-test-")
        self.dir = os.path.join(self.tmp, "data")
        self.values = {}
        rng = random.Random(3)
        for i in range(12):
            key = f"chunk:{i:02d}" if i < 10 else f"other:{i}"
            value = rng.randbytes(300_000 + i)
            self.values[key] = value
            r = self.admin("put", key, stdin=value)
            self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def admin(self, *args, stdin=b""):
        return run("--dir", self.dir, *args, stdin=stdin)

    def test_stats_keys_get_del(self):
        out = self.admin("stats").stdout.decode()
        self.assertIn("keys:              12", out)
        keys = self.admin("keys").stdout.decode().split()
        self.assertEqual(sorted(keys), sorted(self.values))
        self.assertEqual(sorted(self.admin("keys", "chunk:*").stdout.decode().split()),
                         sorted(k for k in self.values if k.startswith("chunk:")))
        r = self.admin("get", "chunk:03")
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout, self.values["chunk:03"])
        r = self.admin("get", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"no such key", r.stderr)
        self.assertEqual(self.admin("del", "chunk:03", "nope").stdout.strip(), b"1")
        self.assertNotIn("chunk:03", self.admin("keys").stdout.decode().split())

    def stat(self, name):
        out = self.admin("stats").stdout.decode()
        return int(next(line.split()[1] for line in out.splitlines()
                        if line.startswith(name + ":")))

    def test_looking_does_not_pile_up_generations(self):
        first = self.stat("generations")
        for _ in range(3):
            self.admin("keys")
        self.assertEqual(self.stat("generations"), first)

    def snapshot(self):
        """Every file of the directory: its size, modification time and bytes."""
        out = {}
        for root, _, files in os.walk(self.dir):
            for name in files:
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    out[path] = (os.stat(path).st_mtime_ns, f.read())
        return out

    def test_reading_commands_change_nothing(self):
        before = self.snapshot()
        for args in (["stats"], ["keys"], ["get", "chunk:01"], ["get", "nope"], ["verify"]):
            self.admin(*args)
            self.assertEqual(self.snapshot().keys(), before.keys(), args)
            self.assertTrue(self.snapshot() == before, f"{args} changed a file")

    def test_errors_other_than_a_miss_are_errors(self):
        self.assertEqual(self.admin("get", "").returncode, 1)  # no key "" can exist: a miss
        r = self.admin("put", "", stdin=b"x")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"empty key", r.stderr)
        r = run("--help")
        self.assertEqual((r.returncode, r.stdout.startswith(b"usage: larder-admin")), (0, True))

    def test_put_with_ttl_and_bad_ttl(self):
        self.assertEqual(self.admin("put", "t", "--ttl-ms", "60000", stdin=b"x").returncode, 0)
        r = self.admin("put", "t", "--ttl-ms", "soon", stdin=b"x")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--ttl-ms takes a whole number", r.stderr)
        r = self.admin("put", "t", "--ttl-ms", str(2**63 - 1), stdin=b"x")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"past the clock's range", r.stderr)

    def test_evict_to_a_size_keeps_about_that_much(self):
        r = self.admin("evict", "--to", "2mb")  # of 3.6 MB
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLessEqual(self.stat("disk_bytes"), 2 << 20)
        self.assertGreaterEqual(self.stat("keys"), 4)  # 300 KB each: not emptied

    def test_evict_and_compact(self):
        r = self.admin("evict", "--to", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("keys:              0", r.stdout.decode())
        r = self.admin("compact")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.admin("evict", "--to", "lots")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--to takes a size", r.stderr)

    def test_verify_clean_is_quiet_when_piped(self):
        r = self.admin("verify")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(b"verified 12 entries: 12 ok, 0 corrupt, 0 missing", r.stdout)
        self.assertEqual(r.stderr, b"", "progress must not be drawn when stderr is not a tty")

    def test_verify_finds_injected_corruption(self):
        blobs = glob.glob(os.path.join(self.dir, "values", "*.lbv"))
        self.assertTrue(blobs, "values were not stored in blob files")
        rng = random.Random(9)
        for path in blobs:
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                for _ in range(6):
                    off = rng.randrange(4096, size)  # past the header, in the values
                    f.seek(off)
                    b = f.read(1)
                    f.seek(off)
                    f.write(bytes([b[0] ^ 0xFF]))
        r = self.admin("verify")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout.decode(), r"[1-9]\d* corrupt")
        self.assertIn(b"bad: generation", r.stdout)
        # verify opens read-only: the damage stays, and so does its report.
        self.assertEqual(self.admin("verify").stdout, r.stdout)
        # Reads never return wrong bytes: exact or a miss.
        for key, value in self.values.items():
            g = self.admin("get", key)
            if g.returncode == 0:
                self.assertEqual(g.stdout, value, key)

    def test_refuses_while_directory_is_held(self):
        with open(os.path.join(self.dir, "LOCK"), "r+") as lock:
            fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what RocksDB's LOCK takes
            for args in (["stats"], ["verify"], ["keys"], ["del", "chunk:01"]):
                r = self.admin(*args)
                self.assertEqual(r.returncode, 2, args)
                self.assertIn(b"in use by another process", r.stderr, args)
        self.assertEqual(self.admin("stats").returncode, 0)

    def test_bad_invocations(self):
        self.assertEqual(run().returncode, 2)
        r = self.admin("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"larder-admin: unknown command 'frobnicate'", r.stderr)
        r = run("--dir", os.path.join(self.tmp, "missing"), "stats")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"cannot open", r.stderr)
        self.assertIn(b"no such directory", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "missing")), "created it")
        r = run("--dir", ADMIN, "stats")  # a file
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"not a directory", r.stderr)
        r = run("--dir", self.tmp, "stats")  # a directory, not a store
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"not a Larder data directory", r.stderr)
        r = run("--dir=" + self.dir, "stats")  # the = form opens the same store
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.admin("evict")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"larder-admin: evict: wrong number of arguments", r.stderr)


if __name__ == "__main__":
    unittest.main()
