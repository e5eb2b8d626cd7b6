"""A disk that fails the index's writes with EIO for a while, then recovers, under the real
larder-server: disk_error_shim.c, LD_PRELOADed into the server, fails every sync of an SST file
(a flush), or of a WAL file, while a flag file exists. Writes stop while it fails (refused with
an error that says they come back), reads go on, INFO's index_writes_stopped says so, and once
the disk takes writes again they resume by themselves, with no restart, and a restart then finds
every acknowledged write and none of the refused: flushes failing with the WAL off (the default)
and on, and the WAL's own syncs failing under `wal-sync yes`.

Run: LARDER_SERVER=... LARDER_DISK_ERROR_SHIM=build/lib/libdisk_error_shim.so \\
     /usr/bin/python3 -m unittest -v disk_error_test
"""
import os
import time
import unittest

import redis

from server_harness import ServerProcess, info_stat, preload_wrapper, wait_for

SHIM = os.environ.get("LARDER_DISK_ERROR_SHIM")


def value(key):
    return (key.encode() * 4096)[:256 << 10]


@unittest.skipIf(not SHIM, "LARDER_DISK_ERROR_SHIM is not set (ctest sets it)")
class DiskErrorTest(unittest.TestCase):
    def start(self, wal, failing_suffix=".sst", args=()):
        srv = ServerProcess(["--wal", "yes" if wal else "no", "--maintenance-interval-ms", "200",
                             *args])
        self.flag = os.path.join(srv.tmp, "failing")
        srv.wrapper = preload_wrapper(SHIM, LARDER_DISK_ERROR_FLAG=self.flag,
                                      LARDER_DISK_ERROR_SUFFIX=failing_suffix)
        self.addCleanup(srv.cleanup)
        return srv.start()

    def fail_syncs(self, on):
        if on:
            open(self.flag, "w").close()
        else:
            os.remove(self.flag)

    def test_flush_errors_stop_writes_until_the_disk_recovers(self):
        for wal in (False, True):
            with self.subTest(wal=wal):
                self.flush_errors_stop_writes_until_the_disk_recovers(wal)

    def flush_errors_stop_writes_until_the_disk_recovers(self, wal):
        srv = self.start(wal)
        c = srv.client()
        self.addCleanup(c.close)
        c.set("before", value("before"))
        c.save()
        self.fail_syncs(True)
        c.set("in memory", value("in memory"))  # acknowledged, not yet flushed
        with self.assertRaises(redis.ResponseError):
            c.save()  # its flush fails
        self.assertEqual(info_stat(srv, "index_writes_stopped"), 1)
        self.refused_until_the_disk_recovers(srv, c, ["before", "in memory"])
        self.assertIn("the index resumed its writes", srv.read_log() + self.index_log(srv))

    def test_wal_sync_errors_stop_writes_until_the_disk_recovers(self):
        # With `wal-sync yes` a SET is acknowledged once its WAL record is synced (000123.log).
        srv = self.start(True, failing_suffix=".log", args=["--wal-sync", "yes"])
        c = srv.client()
        self.addCleanup(c.close)
        c.set("before", value("before"))
        self.fail_syncs(True)
        with self.assertRaises(redis.ResponseError):
            c.set("refused first", value("refused first"))  # its WAL sync fails
        self.assertEqual(info_stat(srv, "index_writes_stopped"), 1)
        self.refused_until_the_disk_recovers(srv, c, ["before"], also_refused=["refused first"])

    def refused_until_the_disk_recovers(self, srv, c, kept, also_refused=()):
        """While the syncs fail a SET is refused with an error that says writes come back, the
        `kept` keys are read, and maintenance passes leave writes stopped; once the syncs succeed
        writes resume by themselves, and a restart finds `kept` and a SET made after, and none of
        the refused keys."""
        with self.assertRaises(redis.ResponseError) as refused:
            c.set("refused", value("refused"))
        self.assertIn("until the disk takes them again", str(refused.exception))
        for key in kept:
            self.assertEqual(c.get(key), value(key), key)  # reads go on
        time.sleep(0.5)  # maintenance passes (every 200 ms) while it fails: still stopped
        self.assertEqual(info_stat(srv, "index_writes_stopped"), 1)
        self.fail_syncs(False)
        wait_for(lambda: info_stat(srv, "index_writes_stopped") == 0, timeout=30)
        self.assertTrue(c.set("after", value("after")))
        c.save()
        c.close()
        srv.stop()
        srv.start()
        c = srv.client()
        self.addCleanup(c.close)
        for key in [*kept, "after"]:
            self.assertEqual(c.get(key), value(key), key)
        for key in ["refused", *also_refused]:
            self.assertIsNone(c.get(key), key)

    @staticmethod
    def index_log(srv):
        with open(os.path.join(srv.tmp, "data", "LOG"), errors="replace") as f:
            return f.read()


if __name__ == "__main__":
    unittest.main()
