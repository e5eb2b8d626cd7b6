// Error replies counted by their code, as Redis's INFO errorstats (`errorstat_<CODE>:count=N`)
// and the metrics page's larder_errors_total{code} report them. Every ReplyWriter of a
// connection tells this table of each error it writes, so protocol errors, refused commands
// and handler errors all count, once each.
//
// The code is the error's first word ("ERR", "WRONGTYPE", "NOAUTH"), as Redis takes it: the
// text up to a space within its first 32 bytes, "ERR" when there is none. At most kMaxCodes
// distinct codes are kept (Redis's bound); later new codes count only in the total.
//
// Thread-safe: a mutex guards the table (errors are rare next to commands).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/server_stats.h"
#include "resp/reply_writer.h"

namespace larder::server {

class ErrorStats final : public resp::ErrorReplyListener {
 public:
  static constexpr size_t kMaxCodes = 128;

  explicit ErrorStats(ServerStats& stats) : stats_(stats) {}

  static std::string_view CodeOf(std::string_view text) {
    const size_t space = text.substr(0, 32).find(' ');
    return space == std::string_view::npos ? std::string_view("ERR") : text.substr(0, space);
  }

  void OnErrorReply(std::string_view text) override {
    ServerStats::Count(stats_.total_error_replies);
    const std::string_view code = CodeOf(text);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(code);
    if (it != counts_.end()) {
      ++it->second;
    } else if (counts_.size() < kMaxCodes) {
      counts_.emplace(std::string(code), 1);
    }
  }

  // (code, count) in code order.
  std::vector<std::pair<std::string, uint64_t>> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {counts_.begin(), counts_.end()};
  }

  // CONFIG RESETSTAT (total_error_replies is reset with the other server counters).
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    counts_.clear();
  }

 private:
  ServerStats& stats_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t, std::less<>> counts_;
};

}  // namespace larder::server
