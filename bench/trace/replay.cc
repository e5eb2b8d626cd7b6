// The replay loop and its in-process backend (liblarder).
#include "replay.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

#include "bench_util.h"
#include "larder/store.h"

namespace larder::bench {
namespace {

class StepClock : public larder::Clock {
 public:
  int64_t NowMs() const override { return start_ + now_.load(); }
  void Set(int64_t ms) { now_ = ms; }

 private:
  const int64_t start_ = 1'700'000'000'000;
  std::atomic<int64_t> now_{0};
};

uint64_t Stamp(const char* data) {
  uint64_t s = 0;
  std::memcpy(&s, data, sizeof s);
  return s;
}

class EngineStore : public ChunkStore {
 public:
  EngineStore(std::unique_ptr<larder::Store> s, std::shared_ptr<StepClock> c)
      : store_(std::move(s)), clock_(std::move(c)), w0_(ProcIoBytes("write_bytes")) {}

  uint64_t PrefixCount(const std::vector<std::string>& keys) override {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    return store_->PrefixCount(views);
  }
  uint64_t ReadChecked(const std::vector<std::string>& keys, const std::vector<uint64_t>& chunks,
                       uint64_t n) override {
    for (uint64_t j = 0; j < n; ++j) {
      auto v = store_->Get(keys[j]);
      if (!v.ok() || v->size() < 8 || Stamp(v->data()) != chunks[j]) return j;
    }
    return n;
  }
  uint64_t StoreMissing(const std::vector<std::string>& keys, const std::vector<uint64_t>& chunks,
                        uint64_t from, std::string& value) override {
    uint64_t failed = 0;
    for (uint64_t j = from; j < keys.size(); ++j) {
      if (store_->Contains(keys[j])) continue;
      std::memcpy(value.data(), &chunks[j], 8);
      if (!store_->Put(keys[j], value).ok()) ++failed;
    }
    return failed;
  }
  void AdvanceTo(int64_t ms) override { clock_->Set(ms); }
  void Finish(ReplayResult* r) override {
    if (!store_->Flush().ok()) ++r->bad;
    const larder::Stats s = store_->GetStats();
    r->written_bytes = s.bytes_written + s.reinserted_bytes;
    r->reinserted_bytes = s.reinserted_bytes;
    r->device_bytes = ProcIoBytes("write_bytes") - w0_;
    r->live_bytes = s.live_bytes;
    r->max_disk_bytes = s.max_disk_bytes;
  }

 private:
  std::unique_ptr<larder::Store> store_;
  std::shared_ptr<StepClock> clock_;
  uint64_t w0_;
};

}  // namespace

std::unique_ptr<ChunkStore> OpenEngineStore(const ReplayConfig& c) {
  auto clock = std::make_shared<StepClock>();
  larder::Options o;
  o.clock = clock;
  o.max_disk_bytes = c.max_disk_bytes;
  o.maintenance_interval_ms = 0;
  if (!larder::ParseEvictionPolicy(c.policy, &o.eviction_policy)) {
    std::fprintf(stderr, "unknown eviction policy %s\n", c.policy.c_str());
    return nullptr;
  }
  auto opened = larder::Store::Open(o, c.dir);
  if (!opened.ok()) {
    std::fprintf(stderr, "open %s: %s\n", c.dir.c_str(), opened.status().ToString().c_str());
    return nullptr;
  }
  return std::make_unique<EngineStore>(std::move(opened).value(), clock);
}

ReplayResult ReplayTrace(const Trace& t, ChunkStore& store, uint64_t value_bytes) {
  // Incompressible bytes, as KV-cache tensors are.
  std::string value(value_bytes, '\0');
  std::mt19937_64 rng(value_bytes);
  for (size_t p = 0; p + 8 <= value.size(); p += 8) {
    const uint64_t x = rng();
    std::memcpy(&value[p], &x, 8);
  }
  ReplayResult res;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> keys;
  for (const auto& r : t.requests) {
    store.AdvanceTo(r.arrival_ms);
    keys.clear();
    for (uint64_t c : r.chunks) keys.push_back(ChunkKey(c));
    const uint64_t n = store.PrefixCount(keys);
    const uint64_t h = store.ReadChecked(keys, r.chunks, n);
    res.bad += n - h;  // a failed read of a counted chunk ends the hit prefix
    res.hit_tokens += h * t.params.chunk_tokens;
    res.prompt_tokens += r.prompt_tokens;
    res.bad += store.StoreMissing(keys, r.chunks, h, value);
  }
  store.Finish(&res);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace larder::bench
