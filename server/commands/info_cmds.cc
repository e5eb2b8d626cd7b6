// INFO [section ...]: Redis-format sections, each a row of kSections beside the function that
// writes it; the counters come from the X-macro lists (core/server_stats.h for the server's,
// larder/stats_fields.h for the engine's).
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <set>

#include "commands/families.h"
#include "commands/util.h"
#include "core/process_usage.h"

namespace larder::server {

namespace {

// What the sections are written from: one snapshot per INFO call.
struct InfoInput {
  Core& core;
  const Stats& engine;
  const config::ServerConfig& cfg;
  int64_t now_ms;
};

void Field(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->push_back(':');
  out->append(value);
  out->append("\r\n");
}

void Field(std::string* out, std::string_view name, uint64_t value) {
  Field(out, name, std::to_string(value));
}

// Bytes per second as Redis's *_kbps fields: KiB/s with two decimals.
std::string Kbps(uint64_t bytes_per_second) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(bytes_per_second) / 1024.0);
  return buf;
}

// A byte count as Redis's *_human fields print it: "1023B", "1.50K", "2.00M", ... "1.00P".
std::string HumanBytes(uint64_t bytes) {
  constexpr const char* kUnits = "KMGTP";
  if (bytes < 1024) return std::to_string(bytes) + "B";
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  for (; unit < 4 && value >= 1024.0; ++unit) value /= 1024.0;
  if (value >= 1024.0) return std::to_string(bytes) + "B";  // 1024 PiB and more, as Redis
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%c", value, kUnits[unit]);
  return buf;
}

// A byte count and its *_human twin.
void BytesField(std::string* out, std::string_view name, uint64_t bytes) {
  Field(out, name, bytes);
  Field(out, std::string(name) + "_human", HumanBytes(bytes));
}

void WriteServer(const InfoInput& in, std::string* out) {
  const uint64_t uptime_ms = static_cast<uint64_t>(in.now_ms - in.core.process.start_ms);
  Field(out, "redis_version", "7.2.0");
  Field(out, "larder_version", LARDER_VERSION);
  Field(out, "redis_mode", in.core.cluster.enabled() ? "cluster" : "standalone");
  Field(out, "os", "Linux");
  Field(out, "arch_bits", uint64_t{64});
  Field(out, "process_id", static_cast<uint64_t>(getpid()));
  Field(out, "run_id", in.core.process.run_id);
  Field(out, "tcp_port", static_cast<uint64_t>(in.core.process.tcp_port));
  Field(out, "server_time_usec", static_cast<uint64_t>(in.now_ms) * 1000);
  Field(out, "uptime_in_seconds", uptime_ms / 1000);
  Field(out, "uptime_in_days", uptime_ms / 86400000);
  Field(out, "io_threads_active", static_cast<uint64_t>(in.core.process.io_threads));
  Field(out, "executable", "larder-server");
  Field(out, "config_file", in.core.process.config_file);
}

void WriteClients(const InfoInput& in, std::string* out) {
  Field(out, "connected_clients", static_cast<uint64_t>(in.core.clients->Count()));
  Field(out, "maxclients", static_cast<uint64_t>(in.cfg.maxclients));
  Field(out, "blocked_clients", uint64_t{0});
  Field(out, "tracking_clients", static_cast<uint64_t>(in.core.tracking.clients()));
  // As Redis 7.4 names them.
  Field(out, "watching_clients", static_cast<uint64_t>(in.core.watched.clients()));
  Field(out, "total_watched_keys", static_cast<uint64_t>(in.core.watched.keys()));
}

void WriteMemory(const InfoInput& in, std::string* out) {
  // used_memory: the server's own resident memory; used_memory_rss also counts the value files'
  // pages that reads mapped (page cache, see MEMORY PURGE).
  const ResidentMemory rss = ReadResidentMemory();
  BytesField(out, "used_memory", rss.own());
  BytesField(out, "used_memory_rss", rss.total);
  BytesField(out, "total_system_memory", TotalSystemMemory());
  BytesField(out, "maxmemory", in.engine.max_disk_bytes);
  Field(out, "maxmemory_policy", in.cfg.eviction_policy);
  Field(out, "used_disk_bytes", in.engine.disk_bytes);
  Field(out, "pending_bytes", in.engine.pending_bytes);
}

void WritePersistence(const InfoInput& in, std::string* out) {
  Field(out, "loading", uint64_t{0});
  Field(out, "rdb_changes_since_last_save", uint64_t{0});
  Field(out, "rdb_bgsave_in_progress", uint64_t{0});
  Field(out, "rdb_last_save_time", static_cast<uint64_t>(in.core.process.lastsave_s.load()));
  Field(out, "rdb_last_bgsave_status", "ok");
  Field(out, "aof_enabled", uint64_t{in.cfg.wal ? 1u : 0u});
}

// The server's counters, then the engine's that Redis clients look for, under Redis's names.
void WriteStats(const InfoInput& in, std::string* out) {
#define LARDER_INFO_SERVER_STAT(name, doc) Field(out, #name, in.core.stats.name.load());
  LARDER_SERVER_STATS(LARDER_INFO_SERVER_STAT)
#undef LARDER_INFO_SERVER_STAT
  Field(out, "instantaneous_ops_per_sec", in.core.stats.ops_rate.PerSecond());
  Field(out, "instantaneous_input_kbps", Kbps(in.core.stats.input_rate.PerSecond()));
  Field(out, "instantaneous_output_kbps", Kbps(in.core.stats.output_rate.PerSecond()));
  Field(out, "expired_keys", in.engine.expired_keys);
  Field(out, "evicted_keys", in.engine.evicted_keys);
  Field(out, "keyspace_hits", in.engine.hits);
  Field(out, "keyspace_misses", in.engine.misses);
  Field(out, "pubsub_channels", static_cast<uint64_t>(in.core.pubsub.NumChannels()));
  Field(out, "pubsub_patterns", static_cast<uint64_t>(in.core.pubsub.NumPat()));
  Field(out, "pubsubshard_channels", uint64_t{0});  // no sharded Pub/Sub
  Field(out, "tracking_total_keys", static_cast<uint64_t>(in.core.tracking.keys()));
  Field(out, "tracking_total_items", static_cast<uint64_t>(in.core.tracking.items()));
  Field(out, "tracking_total_prefixes", static_cast<uint64_t>(in.core.tracking.prefixes()));
  Field(out, "unexpected_error_replies", uint64_t{0});  // Redis's count of replication errors
}

// Error replies by code, as Redis's errorstat_<CODE> lines.
void WriteErrorStats(const InfoInput& in, std::string* out) {
  for (const auto& [code, count] : in.core.errors.Snapshot()) {
    Field(out, "errorstat_" + code, "count=" + std::to_string(count));
  }
}

// CPU seconds of the process and of its waited-for children, as Redis prints them.
void WriteCpu(const InfoInput&, std::string* out) {
  auto seconds = [](const timeval& t) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(t.tv_sec),
                  static_cast<long>(t.tv_usec));
    return std::string(buf);
  };
  const CpuTime self = CpuTimeOf(RUSAGE_SELF), children = CpuTimeOf(RUSAGE_CHILDREN);
  Field(out, "used_cpu_sys", seconds(self.system));
  Field(out, "used_cpu_user", seconds(self.user));
  Field(out, "used_cpu_sys_children", seconds(children.system));
  Field(out, "used_cpu_user_children", seconds(children.user));
}

void WriteReplication(const InfoInput&, std::string* out) {
  Field(out, "role", "master");
  Field(out, "connected_slaves", uint64_t{0});
  Field(out, "master_failover_state", "no-failover");
  Field(out, "master_repl_offset", uint64_t{0});
}

void WriteKeyspace(const InfoInput& in, std::string* out) {
  if (in.engine.keys == 0) return;
  Field(out, "db0",
        "keys=" + std::to_string(in.engine.keys) +
            ",expires=" + std::to_string(in.engine.expiring_keys) +
            ",avg_ttl=" + std::to_string(in.engine.avg_ttl));
}

// Per command: calls, time and outcomes, as Redis's cmdstat_<name> lines.
void WriteCommandStats(const InfoInput& in, std::string* out) {
  const CommandStatsTable& table = in.core.commands;
  for (size_t id = 0; id < table.size(); ++id) {
    const CommandStats& s = table.at(id);
    const uint64_t calls = s.calls.load(), rejected = s.rejected_calls.load();
    const uint64_t failed = s.failed_calls.load(), usec = s.usec.load();
    if (calls == 0 && rejected == 0 && failed == 0) continue;
    char per_call[32];
    std::snprintf(per_call, sizeof(per_call), "%.2f",
                  calls == 0 ? 0.0 : static_cast<double>(usec) / static_cast<double>(calls));
    Field(out, "cmdstat_" + std::string(table.name(id)),
          "calls=" + std::to_string(calls) + ",usec=" + std::to_string(usec) +
              ",usec_per_call=" + per_call + ",rejected_calls=" + std::to_string(rejected) +
              ",failed_calls=" + std::to_string(failed));
  }
}

// Per command: the latency-tracking-info-percentiles of its histogram, in microseconds.
void WriteLatencyStats(const InfoInput& in, std::string* out) {
  const CommandStatsTable& table = in.core.commands;
  for (size_t id = 0; id < table.size(); ++id) {
    const LatencyHistogram& h = table.at(id).latency;
    if (h.count() == 0) continue;
    std::string value;
    for (double p : in.cfg.latency_tracking_info_percentiles) {
      char label[32];
      auto end = std::to_chars(label, label + sizeof(label), p).ptr;
      value += (value.empty() ? "p" : ",p") + std::string(label, end) + "=" +
               FormatUsec(static_cast<double>(h.Quantile(p / 100.0)));
    }
    Field(out, "latency_percentiles_usec_" + std::string(table.name(id)), value);
  }
}

// Every engine statistic under its own name.
void WriteLarder(const InfoInput& in, std::string* out) {
#define LARDER_INFO_ENGINE_STAT(name, doc) Field(out, #name, in.engine.name);
  LARDER_STATS(LARDER_INFO_ENGINE_STAT)
#undef LARDER_INFO_ENGINE_STAT
  Field(out, "eviction_policy", in.cfg.eviction_policy);
}

void WriteCluster(const InfoInput& in, std::string* out) {
  Field(out, "cluster_enabled", in.core.cluster.enabled() ? "1" : "0");
}

// Larder has no modules: the section is there, empty, as in a Redis that loaded none.
void WriteModules(const InfoInput&, std::string*) {}

struct Section {
  std::string_view name;   // what INFO's arguments name, lowercase
  std::string_view title;  // its header, as Redis prints it ("# CPU")
  void (*write)(const InfoInput& in, std::string* out);
  bool in_default;  // printed by INFO and INFO default; all sections are in all / everything
};

// In Redis's order; commandstats and latencystats only when asked for, as in Redis.
constexpr Section kSections[] = {
    {"server", "Server", WriteServer, true},
    {"clients", "Clients", WriteClients, true},
    {"memory", "Memory", WriteMemory, true},
    {"persistence", "Persistence", WritePersistence, true},
    {"stats", "Stats", WriteStats, true},
    {"replication", "Replication", WriteReplication, true},
    {"cpu", "CPU", WriteCpu, true},
    {"modules", "Modules", WriteModules, true},
    {"commandstats", "Commandstats", WriteCommandStats, false},
    {"errorstats", "Errorstats", WriteErrorStats, true},
    {"latencystats", "Latencystats", WriteLatencyStats, false},
    {"cluster", "Cluster", WriteCluster, true},
    {"keyspace", "Keyspace", WriteKeyspace, true},
    {"larder", "Larder", WriteLarder, true},
};

// The sections INFO's arguments ask for (the default ones when none); unknown names select
// nothing, as in Redis.
std::set<std::string> WantedSections(const Ctx& ctx) {
  std::set<std::string> want;
  bool defaults = ctx.argc() == 1, all = false;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string name = ToLower(ctx.argv[i]);
    defaults = defaults || name == "default";
    all = all || name == "all" || name == "everything";
    want.insert(std::move(name));
  }
  for (const Section& s : kSections) {
    if (all || (defaults && s.in_default)) want.emplace(s.name);
  }
  return want;
}

void Info(Ctx& ctx) {
  const std::set<std::string> want = WantedSections(ctx);
  const Stats engine = ctx.store().GetStats();
  const auto cfg = ctx.core.config.snapshot();
  const InfoInput in{ctx.core, engine, *cfg, ctx.NowMs()};
  std::string out;
  for (const Section& s : kSections) {
    if (!want.count(std::string(s.name))) continue;
    if (!out.empty()) out += "\r\n";
    out += "# " + std::string(s.title) + "\r\n";
    s.write(in, &out);
  }
  ctx.w.Verbatim("txt", out);
}

constexpr CommandRow kRows[] = {
    {"info", -1, "loading stale", kNoKeys, Info},
};

}  // namespace

std::span<const CommandRow> InfoCommands() {
  return kRows;
}

}  // namespace larder::server
