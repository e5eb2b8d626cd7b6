// Connection: one client socket (TCP, TLS over TCP, or unix). Reads requests into the
// RequestParser (large bulks straight into the argument's storage), executes them one at a time
// in order — cheap ones on this io thread, engine-bound ones on the engine pool (the pipeline
// pool when more requests are buffered behind them), which writes the replies itself when
// nothing is pending before them and posts the rest back — and writes replies with
// scatter/gather I/O.
//
// A TLS connection handshakes before its first read, and sends every reply through the TLS
// stream from a staging buffer on the io thread (file segments are read into it with pread):
// neither the pool's direct writes nor sendfile can go through OpenSSL.
//
// Threading: every member function except Start() and Kill() runs on the connection's
// io_context thread. While a command runs on the pool (busy_), the io thread touches neither
// the parser nor the ClientState, starts no write, and does not close the descriptor.
#pragma once

#include <sys/uio.h>

#include <asio.hpp>
#include <atomic>
#include <deque>
#include <memory>
#include <vector>

#include "config/server_config.h"
#include "core/client_state.h"
#include "core/request_executor.h"
#include "net/tls_context.h"
#include "resp/pipeline_peek.h"
#include "resp/reply_writer.h"
#include "resp/request_parser.h"

namespace larder::server {

class Server;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  // `tls`: the context to handshake with, or null for a plain-text connection.
  Connection(Server& server, Socket socket, std::shared_ptr<ClientState> state,
             std::shared_ptr<TlsContext> tls);
  ~Connection();

  // The PushSink of this connection, for its ClientState (it holds the connection weakly).
  static std::shared_ptr<PushSink> PushSinkOf(const std::shared_ptr<Connection>& conn);

  // Begins serving (from any thread).
  void Start();
  // Closes the connection as soon as its io thread gets to it (from any thread).
  void Kill();
  // Shutdown (from any thread): execute nothing more, close once pending replies are written.
  void Drain();
  // Once a second (from any thread): closes the connection if it has been idle (no command
  // in flight, no activity) for `timeout` seconds, or its pending output has stayed above the
  // soft client-output-buffer-limit for the soft seconds.
  void Cron(int64_t now_ms);

  const ClientState& state() const { return *state_; }

  // Queues a Pub/Sub message (from any thread): appended to the output after the reply being
  // produced, if a command is running, and subject to the `pubsub` output limit.
  void Push(std::shared_ptr<const std::string> frame);

 private:
  static constexpr size_t kReadBufferBytes = 64 * 1024;
  // Stop executing new commands while this much reply data is waiting to be written (reading
  // goes on: ReadAhead).
  static constexpr size_t kPauseOutputBytes = 64ull << 20;
  // An inline reply this large (a GET of a value in memory) ends the connection's turn.
  static constexpr size_t kYieldAfterReplyBytes = 1ull << 20;
  // Replies smaller than this are copied into the current output block rather than queued.
  static constexpr size_t kCopyReplyBytes = 64 * 1024;
  static constexpr size_t kMaxIov = 64;
  static constexpr size_t kMaxSendfileBytes = 8ull << 20;  // per sendfile call
  // Plain text handed to OpenSSL per write on a TLS connection (16 TLS records).
  static constexpr size_t kTlsStageBytes = 256 * 1024;
  // A pool job also runs the pipelined requests already buffered behind its own, up to
  // these bounds, saving two thread hops per request.
  static constexpr size_t kMaxBatchCommands = 256;
  static constexpr size_t kMaxBatchBytes = 4ull << 20;
  // Values whose reads a pipeline starts ahead of its replies (PrefetchPipelinedReads).
  static constexpr size_t kMaxPrefetchKeys = 16;

  // How often a request held by CLIENT PAUSE is planned again.
  static constexpr auto kHoldRecheck = std::chrono::milliseconds(5);

  void Process();
  // Writes the parser's error to `w` (the io thread's or a pool job's), dropped as any reply
  // while CLIENT REPLY says so, as in Redis; the connection then closes.
  void ReplyProtocolError(resp::ReplyWriter& w);
  static resp::ReserveAheadPool& SharedReserve();
  resp::Limits ConfiguredLimits();
  resp::RequestParser::State FeedParser(resp::Limits limits, const char* data, size_t n,
                                        size_t* used);
  void Execute();
  // Keeps the parsed request (held by CLIENT PAUSE) and plans it again after kHoldRecheck;
  // nothing else is parsed meanwhile, so replies stay in order.
  void Hold();
  // On the pool: runs the parsed request, then the complete ones buffered in inbuf_[rpos,
  // wpos), each planned where it runs; returns the new read position. Sets *close on a
  // protocol error, and *held if it stopped at a parsed request CLIENT PAUSE holds (left for
  // the io thread), the first one too: a pause may begin while the job waits for a thread.
  size_t RunBatch(resp::ReplyWriter& w, size_t rpos, size_t wpos, bool* close, bool* held);
  // How a pool job's batch ended: the new read position, and whether to close after the
  // replies, a request waits for CLIENT PAUSE, the reply was abandoned (past the hard output
  // limit, or a value that failed mid-stream).
  struct BatchEnd {
    size_t rpos;
    bool close, held, abandoned, over_limit;
  };
  // After an inline reply of kYieldAfterReplyBytes or more: Process goes on once the io
  // thread's other ready handlers have run.
  void YieldTurn();
  // Back on the io thread: takes the batch's replies `q` and goes on.
  void FinishBatch(resp::OutputQueue& q, const BatchEnd& end);
  void PrefetchPipelinedReads(size_t rpos, size_t wpos);
  class SocketFlusher;
  // On the pool, when no earlier reply is pending: writes what the socket takes of q now
  // (non-blocking) and consumes it; the rest stays in q for the io thread.
  void WriteNow(int fd, resp::OutputQueue& q);
  // One non-blocking send of q's first bytes: sendfile for a file segment, sendmsg for the
  // memory segments before the next one. Returns what the call returned (errno set on -1).
  static ssize_t SendSome(int fd, const resp::OutputQueue& q);
  // After a command's reply is appended: closes a client past its output buffer's hard limit
  // (CloseForOutputLimit, which logs and counts it) or one that asked to be closed.
  void AfterCommand();
  // Whether the replies pending, and `held` bytes more, pass the hard limit of the client's
  // class (OutputLimit); closing for a limit logs `why` and counts it.
  bool OverHardLimit(uint64_t held);
  void CloseForOutputLimit(const char* why);
  // The output limit of the client's class: `pubsub` while it has a subscription, `normal`
  // otherwise.
  const config::ClientOutputBufferLimit& OutputLimit();
  // Moves the messages pushed while a command ran (pushed_) to the output.
  void AppendPushed();
  // The configuration in force, cached per connection (refreshed after CONFIG SET).
  const config::ServerConfig& Cfg();
  // Moves q's bytes to the end of out_ (small replies are copied, so q keeps its block for
  // reuse); leaves q empty.
  void AppendOutput(resp::OutputQueue& q);
  // TLS: the server side of the handshake, then Process(); a failed one closes.
  void Handshake();
  void StartRead();
  // While execution is paused on pending output: takes the bytes the client is still sending,
  // unparsed, after those in inbuf_ (which grows), so that a client that sends its whole
  // pipeline before reading a reply (redis-py, hiredis) and the server never wait on each
  // other for ever. Bounded by client-query-buffer-limit, as any request.
  void ReadAhead();
  // Reads into `buf` through the TLS stream or straight from the socket.
  template <typename Handler>
  void ReadSome(asio::mutable_buffer buf, Handler&& handler);
  // TLS: stages the first pending bytes (up to kTlsStageBytes) and writes them.
  void StartTlsWrite();
  void OnRead(const asio::error_code& ec, size_t n, bool direct);
  // Whether the client's request bytes held (parsed and not) passed client-query-buffer-limit:
  // then it is closed.
  bool QueryLimitExceeded();
  void StartWrite();
  void OnWrite(const asio::error_code& ec, size_t n);
  // Counts n bytes moved on the socket in `counter` (INFO's total_net_*_bytes); any byte read
  // or written is activity for the idle `timeout`. Any thread.
  void NoteTransferred(std::atomic<uint64_t>& counter, size_t n);
  // How a connection ends: kEndSession when the transport still works (a TLS connection sends
  // its close_notify first, as Redis does, so the client reads a clean end of stream), kCut
  // after a read, write or handshake error, or a reply cut short (a TLS client must not take
  // that end for a clean one).
  enum class Close { kEndSession, kCut };
  void CloseNow(Close how = Close::kEndSession);
  // TLS: sends close_notify and closes the socket once the client answers or closes, or after
  // kTlsCloseWait (the connection is already out of the server).
  void EndTlsSession();
  static constexpr auto kTlsCloseWait = std::chrono::milliseconds(200);

  Server& server_;
  Socket socket_;
  std::shared_ptr<TlsContext> tls_ctx_;              // null for plain text
  std::unique_ptr<asio::ssl::stream<Socket&>> tls_;  // over socket_, if tls_ctx_
  std::unique_ptr<char[]> tls_stage_;                // while TLS output is pending
  bool tls_up_ = false;                              // the TLS handshake succeeded
  std::shared_ptr<ClientState> state_;
  resp::RequestParser parser_;
  resp::ReplyWriter w_;  // replies of inline commands, moved to out_ after each

  std::vector<char> inbuf_;
  size_t rpos_ = 0, wpos_ = 0;
  size_t read_ahead_reserved_ = 0;  // of SharedReserve, for inbuf_ past kReadBufferBytes
  bool password_set_ = false;       // requirepass as ConfiguredLimits last saw it

  std::deque<resp::OutputQueue> out_;  // pending replies, in order
  resp::OutputQueue pushed_;           // messages pushed while a command ran on the pool
  size_t pending_out_ = 0;
  struct iovec iov_[kMaxIov];
  std::vector<asio::const_buffer> bufs_;

  std::shared_ptr<const config::ServerConfig> cfg_;
  uint64_t cfg_gen_ = ~0ull;
  int64_t soft_since_ms_ = 0;  // when pending output went above the soft limit; 0 = below

  bool reading_ = false;
  bool writing_ = false;
  bool busy_ = false;  // a command is running on the engine pool
  bool held_ = false;  // the parsed request waits for CLIENT PAUSE to end
  // An inline command's reply was large and requests wait behind it: the io thread serves its
  // other connections before this one's next request (YieldTurn posted Process again).
  bool yielding_ = false;
  asio::steady_timer hold_timer_;
  bool close_after_write_ = false;  // protocol error / QUIT: close once replies are out
  bool closed_ = false;
};

}  // namespace larder::server
