// The server's own statistics, declared once. Each X-macro row is X(name, doc), named as INFO
// prints it. ServerStats, INFO's stats section and CONFIG RESETSTAT expand from the list; the
// engine's statistics are declared the same way in larder/stats_fields.h. A new counter is one
// row here plus the code that counts it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#define LARDER_SERVER_STATS(X)                                                                 \
  X(total_connections_received, "connections accepted")                                        \
  X(total_commands_processed, "requests executed, failed and queued ones included")            \
  X(total_net_input_bytes, "bytes read from clients")                                          \
  X(total_net_output_bytes, "bytes written to clients")                                        \
  X(rejected_connections, "connections refused: maxclients reached or protected mode")         \
  X(client_query_buffer_limit_disconnections, "clients closed at client-query-buffer-limit")   \
  X(client_output_buffer_limit_disconnections, "clients closed at client-output-buffer-limit") \
  X(total_error_replies, "error replies sent (INFO errorstats counts them by code)")           \
  X(tls_handshake_failures, "TLS connections closed in their handshake (plain text, no cert)") \
  X(gets_on_io_thread, "GETs run on their connection's io thread, the value in memory")        \
  X(sets_on_io_thread, "SETs run on their connection's io thread, the write in memory")        \
  X(gets_streamed, "GET and MGET values from the disk sent a piece at a time while read")

namespace larder::server {

// The recent rate of a monotonic counter, as INFO's instantaneous_* fields report it: the
// average over the kWindow intervals between its last kWindow + 1 samples. Sample() is called
// by one thread (the server's once-a-second cron); PerSecond() from any.
class RateSampler {
 public:
  static constexpr size_t kWindow = 4;

  void Sample(int64_t now_ms, uint64_t total) {
    if (const uint64_t r = resets_.load(std::memory_order_acquire); r != resets_seen_) {
      resets_seen_ = r;  // samples from before a reset are not compared with those after it
      next_ = 0;
    }
    points_[next_ % (kWindow + 1)] = {now_ms, total};
    ++next_;
    const Point oldest = points_[next_ % (kWindow + 1)];  // kWindow samples before this one
    if (next_ <= kWindow || now_ms <= oldest.ms || total < oldest.total) {
      per_second_.store(0, std::memory_order_relaxed);  // too few samples, or a reset
      return;
    }
    const double rate = static_cast<double>(total - oldest.total) * 1000.0 /
                        static_cast<double>(now_ms - oldest.ms);
    per_second_.store(static_cast<uint64_t>(rate + 0.5), std::memory_order_relaxed);
  }
  uint64_t PerSecond() const { return per_second_.load(std::memory_order_relaxed); }
  // CONFIG RESETSTAT, from any thread: the rate reads 0 until the window fills again.
  void Reset() {
    resets_.fetch_add(1, std::memory_order_release);
    per_second_.store(0, std::memory_order_relaxed);
  }

 private:
  struct Point {
    int64_t ms = 0;
    uint64_t total = 0;
  };
  std::array<Point, kWindow + 1> points_{};
  uint64_t next_ = 0;         // points_ and next_: the sampling thread's alone
  uint64_t resets_seen_ = 0;  // of resets_, when the window last restarted
  std::atomic<uint64_t> resets_{0};
  std::atomic<uint64_t> per_second_{0};
};

// Monotonic counters (CONFIG RESETSTAT sets them to 0). Thread-safe; counting is relaxed.
struct ServerStats {
#define LARDER_SERVER_STAT_FIELD(name, doc) std::atomic<uint64_t> name{0};
  LARDER_SERVER_STATS(LARDER_SERVER_STAT_FIELD)
#undef LARDER_SERVER_STAT_FIELD

  static void Count(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  // Rates of commands and network bytes (INFO's instantaneous_*), sampled by the cron.
  RateSampler ops_rate, input_rate, output_rate;

  void SampleRates(int64_t now_ms) {
    ops_rate.Sample(now_ms, total_commands_processed.load(std::memory_order_relaxed));
    input_rate.Sample(now_ms, total_net_input_bytes.load(std::memory_order_relaxed));
    output_rate.Sample(now_ms, total_net_output_bytes.load(std::memory_order_relaxed));
  }

  void Reset() {
#define LARDER_SERVER_STAT_RESET(name, doc) name.store(0, std::memory_order_relaxed);
    LARDER_SERVER_STATS(LARDER_SERVER_STAT_RESET)
#undef LARDER_SERVER_STAT_RESET
    ops_rate.Reset();
    input_rate.Reset();
    output_rate.Reset();
  }
};

}  // namespace larder::server
