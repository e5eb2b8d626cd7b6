// What a command handler sees: the per-client state, the server-wide Core (engine, config,
// counters, client registry) and the reply writer of the command being executed.
//
// Threading contract: a client runs one command at a time, either on its connection's io
// thread or on an engine-pool thread; the connection touches ClientState only between
// commands. Fields read by other clients (CLIENT LIST/KILL) are guarded by ClientState::mu.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "commands/fair_shared_mutex.h"
#include "config/config.h"
#include "larder/store.h"
#include "resp/reply_writer.h"

namespace larder::server {

struct ClientState {
  uint64_t id = 0;
  std::string addr;   // "ip:port" or "path:0" for a unix socket (immutable)
  std::string laddr;  // local address (immutable)
  int fd = -1;
  bool unix_socket = false;
  // Replies may send values straight from their files (sendfile); false where the transport
  // cannot (e.g. TLS, which encrypts in user space).
  bool sendfile_ok = true;
  int64_t created_ms = 0;

  // Owned by the command in flight.
  bool authenticated = false;
  std::atomic<int> resp{2};  // 2 or 3 (HELLO); read by CLIENT LIST
  bool in_multi = false;
  bool multi_error = false;  // a command failed to queue: EXEC aborts
  std::vector<std::vector<std::string>> queued;
  bool close_after_reply = false;  // QUIT, SHUTDOWN, CLIENT KILL of oneself

  // Read by other clients; guarded by mu.
  mutable std::mutex mu;
  std::string name, lib_name, lib_ver, last_cmd;
  std::atomic<int64_t> last_active_ms{0};
  std::atomic<uint64_t> output_bytes{0};  // pending reply bytes (for CLIENT LIST)
};

// The connections, as the commands need them (implemented by the network layer).
class ClientRegistry {
 public:
  virtual ~ClientRegistry() = default;
  virtual size_t Count() const = 0;
  // Calls fn for every connected client (registry locked meanwhile; fn must not block).
  virtual void ForEach(const std::function<void(const ClientState&)>& fn) const = 0;
  // Closes the clients for which match returns true (after their current command); returns
  // how many.
  virtual size_t Kill(const std::function<bool(const ClientState&)>& match) = 0;
};

// Server-wide state shared by all commands. Thread-safe.
class Core {
 public:
  Core(Store* store, config::Config* config, ClientRegistry* clients);

  Store& store() { return *store_; }
  ClientRegistry& clients() { return *clients_; }
  void set_clients(ClientRegistry* clients) { clients_ = clients; }

  // A snapshot of the configuration in force (cheap: one shared_ptr copy).
  std::shared_ptr<const config::ServerConfig> cfg() const;
  // CONFIG GET/SET/REWRITE, serialised. Set returns the Redis error text on failure.
  std::vector<std::pair<std::string, std::string>> ConfigGet(std::string_view pattern);
  std::optional<std::string> ConfigSet(const std::vector<std::pair<std::string, std::string>>& p);
  std::optional<std::string> ConfigRewrite();

  // Bumped by every successful CONFIG SET: connections refresh cached snapshots when it moves.
  uint64_t config_generation() const { return config_gen_.load(std::memory_order_acquire); }

  // Taken shared by every command, exclusively by EXEC and read-modify-write commands.
  FairSharedMutex& exec_lock() { return exec_lock_; }

  // Asks the server to shut down (after the current command).
  void RequestShutdown() {
    if (on_shutdown) on_shutdown();
  }
  std::function<void()> on_shutdown;

  int64_t start_ms = 0;
  std::atomic<int64_t> lastsave_s{0};
  int tcp_port = 0;
  std::atomic<uint64_t> next_client_id{1};
  std::atomic<uint64_t> total_commands{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> net_input_bytes{0};
  std::atomic<uint64_t> net_output_bytes{0};
  void ResetStats();

 private:
  Store* store_;
  config::Config* config_;
  ClientRegistry* clients_;
  mutable std::mutex config_mu_;
  std::shared_ptr<const config::ServerConfig> snapshot_;
  std::atomic<uint64_t> config_gen_{0};
  FairSharedMutex exec_lock_;
};

// One command being executed.
struct Ctx {
  Core& core;
  ClientState& client;
  std::vector<std::string>& argv;
  resp::ReplyWriter& w;

  Store& store() { return core.store(); }
  size_t argc() const { return argv.size(); }
};

}  // namespace larder::server
