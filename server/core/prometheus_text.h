// The metrics endpoint's page: every statistic INFO reports, in Prometheus's text exposition
// format (version 0.0.4), named larder_<name>:
//
//   engine gauges (larder/stats_fields.h)    larder_<name>               gauge
//   engine counters                          larder_<name>_total         counter
//   server counters (core/server_stats.h)    larder_<name>_total         counter ("total_" prefix
//                                                                         dropped)
//   larder_connected_clients, larder_uptime_seconds, larder_resident_memory_bytes (gauges),
//   larder_cpu_seconds_total{mode="user"|"system"}, larder_build_info{version} (always 1),
//   per command, label cmd: larder_command_calls_total, larder_command_failed_calls_total,
//   larder_command_rejected_calls_total (counters) and larder_command_duration_seconds
//   (histogram, buckets at 2^k microseconds from 16 us to 16.8 s; empty while
//   latency-tracking is off).
//
// Commands never called are left out. Each statistic is declared once, in its X-macro list or
// table; this file only names and types them.
#pragma once

#include <string>

#include "core/core.h"

namespace larder::server {

std::string PrometheusText(Core& core);

}  // namespace larder::server
