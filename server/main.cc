// larder-server: the Larder store served over the Redis protocol.
// Usage (like redis-server): larder-server [config-file] [--option value ...]
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands/context.h"
#include "commands/util.h"
#include "config/config.h"
#include "larder/store.h"
#include "log.h"
#include "net/server.h"

using larder::server::Log;
using larder::server::LogLevel;

namespace {

// Maps the engine part of the server configuration onto larder::Options.
larder::Options EngineOptions(const larder::config::ServerConfig& c) {
  larder::Options o;
  o.max_disk_bytes = c.max_disk_bytes;
  larder::ParseEvictionPolicy(c.eviction_policy, &o.eviction_policy);  // validated by Config
  o.max_reinsert_fraction = c.max_reinsert_fraction;
  o.generation_bytes = c.generation_bytes;
  o.wal = c.wal;
  o.sync_writes = c.wal_sync;
  o.memtable_bytes = c.memtable_bytes;
  o.evict_together = {{"kv_bytes", "metadata"}};  // LMCache's redis:// pair
  o.maintenance_interval_ms = static_cast<uint32_t>(c.maintenance_interval_ms);
  o.max_key_bytes = static_cast<uint32_t>(c.max_key_bytes);
  o.max_value_bytes = std::max<uint64_t>(o.max_value_bytes, c.proto_max_bulk_len);
  return o;
}

// Hooks for runtime-mutable options. Server-side ones are read from the config snapshot on
// use, so they need no hook. The engine's budget and policy are fixed while it is open, so
// the option table marks them startup-only (CONFIG SET answers "can't set immutable config").
void RegisterApplyHooks(larder::config::Config* config) {
  config->SetApplyFn("loglevel",
                     [](const larder::config::ServerConfig& c) -> std::optional<std::string> {
                       larder::server::SetLogLevel(larder::server::ParseLogLevel(c.loglevel));
                       return std::nullopt;
                     });
}

// Connections and the store's files (SST and blob files, WAL, MANIFEST, logs) share the
// process's open-files limit. Raises the soft RLIMIT_NOFILE towards maxclients + 1024 (at most
// the hard limit) and returns how many clients fit: maxclients, or fewer when the hard limit is
// lower (then the limit minus 1024, or half the limit if more, stays for the store).
struct FdBudget {
  int64_t clients = 0;
  uint64_t limit = 0;
};
FdBudget FitClientsToFdLimit(int64_t maxclients) {
  constexpr uint64_t kStoreFds = 1024;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return {maxclients, 0};
  const uint64_t want = static_cast<uint64_t>(maxclients) + kStoreFds;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<uint64_t>(want, rl.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  FdBudget b;
  b.limit = rl.rlim_cur == RLIM_INFINITY ? want : rl.rlim_cur;
  const uint64_t reserve = std::min<uint64_t>(kStoreFds, b.limit / 2);
  b.clients = static_cast<int64_t>(
      std::min<uint64_t>(static_cast<uint64_t>(maxclients), b.limit - reserve));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::printf("Usage: larder-server [/path/to/larder.conf] [--option value ...]\n");
    return 0;
  }
  if (!args.empty() && (args[0] == "-v" || args[0] == "--version")) {
    std::printf("larder-server v=%s (redis_version 7.2.0 compatible)\n", LARDER_VERSION);
    return 0;
  }
  larder::config::Config config;
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    if (auto err = config.LoadFile(args[0])) {
      std::fprintf(stderr, "larder-server: %s\n", err->c_str());
      return 1;
    }
    args.erase(args.begin());
  }
  if (auto err = config.ApplyArgs(args)) {
    std::fprintf(stderr, "larder-server: %s\n", err->c_str());
    return 1;
  }
  // A copy: CONFIG SET replaces config.values() while the server runs; main needs only the
  // startup values (listeners, pidfile, dir), which cannot change at runtime anyway.
  const larder::config::ServerConfig cfg = config.values();
  larder::server::SetLogLevel(larder::server::ParseLogLevel(cfg.loglevel));
  if (!larder::server::SetLogFile(cfg.logfile)) {
    std::fprintf(stderr, "larder-server: can't open the log file: %s\n", cfg.logfile.c_str());
    return 1;
  }
  if (cfg.daemonize && daemon(1, 0) != 0) {
    std::fprintf(stderr, "larder-server: daemonize failed\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  std::string where = config.file_path().empty() ? std::string(", no config file")
                                                 : ", config " + config.file_path();
  Log(LogLevel::kNotice, std::string("Larder ") + LARDER_VERSION +
                             " starting, pid=" + std::to_string(getpid()) + where);

  // Before the store opens its files: connections and store files share the open-files limit.
  FdBudget fds = FitClientsToFdLimit(cfg.maxclients);
  if (fds.clients < cfg.maxclients) {
    Log(LogLevel::kWarning,
        "maxclients " + std::to_string(cfg.maxclients) + " needs an open-files limit of at least " +
            std::to_string(cfg.maxclients + 1024) + ", the hard limit is " +
            std::to_string(fds.limit) + ": maxclients lowered to " + std::to_string(fds.clients) +
            " (raise `ulimit -Hn` / LimitNOFILE)");
    config.Set("maxclients", std::to_string(fds.clients));
  }

  auto opened = larder::Store::Open(EngineOptions(cfg), cfg.dir);
  if (!opened.ok()) {
    std::string hint;
    if (opened.status().IsCorruption()) {
      hint = " -- the data directory is damaged; `larder-admin --dir " + cfg.dir +
             " verify` lists what. It holds only cached data: move it away (or empty it) and "
             "start again";
    }
    Log(LogLevel::kWarning,
        "can't open the store in " + cfg.dir + ": " + opened.status().ToString() + hint);
    return 1;
  }
  std::unique_ptr<larder::Store> store = std::move(opened.value());
  larder::Stats st = store->GetStats();
  Log(LogLevel::kNotice, "store open in " + cfg.dir + ": " + std::to_string(st.keys) +
                             " keys, budget " + std::to_string(st.max_disk_bytes) + " bytes");

  RegisterApplyHooks(&config);
  int exit_code = 0;
  {
    larder::server::Core core(store.get(), &config, nullptr);
    core.start_ms = larder::server::NowMs();
    core.lastsave_s = core.start_ms / 1000;
    core.tcp_port = static_cast<int>(cfg.port);
    auto server = std::make_unique<larder::server::Server>(&core, cfg);
    core.set_clients(server.get());
    core.on_shutdown = [s = server.get()] { s->RequestStop(); };
    if (auto err = server->Listen()) {
      Log(LogLevel::kWarning, *err);
      exit_code = 1;
    } else {
      if (!cfg.pidfile.empty()) std::ofstream(cfg.pidfile) << getpid() << "\n";
      server->Start();
      std::string unix_note =
          cfg.unixsocket.empty() ? std::string() : " and unix socket " + cfg.unixsocket;
      Log(LogLevel::kNotice,
          "ready to accept connections on port " + std::to_string(cfg.port) + unix_note);
      server->WaitForStopRequest();
      Log(LogLevel::kNotice, "shutting down: finishing commands in flight");
      server->Stop();
    }
    server.reset();  // every connection (and every pinned value) is gone before the store closes
  }
  larder::Status s = store->Close();
  if (!s.ok()) {
    Log(LogLevel::kWarning, "closing the store: " + s.ToString());
    exit_code = 1;
  }
  if (!cfg.pidfile.empty()) ::unlink(cfg.pidfile.c_str());
  Log(LogLevel::kNotice,
      exit_code == 0 ? "Larder is now ready to exit, bye bye..." : "exiting on error");
  return exit_code;
}
