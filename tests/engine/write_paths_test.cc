// The write path's answer to "would this Put wait for the disk?" (Store::PutInMemory), which
// the server uses to run a SET on its event loop, and a write that must not wait for the
// background writers' room (PutOptions::never_wait_for_writers).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "blob_file.h"
#include "format.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;

class WritePathsTest : public test::ReopenedStoreTest {
 protected:
  WritePathsTest()
      : ReopenedStoreTest([] {
          Options o;
          o.wal = false;
          o.max_disk_bytes = 64 << 20;
          o.generation_bytes = 16 << 20;
          return o;
        }()) {}

  test::CollidingKeyHashes colliding_;  // keys "c-*" share a hash
};

constexpr size_t kMiB = 1 << 20;

TEST_F(WritePathsTest, PutInMemoryTellsWhetherAWriteWouldWaitForTheDisk) {
  const Stats before = store_->GetStats();
  EXPECT_TRUE(store_->PutInMemory("a", kMiB)) << "a new key, room everywhere";
  EXPECT_TRUE(store_->PutInMemory("a", 100)) << "a small value goes to the index's memtable";
  EXPECT_FALSE(store_->PutInMemory("", kMiB)) << "an invalid key fails, not waits";
  EXPECT_FALSE(store_->PutInMemory("a", opts_.max_value_bytes + 1));
  EXPECT_FALSE(store_->PutInMemory("a", 16 * kMiB)) << "it would close the head generation";
  EXPECT_FALSE(store_->PutInMemory("a", 65 * kMiB)) << "over the budget: eviction";
  const Stats after = store_->GetStats();
  EXPECT_EQ(after.bytes_written, before.bytes_written) << "the question writes nothing";
  EXPECT_EQ(after.keys, 0u);

  // An overwrite reads the key's current record: in the memtable, it does not wait.
  ASSERT_TRUE(store_->Put("a", MakeValue("a", kMiB)).ok());
  EXPECT_TRUE(store_->PutInMemory("a", kMiB));
  // Two keys under one hash are told apart by reading their records.
  ASSERT_TRUE(store_->Put("c-1", MakeValue("c-1", kMiB)).ok());
  EXPECT_TRUE(store_->PutInMemory("c-2", kMiB)) << "alone under the hash, its record cached";
  ASSERT_TRUE(store_->Put("c-2", MakeValue("c-2", kMiB)).ok());
  EXPECT_FALSE(store_->PutInMemory("c-1", kMiB));
  EXPECT_FALSE(store_->PutInMemory("c-3", kMiB));

  // Flushed and reopened, a record lies in an SST file the block cache has not read (among
  // enough others that the table reader's own read-ahead does not hold it either).
  for (int i = 0; i < 40000; ++i) {
    const std::string k = "s-" + std::to_string(i);
    ASSERT_TRUE(store_->Put(k, MakeValue(k, 200)).ok());
  }
  ASSERT_TRUE(store_->Flush().ok());
  Reopen();
  EXPECT_FALSE(store_->PutInMemory("s-1", kMiB)) << "its record must come from the disk";
  EXPECT_TRUE(store_->PutInMemory("b", kMiB)) << "a new key reads no record";
  ASSERT_TRUE(store_->Put("s-1", MakeValue("s-1", kMiB)).ok());
  EXPECT_TRUE(store_->PutInMemory("s-1", kMiB)) << "its new record is in the memtable";
}

TEST_F(WritePathsTest, AWriteOverTheBudgetWouldEvictFirst) {
  opts_.generation_bytes = 1ull << 30;  // one generation: no write closes it
  Reopen();
  for (int i = 0; store_->GetStats().budget_used_bytes + 8 * kMiB <= opts_.max_disk_bytes; ++i) {
    const std::string k = "fill-" + std::to_string(i);
    ASSERT_TRUE(store_->Put(k, MakeValue(k, 4 * kMiB)).ok());
  }
  EXPECT_FALSE(store_->PutInMemory("d", 8 * kMiB));
  EXPECT_TRUE(store_->PutInMemory("d", kMiB / 4));
}

TEST_F(WritePathsTest, WithTheWalOnEveryPutWaitsForIt) {
  opts_.wal = true;
  Reopen();
  EXPECT_FALSE(store_->PutInMemory("a", kMiB));
  EXPECT_FALSE(store_->PutInMemory("a", 100));
}

// With the background writers' room taken and their write held, a PutOwned that may not wait
// for them is queued past their room and returns (its value read from its buffer meanwhile);
// one that may waits until the write goes on. Every value reads back whole.
TEST_F(WritePathsTest, NeverWaitForWritersQueuesPastTheirRoom) {
  opts_.write_buffer_bytes = 4 * kMiB;
  Reopen();
  std::promise<void> write_reached, write_allowed;
  std::shared_future<void> allowed = write_allowed.get_future().share();
  std::atomic<bool> reached{false};
  testing::ScopedSyncPoint hold("BlobFile::WritePending:Write", [&](void*) {
    if (!reached.exchange(true)) write_reached.set_value();
    allowed.wait();
  });
  ASSERT_TRUE(store_->PutOwned("queued", MakeValue("queued", 4 * kMiB), {}).ok());
  ASSERT_EQ(write_reached.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  ASSERT_FALSE(store_->PutInMemory("past-room", 4 * kMiB)) << "the writers have room";

  PutOptions no_wait;
  no_wait.never_wait_for_writers = true;
  auto put_past_room = std::async(std::launch::async, [&] {
    return store_->PutOwned("past-room", MakeValue("past-room", 4 * kMiB), no_wait);
  });
  const bool returned =
      put_past_room.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  if (returned) {
    Result<Value> got = store_->Get("past-room");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->view() == MakeValue("past-room", 4 * kMiB)) << "read from its buffer";
  }
  auto put_waiting = std::async(std::launch::async, [&] {
    return store_->PutOwned("waiting", MakeValue("waiting", 4 * kMiB), {});
  });
  const bool waited =
      put_waiting.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  write_allowed.set_value();
  EXPECT_TRUE(returned) << "waited for the writers' room";
  EXPECT_TRUE(waited) << "a plain PutOwned did not wait: the writers were not full";
  EXPECT_TRUE(put_past_room.get().ok());
  EXPECT_TRUE(put_waiting.get().ok());
  for (const char* k : {"queued", "past-room", "waiting"}) {
    Result<Value> got = store_->Get(k);
    ASSERT_TRUE(got.ok()) << k << ": " << got.status().ToString();
    EXPECT_TRUE(got->view() == MakeValue(k, 4 * kMiB)) << k;
  }
}

// A write that closes the head does not create the next generation's column family (whose
// creation syncs the MANIFEST): the maintenance thread created spares ahead, and tops them up
// after a rotation. A close drops the spares, so the next open finds no extra generation.
TEST_F(WritePathsTest, WritesThatCloseTheHeadTakeGenerationsCreatedAhead) {
  opts_.max_disk_bytes = 1ull << 30;
  opts_.generation_bytes = 16 * kMiB;  // eight spares (256 MiB of writes, at most 8)
  std::atomic<int> prepared{0};
  testing::ScopedSyncPoint ready("StoreImpl::PrepareSpareGenerations:Done", [&] { ++prepared; });
  Reopen();
  auto await_prepared = [&](int n) {
    for (int i = 0; i < 3000 && prepared.load() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return prepared.load() >= n;
  };
  ASSERT_TRUE(await_prepared(1)) << "no spares after the open";
  const std::thread::id writer = std::this_thread::get_id();
  std::atomic<int> created_by_writer{0};
  testing::ScopedSyncPoint create("Generations::CreateNextLocked", [&] {
    if (std::this_thread::get_id() == writer) ++created_by_writer;
  });
  const uint64_t before = store_->GetStats().generations;
  // Three values, each closing the head it lands in, one after the other: the spares serve
  // all three, whatever the maintenance thread does meanwhile.
  for (const char* k : {"a", "b", "c"}) {
    ASSERT_TRUE(store_->PutOwned(k, MakeValue(k, 16 * kMiB), {}).ok());
  }
  EXPECT_EQ(store_->GetStats().generations, before + 3);
  EXPECT_EQ(created_by_writer.load(), 0) << "a write created the next generation itself";
  ASSERT_TRUE(await_prepared(2)) << "no top-up after the rotations";
  const uint64_t live = store_->GetStats().generations;
  Reopen();  // the open adds a fresh head, and nothing else
  EXPECT_EQ(store_->GetStats().generations, live + 1);
  for (const char* k : {"a", "b", "c"}) {
    Result<Value> got = store_->Get(k);
    ASSERT_TRUE(got.ok()) << k << ": " << got.status().ToString();
    EXPECT_TRUE(got->view() == MakeValue(k, 16 * kMiB)) << k;
  }
}

// A sync covers what was appended before it began: a value appended while it waited for the
// pending writes below its target may still be waiting for its own write, so it is not
// counted synced (a later Sync, e.g. SAVE's, must still wait for it and sync it).
TEST(BlobFileSyncTest, AValueAppendedWhileASyncWaitsIsNotCountedSynced) {
  test::TempDir dir;
  format::BlobFileHeader header;
  auto created = BlobFile::Create(dir.path() + "/f.lbv", header, /*durable=*/true);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BlobFile& f = **created;
  uint64_t first = 0, second = 0;
  auto written = PendingWrite::Adopt(std::make_shared<const std::string>(64 << 10, 'a'));
  f.AppendPending(written, &first);
  f.WritePending(first, *written);
  auto waiting = PendingWrite::Adopt(std::make_shared<const std::string>(64 << 10, 'b'));
  {
    testing::ScopedSyncPoint appending("BlobFile::Sync:AfterWait",
                                       [&] { f.AppendPending(waiting, &second); });
    ASSERT_TRUE(f.Sync().ok());
  }
  EXPECT_TRUE(f.NeedsSync()) << "the value appended during the sync counted as synced";
  EXPECT_TRUE(f.IsPending(second, 64 << 10));
  f.WritePending(second, *waiting);
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_FALSE(f.NeedsSync());
}

// Compact rewrites the records whose reuse counts changed. A Delete of such a key between the
// walk that found it and the rewrite must stay deleted, and an EXPIRE set then must stay set
// (the rewrite happens under the key's stripe, from the record as it is then).
TEST(PersistDirtyTest, AWriteDuringCompactIsNotUndone) {
  test::TempDir dir;
  const Options o = test::QuietOptions();
  {
    auto r = Store::Open(o, dir.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    for (const char* k : {"deleted", "expiring", "small"}) {
      ASSERT_TRUE(s.Put(k, MakeValue(k, std::string_view(k) == "small" ? 100 : 64 << 10)).ok());
      ASSERT_TRUE(s.Get(k).ok());  // a hit: its reuse count is dirty
    }
    const int64_t expiry = s.NowMs() + 3'600'000;
    testing::ScopedSyncPoint writing("StoreImpl::PersistDirty:Walked", [&] {
      (void)s.Delete("deleted");
      (void)s.SetExpiry("expiring", expiry);
    });
    ASSERT_TRUE(s.Compact().ok());
    EXPECT_FALSE(s.Get("deleted").ok());
    EXPECT_GT(s.Ttl("expiring"), 3'000'000);
    ASSERT_TRUE(s.Close().ok());
  }
  auto r = Store::Open(o, dir.path());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->Get("deleted").status().IsNotFound()) << "the Delete was undone";
  EXPECT_GT((*r)->Ttl("expiring"), 3'000'000) << "the EXPIRE was undone";
  EXPECT_EQ((*r)->Get("small")->view(), MakeValue("small", 100));
}

TEST(PersistDirtyTest, AHitDuringCompactIsPersistedByIt) {
  test::TempDir dir;
  const Options o = test::QuietOptions();
  {
    auto r = Store::Open(o, dir.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    ASSERT_TRUE(s.Put("k", MakeValue("k", 64 << 10)).ok());
    ASSERT_TRUE(s.Get("k").ok());  // reuse 1, dirty
    testing::ScopedSyncPoint hit("StoreImpl::PersistDirty:Walked", [&] { (void)s.Get("k"); });
    ASSERT_TRUE(s.Compact().ok());
    ASSERT_EQ(s.Info("k")->reuse_count, 2u);
    ASSERT_TRUE(s.Close().ok());
  }
  auto r = Store::Open(o, dir.path());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Info("k")->reuse_count, 2u) << "the hit during the walk was not persisted";
}

}  // namespace
}  // namespace larder
