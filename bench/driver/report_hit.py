"""The hit-ratio part of the report: larder-trace's rows for each trace replayed, the eviction
goals, and one plot per trace."""
import os
import subprocess

from report_util import f2, ratio, val

# Assumptions for the prefill table, stated in the report (not measurements).
PREFILL_TOKENS_PER_S = 10000      # one GPU's prefill rate for an 8B model (assumed)
KV_BYTES_PER_TOKEN = 128 * 1024   # Llama-3.1-8B, bf16 (tools/sizing: 128 KiB per token)
GOAL_CAPS = (0.1, 0.25, 0.5)      # the goals' capacities; Belady's only at 25% and 50%


def traces(raw):
    """[{"trace": ..., "rows": [...]}] for every trace of the run. A raw.json written before
    the server replays and file traces has one trace, in "trace" and "hit", rows without "via"
    (belady and lru-exact simulated, the others in process)."""
    if "traces" in raw:
        return raw["traces"]
    if not raw.get("hit"):
        return []
    rows = [dict(r, via=r.get("via") or ("sim" if r["policy"] in ("belady", "lru-exact")
                                          else "engine")) for r in raw["hit"]]
    return [{"trace": raw.get("trace", {}), "rows": rows}]


def larder_row(rows, cap):
    """Larder as a user runs it: the server on its default policy, else the engine's."""
    for via in ("server", "engine"):
        r = [x for x in rows if x["capacity"] == cap and x["via"] == via and
             x["policy"] == "lru-reuse"]
        if r:
            return r[0]
    return None


def sim(rows, cap, policy, key="hit_ratio"):
    return val(rows, key, capacity=cap, via="sim", policy=policy)


def goals(t, raw):
    for tr in traces(raw):
        rows, name = tr["rows"], tr["trace"].get("source", "synthetic")
        beat, belady, written = [], [], []
        for cap in GOAL_CAPS:
            lr = larder_row(rows, cap)
            if lr is None:
                continue
            label = "%d%%, %s" % (cap * 100, lr["via"])
            refs = [sim(rows, cap, p) for p in ("lru-exact", "s3-fifo")]
            if None not in refs:
                beat.append((label + " / best of lru-exact, s3-fifo",
                             ratio(lr["hit_ratio"], max(refs))))
            if cap >= 0.25:
                belady.append((label + " / belady", ratio(lr["hit_ratio"],
                                                          sim(rows, cap, "belady"))))
            written.append((label + " / lru-exact", ratio(lr["bytes_written"],
                                                          sim(rows, cap, "lru-exact",
                                                              "bytes_written"))))
        t.check("%s: hit ratio ≥ exact LRU and S3-FIFO at 10, 25, 50%%" % name, beat, 1.0)
        t.check("%s: hit ratio ≥ 0.9× Belady at 25, 50%%" % name, belady, 0.9)
        t.check("%s: value bytes written ≤ 1.3× exact LRU's" % name, written, 1.3,
                at_most=True)


def describe(t):
    """The paragraph that says what the trace is."""
    common = ("Mean prompt %.0f tokens; working set %d chunks (%d KiB stored per chunk in the "
              "replay, %.2f GiB). " % (t["mean_prompt_tokens"], t["unique_chunks"],
                                       t["value_bytes"] >> 10, t["working_set_bytes"] / (1 << 30)))
    if "users" in t:
        head = ("Synthetic multi-turn chat (bench/trace/trace.h): %d requests, %d users (Zipf "
                "s=%.1f return), %d sessions at once, 2–28 turns, ~2,200 new prompt tokens and "
                "100–230 output tokens per turn, 8 shared system prompts, 256-token chunks keyed "
                "by the hash of the whole prefix (LMCache keys). " % (
                    t["requests"], t["users"], t["zipf_s"], t["concurrency"]))
    else:
        head = ("`%s` (Mooncake's trace format): %d requests, %d-token blocks. " % (
            t.get("source"), t["requests"], t.get("chunk_tokens", 512)))
    single = ("%d of the %d chunks (%.0f%%) occur in one request only: no policy can hit them, "
              "an online policy must still write them, Belady need not." % (
                  t["single_use_chunks"], t["unique_chunks"],
                  100.0 * t["single_use_chunks"] / t["unique_chunks"])
              if "single_use_chunks" in t else "")
    return head + common + single


def tables(raw):
    out = []
    for n, tr in enumerate(traces(raw)):
        t, rows = tr["trace"], tr["rows"]
        if not rows:
            continue
        out += ["## Hit ratio vs capacity (larder-trace)%s" % (
            "" if n == 0 else ": " + t.get("source", "")), "", describe(t), "",
            "Capacity = disk budget as a fraction of the working set. Hit ratio = prompt tokens "
            "served from the store / all prompt tokens. `sim` rows are per-chunk simulations "
            "on the same accesses; `engine` replays into liblarder, `server` through "
            "larder-server (LARDER.PREFIX, MGET, EXISTS, SET), both on their defaults but for "
            "the budget. written / WS = value bytes written (reinsertions included) per "
            "working-set byte.",
            "", "| capacity | via | policy | hit ratio | ×belady | ×lru-exact | written / WS | "
            "reinserted / WS | live / budget | replay s |", "|---|---|---|---|---|---|---|---|---|---|"]
        ws = t["working_set_bytes"]
        for r in rows:
            cap = r["capacity"]
            out.append("| %d%% | %s | %s | %.3f | %s | %s | %.2f | %.2f | %s | %.1f |" % (
                round(cap * 100), r["via"], r["policy"], r["hit_ratio"],
                f2(ratio(r["hit_ratio"], sim(rows, cap, "belady"))),
                f2(ratio(r["hit_ratio"], sim(rows, cap, "lru-exact"))), r["written_per_ws"],
                r["reinserted_bytes"] / ws, f2(ratio(r.get("live_bytes"),
                                                     r.get("max_disk_bytes"))), r["seconds"]))
        out += [""] + prefill_table(t, rows) + [""]
    return out


def prefill_table(t, rows):
    mean_prompt = t["mean_prompt_tokens"]
    out = ["What the hit ratio buys in prefill. Assumed (not measured): one GPU prefills "
           "%d tokens/s and a token's KV-cache is %d KiB (Llama-3.1-8B, bf16). A prefill-bound "
           "GPU then serves %d / (prompt − hit tokens) turns/s; tokens not recomputed per "
           "second = that × hit tokens per turn; the store must read them at the GB/s shown."
           % (PREFILL_TOKENS_PER_S, KV_BYTES_PER_TOKEN >> 10, PREFILL_TOKENS_PER_S), "",
           "| capacity | via | policy | turns/s | tokens not recomputed /s | store read GB/s "
           "needed |", "|---|---|---|---|---|---|"]
    for r in rows:
        hit_tok = r["hit_ratio"] * mean_prompt
        turns = PREFILL_TOKENS_PER_S / max(1.0, mean_prompt - hit_tok)
        saved = turns * hit_tok
        out.append("| %d%% | %s | %s | %.2f | %.0f | %.2f |" % (
            round(r["capacity"] * 100), r["via"], r["policy"], turns, saved,
            saved * KV_BYTES_PER_TOKEN / 1e9))
    return out


def plots(raw, out_dir):
    """hit_ratio.png for the first trace, hit_ratio_<n>.png for the n-th; the markdown lines."""
    lines = []
    for n, tr in enumerate(traces(raw)):
        rows = tr["rows"]
        series = []
        for r in rows:
            if (r["via"], r["policy"]) not in series:
                series.append((r["via"], r["policy"]))
        if not series:
            continue
        png = "hit_ratio.png" if n == 0 else "hit_ratio_%d.png" % (n + 1)
        dat = os.path.join(out_dir, "hit_ratio.dat")
        with open(dat, "w") as f:
            for via, p in series:
                f.write("# %s %s\n" % (via, p) + "".join(
                    "%g %g\n" % (r["capacity"] * 100, r["hit_ratio"]) for r in rows
                    if r["via"] == via and r["policy"] == p) + "\n\n")
        title = tr["trace"].get("source", "synthetic")
        script = ["set terminal png size 1100,700", "set key outside right", "set grid",
                  "set output '%s'" % os.path.join(out_dir, png),
                  "set xlabel 'capacity (% of working set)'", "set ylabel 'hit ratio (tokens)'",
                  "set title 'Hit ratio vs capacity: %s'" % title, "set yrange [0:1]",
                  "plot " + ", ".join("'%s' index %d with linespoints title '%s %s'" % (
                      dat, i, via, p) for i, (via, p) in enumerate(series))]
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True)
        os.unlink(dat)
        lines.append("![hit ratio vs capacity, %s](%s)" % (title, png))
    return lines
