// The index's writes after a disk error (fault injection through its FileSystem): a full disk,
// an I/O error of a flush, a MANIFEST write or the WAL stop them, refused with a message that
// says what brings them back, reads going on; the first pass after the disk takes writes again
// resumes them, with every acknowledged write kept, and nothing waits for ever meanwhile. Where
// RocksDB 7.8 cannot resume, they stay stopped until a restart.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "failing_fs.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"
#include "testing.h"

namespace larder {
namespace {

using test::ExpectReturns;
using test::Faults;
using test::MakeValue;

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

}  // namespace
}  // namespace larder
