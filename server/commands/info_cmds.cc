// INFO [section ...]: Redis-format sections server, clients, memory, persistence, stats,
// replication, keyspace, and larder (every field of larder::Stats).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "commands/command_table.h"
#include "commands/util.h"

#ifndef LARDER_VERSION
#define LARDER_VERSION "0.1.0"
#endif

namespace larder::server {
namespace cmd {

namespace {

void Field(std::string* out, std::string_view name, const std::string& value) {
  out->append(name);
  out->push_back(':');
  out->append(value);
  out->append("\r\n");
}

void Field(std::string* out, std::string_view name, uint64_t value) {
  Field(out, name, std::to_string(value));
}

uint64_t RssBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0, rss = 0;
  int n = std::fscanf(f, "%lu %lu", &pages, &rss);
  std::fclose(f);
  return n == 2 ? rss * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

void Info(Ctx& ctx) {
  static const std::vector<std::string> kDefault = {
      "server", "clients", "memory", "persistence", "stats", "replication", "keyspace", "larder"};
  std::set<std::string> want;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string s = ToLower(ctx.argv[i]);
    if (s == "all" || s == "default" || s == "everything") {
      want.insert(kDefault.begin(), kDefault.end());
    } else {
      want.insert(s);
    }
  }
  if (want.empty()) want.insert(kDefault.begin(), kDefault.end());
  Core& core = ctx.core;
  Stats st = ctx.store().GetStats();
  auto cfg = core.cfg();
  int64_t now = NowMs();
  std::string out;
  auto section = [&](std::string_view name) {
    if (!want.count(std::string(name))) return false;
    if (!out.empty()) out += "\r\n";
    out += "# ";
    out += static_cast<char>(name[0] - 'a' + 'A');
    out += name.substr(1);
    out += "\r\n";
    return true;
  };
  if (section("server")) {
    Field(&out, "redis_version", std::string("7.2.0"));
    Field(&out, "larder_version", std::string(LARDER_VERSION));
    Field(&out, "redis_mode", std::string("standalone"));
    Field(&out, "os", std::string("Linux"));
    Field(&out, "arch_bits", uint64_t{64});
    Field(&out, "process_id", static_cast<uint64_t>(getpid()));
    Field(&out, "tcp_port", static_cast<uint64_t>(core.tcp_port));
    Field(&out, "uptime_in_seconds", static_cast<uint64_t>((now - core.start_ms) / 1000));
    Field(&out, "uptime_in_days", static_cast<uint64_t>((now - core.start_ms) / 86400000));
    Field(&out, "io_threads_active", static_cast<uint64_t>(cfg->io_threads));
    Field(&out, "executable", std::string("larder-server"));
  }
  if (section("clients")) {
    Field(&out, "connected_clients", static_cast<uint64_t>(core.clients().Count()));
    Field(&out, "maxclients", static_cast<uint64_t>(cfg->maxclients));
    Field(&out, "blocked_clients", uint64_t{0});
  }
  if (section("memory")) {
    uint64_t rss = RssBytes();
    Field(&out, "used_memory", rss);
    Field(&out, "used_memory_rss", rss);
    Field(&out, "maxmemory", st.max_disk_bytes);
    Field(&out, "maxmemory_policy", cfg->eviction_policy);
    Field(&out, "used_disk_bytes", st.disk_bytes);
    Field(&out, "pending_bytes", st.pending_bytes);
  }
  if (section("persistence")) {
    Field(&out, "loading", uint64_t{0});
    Field(&out, "rdb_changes_since_last_save", uint64_t{0});
    Field(&out, "rdb_bgsave_in_progress", uint64_t{0});
    Field(&out, "rdb_last_save_time", static_cast<uint64_t>(core.lastsave_s.load()));
    Field(&out, "rdb_last_bgsave_status", std::string("ok"));
    Field(&out, "aof_enabled", uint64_t{cfg->wal ? 1u : 0u});
  }
  if (section("stats")) {
    Field(&out, "total_connections_received", core.total_connections.load());
    Field(&out, "total_commands_processed", core.total_commands.load());
    Field(&out, "total_net_input_bytes", core.net_input_bytes.load());
    Field(&out, "total_net_output_bytes", core.net_output_bytes.load());
    Field(&out, "rejected_connections", core.rejected_connections.load());
    Field(&out, "expired_keys", st.expired_keys);
    Field(&out, "evicted_keys", st.evicted_keys);
    Field(&out, "keyspace_hits", st.hits);
    Field(&out, "keyspace_misses", st.misses);
  }
  if (section("replication")) {
    Field(&out, "role", std::string("master"));
    Field(&out, "connected_slaves", uint64_t{0});
    Field(&out, "master_failover_state", std::string("no-failover"));
    Field(&out, "master_repl_offset", uint64_t{0});
  }
  if (section("keyspace") && st.keys > 0) {
    Field(&out, "db0", "keys=" + std::to_string(st.keys) + ",expires=0,avg_ttl=0");
  }
  if (section("larder")) {
#define LARDER_INFO_STAT(name, doc) Field(&out, #name, st.name);
    LARDER_STATS(LARDER_INFO_STAT)
#undef LARDER_INFO_STAT
    Field(&out, "eviction_policy", cfg->eviction_policy);
  }
  ctx.w.Verbatim("txt", out);
}

}  // namespace cmd
}  // namespace larder::server
