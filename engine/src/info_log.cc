#include "info_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

namespace larder {

InfoLog::InfoLog(std::string path, rocksdb::InfoLogLevel level)
    : rocksdb::Logger(level), path_(std::move(path)) {
  std::lock_guard lock(mu_);
  OpenLocked();
}

InfoLog::~InfoLog() {
  if (fd_ >= 0) ::close(fd_);
}

void InfoLog::OpenLocked() {
  if (path_.empty()) return;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  struct stat st {};
  bytes_ = fd_ >= 0 && ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void InfoLog::RotateLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  const std::string old = path_ + ".old";
  if (::rename(path_.c_str(), old.c_str()) != 0) return;  // this line and later ones dropped
  OpenLocked();
}

void InfoLog::Logv(const char* format, va_list ap) {
  char line[4096];
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  ::localtime_r(&ts.tv_sec, &t);
  const int header =
      std::snprintf(line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld ", t.tm_year + 1900,
                    t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000);
  size_t len = static_cast<size_t>(header);
  va_list copy;
  va_copy(copy, ap);
  const int m = std::vsnprintf(line + len, sizeof line - len, format, copy);
  va_end(copy);
  if (m > 0) len += std::min(static_cast<size_t>(m), sizeof line - len - 1);  // a long line is cut
  if (line[len - 1] != '\n') line[len++] = '\n';  // over vsnprintf's NUL: len <= sizeof line
  std::lock_guard lock(mu_);
  if (bytes_ + len > kMaxBytes) RotateLocked();
  const ssize_t w = fd_ >= 0 ? ::write(fd_, line, len) : -1;
  if (w > 0) bytes_ += static_cast<uint64_t>(w);  // a short or failed write loses the line only
}

size_t InfoLog::GetLogFileSize() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace larder
