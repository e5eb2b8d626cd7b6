"""bench_report: report.py turns a raw.json into report.md and the PNG plots. Runs on a small
raw.json built here (every section present, one wrong-value error) so the report generator
cannot rot unseen; checks the goals table (ratios, worst cases, met / short / over, cases not
measured), the ratio columns and that the error is listed."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "driver"))
import report  # noqa: E402

MiB = 1 << 20


def server_rows():
    servers = []
    for label, set_gbs, get_gbs in (("larder", 0.5, 1.5), ("redis", 0.4, 1.0)):
        for conns in (1, 4):
            for phase, gbs in (("set", set_gbs), ("get", get_gbs), ("cold", 0.9 / conns)):
                if label == "redis" and phase == "cold":
                    continue
                servers.append({"label": label, "phase": phase, "size": 4 * MiB,
                                "conns": conns, "ops": 32, "gbs": gbs, "p50_ms": 1.0, "p99_ms": 2.0,
                                "device_per_value_byte": 1.0})
                if phase == "cold" and conns == 4:  # fio ran right after it
                    servers[-1].update(fio_beside_rounds=[[0.225, 0.3], [0.2, 0.4], [0.21, 0.3]],
                                       fio_beside_ratio=0.7, fio_beside_gbs=0.3,
                                       fio_beside_ioengine="io_uring")
    servers.append({"label": "larder", "phase": "exists", "size": 4 * MiB, "conns": 1,
                    "gbs": 0, "p50_ms": 0.02, "p99_ms": 0.05, "device_per_value_byte": 0})
    return servers


def inproc_rows():
    def row(peer, put, warm, cold, **extra):
        r = {"peer": peer, "size": 4 * MiB, "threads": 1, "rounds": 3, "put_gbs": put,
             "warm_gbs": warm, "cold_gbs": cold, "cold_p50_ms": 3.0, "cold_p99_ms": 5.0,
             "device_per_value_byte": 1.0}
        r.update(extra)
        return r
    mg = dict(batch=8, multiget_cold_gbs=1.6, multiget_p50_ms=9.0, multiget_p99_ms=12.0)
    return [row("larder", 0.5, 2.0, 1.0, options={"direct_reads": False,
                                                  "read_queue_depth": 8}, **mg),
            row("files", 0.5, 2.0, 1.0),
            row("larder", 0.45, 1.0, 1.2, options={"direct_reads": True, "read_queue_depth": 8},
                **dict(mg, multiget_cold_gbs=2.0))]


def redis_benchmark_rows():
    rows = []
    for server, get, set_one, set_r, busy in (("larder", 300, 250, 180, 0.9),
                                              ("redis", 200, 250, 200, 0.95)):
        for op, keyspace, rps in (("GET", "one", get), ("SET", "one", set_one),
                                  ("SET", "random", set_r)):
            rows.append({"server": server, "size": 4 * MiB, "op": op, "keyspace": keyspace,
                         "requests": 64, "rps": rps, "rps_rounds": [rps - 10, rps, rps + 20],
                         "client_busy": busy, "client_cpu_ms": busy * 1000 / rps,
                         "server_cpu_ms": 1.25})
    return rows


def raw():
    hit = []
    for cap in (0.1, 0.25, 0.5, 1.0):
        for via, pol, h, written in (("sim", "belady", 0.8, 100), ("sim", "lru-exact", 0.62, 100),
                                     ("sim", "s3-fifo", 0.58, 100), ("engine", "lru-reuse", 0.6,
                                                                     150),
                                     ("server", "lru-reuse", 0.6, 140)):
            hit.append({"capacity": cap, "via": via, "policy": pol,
                        "hit_ratio": h * min(1, cap * 2), "bytes_written": written,
                        "written_per_ws": 1.5, "reinserted_bytes": 10, "live_bytes": 9,
                        "max_disk_bytes": 10, "seconds": 0.1})
    fio_row = {"size": 4 * MiB, "gbs": 1.0, "p50_ms": 4.0, "p99_ms": 6.0}
    return {"quick": True, "command": "bench/run --quick", "seconds": 1.0,
            "machine": {"commit": "abc", "cpu": "cpu", "cores": 2},
            "errors": ["resp-load larder 4m c=1 exited 1: ERROR: 1 wrong replies"],
            "fio_seq": [fio_row], "fio_rand": [dict(fio_row, gbs=0.8)],
            "fio_qd": [dict(fio_row, gbs=1.5, iodepth=4, ioengine="io_uring"),
                       dict(fio_row, gbs=2.0, iodepth=8, ioengine="io_uring")],
            "servers": server_rows(), "redis_benchmark": redis_benchmark_rows(),
            "server_info": {"larder": {"max_disk_bytes": 8 << 30, "evicted_keys": 0}},
            "inproc": inproc_rows(),
            "ram": {"part": "ram", "keys": 20000, "key_bytes": 108, "value_bytes": 16384,
                    "rss_before_open_bytes": 10 * MiB, "rss_after_open_bytes": 11 * MiB,
                    "rss_per_key": 70.0, "rss_anon_per_key": 60.0, "index_memory_per_key": 50.0,
                    "open_seconds": 0.1, "disk_bytes": 330000000, "max_disk_bytes": 5 << 30},
            "wa": {"part": "wa", "wal": False, "value_bytes": 4096 * MiB, "budget": 1024 * MiB,
                   "device_per_value_byte": 1.05, "net_per_value_byte": 1.0,
                   "reinserted_per_value_byte": 0.05, "evicted_keys": 700,
                   "reinserted_keys": 50, "disk_bytes_end": 1000 * MiB},
            "traces": [
                {"trace": {"source": "synthetic", "requests": 10, "users": 5, "zipf_s": 1.0,
                           "concurrency": 2, "mean_prompt_tokens": 5000.0,
                           "unique_chunks": 100, "value_bytes": 65536,
                           "working_set_bytes": 100 * 65536}, "rows": hit},
                {"trace": {"source": "conv.jsonl", "requests": 10, "chunk_tokens": 512,
                           "mean_prompt_tokens": 5000.0, "unique_chunks": 100,
                           "value_bytes": 65536, "working_set_bytes": 100 * 65536},
                 "rows": hit[:5]}],
            "tls": [{"server": srv, "transport": tr, "size": 4 * MiB, "op": op,
                     "keyspace": "one", "requests": 64, "rps": rps}
                    for srv, tr, op, rps in (("larder", "plain", "GET", 400),
                                             ("larder", "tls", "GET", 200),
                                             ("redis", "plain", "GET", 300),
                                             ("redis", "tls", "GET", 250))],
            "migration": {"migration": {"slots": 1000, "keys": 256, "bytes": 1 << 30,
                                        "state": "success", "seconds": 4.0, "gb_per_s": 0.27},
                          "readers": [{"reader": "other node", "gets": 100, "max_ms": 1200.0,
                                       "p99_ms": 40.0, "wrong": 0, "errors": 0},
                                      {"reader": "migrating slots", "gets": 90, "max_ms": 60.0,
                                       "p99_ms": 30.0, "wrong": 0, "errors": 0}]}}


class ReportSmoke(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = tempfile.mkdtemp(prefix="bench-report-test-")
        try:
            report.write(raw(), out)
            with open(os.path.join(out, "report.md")) as f:
                cls.md = f.read()
            cls.png = {p: os.path.getsize(os.path.join(out, p))
                       for p in ("throughput.png", "hit_ratio.png", "hit_ratio_2.png")}
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def test_plots_and_sections(self):
        for png, size in self.png.items():
            self.assertGreater(size, 1000, png)
        self.assertIn("1 wrong replies", self.md)
        for section in ("## Over RESP", "## In-process", "## RAM per key",
                        "## Device bytes written per value byte", "## Hit ratio vs capacity"):
            self.assertIn(section, self.md)

    def test_in_process_figures_say_they_are_medians_of_rounds(self):
        self.assertIn("`larder-peers`, each figure the median of 3 rounds", self.md)
        self.assertIn("Figures: each figure the median of 3 rounds, the peers in alternation",
                      self.md)

    def test_redis_benchmark_figures_say_how_they_were_taken(self):
        self.assertIn("Both servers run side by side and take turns, each figure the median of "
                      "3 rounds.", self.md)
        self.assertIn("the four ports taking turns, one round.", self.md)

    def test_in_process_goals(self):
        md = self.md
        # Put 0.5 / files 0.5 = 1.0; only 1 of the 6 (size, threads) cases is in this raw.json.
        self.assertIn("| in-process durable Put ≥ 0.9× files (1, 4, 32 MiB; 1, 2 threads) | "
                      "1.000 (4 MiB, 1 thread; 1 of 6 cases measured) | yes |", md)
        # MultiGetInto 1.6 / fio QD8 2.0 = 0.8: 11.11% short of 0.9.
        self.assertIn("MultiGetInto ≥ 0.9× fio randread QD8, same block size | 0.800 (4 MiB, "
                      "1 thread; 1 of 6 cases measured) | no: 11.11% short |", md)
        # The direct_reads rows are judged apart: warm 1.0 / 2.0 = 0.5, MultiGetInto 2.0 / 2.0.
        direct = md[md.index("`Options::direct_reads`"):]
        self.assertIn("| in-process warm Get ≥ 0.8× files | 0.500 (4 MiB, 1 thread; 1 of 6 "
                      "cases measured) | no: 37.50% short |", direct)
        self.assertIn("QD8, same block size | 1.000 (4 MiB, 1 thread; 1 of 6 cases measured) "
                      "| yes |", direct)

    def test_resp_goals(self):
        md = self.md
        # Each case names how busy redis-benchmark's one thread was against either server.
        self.assertIn("| RESP GET ≥ 1.5× Redis at 1 and 4 MiB (redis-benchmark -c 4) | 1.500 "
                      "(4 MiB, one key; redis-benchmark busy 0.90 with larder, 0.95 with Redis; "
                      "1 of 2 cases measured) | yes |", md)
        self.assertIn("| RESP GET ≥ 1.1× Redis at 16 MiB | not measured | — |", md)
        self.assertIn("| RESP SET ≥ 1.0× Redis with `-r 100000000` (fresh keys) | 0.900 "
                      "(4 MiB, `-r 100000000`; redis-benchmark busy 0.90 with larder, 0.95 with "
                      "Redis; 1 of 3 cases measured) | no: 10.00% short |", md)
        # The table gives both clients' and both servers' CPU per request: 0.9 s / 300 GET/s.
        self.assertIn("| 4 MiB | GET | one | 64 | 300.00 | 200.00 | 1.50 | 1.26 | 0.90 / 0.95 | "
                      "3.000 / 4.750 | 1.250 / 1.250 |", md)
        # Cold GET over 4 connections: the median of its rounds' ratios over fio run right
        # after each (0.75, 0.5, 0.7), not 0.225 over the fio part's QD4 1.5.
        self.assertIn("| RESP cold GET, 4 connections ≥ 0.8× fio randread QD4 (every size "
                      "measured) | 0.700 (4 MiB) | no: 12.50% short |", md)

    def test_engine_goals(self):
        md = self.md
        self.assertIn("| RAM per key ≤ 64 B, 300,000 LMCache-shaped keys, after a restart | "
                      "70.000 (VmRSS growth over Store::Open / 20000 keys; the goal counts "
                      "300,000; index 50.0 B/key) | no: 9.38% over |", md)
        self.assertIn("| device bytes written per value byte ≤ 1.1, WAL off, eviction running | "
                      "1.050 (4096 MiB of 4 MiB values into a 1024 MiB budget, WAL off) | yes |",
                      md)

    def test_hit_goals_judge_the_server_per_trace(self):
        md = self.md
        # The server's 0.6 / the best of lru-exact 0.62 and s3-fifo 0.58 (x the capacity).
        self.assertIn("| synthetic: hit ratio ≥ exact LRU and S3-FIFO at 10, 25, 50% | 0.968 "
                      "(10%, server / best of lru-exact, s3-fifo) | no: 3.23% short |", md)
        # 0.6 / Belady 0.8 = 0.75: 16.7% short of 0.9.
        self.assertIn("| synthetic: hit ratio ≥ 0.9× Belady at 25, 50% | 0.750 (25%, server / "
                      "belady) | no: 16.67% short |", md)
        self.assertIn("| synthetic: value bytes written ≤ 1.3× exact LRU's | 1.400 (10%, "
                      "server / lru-exact) | no: 7.69% over |", md)
        # The second trace has rows at 10% only.
        self.assertIn("| conv.jsonl: hit ratio ≥ 0.9× Belady at 25, 50% | not measured | — |",
                      md)
        self.assertIn("## Hit ratio vs capacity (larder-trace): conv.jsonl", md)
        self.assertIn("`conv.jsonl` (Mooncake's trace format): 10 requests, 512-token blocks.",
                      md)
        self.assertIn("| 25% | server | lru-reuse | 0.300 | 0.75 | 0.97 | 1.50 | 0.00 | 0.90 |",
                      md)

    def test_tls_and_migration(self):
        # TLS: larder 200 / 400 = 0.5 of plain; 200 / redis TLS 250 = 0.8; 200 x 4 MiB = 0.84.
        self.assertIn("| 4 MiB | GET | 1.68 | 0.84 | 0.50 | 1.26 | 1.05 | 0.80 |", self.md)
        # The longest GET during the migration, 1.2 s: 20% over the 1 s goal.
        self.assertIn("| GETs stall ≤ 1 s while 1,000 slots holding GBs migrate (longest GET, s) "
                      "| 1.200 (other node, 1.0 GiB moved) | no: 20.00% over |", self.md)
        self.assertIn("| migrating slots | 90 | 60.0 | 30.0 | 0 | 0 |", self.md)

    def test_ratio_columns(self):
        # redis-benchmark: larder GET 300 / redis 200 = 1.5; 300 req/s x 4 MiB = 1.26 GB/s.
        self.assertIn("| 4 MiB | GET | one | 64 | 300.00 | 200.00 | 1.50 | 1.26 |", self.md)
        # In-process, ×files: the direct_reads row's warm 1.0 / 2.0.
        self.assertIn("| 4 MiB | 1 | larder (direct_reads) | 0.45 | 0.90 | 1.00 | 0.50 | 1.20 "
                      "| 1.20 |", self.md)
        # The budget against the largest case: 8 GiB / (64 x 4 MiB) = 32x.
        self.assertIn("ran with its default disk budget (80% of the space available to it at "
                      "start): 8.0 GiB, 32× the most value bytes one case writes between "
                      "FLUSHALLs (256 MiB); it evicted 0 keys", self.md)
        # Cold ×fio: the rounds' median ratio over fio run beside each (4 connections: 0.7),
        # else over the fio part's figure (1 connection: 0.9 / QD1 0.8).
        self.assertIn("| 4 MiB | 4 | larder | 0.50 | 1.0/2.0 | 1.25 | — | 1.50 | 1.0/2.0 | 1.50 "
                      "| 0.23 | 1.0/2.0 | 0.70 |", self.md)
        self.assertIn("| 4 MiB | 1 | larder | 0.50 | 1.0/2.0 | 1.25 | — | 1.50 | 1.0/2.0 | 1.50 "
                      "| 0.90 | 1.0/2.0 | 1.12 |", self.md)
        # fio: seq 1.0, QD1 0.8, QD4 1.5, QD8 2.0.
        self.assertIn("| 4 MiB | 1.00 | 4.00/6.00 | 0.80 | 1.50 | 4.00/6.00 | 2.00 | 4.00/6.00 |",
                      self.md)


if __name__ == "__main__":
    unittest.main()
