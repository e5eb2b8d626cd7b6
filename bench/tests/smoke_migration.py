"""bench_migration: bench/cluster_migration.py on 50 MiB of 1 MiB values in 100 slots, so the
tool cannot rot: the migration succeeds, every reader read during it, no wrong bytes."""
import json
import os
import subprocess
import unittest

ROOT = os.environ.get("LARDER_SOURCE_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")


class MigrationSmoke(unittest.TestCase):
    def test_small_migration(self):
        p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "cluster_migration.py"),
                            "--server", os.environ["LARDER_SERVER"], "--gib", "0.05",
                            "--value-mib", "1", "--slots", "100"],
                           capture_output=True, text=True, timeout=110)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        out = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(out["migration"]["state"], "success")
        self.assertEqual(out["migration"]["keys"], 51)
        self.assertEqual(len(out["readers"]), 3)
        for r in out["readers"]:
            self.assertEqual(r.get("wrong", 0), 0, r)
            self.assertIn("max_ms", r, r)  # it read during the migration


if __name__ == "__main__":
    unittest.main()
