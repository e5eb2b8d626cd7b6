// The server's own statistics, declared once. Each X-macro row is X(name, doc), named as INFO
// prints it. ServerStats, INFO's stats section and CONFIG RESETSTAT expand from the list; the
// engine's statistics are declared the same way in larder/stats_fields.h. A new counter is one
// row here plus the code that counts it.
#pragma once

#include <atomic>
#include <cstdint>

#define LARDER_SERVER_STATS(X)                                                               \
  X(total_connections_received, "connections accepted")                                      \
  X(total_commands_processed, "requests executed, failed and queued ones included")          \
  X(total_net_input_bytes, "bytes read from clients")                                        \
  X(total_net_output_bytes, "bytes written to clients")                                      \
  X(rejected_connections, "connections refused: maxclients reached or protected mode")       \
  X(client_query_buffer_limit_disconnections, "clients closed at client-query-buffer-limit") \
  X(client_output_buffer_limit_disconnections, "clients closed at client-output-buffer-limit")

namespace larder::server {

// Monotonic counters (CONFIG RESETSTAT sets them to 0). Thread-safe; counting is relaxed.
struct ServerStats {
#define LARDER_SERVER_STAT_FIELD(name, doc) std::atomic<uint64_t> name{0};
  LARDER_SERVER_STATS(LARDER_SERVER_STAT_FIELD)
#undef LARDER_SERVER_STAT_FIELD

  static void Count(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.fetch_add(n, std::memory_order_relaxed);
  }

  void Reset() {
#define LARDER_SERVER_STAT_RESET(name, doc) name.store(0, std::memory_order_relaxed);
    LARDER_SERVER_STATS(LARDER_SERVER_STAT_RESET)
#undef LARDER_SERVER_STAT_RESET
  }
};

}  // namespace larder::server
