"""bench_lmcache_plugin: bench/lmcache_plugin.py on a few small chunks: every peer reports a
warm and a cold pass with a positive rate, every value read back matched what was written (the
script exits 1 otherwise), and its scratch directory is removed."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.environ["LARDER_SOURCE_DIR"]
PEERS = ["engine multi_get_into", "native_plugin in-process", "native_plugin over larder-server",
         "resp (MP adapter wire pattern)", "files (one per chunk, preadv)"]


class LmcachePluginSmoke(unittest.TestCase):
    def test_every_peer_reads_every_chunk_back(self):
        tmp = tempfile.mkdtemp(prefix="bench-plugin-test-")
        try:
            p = subprocess.run(
                ["/usr/bin/python3", os.path.join(ROOT, "bench", "lmcache_plugin.py"),
                 "--native-dir", os.environ["LARDER_NATIVE_DIR"], "--server",
                 os.environ["LARDER_SERVER"], "--dir", tmp, "--chunk", str(1 << 20),
                 "--chunks", "6", "--batch", "4", "--rounds", "1"], capture_output=True, text=True, timeout=120)
            left = os.listdir(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(left, [], "the scratch directory was left behind")
        rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        self.assertEqual(sorted((r["peer"], r["pass"]) for r in rows),
                         sorted((peer, kind) for peer in PEERS for kind in ("warm", "cold")))
        for r in rows:
            self.assertGreater(r["gbs"], 0, r)
            self.assertEqual((r["chunks"], r["chunk"], r["batch"]), (6, 1 << 20, 4))


if __name__ == "__main__":
    unittest.main()
