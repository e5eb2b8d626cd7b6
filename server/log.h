// Minimal server log: one line per event, Redis style ("pid:M 22 Nov 2026 06:32:57.123 * msg"),
// to stderr or the configured logfile. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace larder::server {

enum class LogLevel { kDebug = 0, kVerbose = 1, kNotice = 2, kWarning = 3 };

// Parses a `loglevel` value ("debug" | "verbose" | "notice" | "warning"); unknown = notice.
LogLevel ParseLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
// Appends to `path` from now on ("" = stderr). Returns false (and keeps stderr) on failure.
bool SetLogFile(const std::string& path);
// Writes one line if `level` is at or above the current level.
void Log(LogLevel level, std::string_view message);

// Lets a repeated warning through at most once every `interval_ms`, the first at once, and
// counts the ones it held back. Thread-safe; one per warning.
class LogLimiter {
 public:
  explicit LogLimiter(int64_t interval_ms) : interval_ms_(interval_ms) {}
  // Whether the warning is due at `now_ms` (any clock, the same one every call). When it is,
  // *held_back (if given) is how many were not due since the last one let through.
  bool Due(int64_t now_ms, uint64_t* held_back = nullptr);

 private:
  const int64_t interval_ms_;
  std::atomic<int64_t> next_ms_{std::numeric_limits<int64_t>::min()};
  std::atomic<uint64_t> held_back_{0};
};

}  // namespace larder::server
