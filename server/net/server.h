// Server: listeners (TCP on every `bind` address, TLS on `tls-port` at the same addresses,
// optional unix socket), `io-threads` io_contexts serving connections round-robin, the
// `engine-threads` pool for blocking engine calls, the client registry (maxclients, CLIENT
// LIST/KILL, idle timeout) and graceful stop.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/server_config.h"
#include "core/client_registry.h"
#include "core/core.h"
#include "core/request_executor.h"
#include "log.h"
#include "net/tls_context.h"

namespace larder::server {

class Connection;

class Server : public ClientRegistry {
 public:
  // Serves requests with `executor`; `core` and `executor` must outlive the server. `cfg`
  // holds the startup values (listeners, threads).
  Server(Core& core, RequestExecutor& executor, const config::ServerConfig& cfg);
  ~Server() override;

  // Binds every listener; returns the error text (naming the address) on failure. With a
  // tls-port, SetTlsContext must have been called first.
  std::optional<std::string> Listen();
  // The context TLS connections accepted from now on handshake with (from any thread).
  void SetTlsContext(std::shared_ptr<TlsContext> ctx);
  // Starts the io threads and accepting; handles SIGINT/SIGTERM by requesting a stop.
  void Start();
  // Blocks until a stop is requested (signal or SHUTDOWN).
  void WaitForStopRequest();
  void RequestStop();
  // Graceful stop: stop accepting, let commands in flight finish, close clients, join threads.
  void Stop();
  // The io threads serving connections (config::ActiveIoThreads of the startup values).
  size_t io_threads() const { return ios_.size(); }

  // ClientRegistry.
  size_t Count() const override;
  void ForEach(const std::function<void(const ClientState&)>& fn) const override;
  size_t Kill(const std::function<bool(const ClientState&)>& match) override;

  // For connections.
  Core& core() { return core_; }
  RequestExecutor& executor() { return executor_; }
  asio::thread_pool& pool() { return pool_; }
  // Runs the engine-bound requests of a connection with more requests already buffered behind
  // them (a pipeline): throughput work, on threads at CPU nice `pipeline-nice`, so that when
  // cores are short the kernel runs single requests first. pool() when pipeline-nice is 0.
  asio::thread_pool& pipeline_pool() { return pipeline_pool_ ? *pipeline_pool_ : pool_; }
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  void Remove(uint64_t id);
  std::atomic<int64_t> inflight{0};

 private:
  void AcceptTcp(size_t i);
  // Opens a listener on `port` at every bind address (tls: the TLS port).
  std::optional<std::string> ListenTcpPort(int64_t port, bool tls);
  // Opens the unix socket listener with its unixsocketperm mode.
  std::optional<std::string> ListenUnixSocket();
  std::shared_ptr<TlsContext> TlsContextNow() const;
  void AcceptUnix();
  // After a failed accept (EMFILE, ENFILE, ENOBUFS, ...) the connection stays queued, so an
  // immediate retry would spin: retries `again` in 100 ms, warning at most once a second.
  void AcceptLater(const asio::error_code& ec, std::function<void()> again);
  // Admission checks, then registers and starts the connection. `same_host`: the peer runs on
  // this machine (a Unix socket, loopback, or one of our own addresses).
  // `tls`: accepted on the TLS port (refusals then close without a reply, which a TLS client
  // could not read).
  void Admit(asio::generic::stream_protocol::socket socket, bool is_unix, bool same_host, bool tls,
             std::string addr, std::string laddr);
  void ScheduleCron();
  asio::io_context& NextIo();

  Core& core_;
  RequestExecutor& executor_;
  std::atomic<uint64_t> next_client_id_{1};
  config::ServerConfig boot_cfg_;  // startup values (listeners, threads)
  std::vector<std::unique_ptr<asio::io_context>> ios_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  asio::thread_pool pool_;
  std::unique_ptr<asio::thread_pool> pipeline_pool_;  // null when pipeline-nice is 0
  struct TcpPort {
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
    bool tls = false;
  };
  std::vector<TcpPort> tcp_;
  mutable std::mutex tls_mu_;
  std::shared_ptr<TlsContext> tls_ctx_;  // null without a tls-port
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_;
  std::unique_ptr<asio::steady_timer> cron_;
  std::unique_ptr<asio::signal_set> signals_;
  std::atomic<size_t> next_io_{0};
  std::atomic<bool> stopping_{false};
  LogLimiter accept_warnings_{1000};  // one a second

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> conns_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
};

}  // namespace larder::server
