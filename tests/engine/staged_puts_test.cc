// Values written ahead of their keys (Store::StagePuts): invisible until committed, freed if
// never committed, written again if their generation is dropped in between, and never taken
// for an empty generation by maintenance meanwhile.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;

constexpr size_t kMiB = 1 << 20;

class StagedPutsTest : public test::ReopenedStoreTest {
 protected:
  StagedPutsTest()
      : ReopenedStoreTest([] {
          Options o;
          o.wal = false;
          o.max_disk_bytes = 256 * kMiB;
          o.generation_bytes = 16 * kMiB;
          return o;
        }()) {}

  std::string GetString(const std::string& key) {
    Result<Value> got = store_->Get(key);
    return got.ok() ? std::string(got->view()) : "<" + got.status().ToString() + ">";
  }
};

TEST_F(StagedPutsTest, StagedValuesAreFoundOnlyOnceCommitted) {
  const std::string old_b = MakeValue("b-old", 2 * kMiB);
  ASSERT_TRUE(store_->Put("b", old_b).ok());
  const std::string a = MakeValue("a", 3 * kMiB), b = MakeValue("b", 5 * kMiB), c = "small";
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  ASSERT_TRUE(staged->Stage("a", a, {}).ok());
  ASSERT_TRUE(staged->StageOwned("b", std::string(b), {}).ok());  // written behind
  ASSERT_TRUE(staged->Stage("c", c, {}).ok());                    // inline in its index record
  EXPECT_EQ(staged->size(), 3u);
  EXPECT_FALSE(store_->Contains("a"));
  EXPECT_FALSE(store_->Contains("c"));
  EXPECT_EQ(GetString("b"), old_b);
  EXPECT_EQ(store_->GetStats().keys, 1u);

  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(staged->size(), 0u);
  EXPECT_EQ(GetString("a"), a);
  EXPECT_EQ(GetString("b"), b);
  EXPECT_EQ(GetString("c"), c);
  staged.reset();  // nothing left to free
  Reopen();
  EXPECT_EQ(GetString("a"), a);
  EXPECT_EQ(GetString("b"), b);
  EXPECT_EQ(GetString("c"), c);
  EXPECT_EQ(store_->GetStats().keys, 3u);
}

TEST_F(StagedPutsTest, ValuesNeverCommittedAreFreed) {
  ASSERT_TRUE(store_->Put("keep", MakeValue("keep", kMiB)).ok());
  const uint64_t before = store_->GetStats().value_file_bytes;
  const std::string v = MakeValue("gone", 8 * kMiB);
  {
    std::unique_ptr<StagedPuts> staged = store_->StagePuts();
    ASSERT_TRUE(staged->Stage("gone", v, {}).ok());
    EXPECT_GE(store_->GetStats().value_file_bytes, before + v.size());
  }
  EXPECT_FALSE(store_->Contains("gone"));
  EXPECT_LT(store_->GetStats().value_file_bytes, before + kMiB) << "the staged range was kept";
  Reopen();
  EXPECT_FALSE(store_->Contains("gone"));
  EXPECT_EQ(store_->GetStats().keys, 1u);
}

TEST_F(StagedPutsTest, BadInputStagesNothing) {
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  PutOptions nx;
  nx.mode = PutMode::kIfAbsent;
  EXPECT_TRUE(staged->Stage("k", "v", nx).IsInvalidArgument());
  PutOptions keep;
  keep.keep_ttl = true;
  EXPECT_TRUE(staged->Stage("k", "v", keep).IsInvalidArgument());
  EXPECT_TRUE(staged->Stage("", "v", {}).IsInvalidArgument());
  EXPECT_TRUE(
      staged->Stage(std::string(opts_.max_key_bytes + 1, 'k'), "v", {}).IsInvalidArgument());
  EXPECT_FALSE(staged->Stage("k", std::string(opts_.max_disk_bytes + 1, 'v'), {}).ok());
  EXPECT_EQ(staged->size(), 0u);
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(store_->GetStats().keys, 0u);
}

// A key staged twice gets its last value, as by Puts in order; the earlier value is freed,
// never indexed.
TEST_F(StagedPutsTest, AKeyStagedTwiceGetsItsLastValue) {
  const std::string first = MakeValue("first", 4 * kMiB), last = MakeValue("last", 2 * kMiB);
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  ASSERT_TRUE(staged->Stage("k", first, {}).ok());
  ASSERT_TRUE(staged->Stage("other", "x", {}).ok());
  ASSERT_TRUE(staged->StageOwned("k", std::string(last), {}).ok());
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(GetString("k"), last);
  EXPECT_EQ(GetString("other"), "x");
  EXPECT_EQ(store_->GetStats().keys, 2u);
  EXPECT_LT(store_->GetStats().budget_used_bytes, first.size() + last.size())
      << "the first value's space was kept";
  Reopen();
  EXPECT_EQ(GetString("k"), last);
}

TEST_F(StagedPutsTest, AnExpiryAlreadyPastRemovesTheKeyAtTheCommit) {
  ASSERT_TRUE(store_->Put("k", "old").ok());
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  PutOptions past;
  past.expire_at_ms = store_->NowMs() - 1000;
  ASSERT_TRUE(staged->Stage("k", "new", past).ok());
  EXPECT_EQ(GetString("k"), "old");
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_FALSE(store_->Contains("k"));
}

// Clear drops every generation, the one holding the staged value too: the commit writes the
// value again into the head, from the caller's memory, and indexes that copy.
// StageOwned's value is written behind (WAL off) from the buffer the batch keeps, and written
// again from it.
TEST_F(StagedPutsTest, AValueWhoseGenerationWasDroppedIsWrittenAgain) {
  const std::string v = MakeValue("v", 4 * kMiB), w = MakeValue("w", 2 * kMiB);
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  ASSERT_TRUE(staged->Stage("v", v, {}).ok());
  ASSERT_TRUE(staged->StageOwned("w", std::string(w), {}).ok());
  ASSERT_TRUE(store_->Clear().ok());
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(GetString("v"), v);
  EXPECT_EQ(GetString("w"), w);
  Reopen();
  EXPECT_EQ(GetString("v"), v);
  EXPECT_EQ(GetString("w"), w);
}

// Writes past the budget evict the generations the staged values went to, in place or whole:
// the commit still indexes each one's exact bytes (written again where its generation went).
TEST_F(StagedPutsTest, EvictionOfAStagedValuesGenerationLosesNoValue) {
  opts_.max_disk_bytes = 64 * kMiB;
  opts_.generation_bytes = 8 * kMiB;
  Reopen();
  const std::string v = MakeValue("v", 4 * kMiB), w = MakeValue("w", kMiB);
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  ASSERT_TRUE(staged->Stage("v", v, {}).ok());
  ASSERT_TRUE(staged->StageOwned("w", std::string(w), {}).ok());
  const uint64_t evicted = store_->GetStats().evicted_keys;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(store_->Put("p" + std::to_string(i), MakeValue("p", 4 * kMiB)).ok());
  }
  EXPECT_GT(store_->GetStats().evicted_keys, evicted);
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(GetString("v"), v);
  EXPECT_EQ(GetString("w"), w);
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
  Reopen();
  EXPECT_EQ(GetString("v"), v);
  EXPECT_EQ(GetString("w"), w);
}

// A value that closes the head leaves a generation holding nothing but it: maintenance, which
// drops generations without entries, keeps it while the value is staged.
TEST_F(StagedPutsTest, MaintenanceKeepsAGenerationHoldingOnlyStagedValues) {
  const std::string v = MakeValue("v", 16 * kMiB);
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  ASSERT_TRUE(staged->Stage("v", v, {}).ok());
  const uint64_t generations = store_->GetStats().generations;
  store_->Maintain();
  EXPECT_EQ(store_->GetStats().generations, generations) << "the staged value's generation went";
  const uint64_t written = store_->GetStats().value_file_bytes;
  ASSERT_TRUE(staged->Commit().ok());
  EXPECT_EQ(store_->GetStats().value_file_bytes, written) << "the value was written again";
  EXPECT_EQ(GetString("v"), v);
}

// The value bytes go at the stage, so a commit holding the caller's lock writes index records
// only; eviction to make room happens at the stage too.
TEST_F(StagedPutsTest, StagingEvictsToMakeRoomAndTheCommitOnlyIndexes) {
  for (int i = 0; i < 14; ++i) {
    ASSERT_TRUE(store_->Put("old" + std::to_string(i), MakeValue("o", 16 * kMiB)).ok());
  }
  std::unique_ptr<StagedPuts> staged = store_->StagePuts();
  const std::string v = MakeValue("new", 16 * kMiB);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(staged->Stage("new" + std::to_string(i), v, {}).ok());
  const Stats staged_stats = store_->GetStats();
  EXPECT_GT(staged_stats.evicted_keys, 0u) << "staging made no room";
  ASSERT_TRUE(staged->Commit().ok());
  const Stats after = store_->GetStats();
  EXPECT_EQ(after.evicted_keys, staged_stats.evicted_keys) << "the commit evicted";
  EXPECT_EQ(after.value_file_bytes, staged_stats.value_file_bytes) << "the commit wrote values";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(GetString("new" + std::to_string(i)), v);
  EXPECT_LE(after.budget_used_bytes, opts_.max_disk_bytes);
}

}  // namespace
}  // namespace larder
