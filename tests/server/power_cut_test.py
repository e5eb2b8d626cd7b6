"""Power cuts through larder-server: the crash cycles of crash_cycles_test, but after each
SIGKILL every file of the data directory is rolled back to what the server had made durable,
as if the machine had lost power. power_cut_shim.c, LD_PRELOADed into the server, records each
file's size at every successful fsync/fdatasync, each file created, removed or renamed and each
directory synced; the roll-back removes every file created since its directory's last sync,
brings back the files removed and the names renamed since then, and truncates each file to its
synced size, and in half of the cuts keeps a random part of the unsynced tail instead (pages
written back before the cut, a torn last record). Then the server restarts and every key is
checked against the journal of acknowledged writes. What the model leaves out (directories
created, reordered pages) is listed in power_cut_shim.c.

Asserted, every mode: zero wrong values (bytes never written to that key), zero failed restarts,
zero corruptions counted. Asserted with `wal yes` + `wal-sync yes`: no acknowledged write is
lost. Reported: the acknowledged writes lost with `wal no` and with `wal yes` + `wal-sync no`
(docs/reliability.md says what each mode may lose).

CI: 8 cycles per mode. LARDER_LONG=1: 100. LARDER_CRASH_SEED fixes the seed.
Run: LARDER_SERVER=... LARDER_POWER_CUT_SHIM=build/lib/libpower_cut_shim.so \\
  /usr/bin/python3 -m unittest -v power_cut_test"""
import os
import random
import shutil
import signal
import sys
import tempfile
import unittest

from crash_cycles_test import CrashCycles, info_field, read_all, report
from server_harness import ServerProcess, preload_wrapper

LONG = os.environ.get("LARDER_LONG") == "1"
CYCLES = 100 if LONG else 8
SHIM = os.environ.get("LARDER_POWER_CUT_SHIM")


class PowerCuts(CrashCycles):
    def __init__(self, wal, wal_sync, seed):
        super().__init__(wal, seed)
        self.wal_sync = wal_sync
        self.durable_log = os.path.join(self.tmp, "durable.log")
        self.cut_bytes = self.undone = 0

    def args(self):
        return super().args() + ["--wal-sync", "yes" if self.wal_sync else "no"]

    def wrapper(self):
        return shim_wrapper(self.durable_log)

    def after_kill(self):
        """Rolls every file back to its last synced size (a file never synced: to empty), or in
        half of the cuts to a random point of its unsynced tail."""
        partial = self.rng if self.rng.random() < 0.5 else None
        cut_bytes, undone = roll_back(os.path.join(self.tmp, "data"), self.durable_log, partial)
        self.cut_bytes += cut_bytes
        self.undone += undone


def shim_wrapper(durable_log):
    """The command prefix that runs a server under the shim, logging to `durable_log`."""
    return preload_wrapper(SHIM, LARDER_DURABLE_LOG=durable_log)


def server_under_shim(args):
    """A ServerProcess (not started) that runs under the shim, and the path of its log (one
    log across its restarts)."""
    srv = ServerProcess(args)
    durable_log = os.path.join(srv.tmp, "durable.log")
    srv.wrapper = shim_wrapper(durable_log)
    return srv, durable_log


class DurableLog:
    """What the shim's log says was made durable (power_cut_shim.c has its lines): the synced
    size of each file, where and when each file was created, when each directory's latest
    successful sync started, and the removals and renames since the last cut."""

    def __init__(self, path):
        self.size, self.created_in, self.dir_synced, self.name_changes = {}, {}, {}, []
        dir_syncing = {}
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
        for n, line in enumerate(lines):
            kind, *arg = line.split()
            if kind == "P":  # a cut: what it left on disk is durable, its undone calls gone
                self.name_changes = []
                continue
            ino = int(arg[0])
            if kind == "d":  # a directory sync started: it covers the names changed before.
                # A thread syncs one directory at a time: an earlier d of the same thread
                # left unpaired was cut short by a kill, and pairs with nothing.
                dir_syncing[ino, arg[1]] = n
            elif kind == "D":  # ... and succeeded
                started = dir_syncing.pop((ino, arg[1]))
                self.dir_synced[ino] = max(self.dir_synced.get(ino, -1), started)
            elif kind in ("U", "R"):
                self.name_changes.append((n, kind, arg))
            else:
                self.size[ino] = int(arg[1]) if kind == "S" else 0
                if kind == "C":
                    self.created_in[ino] = (int(arg[1]), n)

    def durable(self, dir_ino, n):
        """Whether a change to directory `dir_ino` recorded at line `n` became durable."""
        return self.dir_synced.get(dir_ino, -1) > n

    def never_named(self, ino):
        """Whether file `ino` was created since its directory's last sync."""
        parent, at = self.created_in.get(ino, (None, None))
        return parent is not None and not self.durable(parent, at)


def undo_name_changes(log, data_dir, graveyard):
    """Undoes, latest first, each removal and rename of a file below `data_dir` that no sync of
    its directory made durable: a removed file, or one a rename replaced, comes back from the
    graveyard (unless its own creation never became durable either), and a renamed one takes
    its old name again. Returns how many were undone."""
    dirs = {os.stat(root).st_ino: root for root, _, _ in os.walk(data_dir)}
    undone = 0

    def bring_back(grave, path):
        if not log.never_named(os.stat(os.path.join(graveyard, grave)).st_ino):
            os.rename(os.path.join(graveyard, grave), path)

    for n, kind, arg in reversed(log.name_changes):
        if kind == "U":
            _, parent, grave, name = arg
            if int(parent) in dirs and not log.durable(int(parent), n):
                bring_back(grave, os.path.join(dirs[int(parent)], name))
                undone += 1
            continue
        ino, source, target, grave, old, new = arg
        if int(source) not in dirs or int(target) not in dirs:
            continue
        if log.durable(int(target), n) and log.durable(int(source), n):
            continue
        path = os.path.join(dirs[int(target)], new)
        if os.path.exists(path) and os.stat(path).st_ino == int(ino):  # not removed since
            os.rename(path, os.path.join(dirs[int(source)], old))
        if grave != "-":
            bring_back(grave, path)
        undone += 1
    return undone


def roll_back(data_dir, durable_log, partial=None):
    """Removes every file below `data_dir` created since its directory's last sync, undoes the
    removals and renames since then, and truncates every file to its last synced size as
    `durable_log` recorded it (a file never synced: to empty), or, given a random.Random
    `partial`, to a random point of its unsynced tail. Returns the bytes cut and the removals
    and renames undone. The log then records the cut: what it left is durable."""
    log = DurableLog(durable_log)
    cut = 0
    for root, _, files in os.walk(data_dir):
        for name in files:
            path = os.path.join(root, name)
            st = os.stat(path)
            if log.never_named(st.st_ino):
                os.unlink(path)
                cut += st.st_size
    graveyard = durable_log + ".graveyard"
    undone = undo_name_changes(log, data_dir, graveyard)
    for root, _, files in os.walk(data_dir):
        for name in files:
            path = os.path.join(root, name)
            st = os.stat(path)
            keep = log.size.get(st.st_ino, 0)
            if st.st_size <= keep:
                continue
            if partial:
                keep += partial.randrange(st.st_size - keep + 1)
            os.truncate(path, keep)
            cut += st.st_size - keep
    shutil.rmtree(graveyard, ignore_errors=True)
    with open(durable_log, "a") as f:
        f.write("P 0\n")
    return cut, undone


@unittest.skipIf(not SHIM, "LARDER_POWER_CUT_SHIM is not set (ctest sets it)")
class PowerCutTest(unittest.TestCase):
    results = []

    @classmethod
    def tearDownClass(cls):
        if cls.results:
            report(cls.results, "power cuts through larder-server (SIGKILL, then every file "
                                "rolled back to its synced size or a random part past it)")
            for mode, _, r in cls.results:
                print("  %s: %d unsynced bytes dropped, %d removals and renames undone by "
                      "the cuts" % (mode, r.cut_bytes, r.undone),
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
        return r, ctx

    def test_wal_no(self):
        self.run_mode(False, False)

    def test_wal_yes(self):
        self.run_mode(True, False)

    def test_wal_yes_and_wal_sync_yes(self):
        r, ctx = self.run_mode(True, True)
        self.assertEqual(r.lost_acked(), 0, "acknowledged writes lost with wal-sync: %r, %s"
                         % (r.totals, ctx))


class OneServerPowerCutCase(unittest.TestCase):
    """A test of one server under the shim: writes, then one power cut and a check."""

    def start_and_set(self, srv, keys):
        """Starts `srv` and sets every key to one random 1 MiB value: (client, value)."""
        srv.start()
        r = srv.client()
        value = os.urandom(1 << 20)
        for k in keys:
            r.set(k, value)
        return r, value

    def power_cut_then_check(self, srv, durable_log, keys, value, why):
        """SIGKILL, every file rolled back to what was synced, a restart: every key must read
        `value` (`why` names the loss otherwise), and no corruption be counted."""
        srv.stop(signal.SIGKILL)
        roll_back(os.path.join(srv.tmp, "data"), durable_log)
        srv.start(timeout=60)
        after = read_all(srv, keys)
        self.assertEqual([k for k in keys if after[k] is None], [], why)
        self.assertEqual([k for k in keys if after[k] not in (None, value)], [])
        self.assertEqual(info_field(srv, "corruptions"), 0)


@unittest.skipIf(not SHIM, "LARDER_POWER_CUT_SHIM is not set (ctest sets it)")
class EvictionPowerCutTest(OneServerPowerCutCase):
    """Entries made durable (SAVE) and then kept by an eviction, which moves their records out
    of the generation it drops: a power cut right after must lose none of them, in any mode."""

    KEYS = ["saved:%d" % i for i in range(24)]

    def saved_then_kept_then_cut(self, wal, wal_sync):
        srv, durable_log = server_under_shim(
            ["--wal", wal, "--wal-sync", wal_sync, "--max-disk-bytes", "48mb",
             "--generation-bytes", "4mb", "--keep-in-place", "yes", "--unixsocket", ""])
        try:
            r, value = self.start_and_set(srv, self.KEYS)
            for _ in range(2):  # reused, and read late: eviction keeps them
                for k in self.KEYS:
                    self.assertEqual(r.get(k), value)
            r.save()
            kept_before = info_field(srv, "reinserted_keys")
            for n in range(200):
                r.set("new:%d" % n, value)
                if info_field(srv, "reinserted_keys") > kept_before:
                    break
            self.assertGreater(info_field(srv, "reinserted_keys"), kept_before, "none kept")
            present = [k for k, v in read_all(srv, self.KEYS).items() if v is not None]
            self.assertGreater(len(present), len(self.KEYS) // 2)
            r.close()
            # Whatever was not synced goes (PowerCutTest checks that the shim records syncs;
            # here the drop's flush may have left nothing unsynced, which is the point).
            self.power_cut_then_check(srv, durable_log, present, value,
                                      "SAVEd, kept by eviction, lost by a power cut")
        finally:
            srv.stop(signal.SIGKILL)
            srv.cleanup()

    def test_wal_no(self):
        self.saved_then_kept_then_cut("no", "no")

    def test_wal_yes(self):
        self.saved_then_kept_then_cut("yes", "no")

    def test_wal_yes_and_wal_sync_yes(self):
        self.saved_then_kept_then_cut("yes", "yes")


@unittest.skipIf(not SHIM, "LARDER_POWER_CUT_SHIM is not set (ctest sets it)")
class PowerCutAfterRestartTest(OneServerPowerCutCase):
    """Writes a process crash left unsynced (WAL on, `wal-sync no`: the crash loses none of
    them), then a restart and a SAVE: a power cut after the SAVE must lose none either, though
    the process that wrote their value files is gone."""

    KEYS = ["crashed:%d" % i for i in range(16)]

    def test_save_after_a_crash_makes_the_crashed_writes_durable(self):
        srv, durable_log = server_under_shim(
            ["--wal", "yes", "--wal-sync", "no", "--maintenance-interval-ms", "0",
             "--unixsocket", ""])
        try:
            r, value = self.start_and_set(srv, self.KEYS)
            r.close()
            srv.stop(signal.SIGKILL)  # a process crash: the files keep what it wrote
            srv.start(timeout=60)
            self.assertEqual(read_all(srv, self.KEYS), {k: value for k in self.KEYS})
            srv.client().save()
            self.power_cut_then_check(srv, durable_log, self.KEYS, value,
                                      "written, crashed, restarted, SAVEd: lost by a power cut")
        finally:
            srv.stop(signal.SIGKILL)
            srv.cleanup()


class RollBackModelTest(unittest.TestCase):
    """roll_back's reading of the shim's log, on logs written by hand: which directory syncs
    make a created file's name durable."""

    def kept_after(self, *lines):
        """Makes a file in a fresh directory and rolls the directory back by a log of `lines`
        ("C", "S 100": the file created, synced at 100 bytes; "d 7", "D 7": its directory's
        sync started, ended by thread 7); True if the file stays."""
        tmp = tempfile.mkdtemp(prefix="larder-rollback-")
        self.addCleanup(shutil.rmtree, tmp)
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        path = os.path.join(data, "000009.log")
        with open(path, "wb") as f:
            f.write(b"x" * 100)
        ino, dir_ino = os.stat(path).st_ino, os.stat(data).st_ino
        log = os.path.join(tmp, "durable.log")
        with open(log, "w") as f:
            for line in lines:
                kind, *arg = line.split()
                f.write("%s %d %s\n" % (kind, dir_ino if kind in ("d", "D") else ino,
                                        dir_ino if kind == "C" else arg[0]))
        roll_back(data, log)
        return os.path.exists(path)

    def test_a_sync_covers_the_names_created_before_it_started(self):
        self.assertTrue(self.kept_after("C", "S 100", "d 7", "D 7"))
        self.assertFalse(self.kept_after("C", "S 100"))
        self.assertFalse(self.kept_after("d 7", "C", "S 100", "D 7"))

    def test_a_sync_a_kill_cut_short_covers_nothing(self):
        # Thread 7 of a killed process started a sync that never ended; the next process
        # created the file and synced the directory: the name is durable.
        self.assertTrue(self.kept_after("d 7", "C", "S 100", "d 9", "D 9"))
        self.assertTrue(self.kept_after("d 7", "C", "S 100", "d 7", "D 7"))  # a tid reused

    def test_concurrent_syncs_each_cover_what_came_before_their_start(self):
        self.assertTrue(self.kept_after("d 7", "C", "S 100", "d 9", "D 9", "D 7"))
        self.assertFalse(self.kept_after("d 7", "C", "S 100", "d 9", "D 7"))

    def names_after(self, change, *syncs):
        """Files "a" (100 bytes, synced) and "b" (50, synced) in a fresh directory; `change`
        removes or renames them as the server would under the shim (a graveyard link first,
        then the call, then its log line); then the directory's `syncs` ("d 7", "D 7") and a
        roll-back. Returns {name: size} of what the directory holds."""
        tmp = tempfile.mkdtemp(prefix="larder-rollback-")
        self.addCleanup(shutil.rmtree, tmp)
        data, log = os.path.join(tmp, "data"), os.path.join(tmp, "durable.log")
        os.makedirs(log + ".graveyard")
        os.mkdir(data)
        dir_ino, lines = os.stat(data).st_ino, []
        for name, size in (("a", 100), ("b", 50)):
            with open(os.path.join(data, name), "wb") as f:
                f.write(b"x" * size)
            lines.append("S %d %d" % (os.stat(os.path.join(data, name)).st_ino, size))

        def keep(name, grave):
            os.link(os.path.join(data, name), os.path.join(log + ".graveyard", grave))

        ino = {n: os.stat(os.path.join(data, n)).st_ino for n in ("a", "b")}
        if change == "remove a":
            keep("a", "1-0")
            os.unlink(os.path.join(data, "a"))
            lines.append("U %d %d 1-0 a" % (ino["a"], dir_ino))
        elif change == "rename a to c":
            os.rename(os.path.join(data, "a"), os.path.join(data, "c"))
            lines.append("R %d %d %d - a c" % (ino["a"], dir_ino, dir_ino))
        elif change == "make c, then remove it":
            with open(os.path.join(data, "c"), "wb") as f:
                f.write(b"x" * 10)
            c_ino = os.stat(os.path.join(data, "c")).st_ino
            keep("c", "1-0")
            os.unlink(os.path.join(data, "c"))
            lines += ["C %d %d" % (c_ino, dir_ino), "S %d 10" % c_ino,
                      "U %d %d 1-0 c" % (c_ino, dir_ino)]
        elif change == "rename a over b":
            keep("b", "1-0")
            os.rename(os.path.join(data, "a"), os.path.join(data, "b"))
            lines.append("R %d %d %d 1-0 a b" % (ino["a"], dir_ino, dir_ino))
        with open(log, "w") as f:
            for line in lines + ["%s %d %s" % (s.split()[0], dir_ino, s.split()[1])
                                 for s in syncs]:
                f.write(line + "\n")
        roll_back(data, log)
        return {n: os.path.getsize(os.path.join(data, n)) for n in sorted(os.listdir(data))}

    def test_removals_and_renames_are_undone_until_their_directory_is_synced(self):
        before = {"a": 100, "b": 50}
        for change, after in (("remove a", {"b": 50}), ("rename a to c", {"b": 50, "c": 100}),
                              ("rename a over b", {"b": 100}), ("make c, then remove it", before)):
            with self.subTest(change=change):
                self.assertEqual(self.names_after(change), before)
                self.assertEqual(self.names_after(change, "d 7"), before)
                self.assertEqual(self.names_after(change, "d 7", "D 7"), after)


if __name__ == "__main__":
    unittest.main()
