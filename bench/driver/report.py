"""Turns bench/run's raw.json into report.md and PNG plots (gnuplot) in the same folder.
Every figure is computed from raw.json; ratios compare peers measured in the same run."""
import os
import subprocess

import report_hit
from report_util import GoalTable, MiB, f2, find, human, ratio, val  # noqa: F401

def server_tables(raw):
    s = raw.get("servers", [])
    sizes = sorted({r["size"] for r in s})
    conns = sorted({r["conns"] for r in s if r["phase"] == "set"})
    out = ["## Over RESP: larder-server vs Redis 7 (resp-load)", "",
           "GB/s = 1e9 value bytes/s over all connections; latency per request (ms, p50/p99); "
           "×Redis = this peer's GB/s over Redis's in the same run, same size and connections; "
           "cold = SAVE, page cache of the data files dropped, then each key read once "
           "(×fio: over `fio --rw=randread --direct=1` at the same block size, 1 job, at a "
           "queue depth equal to the connections: psync for 1, io_uring (libaio if refused) "
           "for 4; three rounds of the cold GET, each followed by fio, so that each meets the "
           "virtual disk at the same moment as its reference, and the median of the rounds' "
           "ratios (the fio table's figure when the run has none); — otherwise); "
           "device B/value B = the server's `/proc/PID/io` write_bytes over SET + SAVE per "
           "value byte; "
           "SET GB/s counts until the last SET is acknowledged (Larder: value written to a "
           "blob file, in the page cache, index record in the memtable; Redis: in RAM); "
           "SET+SAVE GB/s adds the SAVE (Larder: `Flush`, which syncs the blob files and "
           "writes the index's memtables), so it is the durable rate; "
           "cold read B/value B = its read_bytes over the cold reads per value byte (above 1: "
           "kernel readahead fetched more than was asked for). "
           "resp-load hashes every GET reply (XXH3-64, as the bytes arrive) and compares it "
           "with the value SET: the same client-side cost for every server.",
           "",
           "| value | conns | peer | SET GB/s | SET p50/p99 | ×Redis | SET+SAVE GB/s | GET GB/s "
           "| GET p50/p99 "
           "| ×Redis | cold GET GB/s | cold p50/p99 | ×fio | cold read B/value B "
           "| device B/value B |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size in sizes:
        for c in conns:
            red_set = val(s, "gbs", label="redis", phase="set", size=size, conns=c)
            red_get = val(s, "gbs", label="redis", phase="get", size=size, conns=c)
            for peer in ("larder", "larder-wal", "redis"):
                st = find(s, label=peer, phase="set", size=size, conns=c)
                gt = find(s, label=peer, phase="get", size=size, conns=c)
                cd = find(s, label=peer, phase="cold", size=size, conns=c)
                if not st or not gt:
                    continue
                save_s = st.get("save_seconds")
                durable = (st["gbs"] * st["seconds"] / (st["seconds"] + save_s)
                           if save_s and peer != "redis" else None)
                out.append("| %s | %d | %s | %.2f | %.1f/%.1f | %s | %s | %.2f | %.1f/%.1f | %s "
                           "| %s | %s | %s | %s | %s |" % (
                               human(size), c, peer, st["gbs"], st["p50_ms"], st["p99_ms"],
                               f2(ratio(st["gbs"], red_set)) if peer != "redis" else "1",
                               f2(durable),
                               gt["gbs"], gt["p50_ms"], gt["p99_ms"],
                               f2(ratio(gt["gbs"], red_get)) if peer != "redis" else "1",
                               f2(cd["gbs"]) if cd else "—",
                               "%.1f/%.1f" % (cd["p50_ms"], cd["p99_ms"]) if cd else "—",
                               f2(cold_vs_fio(raw, cd)) if cd else "—",
                               f2(cd.get("read_per_value_byte")) if cd else "—",
                               f2(st["device_per_value_byte"])))
    out += ["", "EXISTS on one connection, one key per request (µs):", "",
            "| peer | value size of the keys | p50 µs | p99 µs |", "|---|---|---|---|"]
    for r in s:
        if r["phase"] == "exists":
            out.append("| %s | %s | %.0f | %.0f |" % (r["label"], human(r["size"]),
                                                      r["p50_ms"] * 1000, r["p99_ms"] * 1000))
    return out + redis_benchmark_table(raw) + tls_table(raw) + migration_table(raw)


def redis_benchmark_table(raw):
    out = []
    rb = raw.get("redis_benchmark", [])
    if rb:
        out += ["", "`redis-benchmark -c 4 -d SIZE` (requests/s; it does not check values): "
                "`-t set` then `-t get` on one key (every SET overwrites it, every GET reads "
                "it); `-r 100000000` runs `-t set` with a fresh random key per SET. Both servers "
                "run side by side and take turns, %s. GB/s = requests/s × value size. Client "
                "busy = redis-benchmark's CPU seconds (its rusage) over the run's wall seconds: "
                "near 1, its one thread sets the pace, and no server can be much faster through "
                "it than 1 / busy × its own rate. CPU ms = CPU per request, of redis-benchmark "
                "and of the server (/proc/PID/stat)." % bench_rounds_note(rb), "",
                "| value | op | keys | requests | larder req/s | redis req/s | larder ×Redis "
                "| larder GB/s | client busy, larder / redis | client CPU ms, larder / redis "
                "| server CPU ms, larder / redis |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for size in sorted({r["size"] for r in rb}):
            for op, keyspace in (("SET", "one"), ("GET", "one"), ("SET", "random")):
                kw = dict(size=size, op=op, keyspace=keyspace)
                a, b = val(rb, "rps", server="larder", **kw), val(rb, "rps", server="redis", **kw)
                n = val(rb, "requests", **kw)
                if a is None and b is None:
                    continue

                def pair(key, fmt):  # "larder / redis"
                    return " / ".join("—" if v is None else fmt % v for v in (
                        val(rb, key, server=s, **kw) for s in ("larder", "redis")))
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    human(size), op, "`-r 100000000`" if keyspace == "random" else "one",
                    n if n is not None else "—", f2(a), f2(b), f2(ratio(a, b)),
                    f2(a and a * size / 1e9), pair("client_busy", "%.2f"),
                    pair("client_cpu_ms", "%.3f"), pair("server_cpu_ms", "%.3f")))
    return out + budget_lines(raw)


def median_note(n, single):
    """How figures measured over `n` rounds were taken: `single` for one, else their median."""
    return single if n <= 1 else "each figure the median of %d rounds" % n


def bench_rounds_note(rows):
    """How the redis-benchmark figures were taken: one round, or the median of several."""
    return median_note(max([len(r.get("rps_rounds", [])) for r in rows] or [1]), "one round")


def tls_table(raw):
    """redis-benchmark on the plain port and the TLS port of the same server, in GB/s."""
    rows = raw.get("tls", [])
    if not rows:
        return []
    out = ["", "TLS beside plain text: each server with both ports at once, the same "
           "certificates (client certificates required), `redis-benchmark -c 4 -d SIZE -t set`, "
           "then `-t get` (one key) on each port, `--tls --cacert --cert --key` on the TLS one; "
           "both servers side by side, the four ports taking turns, %s. GB/s = requests/s × "
           "value size." % bench_rounds_note(rows), "",
           "| value | op | larder plain GB/s | larder TLS GB/s | larder TLS ×plain "
           "| redis plain GB/s | redis TLS GB/s | larder TLS ×Redis TLS |",
           "|---|---|---|---|---|---|---|---|"]
    for size in sorted({r["size"] for r in rows}):
        for op in ("SET", "GET"):
            def gbps(server, transport):
                rps = val(rows, "rps", server=server, transport=transport, size=size, op=op)
                return rps and rps * size / 1e9
            lp, lt = gbps("larder", "plain"), gbps("larder", "tls")
            rp, rt = gbps("redis", "plain"), gbps("redis", "tls")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                human(size), op, f2(lp), f2(lt), f2(ratio(lt, lp)), f2(rp), f2(rt),
                f2(ratio(lt, rt))))
    return out


def migration_table(raw):
    """bench/cluster_migration.py: GETs during a slot migration of GBs."""
    m = raw.get("migration", {})
    if not m:
        return []
    mg = m["migration"]
    out = ["", "Cluster slot migration (`bench/cluster_migration.py`): two cluster nodes; "
           "`CLUSTERX MIGRATE 0-%d` moves %d slots holding %d keys, %.1f GiB, to the other node "
           "(%s in %.1f s, %.2f GB/s) while one redis-py RedisCluster reader per row GETs and "
           "checks %s MiB values; GET latency during the migration:" % (
               mg["slots"] - 1, mg["slots"], mg["keys"], mg["bytes"] / (1 << 30), mg["state"],
               mg["seconds"], mg["gb_per_s"],
               "%.0f" % (mg["bytes"] / mg["keys"] / MiB) if mg["keys"] else "—"), "",
           "| reader | GETs | longest ms | p99 ms | wrong bytes | errors |",
           "|---|---|---|---|---|---|"]
    for r in m["readers"]:
        out.append("| %s | %d | %s | %s | %s | %s |" % (
            r["reader"], r["gets"], r.get("max_ms", "—"), r.get("p99_ms", "—"),
            r.get("wrong", "—"), r.get("errors", "—")))
    return out


def budget_lines(raw):
    """What budget larder-server ran with, against the most value bytes one case writes."""
    out = []
    cases = [r.get("ops", 0) * r["size"] for r in raw.get("servers", []) if r["phase"] == "set"]
    cases += [r.get("requests", 0) * r["size"] for r in raw.get("redis_benchmark", [])
              if r["op"] == "SET"]
    for name, info in sorted(raw.get("server_info", {}).items()):
        if "max_disk_bytes" not in info:
            continue
        most = max(cases) if cases else 0
        out += ["", "`%s` ran with its default disk budget (80%% of the space available to it "
                "at start): %.1f GiB, %s the most value bytes one case writes between "
                "FLUSHALLs (%d MiB); it evicted %d keys over the whole run." % (
                    name, info["max_disk_bytes"] / (1 << 30),
                    "%.0f×" % (info["max_disk_bytes"] / most) if most else "—",
                    most >> 20, info.get("evicted_keys", 0))]
    return out


def peer_name(r):
    return r["peer"] + (" (direct_reads)" if is_direct(r) else "")


def rounds_note(raw):
    """How the in-process figures were taken: one run, or the median of interleaved rounds."""
    n = max([r.get("rounds", 1) for r in raw.get("inproc", [])] or [1])
    note = median_note(n, "one round per case")
    return note if n <= 1 else note + ", the peers in alternation; raw.json has every round's GB/s"


def inproc_table(raw):
    rows = raw.get("inproc", [])
    out = ["## In-process: liblarder vs plain RocksDB vs one file per chunk (larder-peers)", "",
           "Same values, every read checked (XXH3-64 of every value read, computed by the bench "
           "for every peer alike; liblarder also verifies its stored checksum inside GetInto, "
           "which is part of its cost). Put includes the final flush/sync (durable Put); warm = "
           "page cache hot; cold = fdatasync + fadvise(DONTNEED) on every file. `larder` = "
           "liblarder with default options (WAL off), reading with `GetInto` into a per-thread "
           "reused 4 KiB-aligned buffer; `larder (direct_reads)` the same with "
           "`Options::direct_reads`; `rocksdb` = default Options (WAL on, no blob files); "
           "`rocksdb-nowal` the same with disableWAL; `files` = one file per chunk, `write(2)`, "
           "no fsync (syncfs at the end), `read(2)` into the same kind of buffer. ×files = this "
           "peer over `files`, same size and threads. device B/value B = /proc/self/io "
           "write_bytes (flushes and compactions included) per value byte; cold read B/value B "
           "= read_bytes over the cold pass per value byte. Figures: %s." % rounds_note(raw), "",
           "| value | threads | peer | Put GB/s | ×files | warm GET GB/s | ×files | cold GET "
           "GB/s | ×files | cold p50/p99 ms | cold read B/value B | device B/value B |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = find(rows, peer="files", size=r["size"], threads=r["threads"])
        me = r["peer"] == "files"

        def x(key):
            return "1" if me else f2(ratio(r[key], f and f[key]))
        out.append("| %s | %d | %s | %.2f | %s | %.2f | %s | %.2f | %s | %.1f/%.1f | %s | %.2f |"
                   % (human(r["size"]), r["threads"], peer_name(r), r["put_gbs"], x("put_gbs"),
                      r["warm_gbs"], x("warm_gbs"), r["cold_gbs"], x("cold_gbs"),
                      r["cold_p50_ms"], r["cold_p99_ms"], f2(r.get("cold_read_per_value_byte")),
                      r["device_per_value_byte"]))
    mg = [r for r in rows if "multiget_cold_gbs" in r]
    if mg:
        out += ["", "Batched cold reads: the same cold preparation, then every key (shuffled) "
                "through `MultiGetInto`, %d keys per call into %d 4 KiB-aligned caller buffers "
                "per thread (the engine reads them on its read threads, `read_queue_depth` at a "
                "time); latency per batch. ×fio QD8 = over `fio --rw=randread --direct=1 "
                "--iodepth=8` at the same block size." % (mg[0]["batch"], mg[0]["batch"]), "",
                "| value | threads | peer | read_queue_depth | MultiGetInto cold GB/s | batch "
                "p50/p99 ms | ×fio QD8 | ×its cold Get |", "|---|---|---|---|---|---|---|---|"]
        for r in mg:
            out.append("| %s | %d | %s | %s | %.2f | %.1f/%.1f | %s | %s |" % (
                human(r["size"]), r["threads"], peer_name(r),
                r.get("options", {}).get("read_queue_depth", "—"), r["multiget_cold_gbs"],
                r["multiget_p50_ms"], r["multiget_p99_ms"],
                f2(ratio(r["multiget_cold_gbs"], fio_qd(raw, 8, r["size"]))),
                f2(ratio(r["multiget_cold_gbs"], r["cold_gbs"]))))
    return out + [""] + fio_table(raw)


ENGINE_BATCHED = "engine multi_get_into"
PLUGIN_INPROC = "native_plugin in-process"


def lmcache_table(raw):
    rows = raw.get("lmcache", [])
    if not rows:
        return []
    r0 = rows[0]
    out = ["## LMCache MP-mode reads (bench/lmcache_plugin.py)", "",
           "%d chunks of %s read in batches of %d into caller-owned buffers, driven from "
           "`/usr/bin/python3` as LMCache's MP server drives an L2 adapter (submit, eventfd, "
           "drain); every value compared with what was written. warm = just written; cold = "
           "sync + fadvise(DONTNEED) on every data file. `resp` = the MP `resp` adapter's wire "
           "pattern (8 connections, one request at a time each), reproduced in Python; `files` "
           "= one file per chunk, preadv, no checksum. × engine = over the in-process engine's "
           "own batched read (`Store.multi_get_into`) in the same pass." % (
               r0["chunks"], human(r0["chunk"]), r0["batch"]), "",
           "| peer | warm GB/s | × engine | cold GB/s | × engine |", "|---|---|---|---|---|"]
    for peer in dict.fromkeys(r["peer"] for r in rows):
        cells = []
        for kind in ("warm", "cold"):
            g = val(rows, "gbs", peer=peer, **{"pass": kind})
            cells += [f2(g), f2(ratio(g, val(rows, "gbs", peer=ENGINE_BATCHED, **{"pass": kind})))]
        out.append("| %s | %s |" % (peer, " | ".join(cells)))
    return out


def fio_table(raw):
    fio, qd = raw.get("fio_seq", []), raw.get("fio_qd", [])
    engines = sorted({r["ioengine"] for r in qd}) or ["io_uring"]
    out = ["fio on the same filesystem, one job, `--direct=1`, block = value size: `--rw=read "
           "--ioengine=psync` (sequential, one request at a time: the disk's streaming limit), "
           "`--rw=randread --ioengine=psync` (QD1), and `--rw=randread --ioengine=%s "
           "--iodepth=4 / 8` (the references for cold GET over 4 connections and for "
           "MultiGetInto)." % "/".join(engines), "",
           "| block | seq GB/s | seq p50/p99 ms | randread QD1 GB/s | randread QD4 GB/s | QD4 "
           "p50/p99 ms | randread QD8 GB/s | QD8 p50/p99 ms |", "|---|---|---|---|---|---|---|---|"]
    sizes = sorted({r["size"] for r in fio + qd + raw.get("fio_rand", [])})
    for size in sizes:
        seq = find(fio, size=size)
        q4, q8 = find(qd, size=size, iodepth=4), find(qd, size=size, iodepth=8)

        def lat(r):
            return "%.2f/%.2f" % (r["p50_ms"], r["p99_ms"]) if r else "—"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            human(size), f2(seq and seq["gbs"]), lat(seq), f2(fio_qd(raw, 1, size)),
            f2(q4 and q4["gbs"]), lat(q4), f2(q8 and q8["gbs"]), lat(q8)))
    return out


def engine_tables(raw):
    out = []
    ram = raw.get("ram") or {}
    if ram:
        out += ["## RAM per key after a restart (larder-bench --parts ram)", "",
                "%d LMCache-shaped keys of %d bytes (`meta-llama/Llama-3.1-8B-Instruct@<rank "
                "08x>@0@<64 hex>`), %d KiB values (the smallest that go to blob files), written "
                "and closed; then a fresh process reads VmRSS just before and just after "
                "`Store::Open` (which loads the index): it grew by %.1f MiB = **%.1f B/key** "
                "(anonymous memory alone %.1f B/key); the engine's `index_memory_bytes` = %.1f "
                "B/key; the open took %.2f s. The store held %.2f GB on disk (budget %.1f GiB)."
                % (ram["keys"], ram["key_bytes"], ram["value_bytes"] >> 10,
                   (ram["rss_after_open_bytes"] - ram["rss_before_open_bytes"]) / MiB,
                   ram["rss_per_key"], ram.get("rss_anon_per_key", float("nan")),
                   ram["index_memory_per_key"], ram["open_seconds"], ram["disk_bytes"] / 1e9,
                   ram["max_disk_bytes"] / (1 << 30)), ""]
    wa = raw.get("wa") or {}
    if wa:
        out += ["## Device bytes written per value byte, eviction running (larder-bench "
                "--parts wa)", "",
                "4 MiB values, 4× the budget written, 10%% of writes followed by a read of a "
                "recent chunk (reuse, so eviction re-inserts); generation and memtable sizes "
                "%s. Device bytes = /proc/self/io write_bytes (the whole "
                "process, RocksDB's threads included); net = minus cancelled_write_bytes (dirty "
                "pages of dropped files never written back)." % (
                    "generation_bytes %d, memtable_bytes %d (0 = derived)" % (
                        wa["generation_bytes_option"], wa["memtable_bytes_option"])
                    if wa.get("generation_bytes_option") or wa.get("memtable_bytes_option")
                    else "derived from the budget (the engine's defaults)"), "",
                "| WAL | written | budget | device B/value B | net | of which reinserted | "
                "evicted keys | reinserted keys | disk at end |",
                "|---|---|---|---|---|---|---|---|---|",
                "| %s | %d MiB | %d MiB | %.3f | %.3f | %.3f | %d | %d | %.0f MiB |" % (
                    "on" if wa["wal"] else "off", wa["value_bytes"] >> 20, wa["budget"] >> 20,
                    wa["device_per_value_byte"], wa["net_per_value_byte"],
                    wa["reinserted_per_value_byte"], wa["evicted_keys"], wa["reinserted_keys"],
                    wa["disk_bytes_end"] / MiB), ""]
    return out


# The value sizes and thread counts of the in-process goals.
GOAL_SIZES = (1 * MiB, 4 * MiB, 32 * MiB)
GOAL_THREADS = (1, 2)


def is_direct(r):
    return bool(r.get("options", {}).get("direct_reads"))


def cold_vs_fio(raw, row):
    """A cold GET row's ×fio: the median over its rounds of its GB/s over that of the fio run
    right after the round (bench/run's resp-load cases); else its GB/s over the fio part's
    randread at its size and a queue depth of its connections."""
    if row.get("fio_beside_ratio"):
        return row["fio_beside_ratio"]
    return ratio(row["gbs"], fio_qd(raw, row["conns"], row["size"]))


def fio_qd(raw, depth, size):
    """fio randread GB/s at queue depth `depth` (QD1: psync; else io_uring/libaio)."""
    if depth == 1:
        return val(raw.get("fio_rand", []), "gbs", size=size)
    return val(raw.get("fio_qd", []), "gbs", size=size, iodepth=depth)


def inproc_goals(t, raw, direct):
    """The four in-process goals, over the larder rows with direct_reads == `direct`."""
    rows = raw.get("inproc", [])
    mine = [r for r in rows if r["peer"] == "larder" and is_direct(r) == direct and
            r["size"] in GOAL_SIZES and r["threads"] in GOAL_THREADS]
    n = len(GOAL_SIZES) * len(GOAL_THREADS)

    def case(r):
        return "%s, %d thread%s" % (human(r["size"]), r["threads"], "s" if r["threads"] > 1 else "")

    def vs_files(key):
        return [(case(r), ratio(r[key], val(rows, key, peer="files", size=r["size"],
                                            threads=r["threads"]))) for r in mine]
    t.check("in-process durable Put ≥ 0.9× files (1, 4, 32 MiB; 1, 2 threads)",
            vs_files("put_gbs"), 0.9, expected=n)
    t.check("in-process warm Get ≥ 0.8× files", vs_files("warm_gbs"), 0.8, expected=n)
    t.check("in-process cold Get ≥ 0.9× files", vs_files("cold_gbs"), 0.9, expected=n)
    t.check("in-process batched cold MultiGetInto ≥ 0.9× fio randread QD8, same block size",
            [(case(r), ratio(r.get("multiget_cold_gbs"), fio_qd(raw, 8, r["size"])))
             for r in mine], 0.9, expected=n)


def resp_goals(t, raw):
    rb, s = raw.get("redis_benchmark", []), raw.get("servers", [])

    def vs_redis(op, keyspace, sizes):
        def case(r):
            redis = find(rb, server="redis", op=op, keyspace=keyspace, size=r["size"]) or {}
            busy = ("; redis-benchmark busy %.2f with larder, %.2f with Redis" % (
                r["client_busy"], redis["client_busy"]) if "client_busy" in r and
                    "client_busy" in redis else "")
            return ("%s, %s%s" % (human(r["size"]), "`-r 100000000`" if keyspace == "random"
                                  else "one key", busy), ratio(r["rps"], redis.get("rps")))
        return [case(r) for r in rb if r["server"] == "larder" and r["op"] == op and
                r.get("keyspace", "one") == keyspace and r["size"] in sizes]
    t.check("RESP GET ≥ 1.5× Redis at 1 and 4 MiB (redis-benchmark -c 4)",
            vs_redis("GET", "one", (MiB, 4 * MiB)), 1.5, expected=2)
    t.check("RESP GET ≥ 1.1× Redis at 16 MiB", vs_redis("GET", "one", (16 * MiB,)), 1.1,
            expected=1)
    sizes = (MiB, 4 * MiB, 16 * MiB)
    t.check("RESP SET ≥ 1.0× Redis, plain redis-benchmark (one key overwritten)",
            vs_redis("SET", "one", sizes), 1.0, expected=3)
    t.check("RESP SET ≥ 1.0× Redis with `-r 100000000` (fresh keys)",
            vs_redis("SET", "random", sizes), 1.0, expected=3)
    t.check("RESP cold GET, 4 connections ≥ 0.8× fio randread QD4 (every size measured)",
            [(human(r["size"]), cold_vs_fio(raw, r)) for r in s
             if r["label"] == "larder" and r["phase"] == "cold" and r["conns"] == 4], 0.8)


def goals(raw):
    t = GoalTable()
    inproc_goals(t, raw, direct=False)
    resp_goals(t, raw)
    ram = raw.get("ram") or {}
    if ram:
        note = "" if ram["keys"] == 300000 else "; the goal counts 300,000"
        t.check("RAM per key ≤ 64 B, 300,000 LMCache-shaped keys, after a restart",
                [("VmRSS growth over Store::Open / %d keys%s; index %.1f B/key" % (
                    ram["keys"], note, ram["index_memory_per_key"]), ram["rss_per_key"])],
                64, at_most=True)
    else:
        t.check("RAM per key ≤ 64 B, 300,000 LMCache-shaped keys, after a restart", [], 64)
    wa = raw.get("wa") or {}
    t.check("device bytes written per value byte ≤ 1.1, WAL off, eviction running",
            [("%d MiB of 4 MiB values into a %d MiB budget, WAL %s" % (
                wa["value_bytes"] >> 20, wa["budget"] >> 20, "on" if wa["wal"] else "off"),
              wa["device_per_value_byte"])] if wa else [], 1.1, at_most=True)
    report_hit.goals(t, raw)
    mig = raw.get("migration") or {}
    t.check("GETs stall ≤ 1 s while 1,000 slots holding GBs migrate (longest GET, s)",
            [("%s, %.1f GiB moved" % (r["reader"], mig["migration"]["bytes"] / (1 << 30)),
              r["max_ms"] / 1000) for r in mig.get("readers", []) if "max_ms" in r],
            1.0, at_most=True)
    rows = raw.get("lmcache", [])
    t.check("LMCache native_plugin (in-process) ≥ 0.8× the engine's batched GetInto",
            [(kind, ratio(val(rows, "gbs", peer=PLUGIN_INPROC, **{"pass": kind}),
                          val(rows, "gbs", peer=ENGINE_BATCHED, **{"pass": kind})))
             for kind in ("warm", "cold")], 0.8)
    out = ["## Goals", "", "Each goal over every case this run measured (worst case shown; "
           "ratios compare peers measured in this run). In-process: liblarder with its default "
           "options (`larder-peers`, %s); RESP: requests/s of `redis-benchmark -c 4`, except cold "
           "GET (resp-load, every value checked); RAM per key: `larder-bench --parts ram`; "
           "device bytes: `larder-bench --parts wa`." % rounds_note(raw), ""] + t.lines
    if any(is_direct(r) for r in raw.get("inproc", [])):
        d = GoalTable()
        inproc_goals(d, raw, direct=True)
        out += ["", "The in-process goals again for liblarder with `Options::direct_reads` "
                "(O_DIRECT reads into 4 KiB-aligned buffers; warm reads then come from the "
                "device too):", ""] + d.lines
    return out


def plots(raw, out_dir):
    """Writes throughput.png with gnuplot; returns the markdown lines."""
    s, inproc = raw.get("servers", []), raw.get("inproc", [])
    fio, qd = raw.get("fio_seq", []), raw.get("fio_qd", [])
    conns = 4 if any(r["conns"] == 4 for r in s) else 1
    series = []  # (title, [(x MiB, y)])
    for peer in ("larder", "larder-wal", "redis"):
        for ph in ("get", "set", "cold"):
            pts = [(r["size"] / MiB, r["gbs"]) for r in s
                   if r["label"] == peer and r["phase"] == ph and r["conns"] == conns]
            if pts:
                series.append(("%s %s (RESP, %d conns)" % (peer, ph.upper(), conns), sorted(pts)))
    for peer in ("larder", "rocksdb", "files"):
        for key, nm in (("warm_gbs", "GET warm"), ("cold_gbs", "GET cold"), ("put_gbs", "PUT"),
                        ("multiget_cold_gbs", "MultiGetInto cold")):
            pts = [(r["size"] / MiB, r[key]) for r in inproc if r["peer"] == peer and
                   r["threads"] == 1 and not is_direct(r) and key in r]
            if pts:
                series.append(("%s %s (in-process)" % (peer, nm), sorted(pts)))
    if fio:
        series.append(("fio direct read", sorted((r["size"] / MiB, r["gbs"]) for r in fio)))
    for depth in (4, 8):
        pts = sorted((r["size"] / MiB, r["gbs"]) for r in qd if r["iodepth"] == depth)
        if pts:
            series.append(("fio randread QD%d" % depth, pts))
    lines = []
    script = ["set terminal png size 1100,700", "set key outside right", "set grid",
              "set logscale x 2", "set logscale y 10"]
    if series:
        dat = os.path.join(out_dir, "throughput.dat")
        with open(dat, "w") as f:
            for title, pts in series:
                f.write("# %s\n" % title + "".join("%g %g\n" % p for p in pts) + "\n\n")
        script += ["set output '%s'" % os.path.join(out_dir, "throughput.png"),
                   "set xlabel 'value size (MiB)'", "set ylabel 'GB/s'",
                   "set title 'Throughput vs value size'",
                   "plot " + ", ".join("'%s' index %d with linespoints title '%s'" % (dat, i, t)
                                       for i, (t, _) in enumerate(series))]
        lines.append("![throughput vs value size](throughput.png)")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
    if os.path.exists(os.path.join(out_dir, "throughput.dat")):
        os.unlink(os.path.join(out_dir, "throughput.dat"))
    return lines + report_hit.plots(raw, out_dir)


def write(raw, out_dir):
    m = raw["machine"]
    md = ["# Larder benchmarks", "",
          "`%s` at commit %s, %.0f s. Machine: %s, %s cores, %s GiB RAM, kernel %s; %s; %s. "
          "Shared machine: expect ±25%% between runs." % (
              raw["command"], m.get("commit"), raw["seconds"], m.get("cpu"), m.get("cores"),
              m.get("ram_gib"), m.get("kernel"), m.get("redis_version"),
              m.get("fio_version")), ""]
    if raw.get("part_seconds"):
        md += ["Time per part (s): " + ", ".join("%s %.0f" % kv
                                                  for kv in raw["part_seconds"].items()) + ".",
               ""]
    if raw["errors"]:
        md += ["**Errors in this run** (a wrong value read back counts as one):", ""]
        md += ["- " + e for e in raw["errors"]] + [""]
    md += goals(raw) + ["", "Why Larder misses a goal, with profiles: "
                        "[bench/ANALYSIS.md](../ANALYSIS.md) (hand-written; its figures "
                        "come from one particular run).", ""]
    md += plots(raw, out_dir) + [""]
    md += server_tables(raw) + [""] + inproc_table(raw) + [""] + lmcache_table(raw) + [""]
    md += engine_tables(raw)
    md += report_hit.tables(raw)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
