// ClientState: what the server knows of one connected client, shared by the network layer
// (which creates it and keeps the I/O fields current) and the commands (which read and change
// the session fields).
//
// Threading contract: a client runs one command at a time, either on its connection's io
// thread or on an engine-pool thread; the connection touches the session fields only between
// commands. Fields read by other clients (CLIENT LIST/KILL) are atomics or guarded by `mu`.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace larder::server {

struct CommandSpec;  // the command layer's description of a command (commands/command_spec.h)

// Delivery to one client of messages it did not request (Pub/Sub), implemented by the network
// layer. Push may be called from any thread and never blocks.
class PushSink {
 public:
  virtual ~PushSink() = default;
  // Queues `frame` for the client: a complete RESP2 array reply, sent as is to a RESP2 client
  // and as a RESP3 push (its first byte '>') to a RESP3 one.
  virtual void Push(std::shared_ptr<const std::string> frame) = 0;
};

// A request MULTI queued: its command (looked up and checked when it was queued) and its
// arguments.
struct QueuedRequest {
  const CommandSpec* spec = nullptr;
  std::vector<std::string> argv;
};

struct ClientState {
  // Set when the client connects; immutable after.
  uint64_t id = 0;
  std::string addr;   // "ip:port" or "path:0" for a unix socket
  std::string laddr;  // local address
  int fd = -1;
  bool unix_socket = false;
  // The client runs on this host (Unix socket, loopback, or one of the server's own addresses):
  // with `sendfile remote`, GET copies values to it rather than using sendfile.
  bool same_host = true;
  int64_t created_ms = 0;
  std::shared_ptr<PushSink> push;  // never null once the client is registered

  // The session: owned by the command in flight.
  bool authenticated = false;
  std::atomic<int> resp{2};  // 2 or 3 (HELLO); read by CLIENT LIST
  bool in_multi = false;
  bool multi_error = false;  // a command failed to queue: EXEC aborts
  std::vector<QueuedRequest> queued;
  // What CLIENT LIST shows of the transaction (`multi=`, flag x): the requests queued, -1
  // outside MULTI. Kept by the three calls below.
  std::atomic<int> multi_reported{-1};
  void BeginTransaction() {
    in_multi = true;
    multi_reported = 0;
  }
  void Queue(QueuedRequest request) {
    queued.push_back(std::move(request));
    multi_reported = static_cast<int>(queued.size());
  }
  // WATCH ran since the last EXEC, DISCARD, UNWATCH or RESET (the keys are in Core's
  // WatchedKeys).
  bool watching = false;
  // Leaves MULTI, dropping what it queued (EXEC, DISCARD, RESET, an EXEC refused).
  void EndTransaction() {
    in_multi = false;
    multi_error = false;
    queued.clear();
    multi_reported = -1;
  }
  // CLIENT REPLY: OFF drops every reply (`reply_off`), SKIP the next command's
  // (`reply_skip_next`, which becomes `reply_skip` while that command runs: Dispatcher::Run).
  // Written by the client's commands; atomic because the io thread also reads them while a
  // command runs on the pool (a MONITOR line is dropped as any reply: Connection::Push).
  std::atomic<bool> reply_off{false};
  std::atomic<bool> reply_skip_next{false};
  std::atomic<bool> reply_skip{false};
  // Whether the reply being written now is dropped (ReplyWriter::set_dropping): while OFF, in
  // the command a SKIP applies to, and between commands when a SKIP waits for the next one.
  bool replies_dropped() const { return reply_off || reply_skip || reply_skip_next; }
  bool close_after_reply = false;  // QUIT, SHUTDOWN, CLIENT KILL of oneself
  // CLIENT CACHING YES|NO, for the next command or transaction: OPTIN tracking remembers its
  // keys, OPTOUT does not (core/key_tracking.h). As in Redis, cleared after any command but a
  // CLIENT one, outside MULTI (Dispatcher::Run).
  bool tracking_caching = false;
  // Cluster mode: READONLY (reads served by a replica; CLIENT LIST's flag r), ASKING (the next
  // command may use a slot being imported), and the link a migration source imports a slot
  // range through.
  std::atomic<bool> cluster_readonly{false};
  bool asking = false;
  bool importing = false;

  // Read by other clients; the strings are guarded by mu.
  mutable std::mutex mu;
  std::string name, lib_name, lib_ver, last_cmd;
  std::atomic<int64_t> last_active_ms{0};
  std::atomic<uint64_t> output_bytes{0};  // pending reply bytes (for CLIENT LIST)
  // Request bytes received and not yet run: unparsed input and the arguments parsed so far
  // (CLIENT LIST's qbuf), as the io thread last saw them.
  std::atomic<uint64_t> input_bytes{0};
  // Subscriptions, kept by PubSub (core/pubsub.h): channels and patterns.
  std::atomic<uint32_t> channels{0}, patterns{0};
  std::atomic<bool> monitor{false};  // in MONITOR mode (kept by Monitors, core/monitors.h)
  // CLIENT TRACKING is on; the rest of the client's tracking state is in KeyTracking, which
  // keeps this.
  std::atomic<bool> tracking{false};

  uint32_t subscriptions() const { return channels.load() + patterns.load(); }
  bool subscribed() const { return subscriptions() > 0; }
};

}  // namespace larder::server
