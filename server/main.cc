// larder-server: the Larder store served over the Redis protocol.
// Usage (like redis-server): larder-server [config-file] [--option value ...]
//
// Start order: configuration, process set-up (log, daemon, signals, open-files limit), the
// command table's check, the store (with the server's clock), then the network layer. Stop
// order is the reverse, so every connection and pinned value is gone before the store closes.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/command_table.h"
#include "commands/dispatch.h"
#include "config/config.h"
#include "config/engine_options.h"
#include "core/core.h"
#include "core/prometheus_text.h"
#include "larder/store.h"
#include "log.h"
#include "net/metrics_endpoint.h"
#include "net/server.h"

namespace {

using larder::config::Config;
using larder::config::ServerConfig;
using larder::server::Log;
using larder::server::LogLevel;

constexpr int kExitOk = 0, kExitError = 1;

int Fail(const std::string& message) {
  std::fprintf(stderr, "larder-server: %s\n", message.c_str());
  return kExitError;
}

// Loads the config file (a first argument not starting with --) and the --option overrides.
// Returns the exit status when the process should stop here (--help, --version, an error).
std::optional<int> LoadConfig(std::vector<std::string> args, Config* config) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::printf("Usage: larder-server [/path/to/larder.conf] [--option value ...]\n");
    return kExitOk;
  }
  if (!args.empty() && (args[0] == "-v" || args[0] == "--version")) {
    std::printf("larder-server v=%s (redis_version 7.2.0 compatible)\n", LARDER_VERSION);
    return kExitOk;
  }
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    if (auto err = config->LoadFile(args[0])) return Fail(*err);
    args.erase(args.begin());
  }
  if (auto err = config->ApplyArgs(args)) return Fail(*err);
  return std::nullopt;
}

// The pid file, as Redis writes it; a failure is logged (the server runs on without it).
void WritePidFile(const std::string& path) {
  std::ofstream out(path);
  out << getpid() << "\n";
  out.flush();
  if (!out) Log(LogLevel::kWarning, "Failed to write PID file " + path + ": " + strerror(errno));
}

// Log level and file, daemon mode, SIGPIPE and SIGHUP (ignored, as Redis does: a closed
// terminal must not end the server without its shutdown). False (after saying why) on failure.
bool SetUpProcess(const ServerConfig& cfg, const std::string& config_path) {
  larder::server::SetLogLevel(larder::server::ParseLogLevel(cfg.loglevel));
  if (!larder::server::SetLogFile(cfg.logfile)) {
    Fail("can't open the log file: " + cfg.logfile);
    return false;
  }
  if (cfg.daemonize && daemon(1, 0) != 0) {
    Fail("daemonize failed");
    return false;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  std::string where = config_path.empty() ? ", no config file" : ", config " + config_path;
  Log(LogLevel::kNotice, std::string("Larder ") + LARDER_VERSION +
                             " starting, pid=" + std::to_string(getpid()) + where);
  return true;
}

// Connections and the store's files (SST and blob files, WAL, MANIFEST, logs) share the
// process's open-files limit. Raises the soft RLIMIT_NOFILE towards maxclients + 1024 (at most
// the hard limit) and returns how many clients then fit: the limit minus 1024, or half the limit
// if more, which stays for the store (`maxclients` when the limit cannot be read).
uint64_t ClientsTheFdLimitAllows(int64_t maxclients) {
  constexpr uint64_t kStoreFds = 1024;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return static_cast<uint64_t>(maxclients);
  const uint64_t want = static_cast<uint64_t>(maxclients) + kStoreFds;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<uint64_t>(want, rl.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  const uint64_t limit = rl.rlim_cur == RLIM_INFINITY ? want : rl.rlim_cur;
  return limit - std::min<uint64_t>(kStoreFds, limit / 2);
}

// At startup, lowers maxclients to what the open-files limit allows (with a warning). Runs
// before the store opens.
void FitMaxClientsToFdLimit(Config* config) {
  const int64_t maxclients = config->values().maxclients;
  const uint64_t fit = ClientsTheFdLimitAllows(maxclients);
  if (fit >= static_cast<uint64_t>(maxclients)) return;
  Log(LogLevel::kWarning, "maxclients " + std::to_string(maxclients) +
                              " does not fit the open-files limit with the descriptors the "
                              "store keeps (1024, or half a limit under 2048): maxclients "
                              "lowered to " +
                              std::to_string(fit) + " (raise `ulimit -Hn` / LimitNOFILE)");
  (void)config->Set("maxclients", std::to_string(fit));  // in [1, maxclients]: cannot fail
}

// Opens the store in cfg.dir on `clock`, telling `listener` of expiries and evictions; nullptr
// (after logging why) on failure.
std::unique_ptr<larder::Store> OpenStore(const ServerConfig& cfg,
                                         std::shared_ptr<larder::Clock> clock,
                                         std::shared_ptr<larder::EventListener> listener) {
  larder::Options options = larder::config::EngineOptions(cfg);
  options.clock = std::move(clock);
  options.listener = std::move(listener);
  auto opened = larder::Store::Open(options, cfg.dir);
  if (!opened.ok()) {
    std::string hint;
    if (opened.status().IsCorruption()) {
      hint = " -- the data directory is damaged; `larder-admin --dir " + cfg.dir +
             " verify` lists what. It holds only cached data: move it away (or empty it) and "
             "start again";
    }
    Log(LogLevel::kWarning, "can't open the store in " + cfg.dir + ": " +
                                larder::config::InOptionTerms(opened.status().ToString()) + hint);
    return nullptr;
  }
  std::unique_ptr<larder::Store> store = std::move(opened).value();
  larder::Stats st = store->GetStats();
  Log(LogLevel::kNotice, "store open in " + cfg.dir + ": " + std::to_string(st.keys) +
                             " keys, budget " + std::to_string(st.max_disk_bytes) + " bytes");
  return store;
}

// Hooks for runtime-mutable options. Server-side ones are read from the config snapshot on
// use, so they need no hook. The engine's options are fixed while it is open, so the option
// table marks them startup-only (CONFIG SET answers "can't set immutable config").
void RegisterApplyHooks(Config* config) {
  (void)config->SetApplyFn("loglevel", [](const ServerConfig& c) -> std::optional<std::string> {
    larder::server::SetLogLevel(larder::server::ParseLogLevel(c.loglevel));
    return std::nullopt;
  });
  // As Redis: more clients than the open-files limit allows are refused, naming what fits.
  (void)config->SetApplyFn("maxclients", [](const ServerConfig& c) -> std::optional<std::string> {
    const uint64_t fit = ClientsTheFdLimitAllows(c.maxclients);
    if (fit >= static_cast<uint64_t>(c.maxclients)) return std::nullopt;
    return "The operating system is not able to handle the specified number of clients, try "
           "with " +
           std::to_string(fit);
  });
}

// With a tls-port: gives `server` its TLS context, and makes CONFIG SET of any tls-* option but
// the port rebuild it for new connections (a change OpenSSL refuses is refused, naming why).
// Returns the error that stops the start.
std::optional<std::string> SetUpTls(Config* config, const ServerConfig& cfg,
                                    larder::server::Server& server) {
  if (cfg.tls_port == 0) return std::nullopt;
  auto ctx = larder::server::BuildTlsContext(cfg);
  if (!ctx.ok()) return ctx.status().message();
  server.SetTlsContext(std::move(ctx).value());
  auto rebuild = [&server](const ServerConfig& c) -> std::optional<std::string> {
    auto rebuilt = larder::server::BuildTlsContext(c);
    if (!rebuilt.ok()) return rebuilt.status().message();
    server.SetTlsContext(std::move(rebuilt).value());
    Log(LogLevel::kNotice, "TLS configuration reloaded; new connections use it");
    return std::nullopt;
  };
  for (const larder::config::Option& opt : larder::config::OptionTable()) {
    if (!opt.name.starts_with("tls-") || !opt.runtime_mutable) continue;
    if (auto err = config->SetApplyFn(opt.name, rebuild)) return err;
  }
  return std::nullopt;
}

// "port 6379, unix socket /run/larder.sock, TLS on port 6380, metrics on port 9121": what the
// server listens on, for its ready line.
std::string ListenersNote(const ServerConfig& cfg) {
  std::vector<std::string> parts;
  if (cfg.port != 0) parts.push_back("port " + std::to_string(cfg.port));
  if (!cfg.unixsocket.empty()) parts.push_back("unix socket " + cfg.unixsocket);
  if (cfg.tls_port != 0) parts.push_back("TLS on port " + std::to_string(cfg.tls_port));
  if (cfg.metrics_port != 0) parts.push_back("metrics on port " + std::to_string(cfg.metrics_port));
  std::string note;
  for (const std::string& p : parts) note += (note.empty() ? "" : ", ") + p;
  return note;
}

// Serves clients until SIGTERM/SIGINT or SHUTDOWN; returns the exit status.
int Serve(larder::Store& store, Config* config, const ServerConfig& cfg, const larder::Clock& clock,
          larder::server::EngineEventForwarder& engine_events) {
  larder::server::ConfigHolder config_holder(config);
  larder::server::ServerStats stats;
  larder::server::Core core(store, config_holder, stats, clock);
  engine_events.Attach(&core.events);
  struct Detach {
    larder::server::EngineEventForwarder& forwarder;
    ~Detach() { forwarder.Attach(nullptr); }  // the store outlives the Core
  } detach{engine_events};
  core.process.start_ms = clock.NowMs();
  core.process.lastsave_s = core.process.start_ms / 1000;
  core.process.tcp_port = cfg.port;
  core.process.config_file = config->file_path();  // absolute (LoadFile made it so)
  std::vector<std::string_view> command_names;
  for (const auto& spec : larder::server::CommandTable()) command_names.push_back(spec.name);
  core.commands.Init(command_names);
  if (cfg.cluster_enabled) {
    if (auto err = core.cluster.Enable(cfg.dir)) {
      Log(LogLevel::kWarning, "can't load the cluster topology: " + *err);
      return kExitError;
    }
  }
  larder::server::Dispatcher dispatcher(core);
  larder::server::Server server(core, dispatcher, cfg);
  core.clients = &server;
  core.process.io_threads = static_cast<int64_t>(server.io_threads());
  core.request_shutdown = [&server] { server.RequestStop(); };
  core.run_in_background = [&server](std::function<void()> job) {
    asio::post(server.pool(), std::move(job));
  };
  if (auto err = SetUpTls(config, cfg, server)) {
    Log(LogLevel::kWarning, "can't set up TLS: " + *err);
    return kExitError;
  }
  if (auto err = server.Listen()) {
    Log(LogLevel::kWarning, *err);
    return kExitError;
  }
  larder::server::MetricsEndpoint metrics([&core] { return larder::server::PrometheusText(core); });
  if (cfg.metrics_port != 0) {
    if (auto err = metrics.Listen(cfg.bind, static_cast<int>(cfg.metrics_port))) {
      Log(LogLevel::kWarning, *err);
      return kExitError;
    }
    metrics.Start();
  }
  if (!cfg.pidfile.empty()) WritePidFile(cfg.pidfile);
  server.Start();
  Log(LogLevel::kNotice, "ready to accept connections on " + ListenersNote(cfg));
  server.WaitForStopRequest();
  Log(LogLevel::kNotice, "shutting down: finishing commands in flight");
  server.Stop();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  if (auto exit_now = LoadConfig({argv + 1, argv + argc}, &config)) return *exit_now;
  // A copy: CONFIG SET replaces config.values() while the server runs; main needs only the
  // startup values (listeners, pidfile, dir), which cannot change at runtime anyway.
  const ServerConfig cfg = config.values();
  if (!SetUpProcess(cfg, config.file_path())) return kExitError;
  if (auto err = larder::server::CommandTableError()) return Fail("command table: " + *err);
  FitMaxClientsToFdLimit(&config);

  std::shared_ptr<larder::Clock> clock = larder::SystemClock();  // the server's one clock
  auto engine_events = std::make_shared<larder::server::EngineEventForwarder>();
  std::unique_ptr<larder::Store> store = OpenStore(config.values(), clock, engine_events);
  if (!store) return kExitError;
  RegisterApplyHooks(&config);
  int exit_code = Serve(*store, &config, cfg, *clock, *engine_events);
  larder::Status s = store->Close();
  if (!s.ok()) {
    Log(LogLevel::kWarning, "closing the store: " + s.ToString());
    exit_code = kExitError;
  }
  if (!cfg.pidfile.empty()) ::unlink(cfg.pidfile.c_str());
  Log(LogLevel::kNotice,
      exit_code == 0 ? "Larder is now ready to exit, bye bye..." : "exiting on error");
  return exit_code;
}
