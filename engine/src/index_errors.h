// What RocksDB's background errors left of the index's writes: recorded by the store's event
// listener as RocksDB reports each error, read by every index write (StoreImpl::RocksWrite), by
// the stats, by a flush waiting for its memtables, and cleared by StoreImpl::ResumeIndex once
// DB::Resume() succeeded.
//
// One mutex orders a record against the clear: an error reported while a resume ends is either
// seen by it (the resume keeps everything and the next one tries again) or recorded after the
// clear, never cleared unseen.
//
// While the index's writes are stopped, writers that RocksDB admitted before the error may be
// waiting in its write buffer manager's stall (allow_stall: the memtables hold the limit) for
// memory only a flush gives back, at the head of RocksDB's write queue, ahead of the resume's own
// flush; the flush that failed never gives it back. So a record lifts the limit above what the
// memtables hold (ending the stall: those writes complete, as they would have a moment earlier)
// and the clear sets it back. No other write reaches RocksDB meanwhile: RocksWrite refuses them,
// or RocksDB's own stopped state does.
#pragma once

#include <rocksdb/listener.h>
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
  // - fatal (a corruption, a fenced file, a full disk met by a new WAL file): writes refused
  //   until a restart (failed());
  // - a full disk: stopped() (RocksDB refuses the writes itself);
  // - a retryable I/O error (retryable_writes.h), but a compaction's: stopped(), and refusing()
  //   with its text (RocksDB would take some writes, its soft error after a flush);
  // - a compaction's error stops nothing (the compaction runs again) and is not counted.
  void Record(rocksdb::BackgroundErrorReason reason, const rocksdb::Status& error, uint64_t seals);

  // The errors recorded so far, but compactions': a flush waiting for its memtables and a resume
  // compare it before and after.
  uint64_t count() const { return count_.load(); }
  // Stopped by an error that a resume clears (or by one that only a restart clears).
  bool stopped() const { return stopped_.load() || failed_.load(); }
  // Until a restart (RocksDB's error was fatal, or StopUntilRestart).
  bool failed() const { return failed_.load(); }
  // A retryable error the index waits out: writes refused with text().
  bool refusing() const { return refusing_.load(); }
  std::string text() const;
  // Whether the WAL file a failed append left is still the current one, `seals` now.
  bool wal_failed(uint64_t seals) const { return wal_failed_.load() && seals == wal_failed_seals_; }
  // RocksDB took a flush's retryable error as a soft one (which lets writes go on unless a
  // harder error came too). Until a resume succeeds, its manual resume then retries the failed
  // flush alone, with no memtable switch, so it cannot leave a WAL file that failed meanwhile.
  bool flush_only_resume() const { return flush_only_resume_.load(); }

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
  std::atomic<bool> stopped_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> refusing_{false};
  std::atomic<bool> wal_failed_{false};
  std::atomic<bool> flush_only_resume_{false};
  std::atomic<uint64_t> wal_failed_seals_{0};
  std::string text_;  // the error as RocksDB gave it (mu_)
};

}  // namespace larder
