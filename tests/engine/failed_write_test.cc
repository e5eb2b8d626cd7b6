// A background write that fails (WAL off: the value was acknowledged from memory). Its key is
// removed by the maintenance thread, never on the writer thread; until then the value is read
// whole from the write's buffer, never counted as a corruption; and nothing that waits for the
// writers (a sync, a punch of the range) waits for the failed write.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "blob_file.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;

constexpr size_t kMiB = 1 << 20;

class FailedWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opts_.wal = false;  // values written in the background
    opts_.max_disk_bytes = 256 << 20;
    opts_.maintenance_interval_ms = 0;  // no periodic passes: the removal runs on its own
    Reopen();
    // Every background write fails, with nothing written, while `fail_` is set.
    testing::SetSyncPoint("BlobFile::WritePending:Write", [this](void* err) {
      if (fail_) *static_cast<int*>(err) = ENOSPC;
    });
    // The removal waits for the test's word.
    testing::SetSyncPoint("StoreImpl::RemoveFailedWrites", [this] {
      if (!reached_.exchange(true)) removal_reached_.set_value();
      removal_allowed_.wait();
    });
  }
  void TearDown() override {
    AllowRemoval();
    store_.reset();
    testing::SetSyncPoint("BlobFile::WritePending:Write", nullptr);
    testing::SetSyncPoint("StoreImpl::RemoveFailedWrites", nullptr);
  }
  void Reopen() {
    store_.reset();
    auto r = Store::Open(opts_, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
  }
  // Stores `value` under `key` through the background writer, fails its write, and returns
  // once the maintenance thread is about to remove the key.
  void PutAndFailItsWrite(const std::string& key, const std::string& value) {
    fail_ = true;
    ASSERT_TRUE(store_->PutOwned(key, std::string(value), {}).ok());
    // The sync does not wait for the failed write (it would wait for ever: the key is
    // removed only after the test's word).
    ASSERT_TRUE(store_->Flush().ok());
    fail_ = false;
    ASSERT_EQ(removal_reached_future_.wait_for(std::chrono::seconds(30)),
              std::future_status::ready);
    EXPECT_EQ(store_->GetStats().failed_writes, 1u);
  }
  void AllowRemoval() {
    if (!allowed_) allow_removal_.set_value();
    allowed_ = true;
  }
  void ExpectValue(const std::string& key, const std::string& want) {
    Result<Value> got = store_->Get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
    EXPECT_TRUE(got->view() == want) << key << ": not the value stored";
  }
  // Waits (up to 30 s) until `key` is gone.
  void AwaitRemoved(const std::string& key) {
    for (int i = 0; i < 3000 && store_->Get(key).ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(store_->Get(key).status().IsNotFound()) << key << " was not removed";
  }

  test::TempDir dir_;
  Options opts_;
  std::unique_ptr<Store> store_;
  std::atomic<bool> fail_{false};
  std::atomic<bool> reached_{false};
  std::promise<void> removal_reached_;
  std::future<void> removal_reached_future_ = removal_reached_.get_future();
  std::promise<void> allow_removal_;
  std::shared_future<void> removal_allowed_ = allow_removal_.get_future().share();
  bool allowed_ = false;
};

TEST_F(FailedWriteTest, TheValueIsReadWholeFromMemoryUntilItsKeyIsRemoved) {
  const std::string v = MakeValue("k", kMiB);
  PutAndFailItsWrite("k", v);

  // Nothing of it is in the file, yet every read path gets it whole.
  ExpectValue("k", v);
  std::string into(kMiB, '\0');
  Result<uint64_t> n = store_->GetInto("k", into.data(), into.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(into == v);
  {
    auto reader = store_->OpenValue("k");  // a reader must not outlive the store
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::string streamed(kMiB, '\0');
    ASSERT_TRUE((*reader)->Read(streamed.data(), streamed.size()).ok());
    EXPECT_TRUE((*reader)->Finish().ok());
    EXPECT_TRUE(streamed == v);
  }

  // The writers are free meanwhile: the next value is written in place (a failed write makes
  // the next one answer its caller), the one after in the background again, and a sync waits
  // for that one.
  const std::string w = MakeValue("w", kMiB);
  ASSERT_TRUE(store_->PutOwned("w", std::string(w), {}).ok());
  ASSERT_TRUE(store_->PutOwned("x", MakeValue("x", kMiB), {}).ok());
  ASSERT_TRUE(store_->Flush().ok());

  AllowRemoval();
  AwaitRemoved("k");
  Stats st = store_->GetStats();
  EXPECT_EQ(st.corruptions, 0u) << "the unwritten range was read";
  EXPECT_EQ(st.failed_writes, 1u);
  ExpectValue("w", w);

  Reopen();
  EXPECT_TRUE(store_->Get("k").status().IsNotFound());
  ExpectValue("w", w);
  ExpectValue("x", MakeValue("x", kMiB));
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
}

// A replacement before the removal drops the failed write's range (the punch must not wait
// for a write that will never finish) and the removal then leaves the new version alone.
TEST_F(FailedWriteTest, AReplacementBeforeTheRemovalKeepsTheNewValue) {
  PutAndFailItsWrite("k", MakeValue("k", kMiB));
  const std::string v2 = MakeValue("k", kMiB, 2);
  ASSERT_TRUE(store_->Put("k", v2).ok());
  ExpectValue("k", v2);
  AllowRemoval();
  ASSERT_TRUE(store_->Close().ok());  // the maintenance thread finishes the removal first
  Reopen();
  ExpectValue("k", v2);
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
}

// A write that fails before its Put has written the index entry (it starts at once when the
// value is half the write buffer or more): the removal waits for the Put, which then queues it
// again, rather than forgetting the bytes of a version the index is about to hold.
TEST_F(FailedWriteTest, AWriteThatFailsBeforeItsPutIndexedItIsStillRemoved) {
  TearDown();  // this test holds the Put, not the removal
  opts_.write_buffer_bytes = 2 * kMiB;
  Reopen();
  std::promise<void> removal_done;
  std::atomic<bool> done_once{false};
  std::shared_future<void> removal_tried = removal_done.get_future().share();
  testing::ScopedSyncPoint failing("BlobFile::WritePending:Write",
                                   [](void* err) { *static_cast<int*>(err) = ENOSPC; });
  testing::ScopedSyncPoint tried("StoreImpl::RemoveFailedWrites:Done", [&] {
    if (!done_once.exchange(true)) removal_done.set_value();
  });
  {
    testing::ScopedSyncPoint holding("StoreImpl::PutImpl:BeforeCommit", [&] {
      ASSERT_EQ(removal_tried.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    });
    ASSERT_TRUE(store_->PutOwned("k", MakeValue("k", kMiB), {}).ok());
  }
  AwaitRemoved("k");
  Stats st = store_->GetStats();
  EXPECT_EQ(st.failed_writes, 1u);
  EXPECT_EQ(st.corruptions, 0u) << "the unwritten range was read";
}

// A removal whose index write fails is tried again (a second later without periodic passes),
// and until it succeeds the value is still read whole from its buffer.
TEST_F(FailedWriteTest, ARemovalThatFailedIsTriedAgain) {
  std::atomic<int> attempts{0};
  std::atomic<bool> refuse{true};
  std::promise<void> refused;
  testing::ScopedSyncPoint failing("StoreImpl::RemoveFailedWrites:Remove", [&](void* removed) {
    if (!refuse) return;
    *static_cast<Status*>(removed) = Status::IOError("refused by the test");
    if (attempts.fetch_add(1) == 0) refused.set_value();
  });
  const std::string v = MakeValue("k", kMiB);
  PutAndFailItsWrite("k", v);
  AllowRemoval();
  ASSERT_EQ(refused.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // Refused again at every try meanwhile: the value stays, whole.
  ExpectValue("k", v);
  for (int i = 0; i < 3000 && attempts < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(attempts.load(), 2) << "the removal was not tried again";
  ExpectValue("k", v);
  refuse = false;
  AwaitRemoved("k");
  Stats st = store_->GetStats();
  EXPECT_EQ(st.failed_writes, 1u);
  EXPECT_EQ(st.corruptions, 0u);
}

// Generations of 4 MiB, so that a few values close one and eviction can drop it.
class FailedWriteEvictionTest : public FailedWriteTest {
 protected:
  void SetUp() override {
    opts_.generation_bytes = 4 * kMiB;
    FailedWriteTest::SetUp();
  }
};

// Eviction keeps a reused entry in place: its generation is dropped and the entry moves to a
// later generation's segment, which borrows the file and leaves the bytes where they are. A
// failed write's removal that comes after must still know the version by its bytes' place and
// remove the key; taken for a replacement, the key would stay, naming bytes never written.
TEST_F(FailedWriteEvictionTest, AnEntryEvictionKeptInPlaceIsStillRemoved) {
  const std::string v = MakeValue("k", kMiB);
  PutAndFailItsWrite("k", v);
  Result<KeyInfo> before = store_->Info("k");
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  // Fill k's generation until a later one takes the writes, then reuse k.
  int filled = 0;
  for (; filled < 16; ++filled) {
    const std::string key = "fill" + std::to_string(filled);
    ASSERT_TRUE(store_->Put(key, MakeValue(key, kMiB)).ok());
    Result<KeyInfo> at = store_->Info(key);
    ASSERT_TRUE(at.ok());
    if (at->generation != before->generation) break;
  }
  ASSERT_LT(filled, 16) << "no second generation";
  ExpectValue("k", v);
  // Down to about what the later generation holds (a fill, and k once kept): k's generation
  // goes, and the fills written there with it. Not 0, which would close the later generation
  // and evict it too.
  ASSERT_TRUE(store_->EvictTo(5 * kMiB / 2).ok());
  EXPECT_FALSE(store_->Contains("fill0")) << "k's generation was not evicted";
  Result<KeyInfo> kept = store_->Info("k");
  ASSERT_TRUE(kept.ok()) << "eviction did not keep the reused entry: " << kept.status().ToString();
  ASSERT_NE(kept->generation, before->generation);
  ExpectValue("k", v);  // still from the write's buffer

  AllowRemoval();
  AwaitRemoved("k");
  EXPECT_EQ(store_->GetStats().corruptions, 0u) << "the unwritten range was read";
  Reopen();
  EXPECT_TRUE(store_->Get("k").status().IsNotFound());
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
}

// The file's side: a sync and a punch of the range do not wait for a failed write, and until
// then the range is read from the buffer.
TEST(BlobFileFailedWriteTest, ASyncAndAPunchDoNotWaitForIt) {
  test::TempDir dir;
  auto created = BlobFile::Create(dir.path() + "/f.lbv", format::BlobFileHeader(), true);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BlobFile& f = **created;
  testing::ScopedSyncPoint failing("BlobFile::WritePending:Write",
                                   [](void* err) { *static_cast<int*>(err) = EIO; });
  const std::string v = MakeValue("v", 64 << 10);
  auto w = PendingWrite::Adopt(std::make_shared<const std::string>(v));
  Status reported;
  w->on_error = [&](const Status& s) { reported = s; };
  uint64_t at = 0;
  f.AppendPending(w, &at);
  f.WritePending(at, *w);
  EXPECT_FALSE(reported.ok()) << "the failure was not reported";
  std::string got(v.size(), '\0');
  ASSERT_TRUE(f.Read(at, got.data(), got.size()).ok());
  EXPECT_TRUE(got == v) << "not read from the buffer";
  ASSERT_TRUE(f.Sync().ok());
  EXPECT_FALSE(f.NeedsSync());
  f.Punch(at, v.size());
  EXPECT_FALSE(f.IsPending(at, v.size())) << "the punch kept the failed write";
}

// WAL on with synced writes: a new blob file's sync that fails fails its Put, and leaves no
// file behind to take the name the next attempt creates (a file left would fail every later
// Put needing that partition with "File exists").
TEST(BlobFileCreateTest, AFailedSyncOfANewFileFailsOnlyItsPut) {
  test::TempDir dir;
  auto r = Store::Open(test::QuietOptions(/*synced_wal=*/true), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  {
    testing::ScopedSyncPoint failing("BlobFile::Create:Sync",
                                     [](void* err) { *static_cast<int*>(err) = EIO; });
    Status refused = s.Put("k", MakeValue("k", kMiB));
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.ToString().find("syncing"), std::string::npos) << refused.ToString();
  }
  for (int i = 0; i < 3; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(s.Put(k, MakeValue(k, kMiB)).ok()) << i;
    EXPECT_EQ(s.Get(k)->view(), MakeValue(k, kMiB));
  }
}

// Stores "k" (1 MiB), then flushes with the blob files' fdatasync failing (EIO): the flush fails.
void PutThenFailAFlush(Store& s) {
  ASSERT_TRUE(s.Put("k", MakeValue("k", kMiB)).ok());
  testing::ScopedSyncPoint failing("BlobFile::Sync:Result",
                                   [](void* err) { *static_cast<int*>(err) = EIO; });
  EXPECT_FALSE(s.Flush().ok());
}

// Linux reports a writeback error to one fdatasync; the next one succeeds though the pages
// are lost. A blob file whose sync failed keeps failing: with the WAL off, every later Flush
// (SAVE) says so, rather than the second one claiming the values durable.
TEST(BlobFileSyncTest, AFailedSyncKeepsFailing) {
  test::TempDir dir;
  auto r = Store::Open(test::QuietOptions(), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  ASSERT_NO_FATAL_FAILURE(PutThenFailAFlush(s));
  Status again = s.Flush();
  EXPECT_FALSE(again.ok()) << "the second sync claimed the lost pages durable";
  EXPECT_NE(again.ToString().find("an earlier sync failed"), std::string::npos) << again.ToString();
  EXPECT_EQ(s.Get("k")->view(), MakeValue("k", kMiB));  // in the page cache, still verified
}

// A file whose sync failed does not stop eviction (the drop of a generation flushes the index
// first, and must not wait for syncs that will never succeed): writes past the budget go on.
TEST(BlobFileSyncTest, EvictionGoesOnAfterAFailedSync) {
  test::TempDir dir;
  Options o = test::QuietOptions();
  o.max_disk_bytes = 24 * kMiB;
  o.generation_bytes = 4 * kMiB;
  o.memtable_bytes = 16 * kMiB;
  auto r = Store::Open(o, dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  ASSERT_NO_FATAL_FAILURE(PutThenFailAFlush(s));
  for (int i = 0; i < 60; ++i) {
    const std::string k = "after" + std::to_string(i);
    ASSERT_TRUE(s.Put(k, MakeValue(k, kMiB)).ok()) << i;
  }
  EXPECT_GT(s.GetStats().evicted_keys, 0u);
  EXPECT_EQ(s.Get("after59")->view(), MakeValue("after59", kMiB));
}

// With synced writes, the Put whose sync failed fails, and later Puts go to another blob file
// (synced for them) instead of the one that lost pages.
TEST(BlobFileSyncTest, WritesMoveToAnotherFileAfterAFailedSync) {
  test::TempDir dir;
  auto r = Store::Open(test::QuietOptions(/*synced_wal=*/true), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  ASSERT_TRUE(s.Put("a", MakeValue("a", kMiB)).ok());
  {
    testing::ScopedSyncPoint failing("BlobFile::Sync:Result",
                                     [](void* err) { *static_cast<int*>(err) = EIO; });
    EXPECT_FALSE(s.Put("b", MakeValue("b", kMiB)).ok());
  }
  ASSERT_TRUE(s.Put("c", MakeValue("c", kMiB)).ok());
  EXPECT_EQ(s.Get("c")->view(), MakeValue("c", kMiB));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() + "/values")) {
    files += e.path().extension() == ".lbv";
  }
  EXPECT_EQ(files, 2) << "c went into the file whose sync failed";
}

}  // namespace
}  // namespace larder
