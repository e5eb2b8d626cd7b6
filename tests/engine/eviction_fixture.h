// The eviction tests' store: a small budget and generations, a manual clock.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "larder/store.h"
#include "test_util.h"

namespace larder::test {

constexpr uint64_t kMiB = 1 << 20;

// A store with a manual clock and a small budget, 1 MiB values keyed "chunk-<i>".
struct EvictionFixture {
  enum Keeping { kInPlace, kByCopy };  // Options::keep_in_place
  explicit EvictionFixture(EvictionPolicy p, uint64_t budget = 24 * kMiB, uint64_t gen = 4 * kMiB,
                           std::vector<std::pair<std::string, std::string>> together = {},
                           std::shared_ptr<EventListener> listener = nullptr,
                           Keeping keeping = kInPlace) {
    clock = std::make_shared<test::ManualClock>();
    opts.clock = clock;
    opts.listener = std::move(listener);
    opts.evict_together = std::move(together);
    opts.eviction_policy = p;
    opts.max_disk_bytes = budget;
    opts.generation_bytes = gen;
    opts.memtable_bytes = 16 * kMiB;
    opts.maintenance_interval_ms = 0;
    opts.keep_in_place = keeping == kInPlace;
    auto r = Store::Open(opts, dir.path());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    store = std::move(r).value();
  }
  static std::string Key(int i) { return "chunk-" + std::to_string(i); }
  void PutN(int from, int to) {
    for (int i = from; i < to; ++i) {
      clock->Advance(10);
      ASSERT_TRUE(store->Put(Key(i), MakeValue(Key(i), kMiB)).ok()) << i;
    }
  }
  bool Has(int i) {
    auto r = store->Get(Key(i));
    if (!r.ok()) return false;
    EXPECT_EQ(r->view(), MakeValue(Key(i), kMiB)) << "wrong bytes for " << Key(i);
    return true;
  }

  test::TempDir dir;
  std::shared_ptr<test::ManualClock> clock;
  Options opts;
  std::unique_ptr<Store> store;
};

}  // namespace larder::test
