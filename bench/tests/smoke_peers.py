"""bench_peers: larder-peers on small values for every peer and 1 and 2 threads. Every value
read back is checked by the tool (exit 1 on a wrong byte); this also checks that each case
reports every figure and that each peer wrote at least the value bytes to its directory
(which is created under a temp dir and removed)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

PEERS_BIN = os.environ["LARDER_PEERS"]
PEERS = ["larder", "rocksdb", "rocksdb-nowal", "files"]


class PeersSmoke(unittest.TestCase):
    def test_every_peer_reads_back_what_it_wrote(self):
        tmp = tempfile.mkdtemp(prefix="bench-peers-test-", dir=os.environ.get("BENCH_TMP"))
        try:
            p = subprocess.run([PEERS_BIN, "--peers", ",".join(PEERS), "--sizes", "256kb",
                                "--threads", "1,2", "--bytes_per_case", str(4 << 20),
                                "--dir", tmp], capture_output=True, text=True, timeout=120)
            self.assertEqual(os.listdir(tmp), [], "a peer's directory was left behind")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        self.assertEqual(sorted((r["peer"], r["threads"]) for r in rows),
                         sorted((peer, t) for peer in PEERS for t in (1, 2)))
        for r in rows:
            case = (r["peer"], r["threads"])
            self.assertEqual(r["bad"], 0, case)
            self.assertGreaterEqual(r["cold_read_per_value_byte"], 0, case)
            self.assertEqual(r["size"], 256 << 10, case)
            self.assertEqual(r["values"], 16, case)
            for k in ("put_gbs", "warm_gbs", "cold_gbs"):
                self.assertGreater(r[k], 0, (case, k))
            self.assertLessEqual(r["warm_p50_ms"], r["warm_p99_ms"], case)
            # Every peer writes each value byte at least once (the WAL-on RocksDB twice).
            self.assertGreaterEqual(r["device_per_value_byte"], 0.9, case)


if __name__ == "__main__":
    unittest.main()
