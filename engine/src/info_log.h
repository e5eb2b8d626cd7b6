// The index's RocksDB info log: warnings and errors appended to a file (<dir>/LOG of a store).
//
// It replaces RocksDB's own file logger. Debian builds librocksdb with its assertions on, and
// that logger asserts on the line after a write of the log failed: once the disk fills, the
// first flush warning that cannot be written is followed by another, and the process aborts.
// Here a line the disk refuses is dropped: the log never takes the store down. LOG grows to
// InfoLog::kMaxBytes, then becomes LOG.old (replacing the previous one) and a new LOG begins.
#pragma once

#include <rocksdb/env.h>

#include <cstdarg>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace larder {

class InfoLog final : public rocksdb::Logger {
 public:
  static constexpr uint64_t kMaxBytes = 8ull << 20;

  // Appends lines of `level` and worse to `path`. If the file cannot be opened, or `path` is
  // empty (a store opened read-only), the lines are dropped (RocksDB itself opens without a log
  // then).
  InfoLog(std::string path, rocksdb::InfoLogLevel level);
  ~InfoLog() override;
  InfoLog(const InfoLog&) = delete;
  InfoLog& operator=(const InfoLog&) = delete;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;
  size_t GetLogFileSize() const override;

 private:
  void OpenLocked();
  void RotateLocked();

  const std::string path_;
  mutable std::mutex mu_;
  int fd_ = -1;
  uint64_t bytes_ = 0;  // of the current LOG
};

}  // namespace larder
