// larder-peers: liblarder against plain RocksDB and one-file-per-chunk, in one process, same
// values, same checks. Prints one JSON object per (peer, size, threads) case:
//
//   put_gbs    Put of --bytes_per_case of values plus the peer's Sync (flush / syncfs)
//   warm_gbs   every key read once, shuffled, page cache hot (after one untimed pass)
//   cold_gbs   the same after fdatasync + fadvise(DONTNEED) on every file of the peer
//   *_p50_ms / *_p99_ms   per-operation latency
//   cold_read_per_value_byte  /proc/self/io read_bytes over the cold pass per value byte
//                         (above 1: the kernel's readahead fetched bytes nobody asked for)
//   device_per_value_byte /proc/self/io write_bytes from the first Put to the end of the cold
//                         pass (background flushes and compactions included) per value byte
//
// Each value read back must have the XXH3 of the value written for that key; exit status 1
// otherwise.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "peers.h"

DEFINE_string(peers, "larder,rocksdb,rocksdb-nowal,files", "peers to run");
DEFINE_string(sizes, "256kb,1mb,4mb,16mb,32mb", "value sizes (units as in larder.conf)");
DEFINE_string(threads, "1,2", "thread counts");
DEFINE_uint64(bytes_per_case, 512ull << 20, "value bytes written per case");
DEFINE_bool(verify, true, "check each value read (off only to profile the harness itself)");
DEFINE_string(dir, "", "parent of the peers' directories (default: a temp dir, removed)");

namespace {

using larder::bench::DropPageCache;
using larder::bench::ProcIoBytes;
using larder::bench::SizeListOrExit;
using larder::bench::SplitList;

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string Key(uint64_t i) {
  return "chunk-" + std::to_string(i);
}

void Stamp(std::string* v, uint64_t i) {
  for (size_t p = 0; p + 8 <= v->size(); p += 1 << 20) std::memcpy(&(*v)[p], &i, 8);
  std::memcpy(v->data() + v->size() - 8, &i, 8);
}

struct Pass {
  double seconds = 0;
  std::vector<double> lat_ms;
};

// Runs body(thread, key index) over `order` split round-robin across `threads`.
template <typename F>
Pass RunPass(int threads, const std::vector<uint64_t>& order, F&& body) {
  Pass p;
  std::vector<std::vector<double>> lat(threads);
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (size_t j = t; j < order.size(); j += threads) {
        auto a = Clock::now();
        body(t, order[j]);
        lat[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
    });
  }
  for (auto& t : ts) t.join();
  p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& l : lat) p.lat_ms.insert(p.lat_ms.end(), l.begin(), l.end());
  return p;
}

double Pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

std::atomic<uint64_t> g_bad{0};

void RunCase(const std::string& base, const std::string& peer, uint64_t size, int threads) {
  std::string dir = base + "/" + peer + "-" + std::to_string(size) + "-" + std::to_string(threads);
  const uint64_t n = std::max<uint64_t>(8, FLAGS_bytes_per_case / size);
  std::string value(size, '\0');
  std::mt19937_64 rng(size);
  for (size_t p = 0; p + 8 <= size; p += 8) {
    uint64_t x = rng();
    std::memcpy(&value[p], &x, 8);
  }
  std::vector<uint64_t> want(n);
  for (uint64_t i = 0; i < n; ++i) {
    Stamp(&value, i);
    want[i] = XXH3_64bits(value.data(), size);
  }
  std::vector<uint64_t> in_order(n);
  std::iota(in_order.begin(), in_order.end(), 0);
  std::vector<uint64_t> shuffled = in_order;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(7));
  std::vector<std::string> bufs(threads, value);

  auto db = larder::bench::OpenPeer(peer, dir);
  if (!db) std::exit(2);
  const uint64_t bad0 = g_bad.load();
  uint64_t w0 = ProcIoBytes("write_bytes");
  Pass put = RunPass(threads, in_order, [&](int t, uint64_t i) {
    Stamp(&bufs[t], i);
    if (!db->Put(Key(i), bufs[t])) g_bad++;
  });
  auto s0 = Clock::now();
  if (!db->Sync()) g_bad++;
  put.seconds += std::chrono::duration<double>(Clock::now() - s0).count();
  auto get = [&](int, uint64_t i) {
    uint64_t h = 0;
    size_t len = 0;
    if (!db->Get(Key(i), FLAGS_verify ? &h : nullptr, &len) || len != size ||
        (FLAGS_verify && h != want[i]))
      g_bad++;
  };
  RunPass(threads, shuffled, get);  // warms the page cache
  Pass warm = RunPass(threads, shuffled, get);
  DropPageCache(dir);
  const uint64_t r0 = ProcIoBytes("read_bytes");
  Pass cold = RunPass(threads, shuffled, get);
  const uint64_t cold_read = ProcIoBytes("read_bytes") - r0;
  uint64_t written = ProcIoBytes("write_bytes") - w0;
  db.reset();
  fs::remove_all(dir);
  double bytes = static_cast<double>(n) * size;
  std::printf(
      "{\"peer\":\"%s\",\"size\":%llu,\"threads\":%d,\"values\":%llu,\"put_gbs\":%.4f,"
      "\"warm_gbs\":%.4f,\"cold_gbs\":%.4f,\"put_p50_ms\":%.4f,\"put_p99_ms\":%.4f,"
      "\"warm_p50_ms\":%.4f,\"warm_p99_ms\":%.4f,\"cold_p50_ms\":%.4f,\"cold_p99_ms\":%.4f,"
      "\"device_per_value_byte\":%.4f,\"cold_read_per_value_byte\":%.4f,\"bad\":%llu}\n",
      peer.c_str(), (unsigned long long)size, threads, (unsigned long long)n,
      bytes / put.seconds / 1e9, bytes / warm.seconds / 1e9, bytes / cold.seconds / 1e9,
      Pct(put.lat_ms, 0.5), Pct(put.lat_ms, 0.99), Pct(warm.lat_ms, 0.5), Pct(warm.lat_ms, 0.99),
      Pct(cold.lat_ms, 0.5), Pct(cold.lat_ms, 0.99), written / bytes, cold_read / bytes,
      (unsigned long long)(g_bad.load() - bad0));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("liblarder vs RocksDB vs files, in-process; see bench/README.md");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const larder::bench::WorkDir work(FLAGS_dir, "peers");
  const std::string& base = work.path();
  for (uint64_t size : SizeListOrExit("sizes", FLAGS_sizes)) {
    for (const auto& ts : SplitList(FLAGS_threads)) {
      for (const auto& peer : SplitList(FLAGS_peers)) RunCase(base, peer, size, std::stoi(ts));
    }
  }
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n",
                 (unsigned long long)g_bad.load());
  return g_bad ? 1 : 0;
}
