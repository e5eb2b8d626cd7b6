"""bench/run: builds the benchmark binaries, starts and stops the servers, runs every peer in
one run and writes bench/results/raw.json, then report.md and the plots (report.py).

Peers: larder-server (default config: WAL off, budget 80% of the free space) and with
--wal yes, Redis 7 (--save '' --appendonly no) through resp-load (each server alone) and
redis-benchmark (-c 4; larder and Redis side by side, in alternating rounds);
both again with a TLS port beside the plain one (redis-benchmark --tls);
liblarder, RocksDB and one-file-per-chunk in-process (larder-peers, liblarder once more with
direct reads); LMCache's MP-mode reads (bench/lmcache_plugin.py: native_plugin in-process and
over the server, the resp adapter's wire pattern, files, the engine's batched read); fio direct
reads (sequential and random, psync; random at queue depths 4 and 8 with io_uring); liblarder
alone (larder-bench: RAM per key after a restart, device bytes per value byte with eviction
running); the chat trace (larder-trace); GETs while GBs of slots migrate between two cluster
nodes (bench/cluster_migration.py).
"""
import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import server_harness  # noqa: E402
import tls_certs  # noqa: E402
KiB, MiB = 1 << 10, 1 << 20

# Value sizes are in bytes; every tool gets them as plain integers. Rounds of peers measured in
# alternation (peer_rounds, bench_rounds) are even: the order is reversed every other round, so
# each peer then runs first, and last, as often as every other. With an odd count one peer runs
# first once more, and a position effect (a server measured right after its own previous test
# runs slower: seen at 1 MiB SET) would fall on it. A redis-benchmark case moves 1 GiB: with
# 512 MiB one lasted 0.2-0.3 s at 1 MiB, and its rounds moved by +-30%.
FULL = dict(sizes=[256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 32 * MiB], conns=[1, 4, 16],
            server_bytes=512 * MiB, peers_bytes=512 * MiB, peer_threads="1,2", peer_rounds=6,
            fio_bytes=1024 * MiB, fio_depths=[4, 8], bench_sizes=[1 * MiB, 4 * MiB, 16 * MiB],
            bench_bytes=1024 * MiB, bench_min_n=16, bench_rounds=6, ram_keys=300000,
            wa_budget=1024 * MiB,
            trace_turns=2000, trace_users=400, trace_caps="0.1,0.25,0.5,1.0",
            plugin_chunks=32, migration_gib=2)
QUICK = dict(sizes=[1 * MiB, 4 * MiB, 32 * MiB], conns=[1, 4], server_bytes=128 * MiB,
             peers_bytes=128 * MiB, peer_threads="1", peer_rounds=1, fio_bytes=256 * MiB,
             fio_depths=[4, 8], bench_sizes=[1 * MiB, 4 * MiB, 16 * MiB], bench_bytes=64 * MiB,
             bench_min_n=8, bench_rounds=1, ram_keys=20000, wa_budget=128 * MiB, trace_turns=600,
             trace_users=150,
             trace_caps="0.25,0.5,1.0", plugin_chunks=8, migration_gib=1)
RAM_VALUE_BYTES = 16 << 10  # the smallest values that go to blob files
BINARIES = ("larder-server", "resp-load", "larder-peers", "larder-trace", "larder-bench")
PYTHON_MODULES = ("larder_native",)  # built into <build>/python


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def build(build_dir):
    log("building into", build_dir)
    # An existing build directory keeps its build type; a new one gets the project default.
    cmd = ["cmake", "-S", ROOT, "-B", build_dir]
    if "BUILD_TYPE" in os.environ:
        cmd.append("-DCMAKE_BUILD_TYPE=" + os.environ["BUILD_TYPE"])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["nice", "-n", "10", "cmake", "--build", build_dir, "-j2", "--target"] +
                   list(BINARIES + PYTHON_MODULES), check=True, stdout=subprocess.DEVNULL)


class Server(server_harness.Process):
    """A server started by `cmd_fn(port, data_dir)` on a free port, its log beside `data_dir`
    (both kept in the work directory); stopped (SIGTERM, then SIGKILL) by stop()."""

    def __init__(self, name, cmd_fn, data_dir):
        self.log_name = name + ".log"
        super().__init__(tmp=os.path.dirname(data_dir))
        self.name, self.dir, self.cmd_fn = name, data_dir, cmd_fn
        os.makedirs(data_dir, exist_ok=True)
        self.start(timeout=30)

    def command_line(self):
        return self.cmd_fn(self.port, self.dir)

    def command(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port)] + list(args),
                              capture_output=True, text=True, timeout=120).stdout.strip()

    def stop(self):
        return super().stop(timeout=60)


def json_lines(out):
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def run_checked(cmd, what, errors):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        errors.append("%s exited %d: %s" % (what, p.returncode, p.stderr.strip()[-500:]))
        log("ERROR", errors[-1])
    return json_lines(p.stdout)


def fio_job(path, rw, bs, size, engine="psync", depth=None):
    """One fio job reading `size` bytes of `path` (laid out by the first job) with O_DIRECT."""
    cmd = ["fio", "--name=" + rw, "--filename=" + path, "--rw=" + rw, "--direct=1",
           "--ioengine=" + engine, "--bs=%d" % bs, "--size=%d" % size, "--numjobs=1",
           "--output-format=json"]
    if depth:
        cmd.append("--iodepth=%d" % depth)
    return subprocess.run(cmd, capture_output=True, text=True)


def fio_row(p, size):
    """The read figures of a finished fio job, or None if it failed."""
    if p.returncode != 0 or "{" not in p.stdout:
        return None
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    if job.get("error"):
        return None
    rd = job["read"]
    pct = rd["clat_ns"].get("percentile", {})
    return {"size": size, "gbs": rd["bw_bytes"] / 1e9,
            "p50_ms": pct.get("50.000000", 0) / 1e6, "p99_ms": pct.get("99.000000", 0) / 1e6}


def fio_reads(path, cfg, errors, rw="read"):
    """fio direct reads with psync, one request at a time (`rw` = read: sequential, the disk's
    streaming limit; randread: random offsets, as reads of shuffled keys land), at each value
    size, one job."""
    rows = []
    for s in cfg["sizes"]:
        p = fio_job(path, rw, s, cfg["fio_bytes"])
        row = fio_row(p, s)
        if row is None:
            errors.append("fio %s bs=%s: %s" % (rw, s, p.stderr.strip()[-300:]))
            continue
        rows.append(row)
    return rows


def fio_randread(path, size, depth, nbytes, engine="io_uring"):
    """One fio direct random read of `nbytes` at block `size`: psync for queue depth 1, else
    `engine`, and libaio if io_uring is refused. (row or None, the engine that ran, stderr)."""
    if depth == 1:
        p = fio_job(path, "randread", size, nbytes)
        return fio_row(p, size), "psync", p.stderr
    p = fio_job(path, "randread", size, nbytes, engine, depth)
    row = fio_row(p, size)
    if row is None and engine == "io_uring":
        log("fio: io_uring refused (%s); libaio instead" % p.stderr.strip()[-200:])
        engine = "libaio"
        p = fio_job(path, "randread", size, nbytes, engine, depth)
        row = fio_row(p, size)
    return row, engine, p.stderr


def fio_queued(path, cfg, errors):
    """fio direct random reads with io_uring (libaio if io_uring is refused) at each queue
    depth of cfg["fio_depths"] and each value size, one job: the references for MultiGetInto
    (QD8: read_queue_depth's default) and for cold GET over 4 connections (QD4)."""
    rows, engine = [], "io_uring"
    for depth in cfg["fio_depths"]:
        for s in cfg["sizes"]:
            row, engine, err = fio_randread(path, s, depth, cfg["fio_bytes"], engine)
            if row is None:
                errors.append("fio randread %s QD%d bs=%s: %s" % (engine, depth, s,
                                                                err.strip()[-300:]))
                continue
            row.update(iodepth=depth, ioengine=engine)
            rows.append(row)
    return rows


SERVERS = {
    "larder": lambda bins, port, d: [bins["larder-server"], "--port", str(port), "--dir", d],
    "larder-wal": lambda bins, port, d: [bins["larder-server"], "--port", str(port), "--dir", d,
                                         "--wal", "yes"],
    "redis": lambda bins, port, d: ["redis-server", "--port", str(port), "--dir", d, "--save",
                                    "", "--appendonly", "no", "--protected-mode", "no"],
}


# Connection counts whose cold GET is judged against fio randread at that queue depth, and the
# rounds of (cold GET, fio right after it) each such case runs.
FIO_BESIDE_CONNS = (1, 4)
COLD_ROUNDS = 3


def resp_load_cases(bins, srv, name, cfg, errors, fio_path):
    """resp-load (every value checked) at each size and connection count: set, get, and for
    Larder cold (SAVE, page cache dropped, every key read once), exists on the first count.
    At a count of FIO_BESIDE_CONNS, the cold GET is judged against fio (cold_beside_fio)."""
    rows = []
    for s in cfg["sizes"]:
        for c in cfg["conns"]:
            keys = max(cfg["server_bytes"] // s, 2 * c)
            cold = name.startswith("larder")
            phases = "set,get" + (",cold" if cold else "")
            if c == cfg["conns"][0]:
                phases += ",exists"
            srv.command("FLUSHALL")
            extra = ["--save_after_set"] if cold else ["--nosave_before_cold"]
            load = [bins["resp-load"], "--port", str(srv.port), "--size", str(s),
                    "--keys", str(keys), "--conns", str(c), "--cold_dir", srv.dir,
                    "--server_pid", str(srv.proc.pid), "--label", name]
            what = "resp-load %s %s c=%d" % (name, s, c)
            case = run_checked(load + extra + ["--phases", phases], what, errors)
            first_cold = next((r for r in case if r.get("phase") == "cold"), None)
            if first_cold and c in FIO_BESIDE_CONNS:
                cold_beside_fio(first_cold, load, what, cfg, errors, fio_path)
            rows += case
    return rows


def cold_beside_fio(row, load, what, cfg, errors, fio_path):
    """COLD_ROUNDS rounds of a cold GET (`row` is the first; `load` runs the next ones on the
    same keys), each followed by fio randread at the same block size and a queue depth of its
    connections. The virtual disk's speed drifts by 2x within a run, so each round's GB/s is
    compared with the fio that met the disk at the same moment: `fio_beside_rounds` holds the
    (cold, fio) pairs, `fio_beside_ratio` their median ratio (the cold GET goal's figure),
    `fio_beside_gbs` fio's median."""
    pairs, engine, cold = [], "io_uring", row
    for i in range(COLD_ROUNDS):
        if i > 0:
            again = run_checked(load + ["--phases", "cold"], what, errors)
            cold = next((r for r in again if r.get("phase") == "cold"), None)
            if cold is None:
                break  # run_checked listed the error
        fio, engine, err = fio_randread(fio_path, row["size"], row["conns"], cfg["fio_bytes"],
                                        engine)
        if fio is None:
            errors.append("fio beside %s: %s" % (what, err.strip()[-300:]))
            break
        pairs.append([cold["gbs"], fio["gbs"]])
    if pairs:
        row.update(fio_beside_rounds=pairs, fio_beside_ioengine=engine,
                   fio_beside_ratio=statistics.median(c / f for c, f in pairs),
                   fio_beside_gbs=statistics.median(f for _, f in pairs))


def cpu_seconds(pid):
    """User + system CPU seconds process `pid` has used so far (from /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_redis_benchmark(cmd, server_pid, n):
    """Runs one redis-benchmark of `n` requests per test: ({op: its figures}, exit code,
    stderr). Figures: `rps` (redis-benchmark's), `client_cpu_ms` and `server_cpu_ms` per
    request, `client_busy` (the client's CPU seconds over the run's wall seconds). The client's
    CPU is the growth of this process's reaped children's rusage, to which the run's own child
    is the only one to add."""
    c0, s0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_seconds(server_pid), \
        time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    server = cpu_seconds(server_pid) - s0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    ops = {}
    for line in p.stdout.splitlines():
        f = [x.strip('"') for x in line.split(",")]
        if f[0] in ("SET", "GET"):
            ops[f[0]] = {"rps": float(f[1]), "client_cpu_ms": client * 1e3 / n,
                         "server_cpu_ms": server * 1e3 / n, "client_busy": client / wall}
    return ops, p.returncode, p.stderr


def redis_benchmark_cases(targets, cfg, errors, keyspaces=("one", "random")):
    """redis-benchmark -c 4 at each of cfg["bench_sizes"]: `-t set` then `-t get` on one key
    (keyspace "one": every SET overwrites it, every GET reads it), then `-t set -r 100000000`
    ("random": a fresh random key per SET). -n moves cfg["bench_bytes"] of values per case (at
    least bench_min_n requests); FLUSHALL before each. `targets`: (labels, srv, connect) triples,
    all running at once; each case runs cfg["bench_rounds"] rounds through the targets, the
    order reversed every other round, so that the machine's drifts fall on every target alike.
    A row per target, operation and case: `labels`, its requests/s the median over the rounds
    (`rps_rounds` lists them), and medians of the CPU each request cost the client
    (`client_cpu_ms`, from its rusage) and the server (`server_cpu_ms`), and of the share of
    one core the client kept busy (`client_busy`: CPU seconds over wall seconds). A client
    busy near 1 sets the pace: no server can then be much faster through it."""
    tests_of = {"one": [["-t", "set"], ["-t", "get"]],
                "random": [["-t", "set", "-r", "100000000"]]}
    rows = []
    for size in cfg["bench_sizes"]:
        n = max(cfg["bench_min_n"], cfg["bench_bytes"] // size)
        for keyspace in keyspaces:
            got = {}  # (target index, op) -> {figure: [one per round]}
            for rnd in range(cfg["bench_rounds"]):
                order = list(enumerate(targets))
                for i, (labels, srv, connect) in order if rnd % 2 == 0 else order[::-1]:
                    srv.command("FLUSHALL")
                    for test in tests_of[keyspace]:
                        cmd = ["redis-benchmark"] + connect + ["-d", str(size), "-n", str(n),
                                                               "-c", "4", "--csv"] + test
                        ops, code, err = timed_redis_benchmark(cmd, srv.proc.pid, n)
                        for op, figures in ops.items():
                            for k, v in figures.items():
                                got.setdefault((i, op), {}).setdefault(k, []).append(v)
                        if code != 0 or not ops:
                            errors.append("redis-benchmark %s %s %s exited %d: %s" % (
                                labels, size, " ".join(test), code, err.strip()[-300:]))
                            log("ERROR", errors[-1])
            for (i, op), fig in sorted(got.items()):
                row = dict(targets[i][0], size=size, op=op, keyspace=keyspace, requests=n,
                           rps_rounds=fig["rps"])
                row.update({k: statistics.median(v) for k, v in fig.items()})
                rows.append(row)
    return rows


def larder_info(srv):
    """The larder section of INFO as numbers (budget in force, evictions, disk bytes)."""
    info = {}
    for line in srv.command("INFO", "larder").splitlines():
        k, _, v = line.strip().partition(":")
        try:
            info[k] = float(v) if "." in v else int(v)
        except ValueError:
            pass
    return info


def started(names, work, cmd_fn, suffix=""):
    """Servers `names` started at once, each by cmd_fn(name, port, data_dir) in its own
    directory under `work`; a dict name -> Server (on failure, those started are stopped)."""
    servers = {}
    try:
        for name in names:
            servers[name] = Server(name + suffix, lambda port, d, name=name: cmd_fn(name, port, d),
                                   os.path.join(work, name + suffix, "data"))
    except BaseException:
        stopped(servers, work, suffix)
        raise
    return servers


def stopped(servers, work, suffix=""):
    for name, srv in servers.items():
        srv.stop()
        shutil.rmtree(os.path.join(work, name + suffix), ignore_errors=True)


def server_runs(bins, work, cfg, errors):
    """resp-load against each of SERVERS alone, then redis-benchmark against larder and
    Redis running side by side (redis_benchmark_cases alternates them)."""
    rows, infos = [], {}
    fio_path = os.path.join(work, "fio-beside.dat")
    try:
        for name in SERVERS:
            log("server", name)
            servers = started([name], work, lambda n, port, d: SERVERS[n](bins, port, d))
            try:
                rows += resp_load_cases(bins, servers[name], name, cfg, errors, fio_path)
                if name.startswith("larder"):
                    infos[name] = larder_info(servers[name])
            finally:
                stopped(servers, work)
    finally:
        if os.path.exists(fio_path):
            os.unlink(fio_path)
    log("redis-benchmark: larder beside redis")
    servers = started(["larder", "redis"], work, lambda n, port, d: SERVERS[n](bins, port, d),
                      "-rb")
    try:
        bench_rows = redis_benchmark_cases(
            [({"server": n}, srv, ["-p", str(srv.port)]) for n, srv in servers.items()],
            cfg, errors)
        infos["larder (redis-benchmark)"] = larder_info(servers["larder"])
    finally:
        stopped(servers, work, "-rb")
    return rows, bench_rows, infos


def tls_runs(bins, work, cfg, errors):
    """larder-server and Redis 7 side by side, each with a plain port and a TLS port at once
    (the same certificates, client certificates required): redis-benchmark `-t set`, then
    `-t get`, on each of the four ports in alternation. Rows carry server "larder" / "redis"
    and transport "plain" / "tls"."""
    pki = tls_certs.TestPki()
    tls_ports = {name: server_harness.free_port() for name in ("larder", "redis")}
    try:
        log("TLS beside plain: larder beside redis")
        servers = started(list(tls_ports), work, lambda n, port, d: (
            SERVERS[n](bins, port, d) + pki.server_options(tls_ports[n])), "-tls")
        try:
            targets = []
            for name, srv in servers.items():
                targets += [({"server": name, "transport": "plain"}, srv, ["-p", str(srv.port)]),
                            ({"server": name, "transport": "tls"}, srv,
                             ["-p", str(tls_ports[name])] + pki.client_options())]
            return redis_benchmark_cases(targets, cfg, errors, ("one",))
        finally:
            stopped(servers, work, "-tls")
    finally:
        pki.cleanup()


def larder_bench(bins, work, part, args, errors):
    """larder-bench --parts `part` --json (scratch data under `work`, removed by the tool)."""
    out = run_checked([bins["larder-bench"], "--parts", part, "--json", "--dir", work] + args,
                      "larder-bench " + part, errors)
    return out[0] if out else {}


def machine():
    info = {"kernel": platform.release(), "cores": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                info["ram_gib"] = round(int(line.split()[1]) / (1 << 20), 1)
    except OSError:
        pass
    info["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
    for tool, args in (("redis_version", ["redis-server", "--version"]),
                       ("fio_version", ["fio", "--version"])):
        info[tool] = subprocess.run(args, capture_output=True, text=True).stdout.strip()[:60]
    return info


def part_fio(raw, bins, work, cfg):
    log("fio direct reads")
    path = os.path.join(work, "fio.dat")
    try:
        raw["fio_seq"] = fio_reads(path, cfg, raw["errors"])
        raw["fio_rand"] = fio_reads(path, cfg, raw["errors"], "randread")
        raw["fio_qd"] = fio_queued(path, cfg, raw["errors"])
    finally:
        if os.path.exists(path):
            os.unlink(path)


def part_servers(raw, bins, work, cfg):
    raw["servers"], raw["redis_benchmark"], raw["server_info"] = server_runs(
        bins, work, cfg, raw["errors"])


def part_tls(raw, bins, work, cfg):
    raw["tls"] = tls_runs(bins, work, cfg, raw["errors"])


def part_inproc(raw, bins, work, cfg):
    log("in-process peers")
    common = ["--sizes", ",".join(map(str, cfg["sizes"])), "--threads", cfg["peer_threads"],
              "--bytes_per_case", str(cfg["peers_bytes"]), "--rounds", str(cfg["peer_rounds"]),
              "--dir", work]
    raw["inproc"] = run_checked([bins["larder-peers"]] + common, "larder-peers", raw["errors"])
    # liblarder once more with O_DIRECT reads (Options::direct_reads); its rows carry
    # options.direct_reads = true.
    raw["inproc"] += run_checked(
        [bins["larder-peers"], "--peers", "larder", "--larder_direct_reads"] + common,
        "larder-peers --larder_direct_reads", raw["errors"])


def part_ram(raw, bins, work, cfg):
    log("RAM per key after a restart (%d keys)" % cfg["ram_keys"])
    raw["ram"] = larder_bench(bins, work, "ram", [
        "--ram_keys", str(cfg["ram_keys"]), "--ram_value_bytes", str(RAM_VALUE_BYTES)],
        raw["errors"])


def part_wa(raw, bins, work, cfg):
    log("device bytes per value byte, eviction running")
    raw["wa"] = larder_bench(bins, work, "wa", ["--wa_budget", str(cfg["wa_budget"])],
                             raw["errors"])


def part_trace(raw, bins, work, cfg):
    """The synthetic chat trace, then every --trace-file (Mooncake's format): reference policies
    simulated, liblarder in process, and the real larder-server."""
    # Hit ratios do not depend on the device, and every generation rotation costs RocksDB
    # fsyncs (CF create/drop, OPTIONS file): replay on tmpfs when there is one.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else work
    sources = [["--turns", str(cfg["trace_turns"]), "--users", str(cfg["trace_users"])]]
    sources += [["--trace_file", os.path.abspath(f)] for f in cfg.get("trace_files", [])]
    raw["trace_dir_fs"] = shm
    raw["traces"] = []
    for source in sources:
        log("trace replay:", " ".join(source))
        trace_dir = tempfile.mkdtemp(prefix="larder-trace-", dir=shm)
        try:
            out = run_checked([bins["larder-trace"], *source, "--capacities", cfg["trace_caps"],
                               "--server_bin", bins["larder-server"], "--dir", trace_dir],
                              "larder-trace", raw["errors"])
        finally:
            shutil.rmtree(trace_dir, ignore_errors=True)
        if out:
            raw["traces"].append({"trace": out[0]["trace"], "rows": out[1:]})


def part_lmcache(raw, bins, work, cfg):
    log("LMCache MP-mode reads: native_plugin, resp, files, the engine's batched read")
    build_dir = os.path.dirname(os.path.dirname(bins["larder-server"]))
    raw["lmcache"] = run_checked(
        ["/usr/bin/python3", os.path.join(ROOT, "bench", "lmcache_plugin.py"), "--native-dir",
         os.path.join(build_dir, "python"), "--server", bins["larder-server"], "--dir", work,
         "--chunks", str(cfg["plugin_chunks"])], "lmcache_plugin.py", raw["errors"])


def part_migration(raw, bins, work, cfg):
    log("cluster: GETs while %d GiB of slots migrate" % cfg["migration_gib"])
    out = run_checked(
        ["/usr/bin/python3", os.path.join(ROOT, "bench", "cluster_migration.py"), "--server",
         bins["larder-server"], "--gib", str(cfg["migration_gib"])], "cluster_migration.py",
        raw["errors"])
    raw["migration"] = out[0] if out else {}


PARTS = {"fio": part_fio, "servers": part_servers, "tls": part_tls, "inproc": part_inproc,
         "ram": part_ram, "wa": part_wa, "trace": part_trace, "lmcache": part_lmcache,
         "migration": part_migration}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="smaller volumes (under 2 minutes once built)")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already built")
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--work", default=None, help="scratch directory (default: under build/)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--only", default=",".join(PARTS), help="parts to run: " + ", ".join(PARTS))
    ap.add_argument("--trace-file", action="append", default=[],
                    help="also replay this trace in Mooncake's format (part trace; repeatable)")
    args = ap.parse_args()
    cfg = dict(QUICK if args.quick else FULL, trace_files=args.trace_file)
    parts = args.only.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit("bench/run: unknown parts %s (known: %s)" % (unknown, ", ".join(PARTS)))
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "fio", "gnuplot"):
        if not shutil.which(tool):
            sys.exit("bench/run: %s missing; run scripts/deps --bench" % tool)
    if not args.no_build:
        build(args.build_dir)
    bins = {b: os.path.join(args.build_dir, "bin", b) for b in BINARIES}
    os.makedirs(args.build_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-work-", dir=args.work or args.build_dir)
    t0 = time.time()
    raw = {"quick": args.quick, "machine": machine(), "config": cfg, "errors": [],
           "command": "bench/run" + (" --quick" if args.quick else ""), "part_seconds": {}}
    try:
        for name, fn in PARTS.items():
            if name in parts:
                tp = time.time()
                fn(raw, bins, work, cfg)
                raw["part_seconds"][name] = round(time.time() - tp, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw["seconds"] = round(time.time() - t0, 1)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    report.write(raw, args.out)
    log("wrote", os.path.join(args.out, "report.md"), "in %.0f s" % raw["seconds"])
    if raw["errors"]:
        log("%d errors (listed in the report)" % len(raw["errors"]))
        sys.exit(1)


if __name__ == "__main__":
    main()
