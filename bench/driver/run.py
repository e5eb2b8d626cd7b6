"""bench/run: builds the benchmark binaries, starts and stops the servers, runs every peer in
one run and writes bench/results/raw.json, then report.md and the plots (report.py).

Peers: larder-server (default config; WAL on), Redis 7 (--save '' --appendonly no) through
resp-load and redis-benchmark; liblarder, RocksDB and one-file-per-chunk in-process
(larder-peers); fio direct sequential reads (the disk's limit); the chat trace (larder-trace).
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import server_harness  # noqa: E402
KiB, MiB = 1 << 10, 1 << 20

# Value sizes are in bytes; every tool gets them as plain integers.
FULL = dict(sizes=[256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 32 * MiB], conns=[1, 4, 16],
            server_bytes=512 * MiB, peers_bytes=512 * MiB, peer_threads="1,2",
            fio_bytes=1024 * MiB, bench_sizes=[1 * MiB, 4 * MiB, 16 * MiB], bench_bytes=512 * MiB,
            trace_turns=2000, trace_users=400, trace_caps="0.1,0.25,0.5,1.0")
QUICK = dict(sizes=[1 * MiB, 4 * MiB, 32 * MiB], conns=[1, 4], server_bytes=128 * MiB,
             peers_bytes=128 * MiB, peer_threads="1", fio_bytes=256 * MiB,
             bench_sizes=[4 * MiB], bench_bytes=256 * MiB, trace_turns=600, trace_users=150,
             trace_caps="0.25,0.5,1.0")


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def build(build_dir):
    log("building into", build_dir)
    # An existing build directory keeps its build type; a new one gets the project default.
    cmd = ["cmake", "-S", ROOT, "-B", build_dir]
    if "BUILD_TYPE" in os.environ:
        cmd.append("-DCMAKE_BUILD_TYPE=" + os.environ["BUILD_TYPE"])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["nice", "-n", "10", "cmake", "--build", build_dir, "-j2", "--target",
                    "larder-server", "resp-load", "larder-peers", "larder-trace"],
                   check=True, stdout=subprocess.DEVNULL)


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


def fio_reads(work, cfg, errors, rw="read"):
    """fio direct reads (`rw` = read: sequential, the goals' reference; randread: random
    offsets, as reads of shuffled keys land) at each value size, one job."""
    path = os.path.join(work, "fio.dat")
    rows = []
    for s in cfg["sizes"]:
        p = subprocess.run(["fio", "--name=" + rw, "--filename=" + path, "--rw=" + rw,
                            "--direct=1", "--ioengine=psync", "--bs=%d" % s,
                            "--size=%d" % cfg["fio_bytes"], "--numjobs=1",
                            "--output-format=json"], capture_output=True, text=True)
        if p.returncode != 0:
            errors.append("fio bs=%s: %s" % (s, p.stderr.strip()[-300:]))
            continue
        j = json.loads(p.stdout[p.stdout.index("{"):])
        rd = j["jobs"][0]["read"]
        rows.append({"size": s, "gbs": rd["bw_bytes"] / 1e9,
                     "p50_ms": rd["clat_ns"]["percentile"].get("50.000000", 0) / 1e6,
                     "p99_ms": rd["clat_ns"]["percentile"].get("99.000000", 0) / 1e6})
    os.unlink(path)
    return rows


def server_runs(bins, work, cfg, errors):
    servers = {
        "larder": lambda port, d: [bins["larder-server"], "--port", str(port), "--dir", d],
        "larder-wal": lambda port, d: [bins["larder-server"], "--port", str(port), "--dir", d,
                                       "--wal", "yes"],
        "redis": lambda port, d: ["redis-server", "--port", str(port), "--dir", d, "--save", "",
                                  "--appendonly", "no", "--protected-mode", "no"],
    }
    rows, bench_rows = [], []
    for name, cmd in servers.items():
        log("server", name)
        srv = Server(name, cmd, os.path.join(work, name, "data"))
        try:
            for s in cfg["sizes"]:
                for c in cfg["conns"]:
                    keys = max(cfg["server_bytes"] // s, 2 * c)
                    phases = "set,get" + (",cold" if name.startswith("larder") else "")
                    if c == cfg["conns"][0]:
                        phases += ",exists"
                    srv.command("FLUSHALL")
                    extra = (["--save_after_set"] if name.startswith("larder")
                             else ["--nosave_before_cold"])
                    out = run_checked(
                        [bins["resp-load"]] + extra +
                        ["--port", str(srv.port), "--phases", phases, "--size",
                         str(s), "--keys", str(keys), "--conns", str(c),
                         "--cold_dir", srv.dir, "--server_pid", str(srv.proc.pid),
                         "--label", name],
                        "resp-load %s %s c=%d" % (name, s, c), errors)
                    rows += out
            if name != "larder-wal":
                for s in cfg["bench_sizes"]:
                    srv.command("FLUSHALL")
                    # The same value bytes per size: -n shrinks as the value grows.
                    n = max(16, cfg["bench_bytes"] // s)
                    p = subprocess.run(["redis-benchmark", "-p", str(srv.port), "-t", "set,get",
                                        "-d", str(s), "-n", str(n),
                                        "-c", "4", "--csv"], capture_output=True, text=True)
                    for line in p.stdout.splitlines():
                        f = [x.strip('"') for x in line.split(",")]
                        if f[0] in ("SET", "GET"):
                            bench_rows.append({"server": name, "size": s,
                                               "op": f[0], "rps": float(f[1])})
        finally:
            srv.stop()
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    return rows, bench_rows


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
    for tool, args in (("redis", ["redis-server", "--version"]), ("fio", ["fio", "--version"])):
        info[tool] = subprocess.run(args, capture_output=True, text=True).stdout.strip()[:60]
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller volumes (under 2 minutes)")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already built")
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--work", default=None, help="scratch directory (default: under build/)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--only", default="fio,servers,inproc,trace", help="parts to run")
    args = ap.parse_args()
    cfg = QUICK if args.quick else FULL
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "fio", "gnuplot"):
        if not shutil.which(tool):
            sys.exit("bench/run: %s missing; run scripts/deps --bench" % tool)
    if not args.no_build:
        build(args.build_dir)
    bins = {b: os.path.join(args.build_dir, "bin", b)
            for b in ("larder-server", "resp-load", "larder-peers", "larder-trace")}
    os.makedirs(args.build_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-work-", dir=args.work or args.build_dir)
    parts = args.only.split(",")
    t0 = time.time()
    raw = {"quick": args.quick, "machine": machine(), "config": cfg, "errors": [],
           "command": "bench/run" + (" --quick" if args.quick else "")}
    errors = raw["errors"]
    raw["part_seconds"] = {}

    def done(part, since):
        raw["part_seconds"][part] = round(time.time() - since, 1)
        return time.time()
    try:
        tp = time.time()
        if "fio" in parts:
            log("fio direct sequential reads")
            raw["fio"] = fio_reads(work, cfg, errors)
            raw["fio_rand"] = fio_reads(work, cfg, errors, "randread")
            tp = done("fio", tp)
        if "servers" in parts:
            raw["servers"], raw["redis_benchmark"] = server_runs(bins, work, cfg, errors)
            tp = done("servers", tp)
        if "inproc" in parts:
            log("in-process peers")
            raw["inproc"] = run_checked(
                [bins["larder-peers"], "--sizes", ",".join(map(str, cfg["sizes"])), "--threads",
                 cfg["peer_threads"], "--bytes_per_case", str(cfg["peers_bytes"]), "--dir", work],
                "larder-peers", errors)
            tp = done("inproc", tp)
        if "trace" in parts:
            log("chat trace replay")
            # Hit ratios do not depend on the device, and every generation rotation costs
            # RocksDB fsyncs (CF create/drop, OPTIONS file): replay on tmpfs when there is one.
            shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else work
            trace_dir = tempfile.mkdtemp(prefix="larder-trace-", dir=shm)
            try:
                out = run_checked([bins["larder-trace"], "--turns", str(cfg["trace_turns"]),
                                   "--users", str(cfg["trace_users"]), "--capacities",
                                   cfg["trace_caps"], "--dir", trace_dir], "larder-trace", errors)
            finally:
                shutil.rmtree(trace_dir, ignore_errors=True)
            raw["trace_dir_fs"] = shm
            raw["trace"] = out[0]["trace"] if out else {}
            raw["hit"] = out[1:]
            tp = done("trace", tp)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw["seconds"] = round(time.time() - t0, 1)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    report.write(raw, args.out)
    log("wrote", os.path.join(args.out, "report.md"), "in %.0f s" % raw["seconds"])
    if errors:
        log("%d errors (listed in the report)" % len(errors))
        sys.exit(1)


if __name__ == "__main__":
    main()
