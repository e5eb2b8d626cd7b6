// The native plugin's server mode: LMCache's batches run against a running larder-server over
// its unix socket (or TCP), one RESP2 connection per worker thread; a batch is split into one
// tile per worker, each tile pipelined on its worker's connection (the server starts the disk
// reads of a pipeline's GETs together and replies in order).
//
// A dead, restarting or stalled server must cost LMCache misses, never a stall or an exception
// in its serving loop (the failure contract of connectors/python/larder/failsafe.py, here in
// C++):
// - every wait on a socket is bounded by the timeout (RespConnection);
// - a batch that meets a connection failure completes with ok=false, the error, and false for
//   every key it did not finish; the completion is still delivered through the eventfd;
// - after a failure all workers back off together: batches complete at once as failures for
//   50 ms, doubling per consecutive failure up to 400 ms; the first batch after that connects
//   anew (connections made before the failure are dropped), so batches succeed again within a
//   second of the server coming back.
// An error reply for one key of a GET, EXISTS or DELETE batch makes that key false, the batch
// still ok (LMCache reads per-key results only from an ok completion); a SET batch with a
// refused put completes with ok=false, as in-process. The first error is the message.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/resp_connection.h"
#include "lmcache_plugin.h"

namespace lmcache_plugin {

using larder::common::ReplyHeader;
using larder::common::RespConnection;
using larder::common::ServerAddress;

struct ServerOptions {
  ServerAddress address;
  int timeout_ms = 1000;
  std::string username;
  std::string password;
};

// Consecutive-failure back-off shared by a plugin's workers.
class Breaker {
 public:
  static constexpr int kMinBackoffMs = 50;
  static constexpr int kMaxBackoffMs = 400;
  using Clock = std::chrono::steady_clock;

  // True when a batch may try the server; otherwise `why` says why not.
  bool Closed(std::string* why) {
    std::lock_guard lock(mu_);
    if (Clock::now() >= retry_at_) return true;
    *why = "store unreachable, retrying shortly: " + last_error_;
    return false;
  }
  void Failed(const std::string& error) {
    std::lock_guard lock(mu_);
    last_error_ = error;
    ++epoch_;
    int backoff = std::min(kMaxBackoffMs, kMinBackoffMs << std::min(streak_, 4));
    ++streak_;
    retry_at_ = Clock::now() + std::chrono::milliseconds(backoff);
  }
  void Succeeded() {
    std::lock_guard lock(mu_);
    streak_ = 0;
  }
  // Bumped by every failure: a connection made in an older epoch may be stale.
  uint64_t epoch() {
    std::lock_guard lock(mu_);
    return epoch_;
  }

 private:
  std::mutex mu_;
  Clock::time_point retry_at_{};
  int streak_ = 0;
  uint64_t epoch_ = 0;
  std::string last_error_;
};

// One worker's runner: its own connection, the plugin's shared breaker.
// Whether an error reply says this connection may run nothing (a password required and not
// given, or refused): a failure of the connection, never a per-key refusal.
inline bool RefusesTheConnection(const std::string& line) {
  for (std::string_view code : {"NOAUTH", "WRONGPASS", "NOPERM", "DENIED"}) {
    if (line.rfind(code, 0) == 0) return true;
  }
  return false;
}

// Probes the server once, as a plugin is made: why no connection to it can ever work (its
// AUTH or a PING refused: a wrong or missing password), or nullopt. *unreachable: why it could
// not be reached, if so (it may start later: batches fail until then, not an error).
inline std::optional<std::string> ProbeServer(const ServerOptions& o, std::string* unreachable) {
  RespConnection conn(o.address, o.timeout_ms);
  static constexpr std::string_view kAuthRefused = "AUTH refused: ";
  if (!conn.Connect(o.username, o.password)) {
    const std::string& e = conn.error();
    if (e.rfind(kAuthRefused, 0) == 0 && RefusesTheConnection(e.substr(kAuthRefused.size()))) {
      return e;
    }
    *unreachable = e;  // not up, or busy (max number of clients): it may answer later
    return std::nullopt;
  }
  ReplyHeader h;
  if (!conn.SendCommand({"PING"}) || !conn.ReadHeader(&h)) {
    *unreachable = conn.error();
    return std::nullopt;
  }
  if (h.type == '-' && RefusesTheConnection(h.line)) return "PING refused: " + h.line;
  if (h.type == '-') *unreachable = h.line;
  return std::nullopt;
}

class ServerRunner {
 public:
  ServerRunner(const ServerOptions& o, std::shared_ptr<Breaker> breaker)
      : options_(o), breaker_(std::move(breaker)), conn_(o.address, o.timeout_ms) {}

  Completion operator()(const Batch& b) {
    Completion c{b.id, true, "", std::vector<bool>(b.keys.size(), false), b.op != Op::kSet};
    std::string why;
    if (!breaker_->Closed(&why)) return Failed(std::move(c), why);
    if (!Connected()) return Failed(std::move(c), conn_.error());
    if (!Send(b) || !Receive(b, &c)) {
      breaker_->Failed(conn_.error());
      return Failed(std::move(c), conn_.error());
    }
    breaker_->Succeeded();
    return c;
  }

 private:
  static Completion Failed(Completion c, std::string error) {
    c.ok = false;
    c.error = std::move(error);
    return c;
  }

  bool Connected() {
    const uint64_t epoch = breaker_->epoch();
    if (!conn_.broken() && epoch == conn_epoch_) return true;
    if (!conn_.Connect(options_.username, options_.password)) {
      breaker_->Failed(conn_.error());
      return false;
    }
    conn_epoch_ = breaker_->epoch();
    return true;
  }

  // The whole batch as one pipeline; a SET's value goes from the caller's buffer.
  bool Send(const Batch& b) {
    static constexpr std::string_view kNames[] = {"GET", "SET", "EXISTS", "DEL"};
    const std::string_view name = kNames[static_cast<int>(b.op)];
    std::vector<std::string> heads;
    heads.reserve(b.keys.size());
    std::vector<iovec> parts;
    static const char kCrlf[] = "\r\n";
    for (size_t i = 0; i < b.keys.size(); ++i) {
      if (b.op == Op::kSet) {
        heads.push_back(RespConnection::Command({name, b.keys[i]}, b.lens[i]));
        parts.push_back({heads.back().data(), heads.back().size()});
        parts.push_back({b.bufs[i], b.lens[i]});
        parts.push_back({const_cast<char*>(kCrlf), 2});
      } else {
        heads.push_back(RespConnection::Command({name, b.keys[i]}));
        parts.push_back({heads.back().data(), heads.back().size()});
      }
    }
    return conn_.SendAll(std::move(parts));
  }

  // One reply per key, in order. false only when the connection failed.
  bool Receive(const Batch& b, Completion* c) {
    for (size_t i = 0; i < b.keys.size(); ++i) {
      ReplyHeader h;
      if (!conn_.ReadHeader(&h)) return false;
      if (h.type == '-') {  // a refused key: false, and a SET batch is not ok
        if (RefusesTheConnection(h.line)) return conn_.Abandon(h.line);
        if (c->error.empty()) c->error = h.line;
        if (b.op == Op::kSet) c->ok = false;
        continue;
      }
      switch (b.op) {
        case Op::kGet:
          if (h.type != '$') return Unexpected(h);
          if (h.number < 0) break;  // a miss
          // A value whose size is not the buffer's is read and dropped (LMCache loads
          // fixed-size chunks); the stream stays in step.
          {
            const bool fits = static_cast<size_t>(h.number) == b.lens[i];
            if (!conn_.ReadBulkInto(fits ? b.bufs[i] : nullptr, h.number)) return false;
            c->per_key[i] = fits;  // only once every byte and the CRLF arrived
          }
          break;
        case Op::kSet:
          if (h.type != '+') return Unexpected(h);
          break;
        case Op::kExists:
        case Op::kDelete:
          if (h.type != ':') return Unexpected(h);
          c->per_key[i] = h.number > 0;
          break;
      }
    }
    return true;
  }

  // A reply of the wrong type leaves the stream's position unknown: drop the connection.
  bool Unexpected(const ReplyHeader& h) {
    return conn_.Abandon(std::string("unexpected reply: ") + h.type + h.line.substr(0, 64));
  }

  ServerOptions options_;
  std::shared_ptr<Breaker> breaker_;
  RespConnection conn_;
  uint64_t conn_epoch_ = 0;
};

}  // namespace lmcache_plugin
