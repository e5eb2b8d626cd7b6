// FirstWriteDemotion alone (the depth its shadows choose), and through a store: lru-reuse with
// learned demotion against lru on the same requests.
#include "demotion.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "eviction_fixture.h"
#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

// Shadows of 1,000 sampled keys (1 in 16 of a 16,000-key cache).
constexpr uint64_t kCacheKeys = 16000;

std::vector<uint64_t> RandomHashes(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> v(n);
  for (uint64_t& h : v) h = rng() | 1;
  return v;
}

// Half the requests for one of 12,000 reused keys, half for a key never seen before and never
// asked for again: together more than the cache holds, so LRU loses much of the reused set
// between two of its reads, while first writes entered low leave before it.
void RequestHalfReusedHalfNew(FirstWriteDemotion& d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<uint64_t> hot = RandomHashes(rng, 12000);
  for (int i = 0; i < 400000; ++i) d.Request(rng() % 2 ? hot[rng() % hot.size()] : rng() | 1);
}

TEST(FirstWriteDemotion, NoneUntilTheStoreEvicts) {
  FirstWriteDemotion d;
  RequestHalfReusedHalfNew(d, 1);
  EXPECT_EQ(d.Depth(), 0);  // no capacity known: nothing is modelled
}

TEST(FirstWriteDemotion, DemotesWhenFirstWritesAreNotReadAgain) {
  FirstWriteDemotion d;
  d.SetCapacity(kCacheKeys);
  RequestHalfReusedHalfNew(d, 2);
  EXPECT_GE(d.Depth(), 0.5);
}

TEST(FirstWriteDemotion, KeepsFirstWritesWhereTheyAreReadSoon) {
  // Every key is read once more a little later (300 requests after its first): LRU hits every
  // second request, and a first write entered low would have left before it.
  FirstWriteDemotion d;
  d.SetCapacity(kCacheKeys);
  std::mt19937_64 rng(3);
  const std::vector<uint64_t> keys = RandomHashes(rng, 400000);
  constexpr size_t kGap = 300 * 16;
  for (size_t i = 0; i < keys.size(); ++i) {
    d.Request(keys[i]);
    if (i >= kGap) d.Request(keys[i - kGap]);
  }
  EXPECT_EQ(d.Depth(), 0);
}

// Through the store: 16 KiB values (the smallest kept in blob files), a 32 MiB budget (~1,900
// values), generations of 2 MiB. Each request names its key in a one-key LARDER.PREFIX list,
// reads it if found and stores it if not, as LMCache's connector does.
struct Replay {
  static constexpr size_t kValueBytes = 16 * 1024;
  explicit Replay(EvictionPolicy p) : f(p, 32 * test::kMiB, 2 * test::kMiB) {}
  static std::string Value(const std::string& key) { return test::MakeValue(key, kValueBytes); }
  bool Request(const std::string& key) {
    if (f.store->PrefixCount({key}) == 1) {
      auto r = f.store->Get(key);
      EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
      if (r.ok()) {
        EXPECT_EQ(r->view(), Value(key)) << "wrong bytes for " << key;
      }
      return r.ok();
    }
    EXPECT_TRUE(f.store->Put(key, Value(key)).ok()) << key;
    return false;
  }
  // Half the requests for one of 1,600 reused keys, half for a key never asked for again; the
  // reused keys' hits over the last `measured` requests.
  int HotHits(int requests, int measured) {
    std::mt19937_64 rng(4);
    int hits = 0;
    for (int i = 0; i < requests; ++i) {
      if (rng() % 2) {
        const bool hit = Request("hot-" + std::to_string(rng() % 1600));
        if (i >= requests - measured) hits += hit;
      } else {
        Request("once-" + std::to_string(i));
      }
    }
    return hits;
  }
  test::EvictionFixture f;
};

TEST(FirstWriteDemotion, TheStoreKeepsReusedKeysThatLruLoses) {
  // Between two reads of a reused key come ~1,600 other reused keys and as many new ones, more
  // than the store holds: LRU keeps about half of the reused set, demotion nearly all of it.
  Replay lru(EvictionPolicy::kLru);
  Replay learned(EvictionPolicy::kLruReuse);
  constexpr int kRequests = 20000, kMeasured = 6000;
  const int lru_hits = lru.HotHits(kRequests, kMeasured);
  const int learned_hits = learned.HotHits(kRequests, kMeasured);
  EXPECT_GT(learned_hits, lru_hits + kMeasured / 20)
      << "lru " << lru_hits << ", lru-reuse " << learned_hits;
  const Stats learned_stats = learned.f.store->GetStats();
  EXPECT_GE(learned_stats.first_write_demotion_percent, 25u);
  EXPECT_GT(learned_stats.demoted_keys, 0u);
  EXPECT_LE(learned_stats.demoted_keys, learned_stats.evicted_keys);
  EXPECT_EQ(lru.f.store->GetStats().first_write_demotion_percent, 0u);
  EXPECT_EQ(lru.f.store->GetStats().demoted_keys, 0u);
}

}  // namespace
}  // namespace larder
