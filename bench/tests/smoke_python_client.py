"""bench_python_client: bench/python_client.py on small batches: every peer reports a put and a
get rate for every size, and every value read back matched what was written (the script exits 1
otherwise)."""
import json
import os
import subprocess
import unittest

import redis

ROOT = os.environ["LARDER_SOURCE_DIR"]


class PythonClientSmoke(unittest.TestCase):
    def test_every_peer_puts_and_gets_every_size(self):
        p = subprocess.run(
            ["/usr/bin/python3", os.path.join(ROOT, "bench", "python_client.py"), "--server",
             os.environ["LARDER_SERVER"], "--sizes", "0.25,1", "--batch-mib", "2", "--rounds",
             "1", "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        peers = ["AsyncClient", "Client", "redis.asyncio"]
        if redis.utils.HIREDIS_AVAILABLE:
            peers.append("AsyncClient pyparse")
        self.assertEqual(sorted((r["peer"], r["value"]) for r in rows),
                         sorted((peer, size) for peer in peers for size in (1 << 18, 1 << 20)))
        for r in rows:
            self.assertGreater(r["put_gbs"], 0, r)
            self.assertGreater(r["get_gbs"], 0, r)


if __name__ == "__main__":
    unittest.main()
