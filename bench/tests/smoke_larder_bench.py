"""bench_larder_bench: larder-bench's `ram` and `wa` parts on small volumes, as bench/run runs
them (--json): RAM per key after a restart (a few thousand LMCache-shaped keys, the store
reopened in a fresh process) and device bytes per value byte with eviction running (4x a
32 MiB budget). Checks every figure is reported and plausible, that the scratch directory is
emptied, and that a budget too small for the keys fails the run instead of evicting them."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

BENCH = os.environ["LARDER_BENCH"]
KEYS = 3000


def run_bench(*args):
    tmp = tempfile.mkdtemp(prefix="bench-larder-bench-test-", dir=os.environ.get("BENCH_TMP"))
    try:
        p = subprocess.run([BENCH, "--json", "--dir", tmp] + list(args), capture_output=True,
                           text=True, timeout=120)
        left = os.listdir(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = {r["part"]: r for r in (json.loads(l) for l in p.stdout.splitlines()
                                   if l.startswith("{"))}
    return p, rows, left


class LarderBenchSmoke(unittest.TestCase):
    def test_ram_and_wa(self):
        p, rows, left = run_bench("--parts", "ram,wa", "--ram_keys", str(KEYS),
                                  "--wa_budget", str(32 << 20))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(left, [], "scratch data left behind")
        ram, wa = rows["ram"], rows["wa"]
        self.assertEqual((ram["keys_written"], ram["keys"]), (KEYS, KEYS))
        self.assertEqual(ram["value_bytes"], 16384)
        # meta-llama/Llama-3.1-8B-Instruct@<8 hex>@0@<64 hex>
        self.assertEqual(ram["key_bytes"], 32 + 1 + 8 + 3 + 64)
        self.assertGreaterEqual(ram["value_file_bytes"], KEYS * 16384)
        # 40-byte slots, shards not full; the process grew by at least the index.
        self.assertGreaterEqual(ram["index_memory_per_key"], 40)
        self.assertGreater(ram["rss_after_open_bytes"], ram["rss_before_open_bytes"])
        self.assertAlmostEqual(ram["rss_per_key"], (ram["rss_after_open_bytes"] -
                                                    ram["rss_before_open_bytes"]) / KEYS, 1)
        self.assertEqual((wa["wal"], wa["budget"], wa["value_bytes"]),
                         (False, 32 << 20, 128 << 20))
        self.assertGreater(wa["evicted_keys"], 0)
        self.assertGreaterEqual(wa["device_per_value_byte"], 0.9)
        self.assertLessEqual(wa["disk_bytes_end"], 2 * wa["budget"])

    def test_a_budget_too_small_for_the_keys_fails_the_run(self):
        p, rows, left = run_bench("--parts", "ram", "--ram_keys", str(KEYS),
                                  "--ram_max_disk_bytes", str(16 << 20))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("more than the budget", p.stderr)
        self.assertNotIn("ram", rows)
        self.assertEqual(left, [])


if __name__ == "__main__":
    unittest.main()
