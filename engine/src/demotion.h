// FirstWriteDemotion: how far below the most recent end `lru-reuse` places a value that was
// written and never read since, learned online from shadow caches.
//
// On KV-cache traffic a chunk stored for the first time is often never read again (a
// conversation that ended, a one-off document), while a chunk read once is likely to be read
// again. LRU gives both the same lifetime. Entering first writes part of the way down the
// recency order (a probation, as S3-FIFO's small queue or TinyLFU's doorkeeper give) wins where
// they are reused far less than hit chunks, and loses where they are reused as much: the right
// depth depends on the traffic and the capacity. So it is measured: four shadow LRU caches over
// a sample of the keys (spatial sampling, as SHARDS does; at most kMaxShadowKeys keys each) see
// every key an ordered key list names, each entering first writes at a different depth (0, 1/4,
// 1/2, 3/4 of its lifetime) and counting its hits. The store demotes by the depth of the best
// shadow once that shadow's hits are kWinMargin ahead of no demotion's; until then, and for
// traffic that names no ordered lists, by none.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace larder {

class FirstWriteDemotion {
 public:
  static constexpr int kLevels = 4;
  static constexpr uint64_t kMaxShadowKeys = 8192;
  static constexpr double kWinMargin = 0.02;

  FirstWriteDemotion();

  // A key (by format::KeyHash) that a request needs: found in the store, or about to be stored
  // because it was not. Cheap for keys outside the sample.
  void Request(uint64_t hash);
  // The number of keys the store holds when it evicts: the shadows model a cache of that size.
  void SetCapacity(uint64_t keys);
  // The depth chosen, as a fraction of the cache's lifetime: 0, 0.25, 0.5 or 0.75.
  double Depth() const { return Fraction(chosen_.load(std::memory_order_relaxed)); }

 private:
  static double Fraction(int level) { return static_cast<double>(level) / kLevels; }
  // One shadow: exact LRU over the sampled keys with first writes entered `depth` of its
  // lifetime (the span of stamps it holds) below the newest.
  struct Shadow {
    double depth = 0;
    std::unordered_map<uint64_t, int64_t> stamp_of;  // sampled key -> its stamp
    std::map<int64_t, uint64_t> by_stamp;            // oldest first
    // True if it held the key; it then takes `stamp`, which is newer than every stamp held.
    // Otherwise the key enters `depth` of the lifetime below `stamp`.
    bool Request(uint64_t key, int64_t stamp, uint64_t capacity);
    void Trim(uint64_t capacity);
    void Forget(uint32_t threshold);  // drops keys the sample no longer includes
  };
  static uint32_t SampleValue(uint64_t hash);
  void Choose();

  std::atomic<uint32_t> threshold_{UINT32_MAX / 16};  // sampled: SampleValue(hash) < threshold
  std::atomic<int> chosen_{0};
  std::mutex mu_;
  std::array<Shadow, kLevels> shadows_;
  std::array<double, kLevels> hits_{};
  uint64_t capacity_ = 0;  // sampled keys each shadow holds
  int64_t clock_ = 0;      // sampled requests seen
  int64_t next_decay_ = 0;
};

}  // namespace larder
