#include "index_errors.h"

namespace larder {

void IndexErrors::WatchMemory(std::shared_ptr<rocksdb::WriteBufferManager> wbm, uint64_t limit) {
  std::lock_guard lock(mu_);
  wbm_ = std::move(wbm);
  memory_limit_ = limit;
}

void IndexErrors::Record(rocksdb::BackgroundErrorReason reason, const rocksdb::Status& error,
                         uint64_t seals) {
  using Reason = rocksdb::BackgroundErrorReason;
  const bool fatal = error.severity() >= rocksdb::Status::Severity::kFatalError;
  // A compaction's retryable error: RocksDB schedules the compaction again and stops nothing.
  if (reason == Reason::kCompaction && !fatal && !error.IsNoSpace()) return;
  std::lock_guard lock(mu_);
  if (reason == Reason::kWriteCallback) {
    wal_failed_seals_ = seals;
    wal_failed_ = true;
  }
  if ((reason == Reason::kFlushNoWAL || reason == Reason::kManifestWriteNoWAL) &&
      error.IsIOError() && !error.IsNoSpace()) {
    flush_only_resume_ = true;  // a soft error (atomic flush, the WAL synced)
  }
  // Until a restart: a fatal error (in RocksDB 7.8 a full disk met by the creation of a WAL file
  // too), and a compaction's full disk. That one is a soft error that stops no flush, whose
  // install then fails on it without giving its memtables back (PR 11872 again), and which
  // DB::Resume() leaves in place ("nothing to do"): no resume can succeed after it.
  if (fatal || error.IsIOError()) {  // NoSpace is an I/O error
    text_ = error.ToString();        // what refusal() quotes
    no_space_ = error.IsNoSpace();
    (fatal || reason == Reason::kCompaction ? failed_ : stopped_) = true;
    LiftMemoryLimit();
  }
  count_++;
}

rocksdb::Status IndexErrors::refusal() const {
  if (!stopped_.load() && !failed_.load()) return rocksdb::Status::OK();
  std::lock_guard lock(mu_);
  const char* what =
      failed_ ? "the index refuses writes since a disk error; a restart brings them back"
              : "the index refuses writes since a disk error, until the disk takes them again";
  return no_space_ ? rocksdb::Status::NoSpace(what, text_) : rocksdb::Status::IOError(what, text_);
}

bool IndexErrors::StopUntilRestart() {
  std::lock_guard lock(mu_);
  return !failed_.exchange(true);
}

bool IndexErrors::ClearIfNoneSince(uint64_t before) {
  std::lock_guard lock(mu_);
  if (count_ != before) return false;
  wal_failed_ = false;
  flush_only_resume_ = false;
  stopped_ = false;
  // Writes go on; those that then find the memtables full wait for a flush, which now works.
  if (wbm_) wbm_->SetBufferSize(memory_limit_);
  return true;
}

void IndexErrors::LiftMemoryLimit() {
  if (wbm_) wbm_->SetBufferSize(wbm_->memory_usage() + memory_limit_);
}

}  // namespace larder
