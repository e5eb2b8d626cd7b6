"""bench_report: report.py turns a raw.json into report.md and the PNG plots. Runs on a small
raw.json built here (every section present, one wrong-value error) so the report generator
cannot rot unseen; checks the goals table, the ratios and that the error is listed."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "driver"))
import report  # noqa: E402

MiB = 1 << 20


def raw():
    servers = []
    for label, set_gbs, get_gbs in (("larder", 0.5, 1.5), ("redis", 0.4, 1.0)):
        for phase, gbs in (("set", set_gbs), ("get", get_gbs), ("cold", 0.9)):
            if label == "redis" and phase == "cold":
                continue
            servers.append({"label": label, "phase": phase, "size": 4 * MiB, "conns": 1,
                            "gbs": gbs, "p50_ms": 1.0, "p99_ms": 2.0,
                            "device_per_value_byte": 1.0})
    servers.append({"label": "larder", "phase": "exists", "size": 4 * MiB, "conns": 1,
                    "gbs": 0, "p50_ms": 0.02, "p99_ms": 0.05, "device_per_value_byte": 0})
    inproc = [{"peer": p, "size": 4 * MiB, "threads": 1, "put_gbs": 0.5, "warm_gbs": 2.0,
               "cold_gbs": 1.0, "cold_p50_ms": 3.0, "cold_p99_ms": 5.0,
               "device_per_value_byte": 1.0} for p in ("larder", "files")]
    hit = []
    for cap in (0.25, 0.5, 1.0):
        for pol, h in (("belady", 0.8), ("lru-reuse", 0.6), ("lru", 0.5), ("fifo", 0.4)):
            hit.append({"capacity": cap, "policy": pol, "hit_ratio": h * min(1, cap * 2),
                        "written_per_ws": 1.5, "reinserted_bytes": 10, "seconds": 0.1})
    return {"quick": True, "command": "bench/run --quick", "seconds": 1.0,
            "machine": {"commit": "abc", "cpu": "cpu", "cores": 2},
            "errors": ["resp-load larder 4m c=1 exited 1: ERROR: 1 wrong replies"],
            "fio": [{"size": 4 * MiB, "gbs": 1.0, "p50_ms": 4.0, "p99_ms": 6.0}],
            "servers": servers, "redis_benchmark": [], "inproc": inproc,
            "trace": {"requests": 10, "users": 5, "zipf_s": 1.0, "concurrency": 2,
                      "mean_prompt_tokens": 5000.0, "unique_chunks": 100,
                      "value_bytes": 65536, "working_set_bytes": 100 * 65536},
            "hit": hit}


class ReportSmoke(unittest.TestCase):
    def test_report_has_every_section_and_the_right_ratios(self):
        out = tempfile.mkdtemp(prefix="bench-report-test-")
        try:
            report.write(raw(), out)
            md = open(os.path.join(out, "report.md")).read()
            for png in ("throughput.png", "hit_ratio.png"):
                self.assertGreater(os.path.getsize(os.path.join(out, png)), 1000, png)
        finally:
            shutil.rmtree(out, ignore_errors=True)
        self.assertIn("1 wrong replies", md)
        # GET 1.5 / 1.0 = 1.5x Redis: met; SET 0.5 / 0.4 = 1.25: met; cold 0.9 / fio 1.0.
        self.assertIn("| GET ≥ 1.2× Redis at 4–32 MiB | 1.500 (4 MiB, 1 conns) | yes |", md)
        self.assertIn("| SET ≥ 1.0× Redis at 4–32 MiB | 1.250 (4 MiB, 1 conns) | yes |", md)
        self.assertIn("cold GET ≥ 0.85× fio direct read (1 conn / 1 thread) | 0.900", md)
        # lru-reuse / Belady = 0.75 at 25%: 16.7% short of 0.9.
        self.assertIn("| lru-reuse ≥ 0.9× Belady at 25% | 0.750 (lru-reuse / belady) | "
                      "no: 16.67% short |", md)
        for section in ("## Over RESP", "## In-process", "## Hit ratio vs capacity"):
            self.assertIn(section, md)


if __name__ == "__main__":
    unittest.main()
