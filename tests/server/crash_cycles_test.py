"""Crash cycles through larder-server: a write+read load runs over several connections, the
server is killed with SIGKILL at a random moment (sometimes while it is still recovering), then
restarted on the same data directory, and every key is read back and checked against the journal
of acknowledged writes (crash_journal.py).

Asserted, both modes: zero wrong values (bytes never written to that key), zero failed restarts,
zero corruptions counted, and reads during the load return exactly the acknowledged value.
Asserted with `wal yes`: no acknowledged write is lost (a process kill leaves the WAL in the page
cache). With `wal no` the losses (acknowledged writes since the last memtable flush) are
reported, not asserted.

CI: 20 cycles per mode. LARDER_LONG=1: 200 cycles per mode. LARDER_CRASH_SEED fixes the seed.
Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v crash_cycles_test"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from crash_journal import SIZES, Journal, make_value, parse_seq
from server_harness import SERVER, ServerProcess, encode

LONG = os.environ.get("LARDER_LONG") == "1"
CYCLES = 200 if LONG else 20
WORKERS = 3
KEYS_PER_WORKER = 40


class Worker(threading.Thread):
    """Owns its keys: SET (70%), GET (20%, checked against the journal), DEL (10%), until the
    connection dies. Records the op in flight when it does."""

    def __init__(self, srv, journal, keys, rng, errors):
        super().__init__(daemon=True)
        self.srv, self.journal, self.keys, self.rng, self.errors = srv, journal, keys, rng, errors
        self.ops = 0

    def run(self):
        try:
            rc = self.srv.raw()
        except OSError:
            return
        try:
            while True:
                key = self.rng.choice(self.keys)
                st = self.journal.keys[key]
                p = self.rng.random()
                if p < 0.7:
                    seq = self.journal.next_seq()
                    st.sent.add(seq)
                    st.pending = ("set", seq)
                    reply = rc.call("SET", key, make_value(key, seq, self.rng.choice(SIZES)))
                    if reply != b"+OK\r\n":
                        self.errors.append("SET %s answered %r" % (key, reply[:200]))
                        return
                    st.acked, st.pending = seq, None
                    self.journal.acked_writes += 1
                elif p < 0.9:
                    reply = rc.call("GET", key)
                    if reply == b"$-1\r\n":
                        ok = st.acked is None
                    else:
                        value = reply[reply.index(b"\r\n") + 2:-2]
                        ok = st.acked is not None and parse_seq(key, value) == st.acked
                    if not ok:
                        self.errors.append("live GET %s: acked seq %r, got %r" %
                                           (key, st.acked, reply[:80]))
                        return
                else:
                    st.pending = ("del",)
                    reply = rc.call("DEL", key)
                    if reply not in (b":0\r\n", b":1\r\n"):
                        self.errors.append("DEL %s answered %r" % (key, reply))
                        return
                    st.acked, st.pending = None, None
                self.ops += 1
        except (OSError, ConnectionError, ValueError):
            return  # the server was killed
        finally:
            rc.close()


def read_all(srv, keys):
    """GET every key in one pipeline: {key: value or None}."""
    rc = srv.raw()
    try:
        rc.send(b"".join(encode("GET", k) for k in keys))
        out = {}
        for k in keys:
            r = rc.reply()
            out[k] = None if r == b"$-1\r\n" else r[r.index(b"\r\n") + 2:-2]
        return out
    finally:
        rc.close()


def info_field(srv, name):
    rc = srv.raw()
    try:
        text = rc.call("INFO", "larder").decode()
    finally:
        rc.close()
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise KeyError(name)


class CrashCycles:
    """One mode's run: `cycles` kill/restart/verify rounds on one data directory."""

    def __init__(self, wal, seed):
        self.wal = wal
        self.rng = random.Random(seed)
        self.tmp = tempfile.mkdtemp(prefix="larder-crash-")
        self.keys = ["w%d:k%d" % (w, i) for w in range(WORKERS) for i in range(KEYS_PER_WORKER)]
        self.journal = Journal(self.keys)
        self.totals = dict(ok=0, lost=0, stale=0, resurrected=0, wrong=0)
        self.failed_restarts = 0
        self.recovery_kills = 0
        self.errors = []
        self.wrong = []

    def args(self):
        # A large budget: nothing is evicted, so a missing key is a lost write, not an eviction.
        return ["--wal", "yes" if self.wal else "no", "--max-disk-bytes", "4gb",
                "--memtable-bytes", "16mb", "--generation-bytes", "64mb",
                "--unixsocket", ""]

    def wrapper(self):
        """A command prefix for every server started (power_cut_test adds its shim)."""
        return []

    def after_kill(self):
        """Runs after each SIGKILL, the server dead (power_cut_test rolls files back)."""

    def start(self):
        srv = ServerProcess(self.args(), tmp=self.tmp, wrapper=self.wrapper())
        try:
            return srv.start(timeout=60)
        except RuntimeError as e:
            self.failed_restarts += 1
            self.errors.append("restart failed: %s" % str(e)[-2000:])
            srv.stop(signal.SIGKILL)
            self.after_kill()
            return None

    def kill_during_recovery(self):
        """Starts the server and SIGKILLs it a few ms later, likely inside Store::Open."""
        cmd = self.wrapper() + [SERVER, "--port", "0", "--dir", os.path.join(self.tmp, "data")]
        cmd += self.args()
        with open(os.path.join(self.tmp, "recovery-kill.log"), "ab") as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            time.sleep(self.rng.uniform(0.0, 0.08))
            p.kill()
            p.wait()
        self.after_kill()
        self.recovery_kills += 1

    def verify(self, srv):
        got = read_all(srv, self.keys)
        for k in self.keys:
            verdict = self.journal.classify(k, got[k])
            self.totals[verdict] += 1
            if verdict == "wrong":
                self.wrong.append("%s: %r" % (k, (got[k] or b"")[:60]))
            self.journal.rebase(k, got[k])
        corruptions = info_field(srv, "corruptions")
        if corruptions:
            self.errors.append("INFO corruptions = %d after restart" % corruptions)

    def run(self, cycles):
        srv = self.start()
        try:
            for c in range(cycles):
                if srv is None:
                    break
                workers = [Worker(srv, self.journal, self.keys[w::WORKERS],
                                  random.Random(self.rng.random()), self.errors)
                           for w in range(WORKERS)]
                for t in workers:
                    t.start()
                time.sleep(self.rng.uniform(0.05, 1.2))
                srv.stop(signal.SIGKILL)
                for t in workers:
                    t.join(30)
                self.after_kill()
                if self.rng.random() < 0.2:
                    self.kill_during_recovery()
                srv = self.start()
                if srv is not None:
                    self.verify(srv)
        finally:
            if srv is not None:
                srv.stop(signal.SIGKILL)
            shutil.rmtree(self.tmp, ignore_errors=True)

    def lost_acked(self):
        return self.totals["lost"] + self.totals["stale"] + self.totals["resurrected"]


def report(results, title="crash cycles through larder-server (SIGKILL at random moments)"):
    lines = ["", "  %s:" % title,
             "  | wal | cycles | kills in recovery | acked writes | keys checked | lost acked "
             "(missing / stale / undeleted) | wrong values | failed restarts |",
             "  |---|---|---|---|---|---|---|---|"]
    for mode, cycles, r in results:
        t = r.totals
        lines.append("  | %s | %d | %d | %d | %d | %d (%d / %d / %d) | %d | %d |" % (
            mode, cycles, r.recovery_kills, r.journal.acked_writes, sum(t.values()),
            r.lost_acked(), t["lost"], t["stale"], t["resurrected"], t["wrong"],
            r.failed_restarts))
    print("\n".join(lines), file=sys.stderr)


class CrashCyclesTest(unittest.TestCase):
    results = []

    @classmethod
    def tearDownClass(cls):
        report(cls.results)

    def run_mode(self, wal):
        seed = int(os.environ.get("LARDER_CRASH_SEED", random.randrange(1 << 30)))
        r = CrashCycles(wal, seed)
        r.run(CYCLES)
        self.results.append(("yes" if wal else "no", CYCLES, r))
        ctx = "seed %d (LARDER_CRASH_SEED=%d reproduces the schedule)" % (seed, seed)
        self.assertEqual(r.failed_restarts, 0, ctx)
        self.assertEqual(r.wrong, [], ctx)
        self.assertEqual(r.errors, [], ctx)
        self.assertGreater(r.journal.acked_writes, CYCLES, ctx)
        return r, ctx

    def test_wal_no(self):
        self.run_mode(False)

    def test_wal_yes(self):
        r, ctx = self.run_mode(True)
        self.assertEqual(r.lost_acked(), 0, "acknowledged writes lost with the WAL on: %r, %s"
                         % (r.totals, ctx))


if __name__ == "__main__":
    unittest.main()
