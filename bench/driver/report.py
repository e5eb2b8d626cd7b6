"""Turns bench/run's raw.json into report.md and PNG plots (gnuplot) in the same folder.
Every figure is computed from raw.json; ratios compare peers measured in the same run."""
import os
import subprocess

MiB = 1 << 20
# Assumptions for the prefill table, stated in the report (not measurements).
PREFILL_TOKENS_PER_S = 10000      # one GPU's prefill rate for an 8B model (assumed)
KV_BYTES_PER_TOKEN = 128 * 1024   # Llama-3.1-8B, bf16 (tools/sizing: 128 KiB per token)


def human(n):
    return "%d KiB" % (n >> 10) if n < MiB else "%d MiB" % (n >> 20)


def f2(x):
    return "—" if x is None else "%.2f" % x


def ratio(a, b):
    return a / b if a is not None and b else None


def find(rows, **kw):
    for r in rows:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def val(rows, key, **kw):
    r = find(rows, **kw)
    return r[key] if r else None


def server_tables(raw, fio):
    s = raw.get("servers", [])
    sizes = sorted({r["size"] for r in s})
    conns = sorted({r["conns"] for r in s if r["phase"] == "set"})
    out = ["## Over RESP: larder-server vs Redis 7 (resp-load)", "",
           "GB/s = 1e9 value bytes/s over all connections; latency per request (ms, p50/p99); "
           "×Redis = this peer's GB/s over Redis's in the same run, same size and connections; "
           "cold = SAVE, page cache of the data files dropped, then each key read once "
           "(×fio: over `fio` direct sequential read at the same block size, 1 job); device "
           "B/value B = the server's `/proc/PID/io` write_bytes over SET + SAVE per value byte; "
           "SET GB/s counts until the last SET is acknowledged (Larder: in its memtable, "
           "Redis: in RAM); SET+SAVE GB/s adds the SAVE that writes Larder's memtables to blob "
           "files (the sustained rate once the memtable is full); "
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
        fio_gbs = val(fio, "gbs", size=size)
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
                               f2(ratio(cd["gbs"], fio_gbs)) if cd else "—",
                               f2(cd.get("read_per_value_byte")) if cd else "—",
                               f2(st["device_per_value_byte"])))
    out += ["", "EXISTS on one connection, one key per request (µs):", "",
            "| peer | value size of the keys | p50 µs | p99 µs |", "|---|---|---|---|"]
    for r in s:
        if r["phase"] == "exists":
            out.append("| %s | %s | %.0f | %.0f |" % (r["label"], human(r["size"]),
                                                      r["p50_ms"] * 1000, r["p99_ms"] * 1000))
    rb = raw.get("redis_benchmark", [])
    if rb:
        out += ["", "Cross-check with `redis-benchmark -t set,get -d SIZE -c 4` (requests/s; it "
                "does not check values):", "",
                "| value | op | larder | redis | larder ×Redis |", "|---|---|---|---|---|"]
        for size in sorted({r["size"] for r in rb}):
            for op in ("SET", "GET"):
                a = val(rb, "rps", server="larder", size=size, op=op)
                b = val(rb, "rps", server="redis", size=size, op=op)
                out.append("| %s | %s | %s | %s | %s |" % (human(size), op, f2(a), f2(b),
                                                           f2(ratio(a, b))))
    return out


def inproc_table(raw, fio):
    rows = raw.get("inproc", [])
    out = ["## In-process: liblarder vs plain RocksDB vs one file per chunk (larder-peers)", "",
           "Same values, every read checked (XXH3). Put includes the final flush/sync; warm = "
           "page cache hot; cold = fdatasync + fadvise(DONTNEED) on every file. `rocksdb` = "
           "default Options (WAL on, no blob files); `rocksdb-nowal` the same with "
           "disableWAL; `files` = one file per chunk, no fsync (syncfs at the end). device "
           "B/value B = /proc/self/io write_bytes (flushes and compactions included) per value "
           "byte; cold read B/value B = /proc/self/io read_bytes over the cold pass per value byte. "
           "×larder = this peer over liblarder, same case. The bench hashes every value read "
           "(XXH3-64) for every peer alike; liblarder also verifies its own stored checksum "
           "inside Get, which is part of its cost.", "",
           "| value | threads | peer | Put GB/s | ×larder | warm GET GB/s | ×larder | cold GET "
           "GB/s | ×larder | cold ×fio | cold p50/p99 ms | cold read B/value B | device B/value B |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        base = find(rows, peer="larder", size=r["size"], threads=r["threads"])
        fio_gbs = val(fio, "gbs", size=r["size"])
        me = r["peer"] == "larder"
        out.append("| %s | %d | %s | %.2f | %s | %.2f | %s | %.2f | %s | %s | %.1f/%.1f | %s "
                   "| %.2f |" % (
            human(r["size"]), r["threads"], r["peer"], r["put_gbs"],
            "1" if me else f2(ratio(r["put_gbs"], base and base["put_gbs"])), r["warm_gbs"],
            "1" if me else f2(ratio(r["warm_gbs"], base and base["warm_gbs"])), r["cold_gbs"],
            "1" if me else f2(ratio(r["cold_gbs"], base and base["cold_gbs"])),
            f2(ratio(r["cold_gbs"], fio_gbs)), r["cold_p50_ms"], r["cold_p99_ms"],
            f2(r.get("cold_read_per_value_byte")), r["device_per_value_byte"]))
    rand = raw.get("fio_rand", [])
    out += ["", "`fio --rw=read --direct=1 --ioengine=psync --numjobs=1 --bs=SIZE` on the same "
            "filesystem (the disk's sequential read limit, the goals' reference), and the same "
            "with `--rw=randread` (random offsets, as reads of shuffled keys land):", "",
            "| block | seq GB/s | seq p50 ms | seq p99 ms | randread GB/s | randread p50 ms |",
            "|---|---|---|---|---|---|"]
    for r in fio:
        rr = find(rand, size=r["size"])
        out.append("| %s | %.2f | %.2f | %.2f | %s | %s |" % (
            human(r["size"]), r["gbs"], r["p50_ms"], r["p99_ms"], f2(rr and rr["gbs"]),
            f2(rr and rr["p50_ms"])))
    return out


def hit_tables(raw):
    t, hit = raw.get("trace", {}), raw.get("hit", [])
    if not hit:
        return []
    out = ["## Hit ratio vs capacity (larder-trace)", "",
           "Synthetic multi-turn chat (bench/trace/trace.h): %d requests, %d users (Zipf s=%.1f "
           "return), %d sessions at once, 2–28 turns, ~2,200 new prompt tokens and 100–230 "
           "output tokens per turn, 8 shared system prompts, 256-token chunks keyed by the hash "
           "of the whole prefix (LMCache keys). Mean prompt %.0f tokens; working set %d chunks "
           "(%d KiB stored per chunk in the replay, %.2f GiB). Capacity = disk budget as a "
           "fraction of the working set. Hit ratio = prompt tokens served from the store / "
           "all prompt tokens. `belady` and `lru-exact` are per-chunk simulations from the "
           "trace; the others replay the trace into liblarder (generations, reinsertion). "
           "written / WS = value bytes written (reinsertions included) per working-set byte. "
           "%s"
           % (t["requests"], t["users"], t["zipf_s"], t["concurrency"], t["mean_prompt_tokens"],
              t["unique_chunks"], t["value_bytes"] >> 10, t["working_set_bytes"] / (1 << 30),
              "%d of the %d chunks (%.0f%%) occur in one request only: no policy can hit them, "
              "an online policy must still write them, Belady need not." % (
                  t["single_use_chunks"], t["unique_chunks"],
                  100.0 * t["single_use_chunks"] / t["unique_chunks"])
              if "single_use_chunks" in t else ""),
           "", "| capacity | policy | hit ratio | ×belady | written / WS | reinserted / WS | "
           "replay s |", "|---|---|---|---|---|---|---|"]
    ws = t["working_set_bytes"]
    for r in hit:
        b = val(hit, "hit_ratio", capacity=r["capacity"], policy="belady")
        out.append("| %d%% | %s | %.3f | %s | %.2f | %.2f | %.1f |" % (
            round(r["capacity"] * 100), r["policy"], r["hit_ratio"], f2(ratio(r["hit_ratio"], b)),
            r["written_per_ws"], r["reinserted_bytes"] / ws, r["seconds"]))
    mean_prompt = t["mean_prompt_tokens"]
    out += ["", "What the hit ratio buys in prefill. Assumed (not measured): one GPU prefills "
            "%d tokens/s and a token's KV-cache is %d KiB (Llama-3.1-8B, bf16). A prefill-bound "
            "GPU then serves %d / (prompt − hit tokens) turns/s; tokens not recomputed per "
            "second = that × hit tokens per turn; the store must read them at the GB/s shown."
            % (PREFILL_TOKENS_PER_S, KV_BYTES_PER_TOKEN >> 10, PREFILL_TOKENS_PER_S), "",
            "| capacity | policy | turns/s | tokens not recomputed /s | store read GB/s needed |",
            "|---|---|---|---|---|"]
    for r in hit:
        hit_tok = r["hit_ratio"] * mean_prompt
        turns = PREFILL_TOKENS_PER_S / max(1.0, mean_prompt - hit_tok)
        saved = turns * hit_tok
        out.append("| %d%% | %s | %.2f | %.0f | %.2f |" % (
            round(r["capacity"] * 100), r["policy"], turns, saved,
            saved * KV_BYTES_PER_TOKEN / 1e9))
    return out


def goals(raw, fio):
    s, hit, inproc = raw.get("servers", []), raw.get("hit", []), raw.get("inproc", [])
    out = ["## Goals", "", "| goal | worst case measured | met |", "|---|---|---|"]

    def check(name, cases, want):
        cases = [c for c in cases if c[1] is not None]
        if not cases:
            out.append("| %s | not measured | — |" % name)
            return
        worst = min(cases, key=lambda c: c[1])
        out.append("| %s | %.3f (%s) | %s |" % (name, worst[1], worst[0],
                                                "yes" if worst[1] >= want else
                                                "no: %.2f%% short" % ((1 - worst[1] / want) * 100)))

    for op, want in (("get", 1.2), ("set", 1.0)):
        cases = []
        for r in s:
            if r["label"] == "larder" and r["phase"] == op and r["size"] >= 4 * MiB:
                red = val(s, "gbs", label="redis", phase=op, size=r["size"], conns=r["conns"])
                cases.append(("%s, %d conns" % (human(r["size"]), r["conns"]),
                              ratio(r["gbs"], red)))
        check("%s ≥ %.1f× Redis at 4–32 MiB" % (op.upper(), want), cases, want)
    cases = []
    for r in s:
        if r["label"] == "larder" and r["phase"] == "cold" and r["conns"] == 1:
            cases.append(("server, %s" % human(r["size"]),
                          ratio(r["gbs"], val(fio, "gbs", size=r["size"]))))
    for r in inproc:
        if r["peer"] == "larder" and r["threads"] == 1:
            cases.append(("in-process, %s" % human(r["size"]),
                          ratio(r["cold_gbs"], val(fio, "gbs", size=r["size"]))))
    check("cold GET ≥ 0.85× fio direct read (1 conn / 1 thread)", cases, 0.85)
    for cap in (0.25, 0.5):
        lr = val(hit, "hit_ratio", capacity=cap, policy="lru-reuse")
        others = [val(hit, "hit_ratio", capacity=cap, policy=p) for p in ("lru", "fifo")]
        b = val(hit, "hit_ratio", capacity=cap, policy="belady")
        if lr is not None and None not in others:
            check("lru-reuse ≥ lru, fifo at %d%%" % (cap * 100),
                  [("lru-reuse / best of lru, fifo", ratio(lr, max(others)))], 1.0)
        check("lru-reuse ≥ 0.9× Belady at %d%%" % (cap * 100),
              [("lru-reuse / belady", ratio(lr, b))], 0.9)
    return out


def plots(raw, fio, out_dir):
    """Writes throughput.png and hit_ratio.png with gnuplot; returns the markdown lines."""
    s, inproc, hit = raw.get("servers", []), raw.get("inproc", []), raw.get("hit", [])
    conns = 4 if any(r["conns"] == 4 for r in s) else 1
    series = []  # (title, [(x MiB, y)])
    for peer in ("larder", "larder-wal", "redis"):
        for ph in ("get", "set", "cold"):
            pts = [(r["size"] / MiB, r["gbs"]) for r in s
                   if r["label"] == peer and r["phase"] == ph and r["conns"] == conns]
            if pts:
                series.append(("%s %s (RESP, %d conns)" % (peer, ph.upper(), conns), sorted(pts)))
    for peer in ("larder", "rocksdb", "files"):
        for key, nm in (("warm_gbs", "GET warm"), ("cold_gbs", "GET cold"), ("put_gbs", "PUT")):
            pts = [(r["size"] / MiB, r[key]) for r in inproc if r["peer"] == peer and
                   r["threads"] == 1]
            if pts:
                series.append(("%s %s (in-process)" % (peer, nm), sorted(pts)))
    if fio:
        series.append(("fio direct read", sorted((r["size"] / MiB, r["gbs"]) for r in fio)))
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
    policies = []
    for r in hit:
        if r["policy"] not in policies:
            policies.append(r["policy"])
    if hit:
        dat = os.path.join(out_dir, "hit_ratio.dat")
        with open(dat, "w") as f:
            for p in policies:
                f.write("# %s\n" % p + "".join("%g %g\n" % (r["capacity"] * 100, r["hit_ratio"])
                                               for r in hit if r["policy"] == p) + "\n\n")
        script += ["unset logscale", "set output '%s'" % os.path.join(out_dir, "hit_ratio.png"),
                   "set xlabel 'capacity (% of working set)'", "set ylabel 'hit ratio (tokens)'",
                   "set title 'Hit ratio vs capacity'", "set yrange [0:1]",
                   "plot " + ", ".join("'%s' index %d with linespoints title '%s'" % (dat, i, p)
                                       for i, p in enumerate(policies))]
        lines.append("![hit ratio vs capacity](hit_ratio.png)")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
    for name in ("throughput.dat", "hit_ratio.dat"):
        if os.path.exists(os.path.join(out_dir, name)):
            os.unlink(os.path.join(out_dir, name))
    return lines


def write(raw, out_dir):
    fio = raw.get("fio", [])
    m = raw["machine"]
    md = ["# Larder benchmarks", "",
          "`%s` at commit %s, %.0f s. Machine: %s, %s cores, %s GiB RAM, kernel %s; %s; %s. "
          "Shared machine: expect ±25%% between runs." % (
              raw["command"], m.get("commit"), raw["seconds"], m.get("cpu"), m.get("cores"),
              m.get("ram_gib"), m.get("kernel"), m.get("redis"), m.get("fio")), ""]
    if raw.get("part_seconds"):
        md += ["Time per part (s): " + ", ".join("%s %.0f" % kv
                                                  for kv in raw["part_seconds"].items()) + ".",
               ""]
    if raw["errors"]:
        md += ["**Errors in this run** (a wrong value read back counts as one):", ""]
        md += ["- " + e for e in raw["errors"]] + [""]
    md += goals(raw, fio) + ["", "Why Larder misses a goal, with profiles: "
                             "[bench/ANALYSIS.md](../ANALYSIS.md) (hand-written; its figures "
                             "come from one particular run).", ""]
    md += plots(raw, fio, out_dir) + [""]
    md += server_tables(raw, fio) + [""] + inproc_table(raw, fio) + [""] + hit_tables(raw)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
