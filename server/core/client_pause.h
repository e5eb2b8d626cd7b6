// ClientPause: CLIENT PAUSE / UNPAUSE. While a pause is in force, commands it covers wait,
// unanswered and in order, on their connection until it ends (the connection re-checks every
// few milliseconds); nothing is refused. A WRITE pause covers commands that may change the
// keyspace or publish (`write`, `may_replicate`, and EXEC of a transaction holding them); an
// ALL pause covers every command. The engine's own expiry and eviction keep running: a pause
// holds clients, not the store.
//
// As in Redis, where a command runs whole before the next, CLIENT PAUSE answers once the writes
// already running have ended: each write is counted from its last check against the pause
// (StartCommand) until it has run (EndWrite), and the pause's reply waits for the count to
// reach zero (WritesRunning). A write counts itself before it reads the pause, and Pause sets
// the pause before the count is read (both sequentially consistent), so every write either
// sees the pause and waits, or is seen by the wait.
//
// Thread-safe (atomics).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace larder::server {

class ClientPause {
 public:
  enum class Scope : int { kNone = 0, kWrite = 1, kAll = 2 };

  // Pauses until `until_ms` (clock ms). As in Redis, a pause in force is never shortened or
  // narrowed by a later one: the later end and the wider scope win.
  void Pause(int64_t until_ms, Scope scope, int64_t now_ms) {
    if (!Active(now_ms)) {
      scope_ = static_cast<int>(scope);
      until_ms_ = until_ms;
      return;
    }
    scope_ = std::max(scope_.load(), static_cast<int>(scope));
    until_ms_ = std::max(until_ms_.load(), until_ms);
  }
  void Unpause() {
    until_ms_ = 0;
    scope_ = 0;
  }
  bool Active(int64_t now_ms) const { return scope_.load() != 0 && now_ms < until_ms_.load(); }
  // Whether a command that writes (`writes`) or not is held now.
  bool Holds(bool writes, int64_t now_ms) const {
    if (!Active(now_ms)) return false;
    return scope_.load() == static_cast<int>(Scope::kAll) || writes;
  }
  // Whether a command that writes (`writes`) or not may run now. A write it lets run is
  // counted as running until EndWrite; a held one is not counted.
  bool StartCommand(bool writes, int64_t now_ms) {
    if (!writes) return !Holds(false, now_ms);
    writes_running_.fetch_add(1);
    if (!Holds(true, now_ms)) return true;
    EndWrite();
    return false;
  }
  void EndWrite() { writes_running_.fetch_sub(1); }
  bool WritesRunning() const { return writes_running_.load() > 0; }

 private:
  std::atomic<int> scope_{0};
  std::atomic<int64_t> until_ms_{0};
  std::atomic<int64_t> writes_running_{0};
};

}  // namespace larder::server
