"""bench_trace: larder-trace on a tiny seeded trace; checks the invariants every replay must
keep, whatever the policies' tuning:

- no hit read returned wrong bytes and no write failed (exit status 0);
- Belady's offline optimum has a hit ratio >= every other policy at every capacity;
- each policy's hit ratio does not fall as the capacity grows;
- with a budget well above the working set (nothing is evicted) every policy equals Belady.

The replay directories live in a temp dir removed at the end."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

TRACE = os.environ["LARDER_TRACE"]
# Budgets well above the 4 MiB memtable floor larder-trace configures (below it every Put
# evicts everything, a regime the report does not use).
CAPS = [0.25, 0.5, 1.0, 2.0]
POLICIES = ["belady", "lru-exact", "lru-reuse", "lru", "fifo"]


class TraceSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # tmpfs when there is one: generation rotations fsync, and hit ratios do not depend on
        # the device.
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        tmp = tempfile.mkdtemp(prefix="bench-trace-test-", dir=shm)
        try:
            p = subprocess.run([TRACE, "--seed", "3", "--turns", "80", "--users", "24",
                                "--concurrency", "6", "--value_bytes", "65536",
                                "--capacities", ",".join(map(str, CAPS)), "--dir", tmp],
                               capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        cls.rc, cls.err = p.returncode, p.stderr
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        cls.trace = rows[0]["trace"] if rows else {}
        cls.hit = {(r["capacity"], r["policy"]): r for r in rows[1:]}

    def test_replay_reads_only_right_bytes(self):
        self.assertEqual(self.rc, 0, self.err)
        self.assertEqual(self.trace["requests"], 80)
        self.assertGreater(self.trace["unique_chunks"], 300)
        self.assertEqual(len(self.hit), len(CAPS) * len(POLICIES))

    def test_belady_is_an_upper_bound(self):
        for cap in CAPS:
            b = self.hit[(cap, "belady")]["hit_ratio"]
            for p in POLICIES:
                self.assertLessEqual(self.hit[(cap, p)]["hit_ratio"], b + 1e-9, (cap, p))

    def test_hit_ratio_grows_with_capacity(self):
        for p in POLICIES:
            ratios = [self.hit[(cap, p)]["hit_ratio"] for cap in CAPS]
            self.assertEqual(ratios, sorted(ratios), p)
        self.assertLess(self.hit[(0.25, "belady")]["hit_ratio"],
                        self.hit[(2.0, "belady")]["hit_ratio"])

    def test_no_eviction_means_every_policy_is_optimal(self):
        b = self.hit[(2.0, "belady")]
        for p in POLICIES:
            r = self.hit[(2.0, p)]
            self.assertEqual(r["hit_tokens"], b["hit_tokens"], p)
            self.assertEqual(r["prompt_tokens"], b["prompt_tokens"], p)
        self.assertGreater(b["hit_ratio"], 0.3)


if __name__ == "__main__":
    unittest.main()
