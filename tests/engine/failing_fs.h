// The engine tests' failing disk: a FileSystem whose writes to RocksDB's files fail on demand
// (fault_test.cc, index_resume_test.cc), the store on it, and a check that a step returns.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "larder/store.h"
#include "test_util.h"
#include "testing.h"

namespace larder::test {

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
inline void ExpectReturns(const char* what, const std::function<void()>& step) {
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

}  // namespace larder::test
