"""larder-server on a small filesystem: a size-limited tmpfs mounted by the test (skipped, with
the reason, where mounting is not permitted, e.g. without root/CAP_SYS_ADMIN).

- default budget (max-disk-bytes 0 = 80% of the free space): writing 3x the filesystem evicts,
  every SET is answered +OK, reads return exact bytes or a miss;
- a budget larger than the filesystem (misconfigured, or other files filled the disk): SETs
  get an error once the disk is full, nothing crashes, stored keys stay readable, and once the
  filesystem grows again (remount) writes succeed again, with the WAL off and on.
Run (as root): LARDER_SERVER=... /usr/bin/python3 -m unittest -v full_disk_test"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from server_harness import ServerProcess

MiB = 1 << 20
VALUE = 2 * MiB


def value(i):
    return (b"%08d" % i) * (VALUE // 8)


class SmallFs:
    """A tmpfs of `size_mib` MiB mounted on a fresh temp directory."""

    def __init__(self, size_mib):
        self.path = tempfile.mkdtemp(prefix="larder-fs-")
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mib, "larder-test",
                            self.path], capture_output=True, text=True)
        if p.returncode != 0:
            os.rmdir(self.path)
            raise unittest.SkipTest("cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): " +
                                    p.stderr.strip())

    def resize(self, size_mib):
        subprocess.run(["mount", "-o", "remount,size=%dm" % size_mib, self.path], check=True)

    def used_mib(self):
        st = os.statvfs(self.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize / MiB

    def tail(self, name, n):
        try:
            with open(os.path.join(self.path, name), errors="replace") as f:
                return f.read()[-n:]
        except OSError as e:
            return str(e)

    def cleanup(self):
        subprocess.run(["umount", "-l", self.path], capture_output=True)
        shutil.rmtree(self.path, ignore_errors=True)


class FullDiskTest(unittest.TestCase):
    def start_on(self, fs, *args):
        # The server's data directory and its log both live on the small filesystem.
        srv = ServerProcess(["--unixsocket", "", "--memtable-bytes", "16mb", *args], tmp=fs.path)
        self.addCleanup(srv.stop)
        return srv.start()

    def read_back(self, rc, n):
        """GETs keys 0..n-1: each must be its exact value or a miss; returns the hits."""
        hits = 0
        for i in range(n):
            reply = rc.call("GET", "fd:%d" % i)
            if reply != b"$-1\r\n":
                self.assertEqual(reply, b"$%d\r\n" % VALUE + value(i) + b"\r\n", "fd:%d" % i)
                hits += 1
        return hits

    def test_default_budget_evicts_before_the_disk_fills(self):
        fs = SmallFs(192)
        self.addCleanup(fs.cleanup)
        srv = self.start_on(fs, "--max-disk-bytes", "0")
        rc = srv.raw()
        n = 3 * 192 * MiB // VALUE
        peak = 0.0
        for i in range(n):
            self.assertEqual(rc.call("SET", "fd:%d" % i, value(i)), b"+OK\r\n", "SET fd:%d" % i)
            peak = max(peak, fs.used_mib())
        hits = self.read_back(rc, n)
        info = rc.call("INFO", "larder").decode()
        rc.close()
        self.assertGreater(hits, 0)
        self.assertLess(hits, n)
        self.assertIn("evicted_keys:", info)
        print("\n  192 MiB tmpfs, default budget: %d x 2 MiB SETs all +OK, %d still readable, "
              "peak use %.0f MiB" % (n, hits, peak), file=sys.stderr)

    def test_disk_full_then_space_returns(self):
        self.disk_full_then_space_returns("no")

    def test_disk_full_then_space_returns_with_the_wal(self):
        self.disk_full_then_space_returns("yes")

    def disk_full_then_space_returns(self, wal):
        fs = SmallFs(96)
        self.addCleanup(fs.cleanup)
        srv = self.start_on(fs, "--max-disk-bytes", "1gb", "--generation-bytes", "32mb",
                            "--wal", wal)
        rc = srv.raw()
        stored, errors, first_error = 0, 0, None
        for i in range(120):  # 240 MiB into 96 MiB
            reply = rc.call("SET", "fd:%d" % i, value(i))
            if reply == b"+OK\r\n":
                stored = i + 1 if errors == 0 else stored
            else:
                self.assertTrue(reply.startswith(b"-"), reply[:200])
                errors += 1
                first_error = first_error or reply
        self.assertGreater(errors, 0, "the disk never filled")
        for _ in range(5):  # flushes that fail on the full disk: warnings the disk refuses
            self.assertIn(rc.call("SAVE")[:1], (b"+", b"-"))
        self.assertEqual(rc.call("PING"), b"+PONG\r\n")
        hits_full = self.read_back(rc, 120)
        self.assertGreater(hits_full, 0, "nothing readable on a full disk")

        fs.resize(512)  # space returns
        deadline, reply = time.time() + 60, None
        while time.time() < deadline and reply != b"+OK\r\n":
            if reply is not None:
                time.sleep(0.5)
            reply = rc.call("SET", "after", b"x" * VALUE)
        if reply != b"+OK\r\n":
            self.fail("writes still fail after space returned: %r\nINFO: %r\nlog: %s\nRocksDB LOG: %s"
                      % (reply[:300], rc.call("INFO", "larder")[:1500], srv.read_log()[-2000:],
                         fs.tail("data/LOG", 4000)))
        for i in range(120, 140):
            self.assertEqual(rc.call("SET", "fd:%d" % i, value(i)), b"+OK\r\n")
        self.assertEqual(rc.call("SAVE"), b"+OK\r\n")
        hits_after = self.read_back(rc, 140)
        rc.close()
        self.assertEqual(srv.stop(), 0)
        srv.start()  # and the directory opens again
        rc = srv.raw()
        self.assertEqual(self.read_back(rc, 140), hits_after)
        rc.close()
        print("\n  96 MiB tmpfs, 1 GiB budget, wal %s: %d SETs stored before the first error "
              "%r, %d errors, %d keys readable while full; after growing to 512 MiB writes "
              "resumed, %d readable" % (wal, stored, first_error[:80], errors, hits_full,
                                        hits_after), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
