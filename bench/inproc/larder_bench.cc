// larder-bench: in-process throughput of liblarder (Put/Get GB/s by value size and threads,
// warm and cold page cache) and device bytes written per value byte with eviction running.
//
//   build/bin/larder-bench            full run (about 6 GiB written; a few minutes)
//   build/bin/larder-bench --quick    smaller volumes (under a minute)
//
// Every value read back is checked: the engine verifies XXH3, and the bench checks that the
// bytes are those of the key it asked for (a stamp at both ends of the value).
#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "common/units.h"
#include "larder/store.h"

DEFINE_bool(quick, false, "smaller volumes, for a smoke run");
DEFINE_string(dir, "", "data directory (default: a fresh temp dir, removed at the end)");
DEFINE_string(sizes, "256kb,1mb,4mb,16mb,32mb", "value sizes (units as in larder.conf)");
DEFINE_string(threads, "1,2", "thread counts");
DEFINE_uint64(bytes_per_case, 1ull << 30, "value bytes written per (size, threads) case");
DEFINE_bool(wal, false, "write-ahead log on");
DEFINE_string(out, "", "also write the markdown report here");

namespace {

using larder::bench::ProcIoBytes;
using larder::bench::SizeListOrExit;
using larder::bench::SplitList;

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string Key(uint64_t i) {
  return "bench-chunk-" + std::to_string(i);
}

// A value: random-looking bytes with the key index stamped at both ends.
void Fill(std::string* v, uint64_t i) {
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;
  for (size_t p = 0; p + 8 <= v->size(); p += 4096) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(&(*v)[p], &x, 8);
  }
  std::memcpy(v->data(), &i, 8);
  std::memcpy(v->data() + v->size() - 8, &i, 8);
}

bool Stamped(const larder::Value& v, uint64_t i) {
  uint64_t a, b;
  std::memcpy(&a, v.data(), 8);
  std::memcpy(&b, v.data() + v.size() - 8, 8);
  return a == i && b == i;
}

std::unique_ptr<larder::Store> OpenStore(const std::string& dir, uint64_t budget,
                                         uint64_t gen_bytes, uint64_t memtable_bytes) {
  larder::Options o;
  o.max_disk_bytes = budget;
  o.generation_bytes = gen_bytes;
  o.wal = FLAGS_wal;
  o.memtable_bytes = memtable_bytes;
  auto r = larder::Store::Open(o, dir);
  if (!r.ok()) {
    std::fprintf(stderr, "open %s: %s\n", dir.c_str(), r.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

template <typename F>
double RunThreads(int threads, uint64_t n, F&& body) {
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t i = t; i < n; i += threads) body(t, i);
    });
  }
  for (auto& t : ts) t.join();
  return Seconds(t0, Clock::now());
}

struct Row {
  uint64_t size;
  int threads;
  double put_gbs, warm_gbs, cold_gbs;
};

double MemcpyGBs(uint64_t size) {
  std::string a(size, 'a'), b(size, 'b');
  const int reps = std::max<uint64_t>(4, (1ull << 30) / size / 4);
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    a[i % size] = static_cast<char>(i);
    std::memcpy(b.data(), a.data(), size);
  }
  double s = Seconds(t0, Clock::now());
  if (b[0] == 'z') std::puts("");
  return size * static_cast<double>(reps) / s / 1e9;
}

std::atomic<uint64_t> g_bad{0};

Row Throughput(const std::string& base, uint64_t size, int threads) {
  std::string dir = base + "/tp-" + std::to_string(size) + "-" + std::to_string(threads);
  uint64_t n = std::max<uint64_t>(8, FLAGS_bytes_per_case / size);
  auto store = OpenStore(dir, 64ull << 30, 0, 512ull << 20);
  std::vector<std::string> bufs(threads, std::string(size, '\0'));
  double put_s = RunThreads(threads, n, [&](int t, uint64_t i) {
    Fill(&bufs[t], i);
    if (!store->Put(Key(i), bufs[t]).ok()) g_bad++;
  });
  auto f0 = Clock::now();
  if (!store->Flush().ok()) g_bad++;
  put_s += Seconds(f0, Clock::now());

  auto read_all = [&] {
    return RunThreads(threads, n, [&](int, uint64_t i) {
      uint64_t k = (i * 7919) % n;  // a fixed permutation-ish order, not the write order
      auto v = store->Get(Key(k));
      if (!v.ok() || v->size() != size || !Stamped(*v, k)) g_bad++;
    });
  };
  read_all();  // warm the page cache
  double warm_s = read_all();
  sync();
  larder::bench::DropPageCache(dir);
  double cold_s = read_all();
  double bytes = static_cast<double>(n) * size;
  store.reset();
  fs::remove_all(dir);
  return {size, threads, bytes / put_s / 1e9, bytes / warm_s / 1e9, bytes / cold_s / 1e9};
}

// Writes 4x the budget with 10% of recent chunks read back (reuse), eviction running.
void WriteAmplification(const std::string& base, std::string* report) {
  const uint64_t size = 4 << 20;
  const uint64_t budget = FLAGS_quick ? (256ull << 20) : (1ull << 30);
  const uint64_t n = 4 * budget / size;
  std::string dir = base + "/wa";
  // Memtables much smaller than the budget, as on a real node (GiBs of DRAM, TBs of NVMe);
  // otherwise most values would be evicted before ever reaching the disk.
  auto store = OpenStore(dir, budget, budget / 8, budget / 8);
  std::string v(size, '\0');
  std::mt19937_64 rng(1);
  uint64_t w0 = ProcIoBytes("write_bytes"), c0 = ProcIoBytes("cancelled_write_bytes");
  for (uint64_t i = 0; i < n; ++i) {
    Fill(&v, i);
    if (!store->Put(Key(i), v).ok()) g_bad++;
    if (i > 10 && rng() % 10 == 0) {
      uint64_t k = i - 1 - rng() % std::min<uint64_t>(i, 64);
      auto r = store->Get(Key(k));
      if (r.ok() && !Stamped(*r, k)) g_bad++;
    }
  }
  if (!store->Flush().ok()) g_bad++;
  sync();
  uint64_t w = ProcIoBytes("write_bytes") - w0, c = ProcIoBytes("cancelled_write_bytes") - c0;
  larder::Stats s = store->GetStats();
  double value_bytes = static_cast<double>(n) * size;
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "| %s | %.0f MiB | %.0f MiB | %.3f | %.3f | %.3f | %llu | %llu | %.0f MiB |\n",
                FLAGS_wal ? "on" : "off", value_bytes / (1 << 20), budget / double(1 << 20),
                w / value_bytes, (w - std::min(w, c)) / value_bytes,
                s.reinserted_bytes / value_bytes, (unsigned long long)s.evicted_keys,
                (unsigned long long)s.reinserted_keys, s.disk_bytes / double(1 << 20));
  *report += "\n### Device bytes written per value byte (eviction running)\n\n";
  *report +=
      "4 MiB values, 4x the budget written, 10% of writes followed by a read of a recent "
      "chunk (reuse). `write_bytes` from /proc/self/io (whole process, RocksDB threads "
      "included); net = minus `cancelled_write_bytes` (dirty pages of dropped files never "
      "written back).\n\n";
  *report +=
      "| WAL | written | budget | device B / value B | net | of which reinserted | "
      "evicted keys | reinserted keys | disk at end |\n|---|---|---|---|---|---|---|---|---|\n";
  *report += buf;
  store.reset();
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("in-process liblarder benchmark; see bench/README.md");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_quick && gflags::GetCommandLineFlagInfoOrDie("bytes_per_case").is_default) {
    FLAGS_bytes_per_case = 256ull << 20;
  }
  const larder::bench::WorkDir work(FLAGS_dir, "bench");
  const std::string& base = work.path();
  std::string report;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "## liblarder in-process (`larder-bench%s`)\n\nWAL %s, %llu MiB "
                "per case, %u cores. GB/s = 1e9 bytes/s of values; Put includes the final "
                "flush to blob files; cold = page cache dropped (fadvise DONTNEED).\n\n",
                FLAGS_quick ? " --quick" : "", FLAGS_wal ? "on" : "off",
                (unsigned long long)(FLAGS_bytes_per_case >> 20),
                std::thread::hardware_concurrency());
  report += buf;
  report +=
      "| value | threads | Put GB/s | Get warm GB/s | Get cold GB/s | memcpy GB/s | warm Get / "
      "memcpy |\n"
      "|---|---|---|---|---|---|---|\n";
  std::fputs(report.c_str(), stdout);
  for (uint64_t size : SizeListOrExit("sizes", FLAGS_sizes)) {
    const std::string label = larder::common::FormatBytesHuman(size);
    double mc = MemcpyGBs(size);
    for (const auto& ts : SplitList(FLAGS_threads)) {
      Row r = Throughput(base, size, std::stoi(ts));
      std::snprintf(buf, sizeof buf, "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
                    label.c_str(), r.threads, r.put_gbs, r.warm_gbs, r.cold_gbs, mc,
                    r.warm_gbs / mc);
      report += buf;
      std::fputs(buf, stdout);
      std::fflush(stdout);
    }
  }
  size_t before = report.size();
  WriteAmplification(base, &report);
  std::fputs(report.c_str() + before, stdout);
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n",
                 (unsigned long long)g_bad.load());
  if (!FLAGS_out.empty()) std::ofstream(FLAGS_out) << report;
  return g_bad ? 1 : 0;
}
