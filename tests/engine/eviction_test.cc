// Disk budget and eviction: order under each policy, budget held, space back at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "eviction_fixture.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"

namespace larder {
namespace {

using test::EvictionFixture;
using test::kMiB;
using test::MakeValue;
using Fixture = EvictionFixture;

TEST(Eviction, FifoDropsOldestWritesFirst) {
  Fixture f(EvictionPolicy::kFifo);
  f.PutN(0, 60);
  Stats s = f.store->GetStats();
  EXPECT_GT(s.evicted_keys, 0u);
  EXPECT_EQ(s.reinserted_keys, 0u);
  // Survivors are exactly a suffix of the write order.
  int first = -1;
  for (int i = 0; i < 60; ++i) {
    bool has = f.store->Contains(Fixture::Key(i));
    if (has && first < 0) first = i;
    EXPECT_TRUE(first < 0 || has) << "hole at " << i << " after first survivor " << first;
  }
  EXPECT_GT(first, 20);
  EXPECT_TRUE(f.Has(59));
}

TEST(Eviction, LruReuseKeepsReusedEntries) {
  Fixture f(EvictionPolicy::kLruReuse);
  f.PutN(0, 8);
  for (int round = 0; round < 12; ++round) {
    // Two reused 1 MiB entries: within the reinsertion cap (half of a 4 MiB generation).
    for (int i : {0, 1}) {
      EXPECT_TRUE(f.Has(i)) << "reused entry " << i << " evicted";
    }
    f.PutN(8 + round * 5, 8 + (round + 1) * 5);
  }
  EXPECT_FALSE(f.store->Contains(Fixture::Key(3))) << "never-reused old entry survived";
  EXPECT_FALSE(f.store->Contains(Fixture::Key(9)));
  Stats s = f.store->GetStats();
  EXPECT_GT(s.reinserted_keys, 0u);
  EXPECT_GT(s.evicted_keys, 0u);
}

TEST(Eviction, LruReuseDropsEntriesReusedOnlyLongAgo) {
  // Read once right after its write, then never again while the window turns over: when its
  // generation goes, the entry goes with it rather than being copied forward (copying keeps
  // only entries last used in the newer half of the window).
  Fixture f(EvictionPolicy::kLruReuse, 24 * kMiB, 4 * kMiB, {}, nullptr, Fixture::kByCopy);
  f.PutN(0, 4);
  EXPECT_TRUE(f.Has(0));
  for (int i = 4; i < 40 && f.store->GetStats().evicted_keys == 0; ++i) f.PutN(i, i + 1);
  ASSERT_GT(f.store->GetStats().evicted_keys, 0u);
  EXPECT_FALSE(f.store->Contains(Fixture::Key(0)));
  EXPECT_EQ(f.store->GetStats().reinserted_keys, 0u);
}

TEST(Eviction, LruKeepsRecentlyReadOnly) {
  Fixture f(EvictionPolicy::kLru);
  f.PutN(0, 8);
  EXPECT_TRUE(f.Has(0));  // read once, early: becomes old as writes go on
  for (int round = 0; round < 12; ++round) {
    EXPECT_TRUE(f.Has(1)) << "recently read entry evicted in round " << round;
    f.PutN(8 + round * 5, 8 + (round + 1) * 5);
  }
  EXPECT_TRUE(f.store->Contains(Fixture::Key(1)));
  EXPECT_FALSE(f.store->Contains(Fixture::Key(0)));
  EXPECT_FALSE(f.store->Contains(Fixture::Key(2)));
}

TEST(Eviction, KeepsTheHeadOfAPrefixBeforeItsTail) {
  // Eight 512 KiB chunks fill one 4 MiB generation; kept by copy, its reinsertion cap (half)
  // keeps four. They are read in one list, in the reverse of their write order, at one instant:
  // the first four of the list are its head and must be the ones kept, whatever the write or
  // hash order, and whatever shorter lists later name the tail.
  Fixture f(EvictionPolicy::kLruReuse, 24 * kMiB, 4 * kMiB, {}, nullptr, Fixture::kByCopy);
  auto chunk = [](int i) { return "prefix-" + std::to_string(i); };
  for (int i = 0; i < 8; ++i) {
    f.clock->Advance(10);
    ASSERT_TRUE(f.store->Put(chunk(i), MakeValue(chunk(i), kMiB / 2)).ok());
  }
  f.PutN(100, 116);  // up to just under the budget: the next writes evict the prefix's generation
  f.clock->Advance(1000);
  std::vector<std::string> names;
  for (int i = 7; i >= 0; --i) names.push_back(chunk(i));
  std::vector<std::string_view> list(names.begin(), names.end());
  for (const auto& r : f.store->MultiGet(list)) ASSERT_TRUE(r.ok());
  // A list starting past the head (one tile of a batch) does not move its keys up the prefix.
  EXPECT_EQ(f.store->PrefixCount({list.begin() + 4, list.end()}), 4u);
  ASSERT_EQ(f.store->GetStats().evicted_keys, 0u);
  f.PutN(116, 130);
  ASSERT_GT(f.store->GetStats().evicted_keys, 0u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(f.store->Contains(chunk(i)), i >= 4) << chunk(i) << " at list position " << 7 - i;
  }
}

TEST(Eviction, EntriesReadBetweenTheRoundsOfADropAreKept) {
  // In place, the oldest generation goes a part per write, each round taking the next entries
  // of one walk's list of what to drop: an entry of that list read after the walk must stay.
  Fixture f(EvictionPolicy::kLruReuse);
  int next = 0;
  while (f.store->GetStats().evicted_keys == 0 && next < 64) f.PutN(next, next + 1), ++next;
  ASSERT_EQ(f.store->GetStats().evicted_keys, 1u) << "the first round dropped one entry";
  std::vector<int> read;
  for (int i = 0; i < next && read.size() < 3; ++i) {
    if (f.Has(i)) read.push_back(i);
  }
  ASSERT_EQ(read.size(), 3u);
  const uint64_t evicted = f.store->GetStats().evicted_keys;
  f.PutN(next, next + 8);  // two generations' worth: the rest of the first one goes
  EXPECT_GE(f.store->GetStats().evicted_keys, evicted + 8);
  for (int i : read) EXPECT_TRUE(f.store->Contains(Fixture::Key(i))) << Fixture::Key(i);
  for (int i = 0; i < 4; ++i) {
    const bool was_read = std::find(read.begin(), read.end(), i) != read.end();
    EXPECT_EQ(f.store->Contains(Fixture::Key(i)), was_read) << Fixture::Key(i);
  }
}

TEST(Eviction, NoneRefusesWritesOverBudget) {
  Fixture f(EvictionPolicy::kNone, 8 * kMiB, 2 * kMiB);
  Status s;
  int i = 0;
  for (; i < 40; ++i) {
    s = f.store->Put(Fixture::Key(i), MakeValue(Fixture::Key(i), kMiB));
    if (!s.ok()) break;
    ASSERT_TRUE(f.store->Flush().ok());
  }
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("eviction policy is none"), std::string::npos);
  EXPECT_FALSE(f.store->Contains(Fixture::Key(i))) << "a refused write left something behind";
  for (int j = 0; j < i; ++j) EXPECT_TRUE(f.Has(j));
  EXPECT_EQ(f.store->GetStats().evicted_keys, 0u);
}

TEST(Eviction, ValueLargerThanBudgetIsRefused) {
  Fixture f(EvictionPolicy::kLruReuse, 4 * kMiB, kMiB);
  Status s = f.store->Put("huge", std::string(5 * kMiB, 'x'));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
}

TEST(Eviction, BudgetHeldOnRealDiskBytes) {
  const uint64_t budget = 32 * kMiB, gen = 4 * kMiB;
  Fixture f(EvictionPolicy::kLruReuse, budget, gen);
  uint64_t peak = 0;
  for (int i = 0; i < 200; ++i) {
    f.clock->Advance(10);
    ASSERT_TRUE(f.store->Put(Fixture::Key(i), MakeValue(Fixture::Key(i), kMiB)).ok());
    if (i % 3 == 0) {
      f.Has(i / 2);  // some reuse, so reinsertion runs too
    }
    ASSERT_TRUE(i % 8 != 0 || f.store->Flush().ok());
    peak = std::max(peak, test::DirBytes(f.dir.path()));
  }
  EXPECT_LE(peak, budget + gen) << "peak on-disk bytes over budget + one generation";
  EXPECT_GT(peak, budget / 2) << "the budget was not used";
  Stats s = f.store->GetStats();
  EXPECT_LE(s.disk_bytes, budget + gen);
  EXPECT_GT(s.evicted_bytes, 100 * kMiB);
}

// The smallest budget a user is likely to try, on the engine's defaults (generation, memtable
// and write-buffer sizes derived from the budget): after writes of 3x the budget in KV-cache
// chunk sizes, with reads that make eviction re-insert, at least 90% of the budget holds live
// values, the stats account for it, and every key still held reads back its own bytes.
TEST(Eviction, SmallBudgetHoldsMostlyLiveValues) {
  const uint64_t budget = 256 * kMiB;
  test::TempDir dir;
  Options o;
  auto clock = std::make_shared<test::ManualClock>();
  o.clock = clock;
  o.max_disk_bytes = budget;
  o.maintenance_interval_ms = 0;
  auto opened = Store::Open(o, dir.path());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Store> store = std::move(opened).value();
  const uint64_t sizes[] = {256 << 10, kMiB, 3 * kMiB / 2, 4 * kMiB};
  std::vector<std::pair<std::string, uint64_t>> written;
  uint64_t total = 0;
  for (int i = 0; total < 3 * budget; ++i) {
    clock->Advance(10);
    const std::string key = Fixture::Key(i);
    const uint64_t size = sizes[i % 4];
    ASSERT_TRUE(store->Put(key, MakeValue(key, size)).ok()) << i;
    written.emplace_back(key, size);
    total += size;
    if (i % 4 == 1)
      store->Get(written[static_cast<size_t>(i) / 2].first).status().PermitUncheckedError();
  }
  ASSERT_TRUE(store->Flush().ok());
  const Stats s = store->GetStats();
  EXPECT_GE(s.live_bytes, budget * 9 / 10) << "live " << s.live_bytes << " of " << budget;
  EXPECT_LE(s.budget_used_bytes, budget);
  EXPECT_GE(s.budget_used_bytes, s.live_bytes);
  EXPECT_EQ(s.unused_value_bytes, s.value_file_bytes - s.live_bytes);
  EXPECT_GT(s.reinserted_keys, 0u);
  uint64_t held = 0;
  for (const auto& [key, size] : written) {
    auto v = store->Get(key);
    if (!v.ok()) continue;
    ASSERT_EQ(v->view(), MakeValue(key, size)) << "wrong bytes for " << key;
    held += size;
  }
  EXPECT_EQ(held, s.live_bytes);
}
TEST(Eviction, EvictToGivesSpaceBackAtOnce) {
  Fixture f(EvictionPolicy::kFifo, 1ull << 30, 4 * kMiB);
  f.PutN(0, 40);
  ASSERT_TRUE(f.store->Flush().ok());
  uint64_t before = test::DirBytes(f.dir.path());
  ASSERT_GT(before, 35 * kMiB);
  ASSERT_TRUE(f.store->EvictTo(10 * kMiB).ok());
  uint64_t after = test::DirBytes(f.dir.path());
  EXPECT_LE(after, 10 * kMiB + 4 * kMiB) << "files not deleted right away";
  EXPECT_TRUE(f.Has(39));
  EXPECT_FALSE(f.store->Contains(Fixture::Key(0)));
}

}  // namespace
}  // namespace larder

namespace larder {
namespace {

// What the store told its listener.
struct Recorder final : EventListener {
  void OnExpired(std::string_view key) override {
    std::lock_guard lock(mu);
    expired.emplace_back(key);
  }
  void OnEvicted(std::string_view key) override {
    std::lock_guard lock(mu);
    evicted.emplace_back(key);
  }
  void OnGenerationEvicted(const GenerationEvicted& info) override {
    std::lock_guard lock(mu);
    generations.push_back(info);
  }
  // Checks that exactly the keys in `written` the store no longer has were reported evicted,
  // once each, and that the generation reports add up to them.
  void ExpectEvictedExactly(Store& store, const std::vector<std::string>& written) {
    std::set<std::string> told(evicted.begin(), evicted.end());
    EXPECT_EQ(told.size(), evicted.size()) << "a key was reported evicted twice";
    for (const std::string& k : written) {
      EXPECT_EQ(!store.Contains(k), told.count(k) == 1) << k;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < generations.size(); ++i) {
      sum += generations[i].evicted_keys;
      if (i > 0 && generations[i - 1].whole) {  // a part of one, then more of the same
        EXPECT_GT(generations[i].generation, generations[i - 1].generation);
      } else if (i > 0) {
        EXPECT_GE(generations[i].generation, generations[i - 1].generation);
      }
    }
    EXPECT_EQ(sum, evicted.size());
    EXPECT_EQ(store.GetStats().evicted_keys, sum);
  }

  std::mutex mu;
  std::vector<std::string> expired, evicted;
  std::vector<GenerationEvicted> generations;
};

TEST(Eviction, ListenerHearsEveryEvictedKeyOnceAndEachGeneration) {
  auto told = std::make_shared<Recorder>();
  Fixture f(EvictionPolicy::kLruReuse, 24 * kMiB, 4 * kMiB, {}, told);
  std::vector<std::string> written;
  for (int i = 0; i < 60; ++i) {
    written.push_back(Fixture::Key(i));
    f.PutN(i, i + 1);
    if (i % 3 == 0) f.Has(i);  // reused: the policy keeps some of them
  }
  ASSERT_FALSE(told->generations.empty());
  told->ExpectEvictedExactly(*f.store, written);
  uint64_t kept = 0;
  for (const GenerationEvicted& g : told->generations) kept += g.reinserted_keys;
  EXPECT_EQ(kept, f.store->GetStats().reinserted_keys);
  EXPECT_TRUE(told->expired.empty());
}

TEST(Eviction, ListenerHearsExpiriesFoundByReadsDeletesAndMaintenance) {
  auto told = std::make_shared<Recorder>();
  Fixture f(EvictionPolicy::kFifo, 24 * kMiB, 4 * kMiB, {}, told);
  PutOptions ttl;
  ttl.expire_at_ms = f.clock->NowMs() + 100;
  for (const char* k : {"read", "deleted", "swept"}) {
    ASSERT_TRUE(f.store->Put(k, std::string(k) + "-value", ttl).ok());
  }
  ASSERT_TRUE(f.store->Put("kept", "no expiry").ok());
  f.clock->Advance(200);
  EXPECT_TRUE(f.store->Get("read").status().IsNotFound());
  EXPECT_TRUE(f.store->Delete("deleted").IsNotFound());
  f.store->Maintain();
  EXPECT_EQ(std::set<std::string>(told->expired.begin(), told->expired.end()),
            (std::set<std::string>{"read", "deleted", "swept"}));
  EXPECT_EQ(told->expired.size(), 3u);
  EXPECT_TRUE(told->evicted.empty());
}

TEST(Eviction, OneMaintenancePassFindsEveryExpiredKeyOfASmallStore) {
  // A periodic pass looks at up to 2^18 entries (and at least 1/16 of the index), so in a
  // store of fewer keys the first pass that starts after they expired finds every one of them
  // (a pass of 1/16 of the index alone would find about 1/16 of them).
  std::mutex mu;
  std::condition_variable cv;
  int passes = 0;
  testing::ScopedSyncPoint point("StoreImpl::MaintenanceLoop:ExpiryPass", [&] {
    std::lock_guard lock(mu);
    ++passes;
    cv.notify_all();
  });
  auto told = std::make_shared<Recorder>();
  auto clock = std::make_shared<test::ManualClock>();
  test::TempDir dir;
  Options o;
  o.clock = clock;
  o.listener = told;
  o.max_disk_bytes = 64 * kMiB;
  o.memtable_bytes = 16 * kMiB;
  o.maintenance_interval_ms = 5;
  auto opened = Store::Open(o, dir.path());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Store> store = std::move(opened).value();
  constexpr size_t kKeys = 2000;
  PutOptions ttl;
  ttl.expire_at_ms = clock->NowMs() + 100;
  for (size_t i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(store->Put("k" + std::to_string(i), "v", ttl).ok()) << i;
  }
  clock->Advance(200);
  {
    std::unique_lock lock(mu);
    const int target = passes + 2;  // the second of them started after the advance
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return passes >= target; }))
        << "no maintenance pass ran";
  }
  std::lock_guard lock(told->mu);
  EXPECT_EQ(told->expired.size(), kKeys);
  EXPECT_EQ(store->GetStats().expired_keys, kKeys);
}

TEST(Eviction, LmcacheMetadataGoesWithItsPayload) {
  // Payload and metadata straddle a generation boundary: metadata lands in the newer one. Under
  // a recency policy the oldest window goes in parts, and the small metadata of a payload
  // dropped in one part must not wait for the window's last.
  for (EvictionPolicy policy : {EvictionPolicy::kFifo, EvictionPolicy::kLruReuse}) {
    SCOPED_TRACE(static_cast<int>(policy));
    auto told = std::make_shared<Recorder>();
    Fixture f(policy, 16 * kMiB, 2 * kMiB, {{"kv_bytes", "metadata"}}, told);
    std::vector<std::string> written;
    for (int i = 0; i < 40; ++i) {
      std::string stem = "model@" + std::to_string(i) + "@";
      f.clock->Advance(10);
      ASSERT_TRUE(f.store->Put(stem + "kv_bytes", MakeValue(stem, kMiB)).ok());
      ASSERT_TRUE(f.store->Put(stem + "metadata", std::string(28, 'm')).ok());
      written.push_back(stem + "kv_bytes");
      written.push_back(stem + "metadata");
    }
    told->ExpectEvictedExactly(*f.store, written);
    int orphans = 0, pairs = 0;
    for (int i = 0; i < 40; ++i) {
      std::string stem = "model@" + std::to_string(i) + "@";
      bool payload = f.store->Contains(stem + "kv_bytes");
      bool meta = f.store->Contains(stem + "metadata");
      orphans += meta && !payload;
      pairs += meta && payload;
    }
    EXPECT_EQ(orphans, 0) << "metadata left readable after its payload was evicted";
    EXPECT_GT(pairs, 5);
  }
}

}  // namespace
}  // namespace larder
