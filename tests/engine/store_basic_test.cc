// Engine behaviours: put/get/overwrite, arguments, TTL, NX/XX, exists/prefix, scan, reopen.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "larder/glob.h"
#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<test::ManualClock>();
    opts_.clock = clock_;
    opts_.max_disk_bytes = 1ull << 30;
    opts_.memtable_bytes = 64 << 20;
    opts_.maintenance_interval_ms = 0;
    Reopen();
  }
  void Reopen() {
    store_.reset();
    auto r = Store::Open(opts_, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
  }
  std::string GetStr(const std::string& k) {
    auto r = store_->Get(k);
    return r.ok() ? std::string(r->view()) : "<miss>";
  }

  test::TempDir dir_;
  std::shared_ptr<test::ManualClock> clock_;
  Options opts_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, PutGetOverwriteAndBinary) {
  std::string bin("a\0b\r\nc", 6);
  ASSERT_TRUE(store_->Put("k", bin).ok());
  EXPECT_EQ(GetStr("k"), bin);
  std::string big = MakeValue("k", 3 << 20, 1);
  ASSERT_TRUE(store_->Put("k", big).ok());
  EXPECT_EQ(GetStr("k"), big);
  ASSERT_TRUE(store_->Put("empty", "").ok());
  auto e = store_->Get("empty");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 0u);
  EXPECT_TRUE(store_->Get("nope").status().IsNotFound());
  Stats s = store_->GetStats();
  EXPECT_EQ(s.keys, 2u);
  EXPECT_EQ(s.live_bytes, big.size());
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 1u);
}

TEST_F(StoreTest, AnOverwrittenValueLeavesTheWriteBufferAtOnce) {
  // WAL off: a value waits ~20 ms in the write buffer before its write starts. One replaced
  // meanwhile is dropped unwritten, and its buffer goes with it, so a key overwritten in a
  // burst holds one buffer, not one per version (the bytes counted in pending_bytes).
  const size_t size = 256 << 10;
  std::vector<std::string> versions;
  for (int i = 0; i < 16; ++i) versions.push_back(MakeValue("burst" + std::to_string(i), size));
  const uint64_t before = store_->GetStats().pending_bytes;
  for (std::string& v : versions) {
    ASSERT_TRUE(store_->PutOwned("k", std::move(v), PutOptions{}).ok());
  }
  // The last version, one whose write started before it was replaced, and memtable growth.
  EXPECT_LE(store_->GetStats().pending_bytes, before + 2 * size + (256 << 10));
  EXPECT_EQ(GetStr("k"), MakeValue("burst15", size));
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(GetStr("k"), MakeValue("burst15", size));
}

TEST_F(StoreTest, BadArgumentsChangeNothing) {
  EXPECT_TRUE(store_->Put("", "v").IsInvalidArgument());
  std::string long_key(opts_.max_key_bytes + 1, 'k');
  Status s = store_->Put(long_key, "v");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("max_key_bytes"), std::string::npos) << s.message();
  // A key no Put can store is absent to every read and removal, as any other absent key.
  for (const std::string& k : {std::string(), long_key}) {
    EXPECT_TRUE(store_->Get(k).status().IsNotFound());
    EXPECT_TRUE(store_->Info(k).status().IsNotFound());
    EXPECT_TRUE(store_->Delete(k).IsNotFound());
    EXPECT_TRUE(store_->SetExpiry(k, 0).IsNotFound());
    char buf[8];
    EXPECT_TRUE(store_->GetInto(k, buf, sizeof(buf)).status().IsNotFound());
  }
  store_.reset();
  opts_.max_value_bytes = 1024;
  Reopen();
  s = store_->Put("k", std::string(1025, 'v'));
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("max_value_bytes"), std::string::npos);
  EXPECT_EQ(store_->GetStats().keys, 0u);
}

TEST_F(StoreTest, OptionsThatCannotWorkAreRefusedNamingTheField) {
  const std::vector<std::pair<const char*, void (*)(Options&)>> bad = {
      {"max_reinsert_fraction", [](Options& o) { o.max_reinsert_fraction = 2; }},
      {"max_reinsert_fraction", [](Options& o) { o.max_reinsert_fraction = std::nan(""); }},
      {"memtable_bytes", [](Options& o) { o.memtable_bytes = 4096; }},  // would stall writers
      {"generation_bytes", [](Options& o) { o.generation_bytes = 1; }},
      {"read_queue_depth", [](Options& o) { o.read_queue_depth = kMaxReadQueueDepth + 1; }},
  };
  for (const auto& [field, spoil] : bad) {
    Options o = opts_;
    spoil(o);
    Status s = Store::Open(o, dir_.sub("x")).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << field << ": " << s.ToString();
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  }
}

TEST_F(StoreTest, TtlExpiresWithInjectedClock) {
  PutOptions po;
  po.expire_at_ms = clock_->NowMs() + 1000;
  ASSERT_TRUE(store_->Put("t", "v", po).ok());
  ASSERT_TRUE(store_->Put("p", "v").ok());
  EXPECT_EQ(store_->Ttl("t"), 1000);
  EXPECT_EQ(store_->Ttl("p"), kTtlNoExpiry);
  EXPECT_EQ(store_->Ttl("none"), kTtlNoKey);
  clock_->Advance(999);
  EXPECT_EQ(GetStr("t"), "v");
  clock_->Advance(1);
  EXPECT_EQ(GetStr("t"), "<miss>");
  EXPECT_EQ(store_->Exists({"t", "p"}), 1u);
  EXPECT_EQ(store_->GetStats().keys, 1u);
  EXPECT_EQ(store_->Ttl("t"), kTtlNoKey);
  EXPECT_GE(store_->GetStats().expired_keys, 1u);

  // SetExpiry / Persist / an expiry in the past deletes.
  ASSERT_TRUE(store_->SetExpiry("p", clock_->NowMs() + 50).ok());
  EXPECT_EQ(store_->Ttl("p"), 50);
  ASSERT_TRUE(store_->Persist("p").ok());
  EXPECT_EQ(store_->Ttl("p"), kTtlNoExpiry);
  EXPECT_TRUE(store_->SetExpiry("missing", 0).IsNotFound());
  ASSERT_TRUE(store_->SetExpiry("p", clock_->NowMs() - 1).ok());
  EXPECT_EQ(GetStr("p"), "<miss>");

  // Expiry survives reopen; Maintain removes expired entries in the background's place.
  po.expire_at_ms = clock_->NowMs() + 100;
  ASSERT_TRUE(store_->Put("r", "v", po).ok());
  Reopen();
  EXPECT_EQ(store_->Ttl("r"), 100);
  clock_->Advance(100);
  store_->Maintain();
  EXPECT_EQ(store_->GetStats().keys, 0u);
}

TEST_F(StoreTest, RelativeTtlsFollowTheStoresClockAndRefuseOverflow) {
  ASSERT_TRUE(store_->Put("k", "v", 60'000).ok());
  EXPECT_EQ(store_->Ttl("k"), 60'000);  // by Options::clock, not the wall clock
  ASSERT_TRUE(store_->Expire("k", 5'000).ok());
  EXPECT_EQ(store_->Ttl("k"), 5'000);
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(store_->Put("big", "v", kHuge).IsInvalidArgument());
  EXPECT_TRUE(store_->Put("neg", "v", -1).IsInvalidArgument());
  EXPECT_EQ(store_->Exists({"big", "neg"}), 0u);
  EXPECT_TRUE(store_->Expire("k", kHuge).IsInvalidArgument());
  EXPECT_EQ(store_->Ttl("k"), 5'000);  // unchanged
  ASSERT_TRUE(store_->Expire("k", 0).ok());
  EXPECT_EQ(store_->Ttl("k"), kTtlNoKey);
}

TEST_F(StoreTest, FullyExpiredGenerationIsDroppedWhole) {
  store_.reset();
  opts_.generation_bytes = 2 << 20;
  Reopen();
  PutOptions po;
  po.expire_at_ms = clock_->NowMs() + 10;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(store_->Put("e" + std::to_string(i), MakeValue("e", 1 << 20), po).ok());
  }
  ASSERT_TRUE(store_->Put("keep", MakeValue("keep", 1 << 20)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  uint64_t gens_before = store_->GetStats().generations;
  uint64_t disk_before = store_->GetStats().disk_bytes;
  clock_->Advance(10);
  store_->Maintain();
  Stats s = store_->GetStats();
  EXPECT_LT(s.generations, gens_before);
  EXPECT_LT(s.disk_bytes, disk_before - (4 << 20)) << "space of expired generations comes back";
  EXPECT_EQ(s.keys, 1u);
  EXPECT_EQ(GetStr("keep"), MakeValue("keep", 1 << 20));
}

TEST_F(StoreTest, ValuesThatExpiredWhileClosedGiveTheirBytesBackAtOpen) {
  // The open removes their records; their ranges of the file they share with a live value are
  // freed with them, not when the generation goes.
  store_.reset();
  opts_.wal = true;  // one file per generation: the expired values share the live one's
  Reopen();
  PutOptions po;
  po.expire_at_ms = clock_->NowMs() + 10;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store_->Put("e" + std::to_string(i), MakeValue("e", 1 << 20), po).ok());
  }
  ASSERT_TRUE(store_->Put("keep", MakeValue("keep", 1 << 20)).ok());
  const uint64_t before = store_->GetStats().value_file_bytes;
  clock_->Advance(10);
  Reopen();
  const Stats s = store_->GetStats();
  EXPECT_EQ(s.keys, 1u);
  EXPECT_LE(s.value_file_bytes, before - (4 << 20)) << "expired values kept their blocks";
  EXPECT_EQ(s.value_file_bytes, test::DirBytes(dir_.path() + "/values"));
  EXPECT_EQ(GetStr("keep"), MakeValue("keep", 1 << 20));
}

TEST_F(StoreTest, ConditionalPutsAndKeepTtl) {
  PutOptions nx;
  nx.mode = PutMode::kIfAbsent;
  PutOptions xx;
  xx.mode = PutMode::kIfPresent;
  EXPECT_TRUE(store_->Put("k", "1", xx).IsConditionNotMet());
  EXPECT_TRUE(store_->Put("k", "1", nx).ok());
  EXPECT_TRUE(store_->Put("k", "2", nx).IsConditionNotMet());
  EXPECT_EQ(GetStr("k"), "1");
  EXPECT_TRUE(store_->Put("k", "3", xx).ok());
  EXPECT_EQ(GetStr("k"), "3");
  ASSERT_TRUE(store_->SetExpiry("k", clock_->NowMs() + 500).ok());
  PutOptions keep;
  keep.keep_ttl = true;
  ASSERT_TRUE(store_->Put("k", "4", keep).ok());
  EXPECT_EQ(store_->Ttl("k"), 500);
  ASSERT_TRUE(store_->Put("k", "5").ok());
  EXPECT_EQ(store_->Ttl("k"), kTtlNoExpiry);
}

// INFO keyspace's expires and avg_ttl: the index counts the entries with a TTL through every
// change (put, overwrite, expiry set or removed, delete, expiry, reopen).
TEST_F(StoreTest, StatsCountTheEntriesWithATtl) {
  auto expiring = [&] { return store_->GetStats().expiring_keys; };
  auto avg_ttl = [&] { return store_->GetStats().avg_ttl; };
  EXPECT_EQ(expiring(), 0u);
  EXPECT_EQ(avg_ttl(), 0u);
  PutOptions po;
  po.expire_at_ms = clock_->NowMs() + 1000;
  ASSERT_TRUE(store_->Put("a", "v", po).ok());
  po.expire_at_ms = clock_->NowMs() + 3000;
  ASSERT_TRUE(store_->Put("b", "v", po).ok());
  ASSERT_TRUE(store_->Put("c", "v").ok());
  EXPECT_EQ(expiring(), 2u);
  EXPECT_EQ(avg_ttl(), 2000u);
  clock_->Advance(500);
  EXPECT_EQ(avg_ttl(), 1500u);
  ASSERT_TRUE(store_->SetExpiry("c", clock_->NowMs() + 4500).ok());
  EXPECT_EQ(expiring(), 3u);
  EXPECT_EQ(avg_ttl(), 2500u);  // (500 + 2500 + 4500) / 3
  ASSERT_TRUE(store_->Persist("b").ok());
  ASSERT_TRUE(store_->Put("a", "w").ok());  // an overwrite without KEEPTTL drops the TTL
  EXPECT_EQ(expiring(), 1u);
  EXPECT_EQ(avg_ttl(), 4500u);
  Reopen();
  EXPECT_EQ(expiring(), 1u);
  EXPECT_EQ(avg_ttl(), 4500u);
  ASSERT_TRUE(store_->Delete("c").ok());
  EXPECT_EQ(expiring(), 0u);
  EXPECT_EQ(avg_ttl(), 0u);
  po.expire_at_ms = clock_->NowMs() + 10;
  ASSERT_TRUE(store_->Put("d", "v", po).ok());
  clock_->Advance(10);
  store_->Maintain();
  EXPECT_EQ(expiring(), 0u);
  EXPECT_EQ(store_->GetStats().keys, 2u);
}

TEST_F(StoreTest, ExistsPrefixDeleteTouch) {
  for (auto k : {"c0", "c1", "c2", "c4"}) ASSERT_TRUE(store_->Put(k, "v").ok());
  EXPECT_EQ(store_->Exists({"c0", "c0", "c3", "c4"}), 3u);
  EXPECT_EQ(store_->PrefixCount({"c0", "c1", "c2", "c3", "c4"}), 3u);
  EXPECT_EQ(store_->PrefixCount({"c3", "c0"}), 0u);
  EXPECT_EQ(store_->PrefixCount({}), 0u);
  EXPECT_TRUE(store_->Delete("c1").ok());
  EXPECT_TRUE(store_->Delete("c1").IsNotFound());
  EXPECT_EQ(store_->PrefixCount({"c0", "c1", "c2"}), 1u);
  EXPECT_EQ(store_->Touch({"c0", "c0", "zz"}), 2u);
  auto info = store_->Info("c0");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->reuse_count, 2u);
  Reopen();  // reuse counts persist across a clean close
  EXPECT_EQ(store_->Info("c0")->reuse_count, 2u);
  EXPECT_EQ(store_->Exists({"c1"}), 0u);
}

TEST_F(StoreTest, ScanVisitsEveryKeyOnceWithPattern) {
  std::set<std::string> want;
  for (int i = 0; i < 500; ++i) {
    std::string k = (i % 2 ? "odd:" : "even:") + std::to_string(i);
    ASSERT_TRUE(store_->Put(k, "v").ok());
    want.insert(k);
  }
  std::multiset<std::string> got;
  uint64_t cursor = 0;
  int pages = 0;
  do {
    ScanPage p = store_->Scan(cursor, "", 37);
    got.insert(p.keys.begin(), p.keys.end());
    cursor = p.next_cursor;
    ++pages;
  } while (cursor != 0);
  EXPECT_GT(pages, 5);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want);
  EXPECT_EQ(got.size(), want.size());
  size_t odd = 0;
  cursor = 0;
  do {
    ScanPage p = store_->Scan(cursor, "odd:*", 100);
    for (auto& k : p.keys) EXPECT_EQ(k.rfind("odd:", 0), 0u) << k;
    odd += p.keys.size();
    cursor = p.next_cursor;
  } while (cursor != 0);
  EXPECT_EQ(odd, 250u);
}

TEST_F(StoreTest, ReopenKeepsDataAndIndex) {
  for (int i = 0; i < 20; ++i) {
    std::string k = "r" + std::to_string(i);
    ASSERT_TRUE(store_->Put(k, MakeValue(k, 300 << 10)).ok());
  }
  ASSERT_TRUE(store_->Delete("r3").ok());
  Reopen();
  EXPECT_EQ(store_->GetStats().keys, 19u);
  for (int i = 0; i < 20; ++i) {
    std::string k = "r" + std::to_string(i);
    EXPECT_EQ(GetStr(k), i == 3 ? "<miss>" : MakeValue(k, 300 << 10)) << k;
  }
}

TEST_F(StoreTest, ClearRemovesEverything) {
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store_->Put("x" + std::to_string(i), "v").ok());
  ASSERT_TRUE(store_->Clear().ok());
  EXPECT_EQ(store_->GetStats().keys, 0u);
  EXPECT_EQ(GetStr("x1"), "<miss>");
  ASSERT_TRUE(store_->Put("after", "v").ok());
  Reopen();
  EXPECT_EQ(store_->GetStats().keys, 1u);
  EXPECT_EQ(GetStr("after"), "v");
}

TEST_F(StoreTest, SecondOpenOfSameDirIsBusy) {
  auto r = Store::Open(opts_, dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsBusy()) << r.status().ToString();
}

TEST_F(StoreTest, ClosedStoreReturnsErrors) {
  ASSERT_TRUE(store_->Close().ok());
  EXPECT_FALSE(store_->Put("k", "v").ok());
  EXPECT_FALSE(store_->Get("k").ok());
  char buf[8];
  auto many = store_->MultiGetInto({"k", "l"}, {{buf, sizeof buf}, {buf, sizeof buf}});
  ASSERT_EQ(many.size(), 2u);
  for (const auto& r : many)
    EXPECT_EQ(r.status().code(), Status::Code::kIOError) << r.status().ToString();
}

TEST(Glob, RedisRules) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo"));
  EXPECT_TRUE(GlobMatch("h*llo", "heeeello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_TRUE(GlobMatch("a\\*b", "a*b"));
  EXPECT_FALSE(GlobMatch("a\\*b", "axb"));
  EXPECT_TRUE(GlobMatch("MAX-*", "max-disk-bytes", true));
  EXPECT_FALSE(GlobMatch("MAX-*", "max-disk-bytes", false));
  EXPECT_TRUE(GlobMatch("*a*a*a*a*a*a*b", std::string(40, 'a') + "b"));
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*b", std::string(200, 'a')));
  // Bracket corners, each as Redis 7's stringmatchlen answers it.
  EXPECT_FALSE(GlobMatch("h[a-]llo", "hallo"));  // "a-]" is a range: the class is not closed
  EXPECT_TRUE(GlobMatch("h[a-]llo", "h^"));      // ... so it is ']'..'a', 'l', 'l', 'o'
  EXPECT_TRUE(GlobMatch("h[a-]llo", "ho"));
  EXPECT_TRUE(GlobMatch("h[-a]llo", "h-llo"));
  EXPECT_FALSE(GlobMatch("h[]a]llo", "h]llo"));  // "[]" is an empty class
  EXPECT_TRUE(GlobMatch("h[z-a]llo", "hello"));  // reversed ends
  EXPECT_FALSE(GlobMatch("[Z-a]", "b", true));   // ordered, then folded: 'z'..'a'
  EXPECT_FALSE(GlobMatch("[\\A]", "a", true));   // an escaped character is not folded
  EXPECT_TRUE(GlobMatch("[\\A]", "A", true));
  EXPECT_TRUE(GlobMatch("[A-B]", "a", true));
  // Range ends compare as signed chars, as in Redis: "a-\xff" is -1..'a'.
  EXPECT_TRUE(GlobMatch("[a-\xff]", "\x01"));
  EXPECT_TRUE(GlobMatch("[a-\xff]", "\xff"));
  EXPECT_FALSE(GlobMatch("[a-\xff]", "b"));
  EXPECT_FALSE(GlobMatch("[a-\xff]", "\x80"));
}

}  // namespace
}  // namespace larder

TEST(ResultTest, ValueOfAnErrorAbortsNamingTheError) {
  larder::Result<int> r = larder::Status::NotFound("no such key");
  EXPECT_FALSE(r.ok());
  EXPECT_DEATH(static_cast<void>(r.value()),
               "value\\(\\) called on an error: NotFound: no such key");
  EXPECT_DEATH(static_cast<void>(*r), "NotFound");
  larder::Result<int> bad =
      larder::Status::OK();  // an OK status carries no value: it becomes an error
  EXPECT_FALSE(bad.ok());
}
