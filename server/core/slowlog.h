// SlowLog: the commands that took longer than `slowlog-log-slower-than`, newest first, at most
// `slowlog-max-len` of them, as Redis keeps them (SLOWLOG GET/LEN/RESET).
//
// Thread-safe (one mutex; only commands over the threshold take it).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace larder::server {

struct SlowLogEntry {
  uint64_t id = 0;
  int64_t unix_seconds = 0;
  uint64_t duration_usec = 0;
  std::vector<std::string> args;  // shortened as Redis does (ShortenedArgs)
  std::string client_addr;        // "ip:port"
  std::string client_name;
};

class SlowLog {
 public:
  // Redis's limits on what an entry keeps: 32 arguments (the last saying how many more there
  // were) of at most 128 bytes (then how many more bytes).
  static constexpr size_t kMaxArgs = 32;
  static constexpr size_t kMaxArgBytes = 128;

  // `argv` as an entry keeps it.
  static std::vector<std::string> ShortenedArgs(const std::vector<std::string>& argv);

  // Adds an entry (its id assigned here), then drops the oldest beyond max_len.
  void Add(SlowLogEntry entry, size_t max_len);
  // The newest `count` entries (all if count < 0), newest first.
  std::vector<SlowLogEntry> Newest(int64_t count) const;
  size_t Len() const;
  void Reset();  // drops the entries; ids keep increasing, as in Redis

 private:
  mutable std::mutex mu_;
  std::deque<SlowLogEntry> entries_;  // newest first
  uint64_t next_id_ = 0;
};

}  // namespace larder::server
