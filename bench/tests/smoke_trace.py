"""bench_trace: larder-trace on a tiny seeded trace; checks the invariants every replay must
keep, whatever the policies' tuning:

- no hit read returned wrong bytes and no write failed (exit status 0), in process and
  through the real larder-server;
- Belady's offline optimum has a hit ratio >= every other policy at every capacity;
- each policy's hit ratio does not fall as the capacity grows;
- with a budget well above the working set (nothing is evicted) every policy equals Belady;
- the trace written in Mooncake's format reads back as the same trace, and a malformed file
  is refused with its file and line.

The replay directories live in a temp dir removed at the end."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

TRACE = os.environ["LARDER_TRACE"]
SERVER = os.environ["LARDER_SERVER"]
CAPS = [0.25, 0.5, 1.0, 2.0]
SIMS = ["belady", "lru-exact", "fifo-exact", "s3-fifo"]
ENGINE = ["lru-reuse", "lru", "fifo"]
SERVER_POLICIES = ["lru-reuse"]
ROWS = [("sim", p) for p in SIMS] + [("engine", p) for p in ENGINE] + \
    [("server", p) for p in SERVER_POLICIES]
TINY = ["--seed", "3", "--turns", "80", "--users", "24", "--concurrency", "6",
        "--value_bytes", "65536"]


def run_trace(args, tmp):
    p = subprocess.run([TRACE, *args, "--dir", tmp], capture_output=True, text=True,
                       timeout=120)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p, rows


class TraceSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # tmpfs when there is one: generation rotations fsync, and hit ratios do not depend on
        # the device.
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        cls.tmp = tempfile.mkdtemp(prefix="bench-trace-test-", dir=shm)
        cls.file = os.path.join(cls.tmp, "trace.jsonl")
        p, rows = run_trace([*TINY, "--capacities", ",".join(map(str, CAPS)),
                             "--sims", ",".join(SIMS), "--policies", ",".join(ENGINE),
                             "--server_bin", SERVER, "--server_policies",
                             ",".join(SERVER_POLICIES), "--write_trace", cls.file], cls.tmp)
        cls.rc, cls.err = p.returncode, p.stderr
        cls.trace = rows[0]["trace"] if rows else {}
        cls.hit = {(r["capacity"], r["via"], r["policy"]): r for r in rows[1:]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_replay_reads_only_right_bytes(self):
        self.assertEqual(self.rc, 0, self.err)
        self.assertEqual(self.trace["requests"], 80)
        self.assertGreater(self.trace["unique_chunks"], 300)
        self.assertEqual(len(self.hit), len(CAPS) * len(ROWS))
        for key, r in self.hit.items():
            self.assertEqual(r["bad"], 0, key)
            if key[1] != "sim":
                self.assertGreater(r["bytes_written"], 0, key)
                self.assertLessEqual(r["live_bytes"], r["max_disk_bytes"], key)

    def test_belady_is_an_upper_bound(self):
        for cap in CAPS:
            b = self.hit[(cap, "sim", "belady")]["hit_ratio"]
            for via, p in ROWS:
                self.assertLessEqual(self.hit[(cap, via, p)]["hit_ratio"], b + 1e-9, (cap, p))

    def test_hit_ratio_grows_with_capacity(self):
        for via, p in ROWS:
            ratios = [self.hit[(cap, via, p)]["hit_ratio"] for cap in CAPS]
            self.assertEqual(ratios, sorted(ratios), (via, p))
        self.assertLess(self.hit[(0.25, "sim", "belady")]["hit_ratio"],
                        self.hit[(2.0, "sim", "belady")]["hit_ratio"])

    def test_no_eviction_means_every_policy_is_optimal(self):
        b = self.hit[(2.0, "sim", "belady")]
        for via, p in ROWS:
            r = self.hit[(2.0, via, p)]
            self.assertEqual(r["hit_tokens"], b["hit_tokens"], (via, p))
            self.assertEqual(r["prompt_tokens"], b["prompt_tokens"], (via, p))
        self.assertGreater(b["hit_ratio"], 0.3)

    def test_mooncake_file_replays_as_the_same_trace(self):
        p, rows = run_trace(["--trace_file", self.file, "--block_tokens", "256",
                             "--capacities", "0.25", "--sims", ",".join(SIMS), "--policies",
                             ""], self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows[0]["trace"]["unique_chunks"], self.trace["unique_chunks"])
        self.assertEqual(rows[0]["trace"]["prompt_tokens"], self.trace["prompt_tokens"])
        for r in rows[1:]:
            self.assertEqual(r["hit_tokens"], self.hit[(0.25, "sim", r["policy"])]["hit_tokens"])

    def test_malformed_file_is_refused_with_its_line(self):
        bad = os.path.join(self.tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"timestamp": 0, "input_length": 1024, "hash_ids": [1, 2]}\n')
            f.write('{"timestamp": 5, "input_length": 2048, "hash_ids": [1, 2]}\n')
        p, rows = run_trace(["--trace_file", bad, "--capacities", "0.5"], self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.jsonl:2: 2 hash_ids for 2048 tokens", p.stderr)
        self.assertEqual(rows, [])
        p, _ = run_trace(["--sims", "nope", "--turns", "5"], self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown policy nope", p.stderr)


if __name__ == "__main__":
    unittest.main()
