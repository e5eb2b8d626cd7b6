#include "net/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <latch>

#include "log.h"
#include "net/connection.h"
#include "net/tcp_listener.h"

namespace larder::server {

namespace {

constexpr std::string_view kDenied =
    "-DENIED Redis is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. If you want to connect from external computers to Redis you may "
    "adopt one of the following solutions: 1) Just disable protected mode sending the command "
    "'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
    "the same host the server is running, however MAKE SURE Redis is not publicly accessible "
    "from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    "Alternatively you can just disable the protected mode by editing the Redis configuration "
    "file, and setting the protected mode option to 'no', and then restarting the server. 3) "
    "If you started the server manually just for testing, restart it with the "
    "'--protected-mode no' option. 4) Set up an authentication password for the default "
    "user. NOTE: You only need to do one of the above things in order for the server to start "
    "accepting connections from the outside.\r\n";

std::string EndpointText(const asio::ip::tcp::endpoint& ep) {
  std::string a = ep.address().to_string();
  if (ep.address().is_v6()) a = "[" + a + "]";  // unambiguous (Redis omits the brackets)
  return a + ":" + std::to_string(ep.port());
}

bool IsLoopback(const asio::ip::address& a) {
  if (a.is_loopback()) return true;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return false;
}

// Writes a final error line (unless empty) and closes (admission refusals).
void Refuse(asio::generic::stream_protocol::socket& socket, std::string_view line) {
  asio::error_code ignored;
  if (!line.empty()) asio::write(socket, asio::buffer(line.data(), line.size()), ignored);
  socket.close(ignored);
}

// Runs setup(i) once on each of the n threads of pool, before any other job: every job
// blocks on the latch until all n have started, so each thread runs exactly one. The jobs
// share the latch: a thread may still be leaving arrive_and_wait() after the last arrival
// has released the caller.
void SetUpPoolThreads(asio::thread_pool& pool, size_t n, const std::function<void(size_t)>& setup) {
  auto started = std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < n; ++i) {
    asio::post(pool, [started, setup, i] {
      setup(i);
      started->arrive_and_wait();
    });
  }
  started->wait();
}

// Thread names as `top -H` and /proc/<pid>/task/*/comm show them (at most 15 bytes).
void NameThisThread(const std::string& name) {
  ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace

Server::Server(Core& core, RequestExecutor& executor, const config::ServerConfig& cfg)
    : core_(core),
      executor_(executor),
      boot_cfg_(cfg),
      pool_(static_cast<size_t>(cfg.engine_threads)) {
  for (int64_t i = 0, n = config::ActiveIoThreads(cfg); i < n; ++i) {
    // Run by one thread, but no concurrency hint of 1: with it, Asio queues a handler posted
    // from the io thread itself (a message an inline command published) apart from those
    // posted by other threads, and runs it after them, out of the order they were posted in.
    ios_.push_back(std::make_unique<asio::io_context>());
    guards_.push_back(asio::make_work_guard(*ios_.back()));
  }
  size_t n = static_cast<size_t>(cfg.engine_threads);
  SetUpPoolThreads(pool_, n, [](size_t i) { NameThisThread("engine-" + std::to_string(i)); });
  if (cfg.pipeline_nice > 0) {
    pipeline_pool_ = std::make_unique<asio::thread_pool>(n);
    // The nice value is per thread on Linux; raising it needs no privilege.
    int nice = static_cast<int>(cfg.pipeline_nice);
    SetUpPoolThreads(*pipeline_pool_, n, [nice](size_t i) {
      NameThisThread("pipeline-" + std::to_string(i));
      if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
        Log(LogLevel::kWarning, "pipeline-nice: could not lower the priority of a thread");
      }
    });
  }
}

Server::~Server() {
  if (!threads_.empty()) Stop();
}

std::optional<std::string> Server::ListenTcpPort(int64_t port, bool tls) {
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors;
  std::vector<std::string> skipped;
  auto err = ListenOnBind(*ios_[0], boot_cfg_.bind, static_cast<int>(port),
                          static_cast<int>(boot_cfg_.tcp_backlog), tls ? " (TLS)" : "", &acceptors,
                          &skipped);
  for (const std::string& ip : skipped) {
    Log(LogLevel::kNotice, "bind -" + ip + ": this machine has no such address; skipped");
  }
  for (auto& acceptor : acceptors) tcp_.push_back({std::move(acceptor), tls});
  return err;
}

void Server::SetTlsContext(std::shared_ptr<TlsContext> ctx) {
  std::lock_guard<std::mutex> lock(tls_mu_);
  tls_ctx_ = std::move(ctx);
}

std::shared_ptr<TlsContext> Server::TlsContextNow() const {
  std::lock_guard<std::mutex> lock(tls_mu_);
  return tls_ctx_;
}

// The unix socket takes its mode before it listens: no client can connect while the file still
// has the umask's mode. It is made before the TCP ports, so that a client that can connect over
// TCP finds it in place.
std::optional<std::string> Server::ListenUnixSocket() {
  const std::string& path = boot_cfg_.unixsocket;
  ::unlink(path.c_str());
  asio::error_code ec;
  auto acc = std::make_unique<asio::local::stream_protocol::acceptor>(*ios_[0]);
  asio::local::stream_protocol::endpoint ep(path);
  acc->open(ep.protocol(), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec && boot_cfg_.unixsocketperm != 0 &&
      ::chmod(path.c_str(), static_cast<mode_t>(boot_cfg_.unixsocketperm)) != 0) {
    return "could not chmod unix socket " + path;
  }
  if (!ec) acc->listen(static_cast<int>(boot_cfg_.tcp_backlog), ec);
  if (ec) return "could not listen on unix socket " + path + ": " + ec.message();
  unix_ = std::move(acc);
  return std::nullopt;
}

std::optional<std::string> Server::Listen() {
  if (!boot_cfg_.unixsocket.empty()) {
    if (auto err = ListenUnixSocket()) return err;
  }
  if (boot_cfg_.port != 0) {
    if (auto err = ListenTcpPort(boot_cfg_.port, false)) return err;
  }
  if (boot_cfg_.tls_port != 0) {
    if (!TlsContextNow())
      return "tls-port " + std::to_string(boot_cfg_.tls_port) + ": no TLS context";
    if (auto err = ListenTcpPort(boot_cfg_.tls_port, true)) return err;
  }
  if (tcp_.empty() && !unix_) {
    return "nothing to listen on: no TCP listener (port and tls-port 0, or every bind address "
           "optional and absent) and no unixsocket";
  }
  return std::nullopt;
}

void Server::Start() {
  signals_ = std::make_unique<asio::signal_set>(*ios_[0], SIGINT, SIGTERM);
  signals_->async_wait([this](const asio::error_code& ec, int sig) {
    if (ec) return;
    Log(LogLevel::kWarning, std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                " scheduling shutdown...");
    RequestStop();
  });
  for (size_t i = 0; i < tcp_.size(); ++i) AcceptTcp(i);
  if (unix_) AcceptUnix();
  cron_ = std::make_unique<asio::steady_timer>(*ios_[0]);
  ScheduleCron();
  for (size_t i = 0; i < ios_.size(); ++i) {
    threads_.emplace_back([ctx = ios_[i].get(), i] {
      NameThisThread("io-" + std::to_string(i));
      ctx->run();
    });
  }
}

asio::io_context& Server::NextIo() {
  return *ios_[next_io_.fetch_add(1, std::memory_order_relaxed) % ios_.size()];
}

void Server::AcceptTcp(size_t i) {
  tcp_[i].acceptor->async_accept(NextIo(), [this, i](const asio::error_code& ec,
                                                     asio::ip::tcp::socket socket) {
    if (stopping()) return;
    if (!ec) {
      asio::error_code e2;
      socket.set_option(asio::ip::tcp::no_delay(true), e2);
      int64_t keepalive = core_.config.snapshot()->tcp_keepalive;
      if (keepalive > 0) {
        socket.set_option(asio::socket_base::keep_alive(true), e2);
        int secs = static_cast<int>(keepalive);
        ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof(secs));
        int intvl = std::max(1, secs / 3);
        ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        int probes = 3;  // as Redis: a dead peer is found about 2 * secs after it went silent
        ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
      }
      auto remote = socket.remote_endpoint(e2);
      auto local = socket.local_endpoint(e2);
      auto cfg = core_.config.snapshot();
      bool denied =
          !e2 && cfg->protected_mode && cfg->requirepass.empty() && !IsLoopback(remote.address());
      asio::generic::stream_protocol::socket gs(std::move(socket));
      const bool tls = tcp_[i].tls;
      if (e2) {
        asio::error_code ignored;
        gs.close(ignored);
      } else if (denied) {
        ServerStats::Count(core_.stats.rejected_connections);
        Log(LogLevel::kWarning,
            "refused connection from " + EndpointText(remote) + " (protected mode)");
        Refuse(gs, tls ? "" : kDenied);
      } else {
        const bool same_host = IsLoopback(remote.address()) || remote.address() == local.address();
        Admit(std::move(gs), false, same_host, tls, EndpointText(remote), EndpointText(local));
      }
    } else if (ec == asio::error::operation_aborted) {
      return;
    } else {
      AcceptLater(ec, [this, i] { AcceptTcp(i); });
      return;
    }
    AcceptTcp(i);
  });
}

void Server::AcceptUnix() {
  unix_->async_accept(NextIo(), [this](const asio::error_code& ec,
                                       asio::local::stream_protocol::socket socket) {
    if (stopping()) return;
    if (!ec) {
      asio::generic::stream_protocol::socket gs(std::move(socket));
      Admit(std::move(gs), true, true, false, boot_cfg_.unixsocket + ":0", boot_cfg_.unixsocket);
    } else if (ec == asio::error::operation_aborted) {
      return;
    } else {
      AcceptLater(ec, [this] { AcceptUnix(); });
      return;
    }
    AcceptUnix();
  });
}

void Server::AcceptLater(const asio::error_code& ec, std::function<void()> again) {
  if (accept_warnings_.Due(core_.NowMs())) {
    Log(LogLevel::kWarning, "accept: " + ec.message() +
                                " (retrying every 100 ms; raise the open-files limit or lower "
                                "maxclients)");
  }
  auto timer = std::make_shared<asio::steady_timer>(*ios_[0], std::chrono::milliseconds(100));
  timer->async_wait([this, timer, again = std::move(again)](const asio::error_code& e) {
    if (!e && !stopping()) again();
  });
}

void Server::Admit(asio::generic::stream_protocol::socket socket, bool is_unix, bool same_host,
                   bool tls, std::string addr, std::string laddr) {
  auto cfg = core_.config.snapshot();
  if (Count() >= static_cast<size_t>(cfg->maxclients)) {
    ServerStats::Count(core_.stats.rejected_connections);
    Refuse(socket, tls ? "" : "-ERR max number of clients reached\r\n");
    return;
  }
  ServerStats::Count(core_.stats.total_connections_received);
  auto state = std::make_shared<ClientState>();
  state->id = next_client_id_.fetch_add(1);
  state->addr = std::move(addr);
  state->laddr = std::move(laddr);
  state->fd = socket.native_handle();
  state->unix_socket = is_unix;
  state->same_host = same_host;
  state->created_ms = core_.NowMs();
  state->last_active_ms = state->created_ms;
  state->authenticated = cfg->requirepass.empty();
  auto conn = std::make_shared<Connection>(*this, std::move(socket), state,
                                           tls ? TlsContextNow() : nullptr);
  state->push = Connection::PushSinkOf(conn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns_[state->id] = conn;
  }
  Log(LogLevel::kVerbose, "accepted " + state->addr + " id=" + std::to_string(state->id));
  conn->Start();
}

void Server::ScheduleCron() {
  cron_->expires_after(std::chrono::seconds(1));
  cron_->async_wait([this](const asio::error_code& ec) {
    if (ec || stopping()) return;
    int64_t now = core_.NowMs();
    core_.stats.SampleRates(now);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, weak] : conns_) {
        if (auto c = weak.lock()) c->Cron(now);
      }
    }
    ScheduleCron();
  });
}

void Server::RequestStop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

void Server::WaitForStopRequest() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  stop_cv_.wait(lock, [this] { return stop_requested_; });
}

void Server::Stop() {
  if (threads_.empty()) return;
  stopping_ = true;
  // Stop accepting (on the acceptors' thread).
  std::promise<void> closed;
  asio::post(*ios_[0], [this, &closed] {
    asio::error_code ignored;
    for (auto& l : tcp_) l.acceptor->close(ignored);
    if (unix_) unix_->close(ignored);
    if (cron_) cron_->cancel();
    if (signals_) signals_->cancel(ignored);
    closed.set_value();
  });
  closed.get_future().wait();
  if (!boot_cfg_.unixsocket.empty()) ::unlink(boot_cfg_.unixsocket.c_str());
  // Let commands in flight finish (their replies are still delivered), then close clients.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (inflight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Deliver the replies already produced (bounded), then close whoever is left.
  {
    std::vector<std::shared_ptr<Connection>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, weak] : conns_) {
        if (auto c = weak.lock()) all.push_back(std::move(c));
      }
    }
    for (auto& c : all) c->Drain();
  }
  auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (Count() > 0 && std::chrono::steady_clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill([](const ClientState&) { return true; });
  pool_.join();
  if (pipeline_pool_) pipeline_pool_->join();
  for (auto& g : guards_) g.reset();
  for (auto& io : ios_) io->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

size_t Server::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

void Server::ForEach(const std::function<void(const ClientState&)>& fn) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, weak] : conns_) {
    if (auto c = weak.lock()) fn(c->state());
  }
}

size_t Server::Kill(const std::function<bool(const ClientState&)>& match) {
  std::vector<std::shared_ptr<Connection>> victims;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, weak] : conns_) {
      auto c = weak.lock();
      if (c && match(c->state())) victims.push_back(std::move(c));
    }
  }
  for (auto& c : victims) c->Kill();
  return victims.size();
}

void Server::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  conns_.erase(id);
}

}  // namespace larder::server
