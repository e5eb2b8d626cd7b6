// larder-trace: hit ratio against capacity on a request trace, Larder beside reference
// policies.
//
// The trace is a file in Mooncake's format (--trace_file) or the synthetic multi-turn chat
// trace (trace.h) generated from --seed. For every capacity (a fraction of the working set:
// distinct chunks x --value_bytes) it simulates the reference policies (--sims) on the chunk
// accesses, then replays the trace (replay.h) into a fresh liblarder store (--policies) and,
// with --server_bin, into a fresh larder-server (--server_policies), each on its defaults but
// for the budget and the policy. Every hit is read and checked.
//
// Prints one JSON line describing the trace (single_use_chunks: chunks in only one request,
// which no policy can ever hit), then one per (capacity, policy); "via" says how it ran: sim,
// engine or server. Exit status 1 if any read returned wrong bytes or any write failed.
#include <gflags/gflags.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unordered_map>

#include "bench_util.h"
#include "replay.h"
#include "trace.h"

DEFINE_string(trace_file, "", "a trace in Mooncake's format; empty = the synthetic trace");
DEFINE_uint32(block_tokens, 512, "--trace_file: tokens per hash_ids block");
DEFINE_string(write_trace, "", "also write the trace to this file in Mooncake's format");
DEFINE_uint64(seed, 1, "synthetic trace: seed");
DEFINE_uint64(turns, 3000, "synthetic trace: requests");
DEFINE_uint32(users, 600, "synthetic trace: users");
DEFINE_uint32(concurrency, 32, "synthetic trace: sessions active at once");
DEFINE_double(zipf_s, 1.0, "synthetic trace: Zipf exponent of user popularity");
DEFINE_uint64(value_bytes, 64 << 10, "bytes stored per chunk (scaled down from ~32 MiB)");
DEFINE_string(capacities, "0.1,0.25,0.5,1.0", "capacities, fractions of the working set");
DEFINE_string(sims, "belady,lru-exact,fifo-exact,s3-fifo", "simulated reference policies");
DEFINE_string(policies, "lru-reuse,lru,fifo", "Larder eviction policies replayed in process");
DEFINE_string(server_bin, "", "larder-server to replay through; empty = no server replays");
DEFINE_string(server_policies, "lru-reuse", "eviction policies replayed through the server");
DEFINE_string(dir, "", "parent of the stores' directories (default: a temp dir, removed)");

namespace {

namespace fs = std::filesystem;
using namespace larder::bench;

uint64_t g_bad = 0;

void PrintRow(double cap, const char* via, const std::string& policy, const ReplayResult& r,
              uint64_t ws_bytes) {
  std::printf(
      "{\"capacity\":%.4f,\"via\":\"%s\",\"policy\":\"%s\",\"hit_ratio\":%.5f,"
      "\"hit_tokens\":%llu,\"prompt_tokens\":%llu,\"bytes_written\":%llu,"
      "\"written_per_ws\":%.4f,\"device_bytes\":%llu,\"reinserted_bytes\":%llu,"
      "\"live_bytes\":%llu,\"max_disk_bytes\":%llu,\"bad\":%llu,\"seconds\":%.3f}\n",
      cap, via, policy.c_str(),
      r.prompt_tokens ? static_cast<double>(r.hit_tokens) / r.prompt_tokens : 0,
      (unsigned long long)r.hit_tokens, (unsigned long long)r.prompt_tokens,
      (unsigned long long)r.written_bytes, static_cast<double>(r.written_bytes) / ws_bytes,
      (unsigned long long)r.device_bytes, (unsigned long long)r.reinserted_bytes,
      (unsigned long long)r.live_bytes, (unsigned long long)r.max_disk_bytes,
      (unsigned long long)r.bad, r.seconds);
  std::fflush(stdout);
}

void Replay(const Trace& t, double cap, const char* via, const std::string& policy,
            const std::string& base, uint64_t ws_bytes) {
  ReplayConfig c;
  c.max_disk_bytes = static_cast<uint64_t>(cap * ws_bytes);
  c.policy = policy;
  c.dir = base + "/" + via + "-" + policy + "-" + std::to_string(cap);
  {
    std::unique_ptr<ChunkStore> store =
        via == std::string("server") ? StartServerStore(c, FLAGS_server_bin, FLAGS_value_bytes)
                                     : OpenEngineStore(c);
    if (!store) std::exit(2);
    ReplayResult r = ReplayTrace(t, *store, FLAGS_value_bytes);
    store.reset();  // the server stops before its figures are printed
    g_bad += r.bad;
    PrintRow(cap, via, policy, r, ws_bytes);
  }
  fs::remove_all(c.dir);
  fs::remove(c.dir + ".log");
}

bool LoadTrace(Trace* t) {
  if (!FLAGS_trace_file.empty()) {
    std::string error;
    if (LoadMooncakeTrace(FLAGS_trace_file, FLAGS_block_tokens, t, &error)) return true;
    std::fprintf(stderr, "--trace_file: %s\n", error.c_str());
    return false;
  }
  TraceParams p;
  p.seed = FLAGS_seed;
  p.turns = FLAGS_turns;
  p.users = FLAGS_users;
  p.concurrency = FLAGS_concurrency;
  p.zipf_s = FLAGS_zipf_s;
  *t = GenerateTrace(p);
  return true;
}

void PrintTrace(const Trace& t, uint64_t ws_bytes) {
  uint64_t chunk_refs = 0, prompt_tokens = 0, single_use = 0;
  std::unordered_map<uint64_t, uint32_t> refs;  // chunk -> requests that contain it
  for (const auto& r : t.requests) {
    chunk_refs += r.chunks.size(), prompt_tokens += r.prompt_tokens;
    for (uint64_t c : r.chunks) ++refs[c];
  }
  for (const auto& [c, n] : refs) single_use += n == 1;
  char synthetic[160] = "";
  if (FLAGS_trace_file.empty()) {
    std::snprintf(synthetic, sizeof synthetic,
                  "\"seed\":%llu,\"users\":%u,\"concurrency\":%u,\"zipf_s\":%.2f,",
                  (unsigned long long)FLAGS_seed, t.params.users, t.params.concurrency,
                  t.params.zipf_s);
  }
  std::printf(
      "{\"trace\":{\"source\":\"%s\",%s\"requests\":%zu,\"chunk_tokens\":%u,"
      "\"unique_chunks\":%llu,\"chunk_refs\":%llu,\"prompt_tokens\":%llu,"
      "\"mean_prompt_tokens\":%.1f,\"value_bytes\":%llu,\"working_set_bytes\":%llu,"
      "\"single_use_chunks\":%llu}}\n",
      FLAGS_trace_file.empty() ? "synthetic" : fs::path(FLAGS_trace_file).filename().c_str(),
      synthetic, t.requests.size(), t.params.chunk_tokens, (unsigned long long)t.unique_chunks,
      (unsigned long long)chunk_refs, (unsigned long long)prompt_tokens,
      t.requests.empty() ? 0.0 : static_cast<double>(prompt_tokens) / t.requests.size(),
      (unsigned long long)FLAGS_value_bytes, (unsigned long long)ws_bytes,
      (unsigned long long)single_use);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  larder::bench::ParseFlags(&argc, &argv,
                            "hit ratio vs capacity on a request trace; see bench/README.md");
  if (FLAGS_value_bytes < 16) {
    std::fprintf(stderr, "--value_bytes must be >= 16\n");
    return 2;
  }
  Trace t;
  if (!LoadTrace(&t)) return 2;
  if (std::string error;
      !FLAGS_write_trace.empty() && !WriteMooncakeTrace(t, FLAGS_write_trace, &error)) {
    std::fprintf(stderr, "--write_trace: %s\n", error.c_str());
    return 2;
  }
  const uint64_t ws_bytes = t.unique_chunks * FLAGS_value_bytes;
  PrintTrace(t, ws_bytes);

  const WorkDir work(FLAGS_dir, "trace");
  for (const std::string& item : SplitList(FLAGS_capacities)) {
    const double cap = std::stod(item);
    for (const auto& sim : SplitList(FLAGS_sims)) {
      SimResult s;
      const auto t0 = std::chrono::steady_clock::now();
      if (!Simulate(t, sim, static_cast<uint64_t>(cap * t.unique_chunks), &s)) {
        std::fprintf(stderr, "--sims: unknown policy %s\n", sim.c_str());
        return 2;
      }
      ReplayResult r;
      r.hit_tokens = s.hit_tokens;
      r.prompt_tokens = s.prompt_tokens;
      r.written_bytes = s.inserted_chunks * FLAGS_value_bytes;
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      PrintRow(cap, "sim", sim, r, ws_bytes);
    }
    for (const auto& policy : SplitList(FLAGS_policies)) {
      Replay(t, cap, "engine", policy, work.path(), ws_bytes);
    }
    if (FLAGS_server_bin.empty()) continue;
    for (const auto& policy : SplitList(FLAGS_server_policies)) {
      Replay(t, cap, "server", policy, work.path(), ws_bytes);
    }
  }
  if (g_bad)
    std::fprintf(stderr, "ERROR: %llu bad reads or failed writes\n", (unsigned long long)g_bad);
  return g_bad ? 1 : 0;
}
