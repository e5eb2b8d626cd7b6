// larder-trace: hit ratio against capacity on a synthetic multi-turn chat trace (trace.h).
//
// Generates the trace from --seed, then for every capacity (a fraction of the working set:
// distinct chunks x --value_bytes) replays it into a fresh liblarder store once per eviction
// policy, and through the per-chunk Belady optimum and exact LRU. Replay per request, as
// LMCache does: PrefixCount of the prompt's chunk keys, Get of every hit chunk (checked: size
// and the chunk hash stamped into the value), then Put of every chunk after the first miss
// that the store does not hold. The store's clock advances --ms_per_request per request.
//
// Prints one JSON line describing the trace (single_use_chunks: chunks in only one request,
// which no policy can ever hit), then one per (capacity, policy).
#include <gflags/gflags.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_util.h"
#include "larder/store.h"
#include "trace.h"

DEFINE_uint64(seed, 1, "trace seed");
DEFINE_uint64(turns, 3000, "requests in the trace");
DEFINE_uint32(users, 600, "users");
DEFINE_uint32(concurrency, 32, "sessions active at once");
DEFINE_double(zipf_s, 1.0, "Zipf exponent of user popularity");
DEFINE_uint64(value_bytes, 64 << 10, "bytes stored per chunk (scaled down from ~32 MiB)");
DEFINE_string(capacities, "0.1,0.25,0.5,1.0", "capacities, fractions of the working set");
DEFINE_string(policies, "lru-reuse,lru,fifo", "Larder eviction policies to replay");
DEFINE_uint64(ms_per_request, 100, "store clock advance per request");
DEFINE_uint32(generation_div, 16, "generation bytes = budget / this (Larder's default ratio)");
DEFINE_uint32(memtable_div, 16, "memtable bytes = max(budget / this, 4 MiB)");
DEFINE_string(dir, "", "parent of the stores' directories (default: a temp dir, removed)");

namespace {

using larder::bench::ProcIoBytes;
using larder::bench::SplitList;

namespace fs = std::filesystem;
using larder::bench::SimResult;
using larder::bench::Trace;

class StepClock : public larder::Clock {
 public:
  int64_t NowMs() const override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_{1'700'000'000'000};
};

std::vector<double> ParseList(const std::string& s) {
  std::vector<double> out;
  size_t b = 0;
  while (b < s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(std::stod(s.substr(b, e - b)));
    b = e + 1;
  }
  return out;
}

uint64_t g_bad = 0;

void PrintRow(double cap, const std::string& policy, uint64_t hit, uint64_t prompt,
              uint64_t written, uint64_t device, uint64_t reinserted, double seconds,
              uint64_t ws_bytes) {
  std::printf(
      "{\"capacity\":%.4f,\"policy\":\"%s\",\"hit_ratio\":%.5f,\"hit_tokens\":%llu,"
      "\"prompt_tokens\":%llu,\"bytes_written\":%llu,\"written_per_ws\":%.4f,"
      "\"device_bytes\":%llu,\"reinserted_bytes\":%llu,\"seconds\":%.3f}\n",
      cap, policy.c_str(), prompt ? static_cast<double>(hit) / prompt : 0, (unsigned long long)hit,
      (unsigned long long)prompt, (unsigned long long)written,
      static_cast<double>(written) / ws_bytes, (unsigned long long)device,
      (unsigned long long)reinserted, seconds);
  std::fflush(stdout);
}

void ReplayLarder(const Trace& t, const std::string& dir, const std::string& policy, double cap,
                  uint64_t ws_bytes) {
  auto clock = std::make_shared<StepClock>();
  larder::Options o;
  o.clock = clock;
  o.max_disk_bytes = static_cast<uint64_t>(cap * ws_bytes);
  o.generation_bytes = o.max_disk_bytes / std::max(1u, FLAGS_generation_div);
  o.memtable_bytes =
      std::max<uint64_t>(o.max_disk_bytes / std::max(1u, FLAGS_memtable_div), 4 << 20);
  o.maintenance_interval_ms = 0;
  if (!larder::ParseEvictionPolicy(policy, &o.eviction_policy)) {
    std::fprintf(stderr, "unknown policy %s\n", policy.c_str());
    std::exit(2);
  }
  auto opened = larder::Store::Open(o, dir);
  if (!opened.ok()) {
    std::fprintf(stderr, "open %s: %s\n", dir.c_str(), opened.status().ToString().c_str());
    std::exit(2);
  }
  auto store = std::move(opened).value();
  // Incompressible bytes, as KV-cache tensors are: a compressible value would shrink in
  // RocksDB's SST files (values under 64 KiB) and escape the disk budget.
  std::string value(FLAGS_value_bytes, '\0');
  std::mt19937_64 rng(FLAGS_value_bytes);
  for (size_t p = 0; p + 8 <= value.size(); p += 8) {
    uint64_t x = rng();
    std::memcpy(&value[p], &x, 8);
  }
  uint64_t hit = 0, prompt = 0, w0 = ProcIoBytes("write_bytes");
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& r : t.requests) {
    std::vector<std::string> keys;
    keys.reserve(r.chunks.size());
    for (uint64_t c : r.chunks) keys.push_back(larder::bench::ChunkKey(c));
    std::vector<std::string_view> views(keys.begin(), keys.end());
    uint64_t h = store->PrefixCount(views);
    for (uint64_t j = 0; j < h; ++j) {
      auto v = store->Get(keys[j]);
      uint64_t stamp = 0;
      if (v.ok() && v->size() == value.size()) std::memcpy(&stamp, v->data(), 8);
      if (!v.ok() || stamp != r.chunks[j]) {
        ++g_bad;
        h = j;  // a failed read of a counted chunk ends the hit prefix
        break;
      }
    }
    hit += h * t.params.chunk_tokens;
    prompt += r.prompt_tokens;
    for (uint64_t j = h; j < keys.size(); ++j) {
      if (store->Contains(keys[j])) continue;
      std::memcpy(value.data(), &r.chunks[j], 8);
      if (!store->Put(keys[j], value).ok()) ++g_bad;
    }
    clock->Advance(FLAGS_ms_per_request);
  }
  if (!store->Flush().ok()) ++g_bad;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  larder::Stats s = store->GetStats();
  PrintRow(cap, policy, hit, prompt, s.bytes_written + s.reinserted_bytes,
           ProcIoBytes("write_bytes") - w0, s.reinserted_bytes, secs, ws_bytes);
  store.reset();
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("hit ratio vs capacity on a multi-turn chat trace; see bench/README.md");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_value_bytes < 16) {
    std::fprintf(stderr, "--value_bytes must be >= 16\n");
    return 2;
  }
  larder::bench::TraceParams p;
  p.seed = FLAGS_seed;
  p.turns = FLAGS_turns;
  p.users = FLAGS_users;
  p.concurrency = FLAGS_concurrency;
  p.zipf_s = FLAGS_zipf_s;
  Trace t = larder::bench::GenerateTrace(p);
  uint64_t chunk_refs = 0, prompt_tokens = 0, single_use = 0;
  std::unordered_map<uint64_t, uint32_t> refs;  // chunk -> requests that contain it
  for (const auto& r : t.requests) {
    chunk_refs += r.chunks.size(), prompt_tokens += r.prompt_tokens;
    for (uint64_t c : r.chunks) ++refs[c];
  }
  for (const auto& [c, n] : refs) single_use += n == 1;
  const uint64_t ws_bytes = t.unique_chunks * FLAGS_value_bytes;
  std::printf(
      "{\"trace\":{\"seed\":%llu,\"requests\":%zu,\"users\":%u,\"concurrency\":%u,"
      "\"zipf_s\":%.2f,\"unique_chunks\":%llu,\"chunk_refs\":%llu,\"prompt_tokens\":%llu,"
      "\"mean_prompt_tokens\":%.1f,\"value_bytes\":%llu,\"working_set_bytes\":%llu,"
      "\"single_use_chunks\":%llu}}\n",
      (unsigned long long)p.seed, t.requests.size(), p.users, p.concurrency, p.zipf_s,
      (unsigned long long)t.unique_chunks, (unsigned long long)chunk_refs,
      (unsigned long long)prompt_tokens,
      t.requests.empty() ? 0.0 : static_cast<double>(prompt_tokens) / t.requests.size(),
      (unsigned long long)FLAGS_value_bytes, (unsigned long long)ws_bytes,
      (unsigned long long)single_use);
  std::fflush(stdout);

  const larder::bench::WorkDir work(FLAGS_dir, "trace");
  const std::string& base = work.path();
  for (double cap : ParseList(FLAGS_capacities)) {
    uint64_t cap_chunks = static_cast<uint64_t>(cap * t.unique_chunks);
    for (auto [name, sim] : {std::pair{"belady", &larder::bench::SimulateBelady},
                             std::pair{"lru-exact", &larder::bench::SimulateLru}}) {
      auto t0 = std::chrono::steady_clock::now();
      SimResult r = sim(t, cap_chunks);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      PrintRow(cap, name, r.hit_tokens, r.prompt_tokens, r.inserted_chunks * FLAGS_value_bytes, 0,
               0, secs, ws_bytes);
    }
    for (const auto& policy : SplitList(FLAGS_policies)) {
      ReplayLarder(t, base + "/" + policy + "-" + std::to_string(cap), policy, cap, ws_bytes);
    }
  }
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n", (unsigned long long)g_bad);
  return g_bad ? 1 : 0;
}
