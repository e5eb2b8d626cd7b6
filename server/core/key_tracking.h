// KeyTracking: server-assisted client-side caching, as Redis 6+ runs it (CLIENT TRACKING). A
// client that tracks is told when a key it may have cached changes, so that it drops its copy:
//
// - Default mode: the keys of every read-only command the client runs are remembered (Redis's
//   tracking table: key -> client ids); the next change of such a key sends the client one
//   invalidation naming it, and forgets the key (the client must read it again to hear of the
//   next change). OPTIN remembers a command's keys only after CLIENT CACHING YES, OPTOUT all
//   but after CLIENT CACHING NO; NOLOOP sends nothing about a change the client made itself.
// - BCAST: nothing is remembered; every change of a key starting with one of the client's
//   prefixes ("" for all) is sent, the keys a command changed in one message per prefix,
//   sorted, once the command (a whole EXEC) ends.
//
// A message goes to the client itself as a RESP3 push (`invalidate` and an array of keys), or
// with REDIRECT to another client: a RESP3 one gets the push, a RESP2 one subscribed to
// anything a Pub/Sub message on `__redis__:invalidate`; a RESP2 client without a redirect gets
// nothing, as in Redis. FLUSHALL sends every tracking client a null in place of the keys: drop
// everything (in the receiving connection's protocol). When the redirect target disconnects,
// the client's next message is lost and it is flagged `broken_redirect` (a RESP3 client is
// told so with a `tracking-redir-broken` push).
//
// The table holds at most `tracking-table-max-keys` keys (Redis's option and default): past
// it, keys are forgotten and their clients sent an invalidation, as if they had changed. An
// entry leaves the table when its key changes, expires or is evicted; the ids of clients that
// stopped tracking leave it when the key is read again.
//
// Ordering. A client's pushes are queued on its connection after the reply of the command it
// is running (net/connection.h), so an invalidation always follows a value it may cover: a
// read-only command's keys are remembered before it reads them (a change made while it reads
// is sent after its reply) and again after it ran (its own read may have removed an expired
// key and its entry with it), as Redis remembers them after the command.
//
// Thread-safe: one mutex (a leaf: nothing else is locked while it is held; messages are sent
// after it is released). Invalidate costs one atomic load while nothing is tracked.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/client_state.h"

namespace larder::server {

// How a client tracks: CLIENT TRACKING ON's flags.
struct TrackingMode {
  bool bcast = false, optin = false, optout = false, noloop = false;
};

// CLIENT TRACKING ON's options.
struct TrackingOptions : TrackingMode {
  uint64_t redirect = 0;  // the client id invalidations go to; 0 = the client itself
  std::vector<std::string> prefixes;
};

// A client's tracking state, as CLIENT TRACKINGINFO, GETREDIR and LIST show it.
struct TrackingInfo : TrackingMode {
  bool on = false;
  bool broken_redirect = false;
  int64_t redirect = -1;  // -1 while not tracking, 0 for no redirect
  std::vector<std::string> prefixes;
};

class KeyTracking {
 public:
  // The error CLIENT TRACKING ON answers for `options` (Redis's words and order), given the
  // client's current mode; nullopt when Enable may run.
  std::optional<std::string> CheckEnable(const ClientState& client,
                                         const TrackingOptions& options) const;
  // CLIENT TRACKING ON (after CheckEnable): replaces the client's options, adds BCAST prefixes
  // to those it has. `target` is the redirect target's state, or null; it must stay valid
  // until TargetGone(target->id) (the caller holds its connection: ClientRegistry::ForEach).
  void Enable(ClientState& client, const TrackingOptions& options, const ClientState* target);
  // CLIENT TRACKING OFF, RESET, a closed connection: the client tracks nothing more. Its keys
  // stay in the table until they change (as Redis's).
  void Disable(ClientState& client);
  // The client `id` disconnected: clients redirecting to it lose their next message.
  void TargetGone(uint64_t id);

  // The keys of a read-only command `client` runs (client.tracking set): remembered unless
  // the client broadcasts, or OPTIN/OPTOUT and client.tracking_caching say not to; then the
  // table is cut down to `max_keys` (0: not cut; dispatch cuts it once the command ran).
  void Remember(const ClientState& client, const std::vector<std::string_view>& keys,
                int64_t max_keys);
  // `key` changed: by the command this thread runs (`by_command`: NOLOOP clients are not told
  // of their own changes), or it expired, was evicted or left without a command. Sends the
  // invalidations of default-mode clients at once; BCAST ones at the end of the command
  // (CommandScope; every kMaxBatchedKeys keys for a command changing many), or at once
  // outside one.
  void Invalidate(std::string_view key, bool by_command);
  // Every key may have changed (FLUSHALL, a slot range's keys deleted): every tracking client
  // is sent a null, and the table is emptied.
  void InvalidateAll();

  // Marks the command `client` runs on this thread, for NOLOOP and for BCAST's batching; a
  // scope inside another (EXEC's commands) changes nothing.
  class CommandScope {
   public:
    CommandScope(KeyTracking& tracking, const ClientState& client);
    ~CommandScope();
    CommandScope(const CommandScope&) = delete;
    CommandScope& operator=(const CommandScope&) = delete;

   private:
    KeyTracking& tracking_;
    bool outermost_;
  };

  TrackingInfo InfoOf(const ClientState& client) const;
  // INFO: clients tracking, keys in the table, client ids over all its keys, BCAST prefixes.
  size_t clients() const { return tracker_count_.load(std::memory_order_relaxed); }
  size_t keys() const { return keys_.load(); }
  size_t items() const;
  size_t prefixes() const { return prefix_count_.load(); }

 private:
  struct Tracker : TrackingMode {
    ClientState* self = nullptr;          // valid until Disable
    const ClientState* target = nullptr;  // the redirect target; null when none or gone
    uint64_t redirect = 0;
    bool broken = false;
    std::set<std::string, std::less<>> prefixes;
  };
  struct Message {
    std::shared_ptr<PushSink> sink;
    std::shared_ptr<const std::string> frame;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };

  using Table = std::unordered_map<std::string, std::vector<uint64_t>, KeyHash, std::equal_to<>>;

  // Under mu_: the message telling `t` of `keys` (a RESP array of keys; nullopt: a null, in
  // the receiving connection's protocol), if it can be sent; marks a redirect found gone.
  std::optional<Message> MessageFor(Tracker& t, std::optional<std::string_view> keys);
  // Under mu_: the invalidations of `entry`'s clients (but a NOLOOP one's own change: `by`),
  // and the entry forgotten.
  void InvalidateEntryLocked(Table::iterator entry, uint64_t by, std::vector<Message>* out);
  // Under mu_: the BCAST messages for `changes` (each key with the client that changed it, 0
  // for none), one per prefix and client.
  void BroadcastLocked(const std::vector<std::pair<std::string, uint64_t>>& changes,
                       std::vector<Message>* out);
  void DropPrefixesLocked(uint64_t id, Tracker& t);
  static void Send(std::vector<Message>& out);
  void UpdateActive();

  static constexpr size_t kMaxBatchedKeys = 1024;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Tracker> trackers_;
  Table table_;
  std::map<std::string, std::vector<uint64_t>, std::less<>> prefix_clients_;
  size_t items_ = 0;
  std::atomic<size_t> keys_{0};           // table_.size(), read without the mutex
  std::atomic<size_t> prefix_count_{0};   // prefix_clients_.size()
  std::atomic<size_t> tracker_count_{0};  // trackers_.size()
  std::atomic<bool> active_{false};       // keys_ or prefix_count_ non-zero
};

}  // namespace larder::server
