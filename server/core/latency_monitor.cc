#include "core/latency_monitor.h"

#include <algorithm>

namespace larder::server {

void LatencyMonitor::Add(std::string_view event, int64_t unix_seconds, uint64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  if (it == events_.end()) it = events_.emplace(std::string(event), Series{}).first;
  Series& s = it->second;
  s.max_ms = std::max(s.max_ms, ms);
  if (s.next > 0) {
    Sample& last = s.ring[(s.next - 1) % kHistory];
    if (last.unix_seconds == unix_seconds) {
      last.ms = std::max(last.ms, ms);
      return;
    }
  }
  if (s.ring.size() < kHistory) {
    s.ring.push_back({unix_seconds, ms});
  } else {
    s.ring[s.next % kHistory] = {unix_seconds, ms};
  }
  ++s.next;
}

std::vector<LatencyMonitor::Latest> LatencyMonitor::LatestOfEach() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Latest> out;
  for (const auto& [name, s] : events_) {
    out.push_back({name, s.ring[(s.next - 1) % kHistory], s.max_ms});
  }
  return out;
}

std::vector<LatencyMonitor::Sample> LatencyMonitor::History(std::string_view event) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  if (it == events_.end()) return {};
  const Series& s = it->second;
  std::vector<Sample> out;
  const size_t n = s.ring.size();
  for (size_t i = 0; i < n; ++i) out.push_back(s.ring[(s.next - n + i) % kHistory]);
  return out;
}

size_t LatencyMonitor::Reset(const std::vector<std::string>& events) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events.empty()) {
    size_t n = events_.size();
    events_.clear();
    return n;
  }
  size_t n = 0;
  for (const std::string& e : events) n += events_.erase(e);
  return n;
}

}  // namespace larder::server
