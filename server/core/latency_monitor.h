// LatencyMonitor: Redis's latency monitor (LATENCY LATEST/HISTORY/RESET). Each event ("command"
// for commands that may touch the disk, "fast-command" for the others) keeps its latest
// kHistory samples of latencies at or above `latency-monitor-threshold` milliseconds, one per
// second (the highest of that second), and its all-time maximum.
//
// Thread-safe (one mutex; only latencies over the threshold take it).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace larder::server {

class LatencyMonitor {
 public:
  static constexpr size_t kHistory = 160;

  struct Sample {
    int64_t unix_seconds = 0;
    uint64_t ms = 0;
  };
  struct Latest {
    std::string event;
    Sample latest;
    uint64_t max_ms = 0;
  };

  void Add(std::string_view event, int64_t unix_seconds, uint64_t ms);
  // Every event's latest sample and maximum, in event-name order.
  std::vector<Latest> LatestOfEach() const;
  // The event's samples, oldest first (none for an unknown event).
  std::vector<Sample> History(std::string_view event) const;
  // Forgets the named events (all when `events` is empty); returns how many existed.
  size_t Reset(const std::vector<std::string>& events);

 private:
  struct Series {
    std::vector<Sample> ring;  // up to kHistory, ring[next % kHistory] is the oldest when full
    size_t next = 0;
    uint64_t max_ms = 0;
  };

  mutable std::mutex mu_;
  std::map<std::string, Series, std::less<>> events_;
};

}  // namespace larder::server
