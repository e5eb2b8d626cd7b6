// larder-bench: in-process figures of liblarder alone. Parts (--parts):
//   throughput  Put/Get GB/s by value size and threads, warm and cold page cache
//   wa          device bytes written per value byte with eviction running (WAL off by default)
//   ram         RAM per key after a restart: 300,000 LMCache-shaped keys with 16 KiB values,
//               then VmRSS around Store::Open in a fresh process (ram_per_key.h)
//
//   build/bin/larder-bench            throughput and wa (about 14 GiB written; a few minutes)
//   build/bin/larder-bench --quick    smaller volumes (under a minute)
//   build/bin/larder-bench --parts wa,ram --json   one JSON object per figure (bench/run)
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
#include "ram_per_key.h"

DEFINE_bool(quick, false, "smaller volumes, for a smoke run");
DEFINE_string(dir, "", "data directory (default: a fresh temp dir, removed at the end)");
DEFINE_string(sizes, "256kb,1mb,4mb,16mb,32mb", "value sizes (units as in larder.conf)");
DEFINE_string(threads, "1,2", "thread counts");
DEFINE_uint64(bytes_per_case, 1ull << 30, "value bytes written per (size, threads) case");
DEFINE_bool(wal, false, "write-ahead log on");
DEFINE_string(out, "", "also write the markdown report here");
DEFINE_string(parts, "throughput,wa", "parts to run: throughput, wa, ram");
DEFINE_bool(json, false, "print one JSON object per figure instead of the markdown");
DEFINE_uint64(wa_budget, 1ull << 30, "wa: disk budget (4x this is written; --quick: 256 MiB)");
DEFINE_uint64(wa_generation_bytes, 0,
              "wa: Options::generation_bytes (0 = derived from the budget)");
DEFINE_uint64(wa_memtable_bytes, 0, "wa: Options::memtable_bytes (0 = derived from the budget)");
DEFINE_uint64(ram_keys, 300000, "ram: keys written");
DEFINE_uint64(ram_value_bytes, 16 << 10,
              "ram: bytes per value (16 KiB: the smallest in blob files)");
DEFINE_uint64(ram_max_disk_bytes, 5ull << 30, "ram: the store's budget, which bounds its disk use");
DEFINE_string(ram_measure_dir, "", "internal: the re-executed process of the ram part");

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
  auto store = OpenStore(dir, 64ull << 30, 0, 0);
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
  store->UnmapFiles();  // mapped pages would stay cached
  larder::bench::DropPageCache(dir);
  double cold_s = read_all();
  double bytes = static_cast<double>(n) * size;
  store.reset();
  fs::remove_all(dir);
  return {size, threads, bytes / put_s / 1e9, bytes / warm_s / 1e9, bytes / cold_s / 1e9};
}

struct WaResult {
  uint64_t budget = 0, value_bytes = 0, written = 0, cancelled = 0;
  larder::Stats stats;
};

// Writes 4x the budget of 4 MiB values with 10% of them followed by a read of a recent chunk
// (reuse), eviction running; generation and memtable sizes from --wa_generation_bytes and
// --wa_memtable_bytes (default: derived from the budget, as a server's). Device bytes from
// /proc/self/io.
WaResult WriteAmplification(const std::string& base) {
  const uint64_t size = 4 << 20;
  WaResult r;
  r.budget = FLAGS_wa_budget;
  const uint64_t n = 4 * r.budget / size;
  std::string dir = base + "/wa";
  auto store = OpenStore(dir, r.budget, FLAGS_wa_generation_bytes, FLAGS_wa_memtable_bytes);
  std::string v(size, '\0');
  std::mt19937_64 rng(1);
  uint64_t w0 = ProcIoBytes("write_bytes"), c0 = ProcIoBytes("cancelled_write_bytes");
  for (uint64_t i = 0; i < n; ++i) {
    Fill(&v, i);
    if (!store->Put(Key(i), v).ok()) g_bad++;
    if (i > 10 && rng() % 10 == 0) {
      uint64_t k = i - 1 - rng() % std::min<uint64_t>(i, 64);
      auto got = store->Get(Key(k));
      if (got.ok() && !Stamped(*got, k)) g_bad++;
    }
  }
  if (!store->Flush().ok()) g_bad++;
  sync();
  r.written = ProcIoBytes("write_bytes") - w0;
  r.cancelled = ProcIoBytes("cancelled_write_bytes") - c0;
  r.stats = store->GetStats();
  r.value_bytes = n * size;
  store.reset();
  fs::remove_all(dir);
  return r;
}

std::string WaMarkdown(const WaResult& r) {
  const double vb = static_cast<double>(r.value_bytes), w = static_cast<double>(r.written);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "| %s | %.0f MiB | %.0f MiB | %.3f | %.3f | %.3f | %llu | %llu | %.0f MiB |\n",
                FLAGS_wal ? "on" : "off", vb / (1 << 20), r.budget / double(1 << 20), w / vb,
                (w - std::min(w, double(r.cancelled))) / vb, r.stats.reinserted_bytes / vb,
                (unsigned long long)r.stats.evicted_keys,
                (unsigned long long)r.stats.reinserted_keys, r.stats.disk_bytes / double(1 << 20));
  return std::string("\n### Device bytes written per value byte (eviction running)\n\n") +
         "4 MiB values, 4x the budget written, 10% of writes followed by a read of a recent "
         "chunk (reuse); generation and memtable sizes " +
         std::string(FLAGS_wa_generation_bytes || FLAGS_wa_memtable_bytes
                         ? "set by --wa_generation_bytes / --wa_memtable_bytes"
                         : "derived from the budget") +
         ". `write_bytes` from /proc/self/io (whole process, RocksDB threads included); net = "
         "minus "
         "`cancelled_write_bytes` (dirty pages of dropped files never written back).\n\n"
         "| WAL | written | budget | device B / value B | net | of which reinserted | "
         "evicted keys | reinserted keys | disk at end |\n|---|---|---|---|---|---|---|---|---|\n" +
         buf;
}

std::string WaJson(const WaResult& r) {
  const double vb = static_cast<double>(r.value_bytes), w = static_cast<double>(r.written);
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "{\"part\":\"wa\",\"wal\":%s,\"value_size\":%d,\"value_bytes\":%llu,"
      "\"budget\":%llu,\"device_bytes\":%llu,\"device_per_value_byte\":%.4f,"
      "\"net_per_value_byte\":%.4f,\"reinserted_per_value_byte\":%.4f,"
      "\"evicted_keys\":%llu,\"reinserted_keys\":%llu,\"disk_bytes_end\":%llu,"
      "\"generations_end\":%llu,\"generation_bytes_option\":%llu,"
      "\"memtable_bytes_option\":%llu}",
      FLAGS_wal ? "true" : "false", 4 << 20, (unsigned long long)r.value_bytes,
      (unsigned long long)r.budget, (unsigned long long)r.written, w / vb,
      (w - std::min(w, double(r.cancelled))) / vb, r.stats.reinserted_bytes / vb,
      (unsigned long long)r.stats.evicted_keys, (unsigned long long)r.stats.reinserted_keys,
      (unsigned long long)r.stats.disk_bytes, (unsigned long long)r.stats.generations,
      (unsigned long long)FLAGS_wa_generation_bytes, (unsigned long long)FLAGS_wa_memtable_bytes);
  return buf;
}

// Emits one figure: its JSON object (--json) or its markdown, on stdout and into the report.
void Emit(const std::string& json, const std::string& markdown, std::string* report) {
  *report += markdown;
  std::fputs(FLAGS_json ? (json + "\n").c_str() : markdown.c_str(), stdout);
  std::fflush(stdout);
}

void ThroughputPart(const std::string& base, std::string* report) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "## liblarder in-process (`larder-bench%s`)\n\nWAL %s, %llu MiB "
                "per case, %u cores. GB/s = 1e9 bytes/s of values; Put includes the final "
                "flush to blob files; cold = page cache dropped (fadvise DONTNEED).\n\n"
                "| value | threads | Put GB/s | Get warm GB/s | Get cold GB/s | memcpy GB/s | "
                "warm Get / memcpy |\n|---|---|---|---|---|---|---|\n",
                FLAGS_quick ? " --quick" : "", FLAGS_wal ? "on" : "off",
                (unsigned long long)(FLAGS_bytes_per_case >> 20),
                std::thread::hardware_concurrency());
  *report += buf;
  if (!FLAGS_json) std::fputs(buf, stdout);
  for (uint64_t size : SizeListOrExit("sizes", FLAGS_sizes)) {
    const std::string label = larder::common::FormatBytesHuman(size);
    double mc = MemcpyGBs(size);
    for (const auto& ts : SplitList(FLAGS_threads)) {
      Row r = Throughput(base, size, std::stoi(ts));
      std::snprintf(buf, sizeof buf, "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
                    label.c_str(), r.threads, r.put_gbs, r.warm_gbs, r.cold_gbs, mc,
                    r.warm_gbs / mc);
      char js[512];
      std::snprintf(js, sizeof js,
                    "{\"part\":\"throughput\",\"size\":%llu,\"threads\":%d,\"put_gbs\":%.4f,"
                    "\"warm_gbs\":%.4f,\"cold_gbs\":%.4f,\"memcpy_gbs\":%.4f}",
                    (unsigned long long)size, r.threads, r.put_gbs, r.warm_gbs, r.cold_gbs, mc);
      Emit(js, buf, report);
    }
  }
}

// Returns false if the part failed (its message is on stderr).
bool RamPart(const std::string& base, std::string* report) {
  larder::bench::RamPerKeyConfig c;
  c.keys = FLAGS_ram_keys;
  c.value_bytes = FLAGS_ram_value_bytes;
  c.max_disk_bytes = FLAGS_ram_max_disk_bytes;
  std::string json;
  const int rc = larder::bench::RamPerKey(base + "/ram", c, &json);
  fs::remove_all(base + "/ram");
  if (rc != 0) return false;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\n### RAM per key after a restart\n\n%llu LMCache-shaped keys (%zu bytes), "
                "%llu-byte values; VmRSS around Store::Open in a fresh process: `%s`\n",
                (unsigned long long)c.keys, larder::bench::LmcacheKey(0).size(),
                (unsigned long long)c.value_bytes, json.c_str());
  Emit(json, buf, report);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  larder::bench::ParseFlags(&argc, &argv, "in-process liblarder benchmark; see bench/README.md");
  if (!FLAGS_ram_measure_dir.empty()) {
    return larder::bench::RamMeasureChild(FLAGS_ram_measure_dir, FLAGS_ram_max_disk_bytes);
  }
  if (FLAGS_quick && gflags::GetCommandLineFlagInfoOrDie("bytes_per_case").is_default) {
    FLAGS_bytes_per_case = 256ull << 20;
  }
  if (FLAGS_quick && gflags::GetCommandLineFlagInfoOrDie("wa_budget").is_default) {
    FLAGS_wa_budget = 256ull << 20;
  }
  const larder::bench::WorkDir work(FLAGS_dir, "bench");
  const std::string& base = work.path();
  std::string report;
  bool failed = false;
  for (const auto& part : SplitList(FLAGS_parts)) {
    if (part == "throughput") {
      ThroughputPart(base, &report);
    } else if (part == "wa") {
      WaResult r = WriteAmplification(base);
      Emit(WaJson(r), WaMarkdown(r), &report);
    } else if (part == "ram") {
      failed |= !RamPart(base, &report);
    } else {
      std::fprintf(stderr, "unknown part %s\n", part.c_str());
      failed = true;
    }
  }
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n",
                 (unsigned long long)g_bad.load());
  if (!FLAGS_out.empty()) std::ofstream(FLAGS_out) << report;
  return g_bad || failed ? 1 : 0;
}
