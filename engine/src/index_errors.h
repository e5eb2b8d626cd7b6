// What RocksDB's background errors left of the index's writes: recorded by the store's event
// listener as RocksDB reports each error, read by every call into RocksDB that writes the index
// (Admitted), by the stats and by a flush waiting for its memtables, and cleared by
// StoreImpl::ResumeIndex once DB::Resume() succeeded.
//
// One mutex orders a record against the clear: an error reported while a resume ends is either
// seen by it (the resume keeps everything and the next one tries again) or recorded after the
// clear, never cleared unseen.
//
// Every error that stops the index's writes also makes the store refuse them (refusal()): after
// some (a flush's retryable error, a compaction's full disk) RocksDB would still take writes.
// Writers RocksDB admitted before the error may already be waiting in its write buffer manager's
// stall (allow_stall: the memtables hold the limit) for memory only a flush gives back, at the head
// of RocksDB's write queue, ahead of the resume's own flush; the flush that failed never gives it
// back. So a record lifts the limit above what the memtables hold (ending the stall: those writes
// complete, as they would have a moment earlier) and the clear sets it back.
#pragma once

#include <rocksdb/listener.h>
#include <rocksdb/status.h>
#include <rocksdb/write_buffer_manager.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace larder {

class IndexErrors {
 public:
  // The memtables' memory limit: `wbm` enforces it (with allow_stall), and a record lifts it.
  void WatchMemory(std::shared_ptr<rocksdb::WriteBufferManager> wbm, uint64_t limit);

  // RocksDB reported `error` from `reason` when `seals` memtables had been sealed (the WAL file
  // then current: ResumeIndex). What it marks, by kind:
  // - fatal (a corruption, a fenced file, a full disk met by a new WAL file), and a compaction's
  //   full disk (index_errors.cc says why): writes refused until a restart (failed());
  // - a full disk: stopped(), writes refused as NoSpace;
  // - a retryable I/O error (retryable_writes.h), but a compaction's: stopped(), writes refused;
  // - a compaction's retryable error stops nothing (the compaction runs again): not recorded.
  void Record(rocksdb::BackgroundErrorReason reason, const rocksdb::Status& error, uint64_t seals);

  // The errors recorded so far: a flush waiting for its memtables and a resume compare it
  // before and after.
  uint64_t count() const { return count_.load(); }
  // Stopped by an error that a resume clears (or by one that only a restart clears).
  bool stopped() const { return stopped_.load() || failed_.load(); }
  // Until a restart (RocksDB's error was fatal, or StopUntilRestart).
  bool failed() const { return failed_.load(); }
  // OK, or what a write of the index gets while they are stopped: NoSpace after a full disk,
  // saying whether the disk or a restart brings writes back, with RocksDB's error.
  rocksdb::Status refusal() const;
  // Whether the WAL file a failed append left is still the current one, `seals` now.
  bool wal_failed(uint64_t seals) const { return wal_failed_.load() && seals == wal_failed_seals_; }
  // RocksDB took a flush's retryable error as a soft one (which lets writes go on unless a
  // harder error came too). Until a resume succeeds, its manual resume then retries the failed
  // flush alone, with no memtable switch, so it cannot leave a WAL file that failed meanwhile;
  // and a flush request queued before the error that starts during it fails (ResumeIndex).
  bool flush_only_resume() const { return flush_only_resume_.load(); }

  // One call into RocksDB that writes the index or may start a flush (a write, a column family
  // created, a compaction), for its life: counted, and refused (refusal()) while writes are
  // stopped, so that a resume can begin with none inside (admitted()).
  class Admitted {
   public:
    explicit Admitted(IndexErrors* errors) : errors_(errors) {
      errors_->admitted_.fetch_add(1);  // before reading the marks: see ResumeIndex
      refusal_ = errors_->refusal();
    }
    ~Admitted() { errors_->admitted_.fetch_sub(1); }
    Admitted(const Admitted&) = delete;
    Admitted& operator=(const Admitted&) = delete;
    const rocksdb::Status& refusal() const { return refusal_; }

   private:
    IndexErrors* const errors_;
    rocksdb::Status refusal_;
  };
  // Calls inside RocksDB now (Admitted), refused ones included.
  int admitted() const { return admitted_.load(); }

  // Writes stay refused until a restart: whether this call said so first.
  bool StopUntilRestart();
  // After a successful DB::Resume(): clears every mark and sets the memory limit back, unless an
  // error was recorded since count() was `before`. Whether it cleared.
  bool ClearIfNoneSince(uint64_t before);

 private:
  void LiftMemoryLimit();  // mu_ held

  mutable std::mutex mu_;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;  // mu_
  uint64_t memory_limit_ = 0;                         // mu_
  std::atomic<uint64_t> count_{0};
  std::atomic<int> admitted_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> wal_failed_{false};
  std::atomic<bool> flush_only_resume_{false};
  std::atomic<uint64_t> wal_failed_seals_{0};
  bool no_space_ = false;  // the last error recorded was a full disk (mu_)
  std::string text_;       // the error as RocksDB gave it (mu_)
};

}  // namespace larder
