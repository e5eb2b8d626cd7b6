#include "net/connection.h"

#include <strings.h>

#include <cstring>
#include <utility>

#include "log.h"
#include "net/server.h"

namespace larder::server {

Connection::Connection(Server& server, Socket socket, std::shared_ptr<ClientState> state,
                       std::shared_ptr<TlsContext> tls)
    : server_(server),
      socket_(std::move(socket)),
      tls_ctx_(std::move(tls)),
      state_(std::move(state)),
      inbuf_(kReadBufferBytes),
      hold_timer_(socket_.get_executor()) {
  bufs_.reserve(kMaxIov);
  if (tls_ctx_) tls_ = std::make_unique<asio::ssl::stream<Socket&>>(socket_, *tls_ctx_);
  w_.set_error_listener(&server_.core().errors);
  // Non-blocking at the descriptor, for the writes made outside Asio (sendmsg, sendfile).
  asio::error_code ignored;
  socket_.native_non_blocking(true, ignored);
}

Connection::~Connection() {
  // Normally done by CloseNow; this covers a subscription a pool job made as it closed.
  server_.core().Disconnected(*state_, Core::FailedImportKeys::kKeep);
  SharedReserve().Give(read_ahead_reserved_);
}

// The bytes big bulks reserve ahead of their bodies, over all connections: at most
// client-query-buffer-limit; paused connections' read-ahead counts in it while it has room
// (static: a parser may outlive the Server).
resp::ReserveAheadPool& Connection::SharedReserve() {
  static resp::ReserveAheadPool pool;
  return pool;
}

namespace {

class ConnectionPushSink final : public PushSink {
 public:
  explicit ConnectionPushSink(std::weak_ptr<Connection> conn) : conn_(std::move(conn)) {}
  void Push(std::shared_ptr<const std::string> frame) override {
    if (auto conn = conn_.lock()) conn->Push(std::move(frame));
  }

 private:
  std::weak_ptr<Connection> conn_;
};

}  // namespace

std::shared_ptr<PushSink> Connection::PushSinkOf(const std::shared_ptr<Connection>& conn) {
  return std::make_shared<ConnectionPushSink>(conn);
}

void Connection::Push(std::shared_ptr<const std::string> frame) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), frame = std::move(frame)] {
    if (self->closed_) return;
    std::string_view bytes = *frame;
    // Published before the command that left the mode (UNSUBSCRIBE, PUNSUBSCRIBE, RESET) but
    // delivered after its reply: in Redis it would have come first. Dropped, or a RESP2 client
    // back in normal mode would read it as the reply to its next command; a RESP3 client reads
    // a push apart from replies, and gets it (RESET returns it to RESP2). A MONITOR line stays
    // a simple string in RESP3, so one is dropped whenever MONITOR ended (only RESET ends it).
    const bool message = bytes.starts_with('*');
    const bool push = self->state_->resp == 3 && message;
    if (!(message ? push || self->state_->subscribed() : self->state_->monitor.load())) return;
    self->pushed_.Append(push ? ">" : bytes.substr(0, 1));
    self->pushed_.Append(bytes.substr(1));
    if (self->busy_) {
      // The pool job may be writing to the socket: held for after its reply, and bounded by
      // the output limit meanwhile, as every message is.
      if (self->OverHardLimit(self->pushed_.bytes())) {
        self->CloseForOutputLimit("reached the output buffer limit");
      }
      return;
    }
    self->AppendPushed();
    if (self->closed_) return;
    self->StartWrite();
  });
}

void Connection::AppendPushed() {
  if (pushed_.empty()) return;
  // Held while a command ran on the pool, to follow its reply; if that command left the mode
  // (UNSUBSCRIBE, RESET), they would follow the reply that ended it: dropped, as Push does,
  // but for RESP3's pushes (what is held then is only those: MONITOR ends with RESET alone,
  // which returns the client to RESP2).
  if (!state_->subscribed() && !state_->monitor.load() && state_->resp != 3) {
    return pushed_.Clear();
  }
  AppendOutput(pushed_);
  AfterCommand();  // the output limit applies to messages as to replies
}

void Connection::Start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->tls_) {
      self->Handshake();
    } else {
      self->Process();
    }
  });
}

void Connection::Handshake() {
  tls_->async_handshake(
      asio::ssl::stream_base::server, [self = shared_from_this()](const asio::error_code& ec) {
        if (self->closed_) return;
        if (ec) {
          // A plain-text client, no or a bad certificate, no common version.
          Log(LogLevel::kVerbose,
              "TLS handshake with " + self->state_->addr + " failed: " + ec.message());
          ServerStats::Count(self->server_.core().stats.tls_handshake_failures);
          self->CloseNow(Close::kCut);
          return;
        }
        self->tls_up_ = true;
        self->Process();
      });
}

void Connection::Kill() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Connection::Drain() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->closed_) return;
    self->close_after_write_ = true;
    if (!self->busy_) self->StartWrite();  // closes at once if nothing is pending
  });
}

void Connection::Cron(int64_t now_ms) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), now_ms] {
    if (self->closed_) return;
    const config::ServerConfig& cfg = self->Cfg();
    // As Redis, `timeout` spares a client that waits by design: a subscriber or a MONITOR.
    const ClientState& st = *self->state_;
    const bool listens = st.subscribed() || st.monitor.load();
    if (cfg.timeout > 0 && !self->busy_ && !listens &&
        now_ms - st.last_active_ms.load() >= cfg.timeout * 1000) {
      Log(LogLevel::kVerbose, "closing idle client id=" + std::to_string(st.id));
      self->CloseNow();
      return;
    }
    const auto& lim = self->OutputLimit();
    if (lim.soft_bytes > 0 && self->pending_out_ > lim.soft_bytes) {
      if (self->soft_since_ms_ == 0) {
        self->soft_since_ms_ = now_ms;
      } else if (now_ms - self->soft_since_ms_ >= lim.soft_seconds * 1000) {
        self->CloseForOutputLimit("stayed over the soft output buffer limit");
      }
    } else {
      self->soft_since_ms_ = 0;
    }
  });
}

const config::ServerConfig& Connection::Cfg() {
  uint64_t gen = server_.core().config.generation();
  if (gen != cfg_gen_ || !cfg_) {
    cfg_ = server_.core().config.snapshot();
    cfg_gen_ = gen;
  }
  return *cfg_;
}

void Connection::ReplyProtocolError(resp::ReplyWriter& w) {
  w.set_dropping(state_->replies_dropped());
  w.Error(parser_.error());
  w.set_dropping(false);
}

// Parses and executes buffered requests until one goes to the pool, input runs out, or
// output backs up; then reads and/or writes as needed.
void Connection::Process() {
  while (!closed_ && !busy_ && !held_ && !yielding_ && !close_after_write_ &&
         pending_out_ < kPauseOutputBytes && !server_.stopping() && rpos_ < wpos_) {
    size_t used = 0;
    auto st = FeedParser(ConfiguredLimits(), inbuf_.data() + rpos_, wpos_ - rpos_, &used);
    rpos_ += used;
    if (st == resp::RequestParser::State::kNeedMore) {
      if (QueryLimitExceeded()) return;
      continue;
    }
    if (st == resp::RequestParser::State::kError) {
      Log(LogLevel::kVerbose, "client id=" + std::to_string(state_->id) + " " + parser_.error());
      w_.set_protocol(state_->resp);
      ReplyProtocolError(w_);
      AppendOutput(w_.queue());
      close_after_write_ = true;
      break;
    }
    Execute();
  }
  if (closed_) return;
  if (!busy_ && !yielding_ && !close_after_write_ && !reading_ && !server_.stopping()) {
    if (pending_out_ >= kPauseOutputBytes) {
      ReadAhead();
    } else if (rpos_ == wpos_) {
      StartRead();
    }
  }
  if (closed_) return;
  if (!busy_) state_->input_bytes = (wpos_ - rpos_) + parser_.buffered_bytes();
  StartWrite();
}

// The parser's limits as the configuration sets them: proto-max-bulk-len, and the reserve-ahead
// pool of every connection's big bulks (SharedReserve). Io thread only (Cfg() is its cache);
// notes whether a password is set for FeedParser, which runs on the pool too.
resp::Limits Connection::ConfiguredLimits() {
  resp::Limits limits;
  limits.max_bulk_len = Cfg().proto_max_bulk_len;
  limits.reserve_ahead = &SharedReserve();
  limits.reserve_ahead_limit = Cfg().client_query_buffer_limit;
  password_set_ = !Cfg().requirepass.empty();
  return limits;
}

// Feeds the parser under `limits` and the pre-AUTH limits until the client authenticates (AUTH
// runs before the next command is parsed, so a pipelined "AUTH ..., SET <big value>" is accepted
// as in Redis).
resp::RequestParser::State Connection::FeedParser(resp::Limits limits, const char* data, size_t n,
                                                  size_t* used) {
  // As the dispatcher's rule: the limits apply while a password is set and not given.
  limits.unauthenticated = !state_->authenticated && password_set_;
  parser_.set_limits(limits);
  return parser_.Feed(data, n, used);
}

// What lets a command on the pool send its reply while producing it (ReplyWriter::Flush).
class Connection::SocketFlusher final : public resp::ReplyWriter::Flusher {
 public:
  SocketFlusher(Connection& conn, int fd) : conn_(conn), fd_(fd) {}
  void Flush(resp::OutputQueue& q) override { conn_.WriteNow(fd_, q); }

 private:
  Connection& conn_;
  const int fd_;
};

void Connection::Execute() {
  std::vector<std::string>& argv = parser_.args();
  state_->last_active_ms = server_.core().NowMs();
  const Plan plan = server_.executor().PlanOf(*state_, argv, Planner::kIoThread);
  if (plan.route == Route::kHold) return Hold();
  if (plan.route == Route::kInline) {
    w_.set_protocol(state_->resp);
    server_.executor().Run(plan, *state_, argv, w_);
    const bool large = w_.queue().bytes() >= kYieldAfterReplyBytes;
    AppendOutput(w_.queue());
    AfterCommand();
    if (large && rpos_ < wpos_ && !closed_) YieldTurn();
    return;
  }
  // Hand the connection's turn to the pool: until the completion runs here again, only the
  // pool job touches the parser, the input buffer and the ClientState.
  busy_ = true;
  server_.inflight.fetch_add(1);
  // With no reply pending or being written, the socket's write side is idle until the job's
  // completion runs here (nothing appends output while busy_), so the job may write its own
  // replies: they reach the client without waiting for this io thread's turn.
  // Not past the hard output limit, though: as in Redis, a reply over it closes the client.
  int direct_fd = pending_out_ == 0 && !writing_ && !tls_ ? socket_.native_handle() : -1;
  // A reply larger than the hard limit alone is cut off as it passes it (ReplyWriter::set_limit);
  // the rest of the rule (with the replies still pending then) is AfterCommand's.
  const uint64_t hard_limit = OutputLimit().hard_bytes;
  // Bytes buffered behind this request mean the client pipelines: throughput work.
  asio::thread_pool& pool = rpos_ < wpos_ ? server_.pipeline_pool() : server_.pool();
  asio::post(pool, [self = shared_from_this(), rpos = rpos_, wpos = wpos_, direct_fd, hard_limit] {
    resp::ReplyWriter w;
    w.set_protocol(self->state_->resp);
    w.set_error_listener(&self->server_.core().errors);
    w.set_limit(hard_limit);
    // Commands may send their replies as they produce them (a large cold GET does), unless a
    // hard output limit bounds every reply as a whole.
    SocketFlusher flusher(*self, direct_fd);
    if (direct_fd >= 0 && hard_limit == 0) w.set_flusher(&flusher);
    bool close = false, held = false;
    size_t new_rpos = self->RunBatch(w, rpos, wpos, &close, &held);
    if (!w.abandoned() && direct_fd >= 0 && (hard_limit == 0 || w.queue().bytes() <= hard_limit)) {
      self->WriteNow(direct_fd, w.queue());
    }
    BatchEnd end{new_rpos, close, held, w.abandoned(), w.limit_exceeded()};
    asio::post(self->socket_.get_executor(),
               [self, q = std::move(w.queue()), end]() mutable { self->FinishBatch(q, end); });
  });
}

void Connection::YieldTurn() {
  // The copy and checksum of one large value at a time, then the thread's other connections.
  yielding_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->yielding_ = false;
    self->Process();
  });
}

void Connection::FinishBatch(resp::OutputQueue& q, const BatchEnd& end) {
  busy_ = false;
  server_.inflight.fetch_sub(1);
  if (closed_) {
    asio::error_code ignored;
    socket_.close(ignored);  // deferred by CloseNow while the job ran
    return;
  }
  if (end.over_limit) return CloseForOutputLimit("reached the output buffer limit");
  // A reply cut short: whatever followed would be read as its missing bytes.
  if (end.abandoned) return CloseNow(Close::kCut);
  rpos_ = end.rpos;
  if (end.close) close_after_write_ = true;
  state_->last_active_ms = server_.core().NowMs();
  AppendOutput(q);
  AfterCommand();
  if (closed_) return;
  AppendPushed();
  if (end.held && !closed_) Execute();  // plans it again: held or run
  Process();
}

// Pipelined GETs and MGETs: the disk reads of the next values start together, before the
// first reply, and the commands then run one by one (replies in order, each value verified).
void Connection::PrefetchPipelinedReads(size_t rpos, size_t wpos) {
  std::vector<std::string_view> keys;
  const std::vector<std::string>& argv = parser_.args();  // the command about to run
  if (argv.size() >= 2 &&
      (strcasecmp(argv[0].c_str(), "get") == 0 || strcasecmp(argv[0].c_str(), "mget") == 0)) {
    keys.assign(argv.begin() + 1, argv.end());
  }
  resp::PeekReadKeys(inbuf_.data() + rpos, wpos - rpos, kMaxPrefetchKeys, &keys);
  if (keys.size() > 1) server_.core().store.Prefetch(keys);
}

void Connection::Hold() {
  held_ = true;
  hold_timer_.expires_after(kHoldRecheck);
  hold_timer_.async_wait([self = shared_from_this()](const asio::error_code&) {
    self->held_ = false;
    if (self->closed_) return;
    self->Execute();
    if (!self->closed_) self->Process();
  });
}

size_t Connection::RunBatch(resp::ReplyWriter& w, size_t rpos, size_t wpos, bool* close,
                            bool* held) {
  RequestExecutor& executor = server_.executor();
  // Plans the parsed request here, where it runs, and runs it; false (*held) if CLIENT PAUSE
  // holds it.
  auto run_parsed = [&] {
    const Plan plan = executor.PlanOf(*state_, parser_.args(), Planner::kPoolBatch);
    if (plan.route == Route::kHold) {
      *held = true;
      return false;
    }
    executor.Run(plan, *state_, parser_.args(), w);
    return true;
  };
  if (rpos < wpos) PrefetchPipelinedReads(rpos, wpos);
  if (!run_parsed()) return rpos;
  size_t done = 1;
  while (rpos < wpos && done < kMaxBatchCommands && w.queue().bytes() < kMaxBatchBytes &&
         !w.abandoned() && !state_->close_after_reply && !server_.stopping()) {
    size_t used = 0;
    // On the pool: the configuration cache is the io thread's, so the limits stay as the io
    // thread last set them.
    auto st = FeedParser(parser_.limits(), inbuf_.data() + rpos, wpos - rpos, &used);
    rpos += used;
    if (st == resp::RequestParser::State::kNeedMore) break;  // the io thread reads the rest
    if (st == resp::RequestParser::State::kError) {
      ReplyProtocolError(w);
      *close = true;
      break;
    }
    if (!run_parsed()) break;
    ++done;
  }
  return rpos;
}

template <typename Handler>
void Connection::ReadSome(asio::mutable_buffer buf, Handler&& handler) {
  if (tls_) {
    tls_->async_read_some(buf, std::forward<Handler>(handler));
  } else {
    socket_.async_read_some(buf, std::forward<Handler>(handler));
  }
}

void Connection::StartRead() {
  reading_ = true;
  auto self = shared_from_this();
  std::span<char> direct = parser_.DirectBuffer();
  if (!direct.empty()) {
    ReadSome(asio::buffer(direct.data(), direct.size()),
             [self](const asio::error_code& ec, size_t n) { self->OnRead(ec, n, true); });
    return;
  }
  rpos_ = wpos_ = 0;
  if (inbuf_.size() > kReadBufferBytes) {  // what ReadAhead grew goes back
    std::vector<char>(kReadBufferBytes).swap(inbuf_);
    SharedReserve().Give(std::exchange(read_ahead_reserved_, 0));
  }
  ReadSome(asio::buffer(inbuf_.data(), inbuf_.size()),
           [self](const asio::error_code& ec, size_t n) { self->OnRead(ec, n, false); });
}

void Connection::ReadAhead() {
  if (rpos_ > 0) {
    std::memmove(inbuf_.data(), inbuf_.data() + rpos_, wpos_ - rpos_);
    wpos_ -= rpos_;
    rpos_ = 0;
  }
  if (QueryLimitExceeded()) return;
  if (wpos_ == inbuf_.size()) {
    // Counted in the budget big bulks reserve ahead from while it has room, and read past it
    // too: each connection is bounded by its own client-query-buffer-limit (above; the buffer
    // never grows past it), as Redis bounds each client's query buffer. A budget shared as a
    // gate let one client that never reads hold it whole, and then every other paused
    // connection stopped reading: a pipeline sent whole before its replies (redis-py's) waited
    // on the server, and the server on it, for as long as that client stayed. A client that
    // has not given the password it must give reads ahead within the budget only.
    const uint64_t limit = Cfg().client_query_buffer_limit;
    const size_t grow =
        std::min<uint64_t>(inbuf_.size(), limit - std::min<uint64_t>(limit, inbuf_.size()));
    if (grow == 0) return;  // at the limit: more input closes it; replies draining resume it
    if (SharedReserve().Take(grow, limit)) {
      read_ahead_reserved_ += grow;
    } else if (password_set_ && !state_->authenticated) {
      return;
    }
    inbuf_.resize(inbuf_.size() + grow);
  }
  reading_ = true;
  auto self = shared_from_this();
  ReadSome(asio::buffer(inbuf_.data() + wpos_, inbuf_.size() - wpos_),
           [self](const asio::error_code& ec, size_t n) { self->OnRead(ec, n, false); });
}

void Connection::OnRead(const asio::error_code& ec, size_t n, bool direct) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    // A client gone mid-request leaves nothing behind: the partial command is dropped.
    CloseNow(Close::kCut);
    return;
  }
  NoteTransferred(server_.core().stats.total_net_input_bytes, n);
  if (direct) {
    parser_.CommitDirect(n);
    if (QueryLimitExceeded()) return;
  } else {
    wpos_ += n;  // after what StartRead emptied, or what ReadAhead kept
  }
  Process();
}

bool Connection::QueryLimitExceeded() {
  // Each argument's string object counts too: a command of millions of empty arguments is
  // bounded as one of large ones is.
  const size_t held =
      parser_.buffered_bytes() + parser_.args().capacity() * sizeof(std::string) + (wpos_ - rpos_);
  if (held <= Cfg().client_query_buffer_limit) return false;
  Log(LogLevel::kNotice, "closing client id=" + std::to_string(state_->id) +
                             " that reached the max query buffer length");
  ServerStats::Count(server_.core().stats.client_query_buffer_limit_disconnections);
  CloseNow();
  return true;
}

void Connection::CloseNow(Close how) {
  if (closed_) return;
  closed_ = true;
  if (how == Close::kEndSession && tls_up_ && !writing_ && !busy_) {
    EndTlsSession();
  } else {
    asio::error_code ignored;
    socket_.shutdown(asio::socket_base::shutdown_both, ignored);
    // A pool job may be writing to the descriptor (WriteNow): it must not be closed and
    // reused under the job. The socket closes when the connection is destroyed, after the job.
    if (!busy_) socket_.close(ignored);
  }
  out_.clear();
  pushed_.Clear();
  pending_out_ = 0;
  // Out of the registry first: a CLIENT TRACKING REDIRECT looking for a target no longer
  // finds one whose Disconnected already ran.
  server_.Remove(state_->id);
  server_.core().Disconnected(*state_, Core::FailedImportKeys::kDelete);
}

void Connection::EndTlsSession() {
  // A pending read of the connection's own goes on until the socket closes; Asio's stream
  // runs one read at a time, so the shutdown's read of the client's answer waits behind it.
  auto timer = std::make_shared<asio::steady_timer>(socket_.get_executor(), kTlsCloseWait);
  auto close = [self = shared_from_this(), timer](const asio::error_code&) {
    timer->cancel();
    asio::error_code ignored;
    self->socket_.close(ignored);
  };
  timer->async_wait([close](const asio::error_code& ec) {
    if (ec != asio::error::operation_aborted) close(ec);
  });
  tls_->async_shutdown(close);
}

}  // namespace larder::server
