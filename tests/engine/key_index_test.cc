// The in-memory index: ordered hashing by key hash, entries with equal hashes, scans that
// resume, growth and shrinking, and its memory per key.
#include "key_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace larder {
namespace {

Entry MakeEntry(uint64_t hash, uint32_t seg, uint64_t page) {
  Entry e;
  e.hash = hash;
  e.check = hash * 31 + seg;
  e.seg = seg;
  e.offset = page * 4096;
  e.size = static_cast<uint32_t>(hash % 100000);
  e.expire_at_ms = static_cast<int64_t>(hash % 7 == 0 ? 1'800'000'000'000 : 0);
  e.last_access_ms = 1'700'000'000'000;
  e.access_gen = static_cast<uint16_t>(seg);
  e.reuse = static_cast<uint8_t>(hash % 200);
  e.position = static_cast<uint8_t>(hash % Entry::kNoPosition);
  return e;
}

void ExpectSame(const Entry& a, const Entry& b) {
  EXPECT_TRUE(a.SameVersion(b));
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.expire_at_ms, b.expire_at_ms);
  EXPECT_EQ(a.last_access_ms, b.last_access_ms);
  EXPECT_EQ(a.access_gen, b.access_gen);
  EXPECT_EQ(a.reuse, b.reuse);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.position, b.position);
}

TEST(KeyIndex, PacksEveryFieldInFortyBytes) {
  KeyIndex idx;
  Entry e = MakeEntry(0x123456789abcdef1ull, KeyIndex::kMaxSeg, (uint64_t{1} << 28) - 1);
  e.flags = Entry::kInline | Entry::kDirty;
  e.reuse = 255;
  e.position = Entry::kNoPosition;
  e.expire_at_ms = Entry::kMaxExpiry;  // every expiry bit but the "far" pattern
  idx.Insert(e);
  Entry got;
  ASSERT_EQ(idx.Find(e.hash, &got), 1u);
  ExpectSame(got, e);
  // An expiry past what 42 bits hold is kept as "far" (the record has the exact time), and
  // leaves the fields beside it alone.
  Entry far = MakeEntry(7, 1, 1);
  far.expire_at_ms = INT64_MAX / 2;
  far.position = 5;
  idx.Insert(far);
  ASSERT_EQ(idx.Find(7, &got), 1u);
  EXPECT_EQ(got.expire_at_ms, Entry::kFarExpiry);
  EXPECT_EQ(got.position, 5);
  EXPECT_EQ(got.access_gen, far.access_gen);
}

TEST(KeyIndex, ManyEntriesFindEraseAndIterateInHashOrder) {
  KeyIndex idx;
  std::mt19937_64 rng(1);
  std::map<uint64_t, Entry> want;
  for (int i = 0; i < 200000; ++i) {
    uint64_t h = rng() | 1;
    Entry e = MakeEntry(h, static_cast<uint32_t>(i % 1000 + 1), static_cast<uint64_t>(i));
    want[h] = e;
    idx.Insert(e);
  }
  EXPECT_EQ(idx.size(), want.size());
  // Erase every third, then everything must still be found or gone exactly.
  int n = 0;
  for (auto it = want.begin(); it != want.end();) {
    if (n++ % 3 == 0) {
      EXPECT_TRUE(idx.Erase(it->second));
      EXPECT_FALSE(idx.Erase(it->second)) << "erased twice";
      it = want.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [h, e] : want) {
    Entry got;
    ASSERT_EQ(idx.Find(h, &got), 1u);
    ExpectSame(got, e);
  }
  std::vector<uint64_t> order;
  idx.ForEach([&](Entry& e) {
    order.push_back(e.hash);
    return true;
  });
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(order.size(), want.size());
}

TEST(KeyIndex, EntriesWithEqualHashesAreKeptApart) {
  KeyIndex idx;
  Entry a = MakeEntry(42, 1, 1), b = MakeEntry(42, 2, 9), c = MakeEntry(43, 3, 3);
  idx.Insert(a);
  idx.Insert(c);
  idx.Insert(b);
  Entry got;
  EXPECT_EQ(idx.Find(42, &got), 2u);
  std::set<uint32_t> segs;
  idx.ForHash(42, [&](const Entry& e) {
    segs.insert(e.seg);
    return false;
  });
  EXPECT_EQ(segs, (std::set<uint32_t>{1, 2}));
  Entry b2 = b;
  b2.offset = 4096 * 100;
  ASSERT_TRUE(idx.Replace(b, b2));
  EXPECT_FALSE(idx.Contains(b));
  EXPECT_TRUE(idx.Contains(b2));
  EXPECT_TRUE(idx.Contains(a));
  ASSERT_TRUE(idx.Erase(a));
  EXPECT_EQ(idx.Find(42, &got), 1u);
  EXPECT_TRUE(got.SameVersion(b2));
  EXPECT_TRUE(idx.Update(b2, [](Entry& x) { x.reuse = 9; }));
  ASSERT_EQ(idx.Find(42, &got), 1u);
  EXPECT_EQ(got.reuse, 9);
}

TEST(KeyIndex, ScanPagesReturnEveryEntryOnceInOrder) {
  KeyIndex idx;
  std::mt19937_64 rng(2);
  std::set<uint64_t> all;
  for (int i = 0; i < 50000; ++i) {
    uint64_t h = rng() | 1;
    all.insert(h);
    idx.Insert(MakeEntry(h, 1, static_cast<uint64_t>(i)));
  }
  std::vector<uint64_t> seen;
  uint64_t cursor = 0;
  do {
    std::vector<Entry> page;
    cursor = idx.Scan(cursor, 97, &page);
    for (const Entry& e : page) seen.push_back(e.hash);
  } while (cursor != 0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.size(), all.size());
  EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()), all);
}

TEST(KeyIndex, ForEachRemovesWhatItIsAskedTo) {
  KeyIndex idx;
  for (uint64_t h = 1; h <= 5000; ++h) idx.Insert(MakeEntry(h * 0x9e3779b97f4a7c15ull, 1, h));
  idx.ForEach([](Entry& e) { return e.hash % 2 == 0; });
  size_t odd = 0;
  idx.ForEach([&](Entry& e) {
    odd += e.hash % 2;
    return true;
  });
  EXPECT_EQ(odd, 0u);
  EXPECT_GT(idx.size(), 2000u);
}

TEST(KeyIndex, CostsAtMostSixtyFourBytesPerKey) {
  KeyIndex idx;
  std::mt19937_64 rng(3);
  const size_t n = 300000;
  for (size_t i = 0; i < n; ++i) idx.Insert(MakeEntry(rng() | 1, 1, i));
  // Growing: at most 1 / 0.72 of 40 bytes, plus the shards' fixed part.
  EXPECT_LE(static_cast<double>(idx.MemoryBytes()) / n, 64.0);
  idx.ShrinkToFit();  // as after an open
  EXPECT_LE(static_cast<double>(idx.MemoryBytes()) / n, 52.0);
  EXPECT_EQ(idx.size(), n);
}

}  // namespace
}  // namespace larder
