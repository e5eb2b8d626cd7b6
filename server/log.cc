#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "larder/clock.h"

namespace larder::server {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kNotice)};
std::mutex g_mu;
FILE* g_file = nullptr;  // null = stderr
}  // namespace

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "verbose") return LogLevel::kVerbose;
  if (name == "warning") return LogLevel::kWarning;
  return LogLevel::kNotice;
}

void SetLogLevel(LogLevel level) {
  g_level.store(static_cast<int>(level));
}

bool SetLogFile(const std::string& path) {
  if (path.empty()) return true;
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file != nullptr) std::fclose(g_file);
  g_file = f;
  return true;
}

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  const int64_t now_ms = larder::SystemClock()->NowMs();  // the server's one clock
  const time_t seconds = static_cast<time_t>(now_ms / 1000);
  struct tm tm;
  localtime_r(&seconds, &tm);
  char when[64];
  size_t n = std::strftime(when, sizeof(when), "%d %b %Y %H:%M:%S", &tm);
  std::snprintf(when + n, sizeof(when) - n, ".%03d", static_cast<int>(now_ms % 1000));
  static constexpr char kMarks[] = {'.', '-', '*', '#'};
  std::lock_guard<std::mutex> lock(g_mu);
  FILE* out = g_file != nullptr ? g_file : stderr;
  std::fprintf(out, "%d:M %s %c %.*s\n", static_cast<int>(getpid()), when,
               kMarks[static_cast<int>(level)], static_cast<int>(message.size()), message.data());
  std::fflush(out);
}

bool LogLimiter::Due(int64_t now_ms, uint64_t* held_back) {
  int64_t next = next_ms_.load();
  if (now_ms < next || !next_ms_.compare_exchange_strong(next, now_ms + interval_ms_)) {
    held_back_++;
    return false;
  }
  const uint64_t n = held_back_.exchange(0);
  if (held_back) *held_back = n;
  return true;
}

}  // namespace larder::server
