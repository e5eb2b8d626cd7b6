"""Power cuts through larder-server: the crash cycles of crash_cycles_test, but after each
SIGKILL every file of the data directory is rolled back to what the server had made durable,
as if the machine had lost power. power_cut_shim.c, LD_PRELOADed into the server, records each
file's size at every successful fsync/fdatasync; the roll-back truncates each file to it,
and in half of the cuts keeps a random part of the unsynced tail instead (pages written back
before the cut, a torn last record). Then the server restarts and every key is checked against
the journal of acknowledged writes. What the model leaves out (directory entries, reordered
pages) is listed in power_cut_shim.c.

Asserted, every mode: zero wrong values (bytes never written to that key), zero failed restarts,
zero corruptions counted. Asserted with `wal yes` + `wal-sync yes`: no acknowledged write is
lost. Reported: the acknowledged writes lost with `wal no` and with `wal yes` + `wal-sync no`
(docs/reliability.md says what each mode may lose).

CI: 8 cycles per mode. LARDER_LONG=1: 100. LARDER_CRASH_SEED fixes the seed.
Run: LARDER_SERVER=... LARDER_POWER_CUT_SHIM=build/lib/libpower_cut_shim.so \\
  /usr/bin/python3 -m unittest -v power_cut_test"""
import os
import random
import sys
import unittest

from crash_cycles_test import CrashCycles, report

LONG = os.environ.get("LARDER_LONG") == "1"
CYCLES = 100 if LONG else 8
SHIM = os.environ.get("LARDER_POWER_CUT_SHIM")


class PowerCuts(CrashCycles):
    def __init__(self, wal, wal_sync, seed):
        super().__init__(wal, seed)
        self.wal_sync = wal_sync
        self.durable_log = os.path.join(self.tmp, "durable.log")
        self.cut_bytes = 0

    def args(self):
        return super().args() + ["--wal-sync", "yes" if self.wal_sync else "no"]

    def wrapper(self):
        env = ["LD_PRELOAD=" + SHIM, "LARDER_DURABLE_LOG=" + self.durable_log]
        if os.environ.get("LARDER_SANITIZER") == "asan":
            # ASan insists on its runtime coming first in the library list, and a preloaded
            # library comes before it. The shim only forwards calls and allocates nothing.
            env.append("ASAN_OPTIONS=%s:verify_asan_link_order=0"
                       % os.environ.get("ASAN_OPTIONS", ""))
        return ["env"] + env

    def after_kill(self):
        """Rolls every file back to its last synced size (a file never synced: to empty), or in
        half of the cuts to a random point of its unsynced tail."""
        durable = {}
        if os.path.exists(self.durable_log):
            with open(self.durable_log) as f:
                for line in f:
                    kind, ino, *size = line.split()
                    durable[int(ino)] = int(size[0]) if kind == "S" else 0
        partial = self.rng.random() < 0.5
        for root, _, files in os.walk(os.path.join(self.tmp, "data")):
            for name in files:
                path = os.path.join(root, name)
                st = os.stat(path)
                keep = durable.get(st.st_ino, 0)
                if st.st_size <= keep:
                    continue
                if partial:
                    keep += self.rng.randrange(st.st_size - keep + 1)
                os.truncate(path, keep)
                self.cut_bytes += st.st_size - keep


@unittest.skipIf(not SHIM, "LARDER_POWER_CUT_SHIM is not set (ctest sets it)")
class PowerCutTest(unittest.TestCase):
    results = []

    @classmethod
    def tearDownClass(cls):
        if cls.results:
            report(cls.results, "power cuts through larder-server (SIGKILL, then every file "
                                "rolled back to its synced size or a random part past it)")
            for mode, _, r in cls.results:
                print("  %s: %d unsynced bytes dropped by the cuts" % (mode, r.cut_bytes),
                      file=sys.stderr)

    def run_mode(self, wal, wal_sync):
        seed = int(os.environ.get("LARDER_CRASH_SEED", random.randrange(1 << 30)))
        r = PowerCuts(wal, wal_sync, seed)
        r.run(CYCLES)
        mode = "no" if not wal else ("yes, wal-sync yes" if wal_sync else "yes, wal-sync no")
        self.results.append((mode, CYCLES, r))
        ctx = "seed %d (LARDER_CRASH_SEED=%d reproduces the schedule)" % (seed, seed)
        self.assertEqual(r.failed_restarts, 0, ctx)
        self.assertEqual(r.wrong, [], ctx)
        self.assertEqual(r.errors, [], ctx)
        self.assertGreater(r.journal.acked_writes, CYCLES, ctx)
        self.assertGreater(r.cut_bytes, 0, "no cut dropped anything: the shim recorded nothing?")
        return r

    def test_wal_no(self):
        self.run_mode(False, False)

    def test_wal_yes(self):
        self.run_mode(True, False)

    def test_wal_yes_and_wal_sync_yes(self):
        r = self.run_mode(True, True)
        self.assertEqual(r.lost_acked(), 0, "acknowledged writes lost with wal-sync: %r"
                         % r.totals)


if __name__ == "__main__":
    unittest.main()
