// Monitors: the clients in MONITOR mode, and feeding them every command the server runs, in
// Redis's line format:
//
//   +1339518083.107412 [0 127.0.0.1:60866] "set" "key" "va\"lue"
//
// Lines go to each monitor's PushSink (as a simple-string reply, in RESP2 and RESP3 alike), so
// the command's client never waits for a monitor. As in Redis, a monitor whose CLIENT REPLY
// drops its replies is sent no line: while OFF, and from a SKIP to the end of the command after
// it (the SKIP's own line is sent).
//
// Thread-safe. Feeding takes a shared lock, and nothing at all while nobody monitors.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/client_state.h"

namespace larder::server {

class Monitors {
 public:
  // Puts `client` in MONITOR mode (sets client.monitor); it must stay valid until Remove.
  void Add(ClientState& client);
  // Takes it out of MONITOR mode; false if it was not in it.
  bool Remove(ClientState& client);
  bool Idle() const { return count_.load(std::memory_order_relaxed) == 0; }

  // Sends the command `argv`, which `client` ran at `unix_us`, to every monitor.
  void Feed(const ClientState& client, const std::vector<std::string>& argv, int64_t unix_us);

  // The line for one command (without the leading '+' and the CRLF).
  static std::string Line(const ClientState& client, const std::vector<std::string>& argv,
                          int64_t unix_us);

 private:
  struct Monitor {
    std::shared_ptr<PushSink> sink;
    const ClientState* state;  // its CLIENT REPLY mode
  };

  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, Monitor> monitors_;
  std::atomic<size_t> count_{0};
};

}  // namespace larder::server
