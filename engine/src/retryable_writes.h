// The index's file system: RocksDB's own, with the I/O errors of its writes (WAL appends and
// syncs, flushes, MANIFEST writes) marked retryable, so that a disk that fails writes for a
// while (an EIO from a device that recovers, a path briefly unavailable) stops the index's
// writes only until it takes them again, as a full disk does.
//
// RocksDB 7.8 takes such an error as fatal unless the file system says it is retryable
// (ErrorHandler::SetBGError): a fatal error refuses every write until the database is reopened.
// A retryable one is a hard error (a soft one for a flush with the WAL off), which DB::Resume()
// clears once a flush goes through. RocksDB's own automatic resume is off for the index
// (max_bgerror_resume_count 0): the store resumes it at each maintenance pass
// (StoreImpl::ResumeIndex), as after a full disk.
//
// A resume after a failed WAL append or sync must leave that WAL file, whose writer RocksDB
// refuses for good once it saw an error: StoreImpl::RocksWrite and ResumeIndex see to it.
//
// Not marked: a full disk (NoSpace: its own recovery), a fenced file (IOFenced: another writer
// owns the files, fatal by design), an error RocksDB already knows to be a data loss, and every
// read (a read error reaches the reader as it is).
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace larder {

std::shared_ptr<rocksdb::FileSystem> RetryableWriteErrors(
    std::shared_ptr<rocksdb::FileSystem> base);

// `s`, marked retryable when it is an I/O error of the kind above.
rocksdb::IOStatus MarkRetryable(rocksdb::IOStatus s);

// A retryable write error the index is waiting out: set by the listener that hears it, cleared
// once DB::Resume() succeeds, read by writers (with the WAL off RocksDB still takes writes into
// its memtables after such an error in a flush; the store refuses them instead, so that they
// neither pile up in memory nor wait for it). Also whether a WAL append failed since the last
// resume, full disk included, and no memtable was sealed since (a seal begins a new WAL file):
// StoreImpl::ResumeIndex. Thread-safe.
class IndexDiskError {
 public:
  void Set(std::string text) {
    std::lock_guard lock(mu_);
    text_ = std::move(text);
    active_ = true;
  }
  // A WAL append failed when `seals` memtables had been sealed.
  void SetWalFailed(uint64_t seals) {
    wal_failed_seals_ = seals;
    wal_failed_ = true;
  }
  // RocksDB took a flush's retryable error as a soft one (which lets writes go on unless a
  // harder error came too). Until a resume succeeds, its manual resume then retries the failed
  // flush alone, with no memtable switch, so it cannot leave a WAL file that failed meanwhile
  // (StoreImpl::ResumeIndex).
  void SetFlushOnlyResume() { flush_only_resume_ = true; }
  bool flush_only_resume() const { return flush_only_resume_; }
  void Clear() {
    active_ = false;
    wal_failed_ = false;
    flush_only_resume_ = false;
  }
  bool active() const { return active_.load(); }
  // Whether the WAL file a failed append left is still the current one, `seals` now.
  bool wal_failed(uint64_t seals) const { return wal_failed_ && seals == wal_failed_seals_; }
  std::string text() const {
    std::lock_guard lock(mu_);
    return text_;
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> active_{false};
  std::atomic<bool> wal_failed_{false};
  std::atomic<bool> flush_only_resume_{false};
  std::atomic<uint64_t> wal_failed_seals_{0};
  std::string text_;  // the error as RocksDB gave it (mu_)
};

}  // namespace larder
