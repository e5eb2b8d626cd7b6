// larder-peers: liblarder against plain RocksDB and one-file-per-chunk, in one process, same
// values, same checks. Each (size, threads) case runs --rounds times, every peer once per round
// in alternation; one JSON object per (peer, size, threads) then gives each figure's median
// over the rounds (and `rounds`, and *_gbs_rounds: each throughput's value per round):
//
//   put_gbs    Put of --bytes_per_case of values plus the peer's Sync (flush / syncfs)
//   warm_gbs   every key read once, shuffled, page cache hot (after one untimed pass)
//   cold_gbs   the same after the peer is closed and opened again (a store that maps its
//              files keeps mapped pages from fadvise) and fdatasync + fadvise(DONTNEED) on
//              every file of the peer
//   multiget_cold_gbs  (peers with a batched read: larder's MultiGetInto) the same cold
//              preparation again, then every key (shuffled) in batches of --batch keys per
//              call into --batch 4 KiB-aligned caller buffers per thread; p50/p99 per batch
//   *_p50_ms / *_p99_ms   per-operation latency
//   warm_read_per_value_byte, cold_read_per_value_byte  /proc/self/io read_bytes over the
//                         warm / cold pass per value byte (warm: 0 unless reads bypass the
//                         page cache; above 1: readahead fetched bytes nobody asked for)
//   device_per_value_byte /proc/self/io write_bytes from the first Put to the end of the cold
//                         pass (background flushes and compactions included) per value byte
//   options    the engine options the peer ran with (larder)
//
// Each value read back must have the XXH3 of the value written for that key (the bench hashes
// every value read, for every peer and pass alike); exit status 1 otherwise.
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
#include <optional>
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
DEFINE_uint32(rounds, 1,
              "rounds per case, the peers in alternation; each figure is the median over them");
DEFINE_uint32(batch, 8, "keys per batched read (MultiGetInto) in the multiget pass");
DEFINE_bool(larder_direct_reads, false, "larder peer: Options::direct_reads (O_DIRECT reads)");
DEFINE_bool(larder_mapped_reads, true,
            "larder peer: Options::mapped_reads (cached values through kept mappings)");
DEFINE_int32(larder_read_queue_depth, 8, "larder peer: Options::read_queue_depth");
DEFINE_uint64(larder_memtable_bytes, 0, "larder peer: Options::memtable_bytes (0 = derived)");
DEFINE_bool(test_plant_wrong_value, false,
            "tests only: after the Put pass, overwrite one key with other bytes of the same "
            "length behind the bench's back; every read pass must then count it as bad");

namespace {

using larder::bench::AlignedBuffer;
using larder::bench::BatchItem;
using larder::bench::DropPageCache;
using larder::bench::Peer;
using larder::bench::Percentile;
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

// Runs body(thread, item) over `order` split round-robin across `threads`.
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

std::atomic<uint64_t> g_bad{0};

// The values of one case: a random base stamped with each key's index, and their XXH3s.
struct Values {
  uint64_t size = 0, n = 0;
  std::string base;
  std::vector<uint64_t> want;                // XXH3 of key i's value
  std::vector<uint64_t> in_order, shuffled;  // key indices: write order, read order
};

Values MakeValues(uint64_t size) {
  Values v;
  v.size = size;
  v.n = std::max<uint64_t>(8, FLAGS_bytes_per_case / size);
  v.base.assign(size, '\0');
  std::mt19937_64 rng(size);
  for (size_t p = 0; p + 8 <= size; p += 8) {
    uint64_t x = rng();
    std::memcpy(&v.base[p], &x, 8);
  }
  std::string value = v.base;
  v.want.resize(v.n);
  for (uint64_t i = 0; i < v.n; ++i) {
    Stamp(&value, i);
    v.want[i] = XXH3_64bits(value.data(), size);
  }
  v.in_order.resize(v.n);
  std::iota(v.in_order.begin(), v.in_order.end(), 0);
  v.shuffled = v.in_order;
  std::shuffle(v.shuffled.begin(), v.shuffled.end(), std::mt19937_64(7));
  return v;
}

// Puts every value, then the peer's Sync; the figure includes the Sync.
Pass PutPass(Peer& db, int threads, const Values& v) {
  std::vector<std::string> bufs(threads, v.base);
  Pass put = RunPass(threads, v.in_order, [&](int t, uint64_t i) {
    Stamp(&bufs[t], i);
    if (!db.Put(Key(i), bufs[t])) g_bad++;
  });
  auto s0 = Clock::now();
  if (!db.Sync()) g_bad++;
  put.seconds += std::chrono::duration<double>(Clock::now() - s0).count();
  if (FLAGS_test_plant_wrong_value) {
    std::string wrong = v.base;
    Stamp(&wrong, v.n);  // same length, another key's stamp: a different XXH3
    if (!db.Put(Key(v.n / 2), wrong) || !db.Sync()) g_bad++;
  }
  return put;
}

// Reads every key of v.shuffled in batches of --batch keys per GetBatch call, each thread into
// its own --batch 4 KiB-aligned buffers (allocated and touched before the clock starts), and
// checks every value's XXH3. Latency per batch. Nullopt if the peer has no batched read.
std::optional<Pass> BatchPass(Peer& db, int threads, const Values& v) {
  const size_t b = std::max<uint32_t>(1, FLAGS_batch);
  std::vector<std::vector<AlignedBuffer>> bufs(threads);
  for (auto& tb : bufs) {
    tb.resize(b);
    for (auto& buf : tb) {
      if (!buf.Reserve(v.size)) std::exit(2);
      std::memset(buf.data(), 0, v.size);
    }
  }
  std::vector<uint64_t> starts;
  for (uint64_t j = 0; j < v.n; j += b) starts.push_back(j);
  std::atomic<bool> supported{true};
  Pass p = RunPass(threads, starts, [&](int t, uint64_t j) {
    std::vector<std::string> keys;
    std::vector<BatchItem> items;
    for (uint64_t k = j; k < std::min<uint64_t>(j + b, v.n); ++k)
      keys.push_back(Key(v.shuffled[k]));
    for (size_t i = 0; i < keys.size(); ++i) {
      items.push_back({keys[i], bufs[t][i].data(), bufs[t][i].capacity(), -1});
    }
    if (!db.GetBatch(&items)) {
      supported = false;  // the same answer on every call
      return;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].len != static_cast<int64_t>(v.size) ||
          (FLAGS_verify && XXH3_64bits(items[i].buf, v.size) != v.want[v.shuffled[j + i]]))
        g_bad++;
    }
  });
  if (!supported) return std::nullopt;
  return p;
}

// The figures of one case in one round (throughput in GB/s of value bytes, latency in ms).
struct Figures {
  uint64_t values = 0, bad = 0;
  double put_gbs = 0, warm_gbs = 0, cold_gbs = 0;
  double put_p50 = 0, put_p99 = 0, warm_p50 = 0, warm_p99 = 0, cold_p50 = 0, cold_p99 = 0;
  // /proc/self/io bytes per value byte: written from the first Put to the end of the cold
  // pass; read over the warm and over the cold pass.
  double device = 0, warm_read = 0, cold_read = 0;
  bool has_multiget = false;
  double mg_gbs = 0, mg_p50 = 0, mg_p99 = 0;
  std::string options;
};

double Median(const std::vector<Figures>& rounds, double Figures::*field) {
  std::vector<double> v;
  for (const auto& f : rounds) v.push_back(f.*field);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Series(const std::vector<Figures>& rounds, double Figures::*field) {
  std::string out = "[";
  char b[32];
  for (const auto& f : rounds) {
    std::snprintf(b, sizeof b, "%s%.4f", out.size() > 1 ? "," : "", f.*field);
    out += b;
  }
  return out + "]";
}

// One JSON line per case: the median of each figure over the rounds (each figure on its own,
// so a line's figures can come from different rounds), each throughput's value per round, and
// the bad reads of all rounds.
void PrintCase(const std::string& peer, uint64_t size, int threads,
               const std::vector<Figures>& rounds) {
  const Figures& first = rounds.front();
  uint64_t bad = 0;
  for (const auto& f : rounds) bad += f.bad;
  auto m = [&](double Figures::*field) { return Median(rounds, field); };
  char b[1024];
  std::snprintf(
      b, sizeof b,
      "{\"peer\":\"%s\",\"size\":%llu,\"threads\":%d,\"values\":%llu,\"rounds\":%zu,"
      "\"put_gbs\":%.4f,\"warm_gbs\":%.4f,\"cold_gbs\":%.4f,\"put_p50_ms\":%.4f,"
      "\"put_p99_ms\":%.4f,\"warm_p50_ms\":%.4f,\"warm_p99_ms\":%.4f,\"cold_p50_ms\":%.4f,"
      "\"cold_p99_ms\":%.4f,\"device_per_value_byte\":%.4f,\"warm_read_per_value_byte\":%.4f,"
      "\"cold_read_per_value_byte\":%.4f,\"bad\":%llu",
      peer.c_str(), (unsigned long long)size, threads, (unsigned long long)first.values,
      rounds.size(), m(&Figures::put_gbs), m(&Figures::warm_gbs), m(&Figures::cold_gbs),
      m(&Figures::put_p50), m(&Figures::put_p99), m(&Figures::warm_p50), m(&Figures::warm_p99),
      m(&Figures::cold_p50), m(&Figures::cold_p99), m(&Figures::device), m(&Figures::warm_read),
      m(&Figures::cold_read), (unsigned long long)bad);
  std::string line = b;
  line += ",\"put_gbs_rounds\":" + Series(rounds, &Figures::put_gbs) +
          ",\"warm_gbs_rounds\":" + Series(rounds, &Figures::warm_gbs) +
          ",\"cold_gbs_rounds\":" + Series(rounds, &Figures::cold_gbs);
  if (first.has_multiget) {
    std::snprintf(b, sizeof b,
                  ",\"batch\":%u,\"multiget_cold_gbs\":%.4f,\"multiget_p50_ms\":%.4f,"
                  "\"multiget_p99_ms\":%.4f",
                  FLAGS_batch, m(&Figures::mg_gbs), m(&Figures::mg_p50), m(&Figures::mg_p99));
    line += b;
    line += ",\"multiget_cold_gbs_rounds\":" + Series(rounds, &Figures::mg_gbs);
  }
  if (!first.options.empty()) line += ",\"options\":{" + first.options + "}";
  std::printf("%s}\n", line.c_str());
  std::fflush(stdout);
}

// /proc/self/io bytes: written from the first Put to the end of the cold pass; read over the
// warm and over the cold pass.
struct IoBytes {
  uint64_t written, warm_read, cold_read;
};

Figures Summarize(const Values& v, const Pass& put, const Pass& warm, const Pass& cold,
                  const std::optional<Pass>& mg, const IoBytes& io) {
  const double bytes = static_cast<double>(v.n) * v.size;
  Figures f;
  f.values = v.n;
  f.device = io.written / bytes;
  f.warm_read = io.warm_read / bytes;
  f.cold_read = io.cold_read / bytes;
  f.put_gbs = bytes / put.seconds / 1e9;
  f.warm_gbs = bytes / warm.seconds / 1e9;
  f.cold_gbs = bytes / cold.seconds / 1e9;
  f.put_p50 = Percentile(put.lat_ms, 0.5);
  f.put_p99 = Percentile(put.lat_ms, 0.99);
  f.warm_p50 = Percentile(warm.lat_ms, 0.5);
  f.warm_p99 = Percentile(warm.lat_ms, 0.99);
  f.cold_p50 = Percentile(cold.lat_ms, 0.5);
  f.cold_p99 = Percentile(cold.lat_ms, 0.99);
  if (mg) {
    f.has_multiget = true;
    f.mg_gbs = bytes / mg->seconds / 1e9;
    f.mg_p50 = Percentile(mg->lat_ms, 0.5);
    f.mg_p99 = Percentile(mg->lat_ms, 0.99);
  }
  return f;
}

// One round of one case: the peer's passes over v in a fresh directory, removed after.
Figures RunCase(const std::string& base, const std::string& peer, const Values& v, int threads) {
  const uint64_t size = v.size;
  std::string dir = base + "/" + peer + "-" + std::to_string(size) + "-" + std::to_string(threads);
  larder::bench::LarderPeerOptions lo;
  lo.direct_reads = FLAGS_larder_direct_reads;
  lo.mapped_reads = FLAGS_larder_mapped_reads;
  lo.read_queue_depth = FLAGS_larder_read_queue_depth;
  lo.memtable_bytes = FLAGS_larder_memtable_bytes;
  auto db = larder::bench::OpenPeer(peer, dir, lo);
  if (!db) std::exit(2);
  const uint64_t bad0 = g_bad.load();
  uint64_t w0 = ProcIoBytes("write_bytes");
  Pass put = PutPass(*db, threads, v);
  auto get = [&](int, uint64_t i) {
    uint64_t h = 0;
    size_t len = 0;
    if (!db->Get(Key(i), FLAGS_verify ? &h : nullptr, &len) || len != size ||
        (FLAGS_verify && h != v.want[i]))
      g_bad++;
  };
  RunPass(threads, v.shuffled, get);  // warms the page cache
  const uint64_t rw0 = ProcIoBytes("read_bytes");
  Pass warm = RunPass(threads, v.shuffled, get);
  const uint64_t warm_read = ProcIoBytes("read_bytes") - rw0;
  auto reopen_cold = [&] {
    db.reset();
    db = larder::bench::OpenPeer(peer, dir, lo);
    if (!db) std::exit(2);
    DropPageCache(dir);
  };
  reopen_cold();
  const uint64_t r0 = ProcIoBytes("read_bytes");
  Pass cold = RunPass(threads, v.shuffled, get);
  const uint64_t cold_read = ProcIoBytes("read_bytes") - r0;
  const uint64_t written = ProcIoBytes("write_bytes") - w0;
  reopen_cold();
  std::optional<Pass> mg = BatchPass(*db, threads, v);
  Figures f = Summarize(v, put, warm, cold, mg, {written, warm_read, cold_read});
  f.bad = g_bad.load() - bad0;
  f.options = db->OptionsJson();
  db.reset();
  fs::remove_all(dir);
  return f;
}

// Every peer of one (size, threads) case, --rounds times in alternation (the peers' order
// reversed every other round, so none always runs after the same one), then one line each.
void RunCases(const std::string& base, const std::vector<std::string>& peers, uint64_t size,
              int threads) {
  const Values v = MakeValues(size);
  std::vector<std::vector<Figures>> rounds(peers.size());
  for (uint32_t r = 0; r < std::max<uint32_t>(1, FLAGS_rounds); ++r) {
    for (size_t k = 0; k < peers.size(); ++k) {
      const size_t p = r % 2 ? peers.size() - 1 - k : k;
      rounds[p].push_back(RunCase(base, peers[p], v, threads));
    }
  }
  for (size_t p = 0; p < peers.size(); ++p) PrintCase(peers[p], size, threads, rounds[p]);
}

}  // namespace

int main(int argc, char** argv) {
  larder::bench::ParseFlags(&argc, &argv,
                            "liblarder vs RocksDB vs files, in-process; see bench/README.md");
  const larder::bench::WorkDir work(FLAGS_dir, "peers");
  const std::string& base = work.path();
  for (uint64_t size : SizeListOrExit("sizes", FLAGS_sizes)) {
    for (const auto& ts : SplitList(FLAGS_threads))
      RunCases(base, SplitList(FLAGS_peers), size, std::stoi(ts));
  }
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n",
                 (unsigned long long)g_bad.load());
  return g_bad ? 1 : 0;
}
