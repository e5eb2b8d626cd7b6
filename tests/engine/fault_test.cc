// RocksDB refusing writes (fault injection through its FileSystem): a Put gives the space of
// its value back; DEL, EXPIRE and eviction report the error and change nothing, so that no key
// comes back after a restart that the store said was gone, and none goes that it said was
// kept; a damaged value whose removal is refused is logged as not removed. And the index's info log
// on a disk that refuses its writes.
#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>

#include "blob_file.h"
#include "info_log.h"
#include "larder/events.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"
#include "testing.h"

namespace larder {
namespace {

using test::MakeValue;

// Every write to a RocksDB file (WAL, MANIFEST, SST) fails while `failing` is set, as on a
// disk that went read-only (or full, with `no_space`), the WAL's files too unless `spare_wal`;
// with `syncs_only`, only their syncs fail (the bytes reach the page cache, not the disk); with
// `appends_left` >= 0, `failing` is set once that many more appends went through.
class FailingFs : public rocksdb::FileSystemWrapper {
 public:
  explicit FailingFs(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)) {}
  const char* Name() const override { return "FailingFs"; }
  std::atomic<bool> failing{false};
  std::atomic<int> appends_left{-1};
  std::atomic<bool> no_space{false};
  std::atomic<bool> spare_wal{false};          // `failing` fails the index's other files only
  std::atomic<bool> syncs_only{false};         // `failing` fails syncs only
  std::atomic<bool> creations_succeed{false};  // `failing` spares the creation of files
  std::atomic<int> append_delay_ms{0};  // each append (but a spared WAL's) waits that long first

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    const bool wal = f.ends_with(".log");
    // A full disk still creates files (its inodes are not full); their writes fail.
    if (Fails(wal) && !no_space && !syncs_only && !creations_succeed) {
      return rocksdb::IOStatus::IOError("injected: cannot create " + f);
    }
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, dbg);
    if (s.ok()) *r = std::make_unique<File>(std::move(*r), this, wal);
    return s;
  }

 private:
  bool Fails(bool wal) const { return failing && !(wal && spare_wal); }
  bool AppendFails(bool wal) {
    if (const int ms = append_delay_ms.load(); ms > 0 && !(wal && spare_wal)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    if (!failing && appends_left.load() >= 0 && appends_left.fetch_sub(1) <= 0) failing = true;
    return Fails(wal) && !syncs_only;
  }
  rocksdb::IOStatus Refused() const {
    return no_space ? rocksdb::IOStatus::NoSpace("injected: disk full")
                    : rocksdb::IOStatus::IOError("injected write failure");
  }

  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> t, FailingFs* fs, bool wal)
        : FSWritableFileOwnerWrapper(std::move(t)), fs_(fs), wal_(wal) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& d, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->AppendFails(wal_)) return fs_->Refused();
      return FSWritableFileOwnerWrapper::Append(d, o, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& d, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& v,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_->AppendFails(wal_)) return fs_->Refused();
      return FSWritableFileOwnerWrapper::Append(d, o, v, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (fs_->Fails(wal_)) {  // a full disk fails a sync too (ENOSPC at writeback)
        return fs_->no_space ? fs_->Refused() : rocksdb::IOStatus::IOError("injected sync failure");
      }
      return FSWritableFileOwnerWrapper::Sync(o, dbg);
    }

   private:
    FailingFs* fs_;
    const bool wal_;
  };
};

// Runs `step` on a thread of its own; a failure if it has not returned within a minute, and the
// process ends there (the thread cannot be stopped), rather than the test hanging.
void ExpectReturns(const char* what, const std::function<void()>& step) {
  auto done = std::async(std::launch::async, step);
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << what << " never returned";
    std::fflush(stdout);
    std::_Exit(1);
  }
}

// A store on a FailingFs: the WAL on, no maintenance thread (the tests call Maintain), a 1 GiB
// budget.
class Faults : public ::testing::Test {
 protected:
  Faults() {
    o_.wal = true;
    o_.maintenance_interval_ms = 0;
    o_.max_disk_bytes = 1ull << 30;
  }
  Result<std::unique_ptr<Store>> Open() {
    return testing::OpenWithEnv(o_, dir_.path(), env_.get());
  }

  test::TempDir dir_;
  std::shared_ptr<FailingFs> fs_ = std::make_shared<FailingFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
  Options o_;
};

TEST_F(Faults, RefusedIndexWritesChangeNothingAndNothingComesBack) {
  o_.wal = true;  // a DEL or an EXPIRE reaches the disk when it is acknowledged
  o_.generation_bytes = 4 << 20;
  {
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    for (int i = 0; i < 12; ++i) {
      std::string k = "k" + std::to_string(i);
      ASSERT_TRUE(s.Put(k, MakeValue(k, 1 << 20)).ok());
    }
    ASSERT_TRUE(s.Delete("k0").ok());  // before the fault: gone for good
    fs_->failing = true;
    Status del = s.Delete("k1");
    EXPECT_FALSE(del.ok()) << "DEL answered OK though its delete never reached the disk";
    EXPECT_TRUE(s.Contains("k1"));
    Status exp = s.SetExpiry("k2", 1);  // in the past: deletes
    EXPECT_FALSE(exp.ok());
    Status ttl = s.SetExpiry("k3", SystemClock()->NowMs() + 60000);
    EXPECT_FALSE(ttl.ok());
    EXPECT_EQ(s.Ttl("k3"), kTtlNoExpiry);
    Status ev = s.EvictTo(0);
    EXPECT_FALSE(ev.ok()) << "eviction answered OK though its drop never reached the disk";
    for (int i = 1; i < 12; ++i) EXPECT_TRUE(s.Contains("k" + std::to_string(i))) << i;
    fs_->failing = false;
    s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
  }
  auto r = Store::Open(o_, dir_.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  EXPECT_FALSE(s.Contains("k0")) << "a key deleted before the fault came back";
  for (int i = 1; i < 12; ++i) {
    std::string k = "k" + std::to_string(i);
    auto v = s.Get(k);
    ASSERT_TRUE(v.ok()) << k << ": " << v.status().ToString();
    EXPECT_EQ(v->view(), MakeValue(k, 1 << 20)) << k;
  }
  EXPECT_EQ(s.Ttl("k3"), kTtlNoExpiry);
  EXPECT_EQ(s.GetStats().corruptions, 0u);
}

TEST_F(Faults, AValueWhoseIndexWriteIsRefusedGivesItsSpaceBack) {
  o_.wal = true;  // the record's write fails with the Put
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  if (!BlobFile::CanPunchHoles(dir_.path() + "/values")) GTEST_SKIP() << "no hole punching here";
  Store& s = **r;
  ASSERT_TRUE(s.Put("kept", MakeValue("kept", 1 << 20)).ok());
  const uint64_t before = s.GetStats().budget_used_bytes;
  fs_->failing = true;
  for (int i = 0; i < 8; ++i) {
    const std::string k = "refused" + std::to_string(i);
    EXPECT_FALSE(s.Put(k, MakeValue(k, 4 << 20)).ok()) << k;
  }
  // 32 MiB of values appended to the blob file and never indexed: freed at once, as a replaced
  // version is (before, they stayed counted until their generation went).
  EXPECT_LT(s.GetStats().budget_used_bytes, before + (4 << 20))
      << "before " << before << ", after " << s.GetStats().budget_used_bytes;
  fs_->failing = false;
  EXPECT_EQ(s.Get("kept")->view(), MakeValue("kept", 1 << 20));
  s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
}

// A StagedPuts commit writes its keys' records in one index write: all of them, or none when
// that write is refused, and a reopen finds the same.
class StagedCommitFaults : public Faults {
 protected:
  void SetUp() override {
    o_.wal = true;  // each index write is a WAL append, made when the commit returns
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
    for (const char* k : kKeys) ASSERT_TRUE(store_->Put(k, MakeValue(k, 1 << 20)).ok());
    staged_ = store_->StagePuts();
    for (const char* k : kKeys) {
      ASSERT_TRUE(staged_->Stage(k, MakeValue(std::string("new ") + k, 2 << 20), {}).ok());
    }
  }

  // How many of the keys have their staged value; the others must have their first one.
  int NewValues(Store& s) {
    int found = 0;
    for (const char* k : kKeys) {
      Result<Value> v = s.Get(k);
      if (!v.ok()) {
        ADD_FAILURE() << k << ": " << v.status().ToString();
      } else if (v->view() == MakeValue(std::string("new ") + k, 2 << 20)) {
        found++;
      } else {
        EXPECT_EQ(v->view(), MakeValue(k, 1 << 20)) << k;
      }
    }
    return found;
  }

  int NewValuesAfterReopen() {
    staged_.reset();
    store_->Close().PermitUncheckedError();  // RocksDB may keep reporting an earlier failure
    store_.reset();
    auto r = Store::Open(o_, dir_.path());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? NewValues(**r) : -1;
  }

  static constexpr const char* kKeys[] = {"a", "b", "c", "d"};
  std::unique_ptr<Store> store_;
  std::unique_ptr<StagedPuts> staged_;
};

TEST_F(StagedCommitFaults, ARefusedCommitChangesNoKey) {
  const uint64_t staged_bytes = store_->GetStats().budget_used_bytes;
  fs_->failing = true;
  EXPECT_FALSE(staged_->Commit().ok());
  EXPECT_EQ(staged_->size(), 0u);
  fs_->failing = false;
  EXPECT_EQ(NewValues(*store_), 0);
  if (BlobFile::CanPunchHoles(dir_.path() + "/values")) {
    EXPECT_LE(store_->GetStats().budget_used_bytes + 8 * (1 << 20), staged_bytes)
        << "the staged values' space was kept";
  }
  EXPECT_EQ(NewValuesAfterReopen(), 0);
}

// One WAL append goes through, then the disk refuses: a commit made of one index write per key
// would set the first key and fail.
TEST_F(StagedCommitFaults, ACommitIsOneIndexWrite) {
  fs_->appends_left = 1;
  Status s = staged_->Commit();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(NewValues(*store_), 4);
  EXPECT_EQ(NewValuesAfterReopen(), 4);
}

// A store holding "before" on a disk that then fills (every append and sync answers NoSpace).
class FullDiskFaults : public Faults {
 protected:
  void OpenThenFillTheDisk() {
    ASSERT_NO_FATAL_FAILURE(OpenHoldingBefore(/*flush=*/false));
    fs_->no_space = true;
    fs_->failing = true;
  }

  // Opens the store (store_) and writes "before" into it, flushed if `flush`.
  void OpenHoldingBefore(bool flush) {
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
    ASSERT_TRUE(store_->Put("before", MakeValue("before", 1 << 20)).ok());
    if (flush) {
      ASSERT_TRUE(store_->Flush().ok());
    }
  }

  // With the disk taking writes again, a maintenance pass leaves writes stopped, refused with a
  // message that says a restart brings them back; reads go on.
  void ExpectStoppedUntilARestart() {
    store_->Maintain();
    EXPECT_EQ(store_->GetStats().index_writes_stopped, 1u);
    Status put = store_->Put("still refused", MakeValue("s", 1 << 20));
    EXPECT_NE(put.ToString().find("a restart brings them back"), std::string::npos)
        << put.ToString();
    EXPECT_TRUE(store_->Get("before").ok());
  }

  // Closes the store and opens it again (on the plain filesystem): `present` are there, `absent`
  // are not.
  void ExpectAfterReopen(std::initializer_list<const char*> present,
                         std::initializer_list<const char*> absent) {
    store_->Close().PermitUncheckedError();
    store_.reset();
    auto reopened = Store::Open(o_, dir_.path());
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    for (const char* k : present) EXPECT_TRUE((*reopened)->Contains(k)) << k;
    for (const char* k : absent) EXPECT_FALSE((*reopened)->Contains(k)) << k;
  }

  std::unique_ptr<Store> store_;
};

// A compaction that meets a full disk: RocksDB 7.8 takes it as a soft error that stops no flush,
// each flush then fails at installing its result without giving its memtables back, and
// DB::Resume() leaves the error in place. Writes stay refused until a restart, reads go on,
// and nothing waits for ever (the close included).
TEST_F(FullDiskFaults, AFullDiskMetByACompactionStopsWritesUntilARestart) {
  o_.wal = false;  // no WAL anchor: nothing is left in the memtables to flush first
  // The spare generations the open has the maintenance thread create are there before the disk
  // fills: a creation meeting it fails a MANIFEST write, which a resume clears.
  std::atomic<bool> spares{false};
  testing::ScopedSyncPoint ready("StoreImpl::PrepareSpareGenerations:Done", [&] { spares = true; });
  ASSERT_NO_FATAL_FAILURE(OpenHoldingBefore(/*flush=*/false));
  for (int i = 0; i < 3000 && !spares; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(spares) << "no spare generations after the open";
  // Two tables of keys spread over the same range: the compaction writes a new table (not a
  // mere move, which writes the MANIFEST alone: a MANIFEST error, which a resume clears).
  for (const char* table : {"a", "b"}) {
    for (int i = 0; i < 20; ++i) {
      const std::string k = std::string(table) + std::to_string(i);
      ASSERT_TRUE(store_->Put(k, MakeValue(k, 4 << 10)).ok());
    }
    ASSERT_TRUE(store_->Flush().ok());
  }
  fs_->no_space = true;
  fs_->failing = true;
  EXPECT_FALSE(store_->Compact().ok());
  EXPECT_EQ(store_->GetStats().index_writes_stopped, 1u);
  fs_->failing = false;
  ASSERT_NO_FATAL_FAILURE(ExpectStoppedUntilARestart());
  ExpectReturns("a flush", [&] { EXPECT_FALSE(store_->Flush().ok()); });
  ExpectReturns("the close", [&] { store_->Close().PermitUncheckedError(); });
  ExpectAfterReopen({"before", "a0", "b19"}, {"still refused"});
}

// RocksDB stops taking index writes when a flush meets a full disk. Its own recovery (polling
// the free space every 5 s, and in 7.8 able to hang for good) is off: the next Flush or
// maintenance pass after the disk has room again resumes the index at once, and later
// Flushes still wait until the index is on disk.
TEST_F(FullDiskFaults, IndexWritesResumeOnceTheDiskHasRoom) {
  o_.wal = false;  // the records reach the disk by flushes
  OpenThenFillTheDisk();
  Store& s = *store_;
  EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
  EXPECT_TRUE(s.Flush().IsNoSpace());
  EXPECT_TRUE(s.Put("refused", MakeValue("refused", 1 << 20)).IsNoSpace());
  EXPECT_EQ(s.GetStats().index_writes_stopped, 1u);
  fs_->failing = false;  // space returns
  s.Maintain();
  EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
  Status put = s.Put("after maintenance", MakeValue("m", 1 << 20));
  EXPECT_TRUE(put.ok()) << put.ToString();
  // Again, ended by a Flush this time.
  fs_->failing = true;
  EXPECT_FALSE(s.Flush().ok());
  fs_->failing = false;
  Status flushed = s.Flush();
  EXPECT_TRUE(flushed.ok()) << flushed.ToString();
  ASSERT_TRUE(s.Put("after flush", MakeValue("f", 1 << 20)).ok());
  // The Flush that follows a resume waits for the records to be on disk (none is left in a
  // memtable), slow as the disk may be, so that a crash right after keeps them.
  fs_->append_delay_ms = 100;
  ASSERT_TRUE(s.Flush().ok());
  EXPECT_EQ(testing::UnflushedMemtables(s), 0u) << "Flush returned before the records were on disk";
  fs_->append_delay_ms = 0;
  ExpectAfterReopen({"before", "after maintenance", "after flush"}, {"refused"});
}

// How the WAL fails in WalErrorFaults.
enum class WalFault { kFullDisk, kAppendEio, kSyncEio };

// A failed WAL append or sync, on a full disk (NoSpace) or a device failing for a while (EIO),
// refuses writes until the disk takes them again: the first maintenance pass after it does
// resumes them on a new WAL file, whether the memtables held writes or a flush had just emptied
// them (a resume on the failed WAL file would abort the process at the next write: RocksWrite's
// anchor), with every acknowledged write kept and none of the refused. Parameters: the fault,
// and whether a flush came just before.
class WalErrorFaults : public FullDiskFaults,
                       public ::testing::WithParamInterface<std::tuple<WalFault, bool>> {};

std::string WalErrorCaseName(const ::testing::TestParamInfo<std::tuple<WalFault, bool>>& info) {
  const WalFault fault = std::get<0>(info.param);
  return std::string(fault == WalFault::kFullDisk    ? "FullDisk"
                     : fault == WalFault::kAppendEio ? "AppendEio"
                                                     : "SyncEio") +
         (std::get<1>(info.param) ? "AfterAFlush" : "AfterWrites");
}

TEST_P(WalErrorFaults, WritesResumeOnceTheDiskTakesThemAgain) {
  const auto [fault, flushed] = GetParam();
  const bool no_space = fault == WalFault::kFullDisk;
  o_.sync_writes = fault == WalFault::kSyncEio;  // each write syncs the WAL
  fs_->syncs_only = fault == WalFault::kSyncEio;
  ASSERT_NO_FATAL_FAILURE(OpenHoldingBefore(flushed));
  Store& s = *store_;
  fs_->no_space = no_space;
  fs_->failing = true;
  EXPECT_FALSE(s.Put("refused", MakeValue("refused", 1 << 20)).ok());
  Status again = s.Put("refused again", MakeValue("refused again", 1 << 20));
  EXPECT_FALSE(again.ok());
  if (!no_space) {
    EXPECT_NE(again.ToString().find("until the disk takes them again"), std::string::npos)
        << again.ToString();
  }
  EXPECT_FALSE(s.Delete("before").ok());
  EXPECT_FALSE(s.Flush().ok());
  s.Maintain();  // the disk still refuses: still stopped
  EXPECT_EQ(s.GetStats().index_writes_stopped, 1u);
  auto v = s.Get("before");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->view(), MakeValue("before", 1 << 20));
  fs_->failing = false;  // the disk takes writes again
  s.Maintain();
  EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
  Status put = s.Put("after", MakeValue("after", 1 << 20));
  EXPECT_TRUE(put.ok()) << put.ToString();
  Status flush = s.Flush();
  EXPECT_TRUE(flush.ok()) << flush.ToString();
  ExpectAfterReopen({"before", "after"}, {"refused", "refused again"});
}

INSTANTIATE_TEST_SUITE_P(FaultAfterWritesOrAFlush, WalErrorFaults,
                         ::testing::Combine(::testing::Values(WalFault::kFullDisk,
                                                              WalFault::kAppendEio,
                                                              WalFault::kSyncEio),
                                            ::testing::Bool()),
                         WalErrorCaseName);

// The case the anchor leaves: a failed append by the first write group after a memtable switch
// (here: the anchor skipped after a flush). The store does not resume on the failed file:
// writes stay refused, saying a restart brings them back, reads go on, and a reopen brings
// writes back with what was acknowledged before.
TEST_F(FullDiskFaults, AFailedWalWithNothingToFlushStopsWritesUntilARestart) {
  ASSERT_NO_FATAL_FAILURE(OpenHoldingBefore(/*flush=*/true));
  Store& s = *store_;
  {
    testing::ScopedSyncPoint no_anchor("StoreImpl::RocksWrite", [](void* steps) {
      static_cast<testing::RocksWriteSteps*>(steps)->anchor = false;
    });
    fs_->failing = true;
    EXPECT_FALSE(s.Put("refused", MakeValue("refused", 1 << 20)).ok());
  }
  fs_->failing = false;
  ExpectStoppedUntilARestart();
  ExpectAfterReopen({"before"}, {"refused", "still refused"});
  auto reopened = Store::Open(o_, dir_.path());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_TRUE((*reopened)->Put("after", MakeValue("after", 1 << 20)).ok());
}

// A flush's error is a soft one in RocksDB 7.8 (writes go on), whose resume then retries that
// flush alone, with no memtable switch: after a WAL error too (a write already past the store's
// check when the flush failed) it would go on with the failed WAL file and abort at the next
// write. The store does not resume then: writes stay refused until a restart, which keeps
// every acknowledged write.
TEST_F(FullDiskFaults, AWalErrorAfterAFailedFlushStopsWritesUntilARestart) {
  fs_->spare_wal = true;
  ASSERT_NO_FATAL_FAILURE(OpenHoldingBefore(/*flush=*/true));
  Store& s = *store_;
  fs_->failing = true;  // the index's SST files fail, its WAL not yet
  ASSERT_TRUE(s.Put("in memory", MakeValue("in memory", 1 << 20)).ok());
  EXPECT_FALSE(s.Flush().ok());
  Status refused = s.Put("refused", MakeValue("refused", 1 << 20));
  EXPECT_NE(refused.ToString().find("until the disk takes them again"), std::string::npos)
      << refused.ToString();
  {
    testing::ScopedSyncPoint past_the_check("StoreImpl::RocksWrite", [](void* steps) {
      static_cast<testing::RocksWriteSteps*>(steps)->refuse = false;
    });
    fs_->spare_wal = false;  // the WAL fails too
    EXPECT_FALSE(s.Put("raced", MakeValue("raced", 1 << 20)).ok());
  }
  fs_->failing = false;
  ExpectStoppedUntilARestart();
  EXPECT_TRUE(s.Get("in memory").ok());
  ExpectAfterReopen({"before", "in memory"}, {"refused", "raced", "still refused"});
}

// An I/O error that is not a full disk (a device failing for a while) in a flush or a MANIFEST
// write stops the index's writes until the disk takes them again: refused meanwhile with a
// message that says so, reads go on, the stats say so, and the first maintenance pass after the
// device answers resumes them, with every acknowledged write kept. RocksDB would still take
// them (a flush's error is a soft one with atomic flush): the store refuses them.
class DiskErrorFaults : public Faults, public ::testing::WithParamInterface<bool> {};

TEST_P(DiskErrorFaults, FlushErrorsStopWritesUntilTheDiskTakesThemAgain) {
  o_.wal = GetParam();
  fs_->spare_wal = true;
  const std::string kWant = "until the disk takes them again";
  {
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    ASSERT_TRUE(s.Put("before", MakeValue("before", 1 << 20)).ok());
    ASSERT_TRUE(s.Flush().ok());
    EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
    fs_->failing = true;
    ASSERT_TRUE(s.Put("in memory", MakeValue("in memory", 1 << 20)).ok());
    EXPECT_FALSE(s.Flush().ok());
    EXPECT_EQ(s.GetStats().index_writes_stopped, 1u);
    Status refused = s.Put("still refused", MakeValue("s", 1 << 20));
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.ToString().find(kWant), std::string::npos) << refused.ToString();
    s.Maintain();  // the device still fails: still stopped
    EXPECT_EQ(s.GetStats().index_writes_stopped, 1u);
    auto v = s.Get("before");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->view(), MakeValue("before", 1 << 20));
    fs_->failing = false;  // the device answers again
    s.Maintain();
    EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
    Status put = s.Put("after", MakeValue("after", 1 << 20));
    EXPECT_TRUE(put.ok()) << put.ToString();
    ASSERT_TRUE(s.Flush().ok());
  }
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const char* k : {"before", "in memory", "after"}) EXPECT_TRUE((*r)->Contains(k)) << k;
  EXPECT_FALSE((*r)->Contains("still refused"));
}

// Writers that filled the index's memory while a flush was failing wait in RocksDB (its write
// buffer manager's stall) for memory only a flush gives back: the error ends their wait, and
// the resume's own flush does not queue behind them. The resume comes at once, while the failed
// flush still holds its thread (RocksDB's backoff): it waits for that, or a flush request queued
// before the error would run inside it and keep its memtables for good (every later resume,
// and the close, would wait for them).
TEST_P(DiskErrorFaults, WritersStalledOnMemoryGoOnWhenAFlushFails) {
  o_.wal = GetParam();
  o_.memtable_bytes = kMinMemtableBytes;
  fs_->spare_wal = true;
  fs_->creations_succeed = true;
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  fs_->append_delay_ms = 300;  // a slow disk: the memtables fill before the flush fails
  fs_->failing = true;
  std::atomic<int> refused{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 4000; ++i) {
        const std::string k = "w" + std::to_string(t) + "-" + std::to_string(i);
        if (!s.Put(k, MakeValue(k, 8 << 10)).ok()) {
          refused++;
          return;
        }
      }
    });
  }
  ExpectReturns("a writer", [&] {
    for (std::thread& w : writers) w.join();
  });
  EXPECT_EQ(refused.load(), 4) << "each writer meets the disk error";
  EXPECT_EQ(s.GetStats().index_writes_stopped, 1u);
  fs_->failing = false;
  fs_->append_delay_ms = 0;
  Status resumed;  // a flush resumes first; on a loaded machine the backoff may outlast a pass
  ExpectReturns("the resume", [&] {
    for (int pass = 0; pass < 5; ++pass) {
      resumed = s.Flush();
      if (resumed.ToString().find("has not ended") == std::string::npos) return;
    }
  });
  EXPECT_TRUE(resumed.ok()) << resumed.ToString();
  EXPECT_EQ(s.GetStats().index_writes_stopped, 0u);
  for (int i = 0; i < 1000; ++i) {  // past the memory limit again: flushes free it
    const std::string k = "after-" + std::to_string(i);
    ASSERT_TRUE(s.Put(k, MakeValue(k, 8 << 10)).ok()) << k;
  }
  ExpectReturns("a flush", [&] { ASSERT_TRUE(s.Flush().ok()); });
  ExpectReturns("the close", [&] { r->reset(); });
}

INSTANTIATE_TEST_SUITE_P(WalOnAndOff, DiskErrorFaults, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "WalOn" : "WalOff"; });

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Counts EventListener::OnCorruptValue calls.
struct CorruptValueCounter final : EventListener {
  void OnCorruptValue(std::string_view, std::string_view) override { ++calls; }
  std::atomic<int> calls{0};
};

TEST_F(Faults, ADamagedValueWhoseRemovalIsRefusedIsLoggedAsNotRemoved) {
  auto counter = std::make_shared<CorruptValueCounter>();
  o_.wal = true;  // the removal's index write fails at once
  o_.listener = counter;
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  ASSERT_TRUE(s.Put("v", MakeValue("v", 1 << 20)).ok());
  ASSERT_TRUE(s.Flush().ok());
  test::DamageBlobFileTails(dir_.path());
  fs_->failing = true;
  for (uint64_t read = 1; read <= 2; ++read) {
    EXPECT_TRUE(s.Get("v").status().IsNotFound());  // never the damaged bytes
    EXPECT_EQ(s.GetStats().corruptions, read);
    EXPECT_TRUE(s.Contains("v"));  // the removal was refused: the next read finds it again
  }
  EXPECT_EQ(counter->calls, 0) << "told of a removal that did not happen";
  const std::string log = ReadFile(dir_.path() + "/LOG");
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "failed verification: checksum mismatch (gen-"), 2)
      << log;
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "removing it failed"), 2) << log;
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "was removed"), 0) << log;
  fs_->failing = false;
  s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
}

// RocksDB's own file logger asserts (Debian's build keeps assertions) on the line after a log
// write failed, so a full disk aborted the process. The store's log drops what it cannot write.
TEST(InfoLogTest, LinesTheDiskRefusesAreDroppedAndLoggingGoesOn) {
  InfoLog log("/dev/full", rocksdb::InfoLogLevel::WARN_LEVEL);  // every write: ENOSPC
  for (int i = 0; i < 1000; ++i) rocksdb::Warn(&log, "flush failed: %d", i);
  EXPECT_EQ(log.GetLogFileSize(), 0u);
}

TEST(InfoLogTest, WritesWarningsWholeLinesAndRotates) {
  test::TempDir dir;
  const std::string path = dir.sub("LOG");
  {
    InfoLog log(path, rocksdb::InfoLogLevel::WARN_LEVEL);
    rocksdb::Info(&log, "below the level");
    rocksdb::Warn(&log, "no space left: %s", "values/gen-1.lbv");
    rocksdb::Error(&log, "%s", std::string(10000, 'x').c_str());  // cut to one line
  }
  const std::string text = ReadFile(path);
  EXPECT_EQ(text.find("below the level"), std::string::npos);
  EXPECT_NE(text.find("[WARN] no space left: values/gen-1.lbv\n"), std::string::npos) << text;
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_LE(text.size() - text.find('\n') - 1, 4096u);

  InfoLog log(path, rocksdb::InfoLogLevel::WARN_LEVEL);  // appends to the existing file
  EXPECT_EQ(log.GetLogFileSize(), text.size());
  const std::string line(1000, 'y');
  while (!std::filesystem::exists(path + ".old")) rocksdb::Warn(&log, "%s", line.c_str());
  EXPECT_GT(std::filesystem::file_size(path + ".old"), InfoLog::kMaxBytes - 2048);
  EXPECT_LE(std::filesystem::file_size(path + ".old"), InfoLog::kMaxBytes);
  EXPECT_LT(std::filesystem::file_size(path), 2048u);
}

}  // namespace
}  // namespace larder
