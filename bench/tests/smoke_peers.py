"""bench_peers: larder-peers on small values for every peer and 1 and 2 threads. Every value
read back is checked by the tool (exit 1 on a wrong byte); this also checks that each case
reports every figure (the larder peer its batched MultiGetInto pass and its options), that
each peer wrote at least the value bytes to its directory (which is created under a temp dir
and removed), and that the check can fail: a value overwritten behind the bench's back must be
counted once per read pass and fail the run."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

PEERS_BIN = os.environ["LARDER_PEERS"]
PEERS = ["larder", "rocksdb", "rocksdb-nowal", "files"]


def run_peers(*args):
    tmp = tempfile.mkdtemp(prefix="bench-peers-test-", dir=os.environ.get("BENCH_TMP"))
    try:
        p = subprocess.run([PEERS_BIN, "--sizes", "256kb", "--bytes_per_case", str(4 << 20),
                            "--dir", tmp] + list(args), capture_output=True, text=True,
                           timeout=120)
        left = os.listdir(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return p, [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")], left


class PeersSmoke(unittest.TestCase):
    def test_help_lists_each_tools_own_flags(self):
        # larder-peers links RocksDB, whose tools define dozens of gflags of their own.
        for env, own in (("LARDER_PEERS", "-peers"), ("LARDER_BENCH", "-bytes_per_case"),
                         ("LARDER_TRACE", "-capacities"), ("RESP_LOAD", "-conns")):
            p = subprocess.run([os.environ[env], "--help"], capture_output=True, text=True,
                               timeout=20)
            self.assertEqual(p.returncode, 0, env)
            self.assertIn("see bench/README.md", p.stdout.splitlines()[0], env)
            self.assertIn("\n    " + own + " (", p.stdout, env)
            self.assertNotIn("Flags from", p.stdout, env)
            self.assertNotIn("-flagfile", p.stdout, env)

    def test_every_peer_reads_back_what_it_wrote(self):
        p, rows, left = run_peers("--peers", ",".join(PEERS), "--threads", "1,2")
        self.assertEqual(left, [], "a peer's directory was left behind")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted((r["peer"], r["threads"]) for r in rows),
                         sorted((peer, t) for peer in PEERS for t in (1, 2)))
        for r in rows:
            case = (r["peer"], r["threads"])
            self.assertEqual(r["bad"], 0, case)
            self.assertGreaterEqual(r["cold_read_per_value_byte"], 0, case)
            # The warming pass filled the page cache: the warm pass reads nothing from the disk.
            self.assertLess(r["warm_read_per_value_byte"], 0.1, case)
            self.assertEqual(r["size"], 256 << 10, case)
            self.assertEqual(r["values"], 16, case)
            for k in ("put_gbs", "warm_gbs", "cold_gbs"):
                self.assertGreater(r[k], 0, (case, k))
            self.assertLessEqual(r["warm_p50_ms"], r["warm_p99_ms"], case)
            # Every peer writes each value byte at least once (the WAL-on RocksDB twice).
            self.assertGreaterEqual(r["device_per_value_byte"], 0.9, case)
            # Only liblarder has a batched read.
            self.assertEqual("multiget_cold_gbs" in r, r["peer"] == "larder", case)
            if r["peer"] == "larder":
                self.assertGreater(r["multiget_cold_gbs"], 0, case)
                self.assertEqual(r["batch"], 8, case)
                self.assertLessEqual(r["multiget_p50_ms"], r["multiget_p99_ms"], case)
                self.assertEqual(r["options"]["direct_reads"], False, case)
                self.assertEqual(r["options"]["read_queue_depth"], 8, case)

    def test_direct_reads_option_is_applied_and_reported(self):
        p, rows, _ = run_peers("--peers", "larder", "--threads", "2", "--larder_direct_reads",
                               "--larder_read_queue_depth", "4", "--batch", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual(r["bad"], 0)
        self.assertEqual((r["options"]["direct_reads"], r["options"]["read_queue_depth"],
                          r["batch"]), (True, 4, 3))
        # O_DIRECT bypasses the page cache: the warm pass reads the device too.
        self.assertGreaterEqual(r["warm_read_per_value_byte"], 0.9)

    def test_a_wrong_value_is_counted_in_every_read_pass(self):
        for peer, passes in (("larder", 4), ("files", 3)):
            p, rows, _ = run_peers("--peers", peer, "--threads", "1", "--test_plant_wrong_value")
            self.assertEqual(p.returncode, 1, (peer, p.stderr))
            self.assertIn("bad reads", p.stderr)
            # The untimed warming pass, warm, cold (and larder's MultiGetInto pass).
            self.assertEqual(rows[0]["bad"], passes, peer)
        # With rounds, every round's passes count.
        p, rows, _ = run_peers("--peers", "files", "--threads", "1", "--rounds", "2",
                               "--test_plant_wrong_value")
        self.assertEqual((p.returncode, rows[0]["bad"]), (1, 6), p.stderr)

    def test_rounds_give_the_median_of_each_figure_and_every_round_s_value(self):
        p, rows, left = run_peers("--peers", "larder,files", "--threads", "1", "--rounds", "3")
        self.assertEqual((p.returncode, left), (0, []), p.stderr)
        self.assertEqual([r["peer"] for r in rows], ["larder", "files"])
        for r in rows:
            self.assertEqual((r["rounds"], r["bad"]), (3, 0), r["peer"])
            keys = ["put_gbs", "warm_gbs", "cold_gbs"]
            keys += ["multiget_cold_gbs"] if r["peer"] == "larder" else []
            for k in keys:
                per_round = r[k + "_rounds"]
                self.assertEqual(len(per_round), 3, (r["peer"], k))
                self.assertAlmostEqual(r[k], sorted(per_round)[1], places=4, msg=(r["peer"], k))


if __name__ == "__main__":
    unittest.main()
