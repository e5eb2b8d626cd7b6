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
  std::lock_guard lock(mu_);
  if (reason == Reason::kWriteCallback) {
    wal_failed_seals_ = seals;
    wal_failed_ = true;
  }
  if ((reason == Reason::kFlushNoWAL || reason == Reason::kManifestWriteNoWAL) &&
      error.IsIOError() && !error.IsNoSpace()) {
    flush_only_resume_ = true;  // a soft error (atomic flush, the WAL synced)
  }
  // Fatal first: a full disk met by the creation of a WAL file is fatal in RocksDB 7.8.
  if (error.severity() >= rocksdb::Status::Severity::kFatalError) {
    text_ = error.ToString();  // the text RocksWrite's refusals give
    refusing_ = true;
    failed_ = true;
  } else if (error.IsNoSpace()) {
    stopped_ = true;
  } else if (error.IsIOError() && reason != Reason::kCompaction) {
    // Retryable (RocksDB sets its severity after telling its listeners).
    text_ = error.ToString();
    refusing_ = true;
    stopped_ = true;
  }
  if (stopped_ || failed_) LiftMemoryLimit();
  if (reason != Reason::kCompaction) count_++;
}

std::string IndexErrors::text() const {
  std::lock_guard lock(mu_);
  return text_;
}

bool IndexErrors::StopUntilRestart() {
  std::lock_guard lock(mu_);
  return !failed_.exchange(true);
}

bool IndexErrors::ClearIfNoneSince(uint64_t before) {
  std::lock_guard lock(mu_);
  if (count_ != before) return false;
  refusing_ = false;
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
