// WATCH's registry, as Redis keeps it: the keys each client watches, so that EXEC runs a
// transaction only if none of them changed since it was watched, and otherwise answers a null
// reply and runs nothing (optimistic locking).
//
// A key changes in two ways. A command changes it: KeyspaceEvents::Notify, the one report of a
// command's change to a key, touches the key here (whether or not notifications are on), and
// every client watching it is marked. Or it goes without a command: it expires, is evicted,
// FLUSHALL empties the store, a slot's keys are deleted after a migration. For those, WATCH
// notes whether the key exists and EXEC asks again (Changed): a key that existed and is gone
// fails the transaction, as in Redis, where an expiry or eviction after WATCH does too, while
// a key that had already expired when it was watched and is then removed does not.
//
// Once a watched key is touched, the client watches nothing more (as Redis 7 drops a dirty
// client's watches): its EXEC will fail whatever else happens, until EXEC, DISCARD, UNWATCH or
// RESET forget it.
//
// Thread-safe. Everything is kept here by client id, under one mutex (a leaf: nothing else is
// locked while it is held), so that a connection closing on its io thread may forget a client
// whose EXEC runs on a pool thread. Touch costs one atomic load while nobody watches anything.
// It relies on two rules: a command reports a change (Notify) after the store made it, and the
// store's own index lock orders a change and an existence check of the same key.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "larder/store.h"

namespace larder::server {

class WatchedKeys {
 public:
  // `client` watches `key` from now on; a key it already watches is left as it is (its state
  // when first watched counts), and so is a client already touched. Asks `store` whether the
  // key exists, with no lock held.
  void Watch(uint64_t client, std::string_view key, Store& store);
  // Whether a key `client` watches changed since it was watched: a command changed it, or it
  // existed then and does not now. Call it only for a client that watched (a client forgotten
  // meanwhile, its connection closed under its EXEC, counts as changed), and where no command
  // can change a key meanwhile (EXEC holds the server lock exclusively).
  bool Changed(uint64_t client, Store& store);
  // Forgets the client's watches: EXEC (whatever it answered), DISCARD, UNWATCH, RESET, and a
  // closed connection.
  void UnwatchAll(uint64_t client);
  // A command changed `key`: every client watching it will see Changed.
  void Touch(std::string_view key);

  // Whether a key `client` watched was touched (CLIENT LIST's flag d).
  bool Touched(uint64_t client) const;

  // Keys watched by at least one client, and clients watching at least one key.
  size_t keys() const { return keys_.load(); }
  size_t clients() const;

 private:
  struct Watched {
    std::string key;
    bool existed = false;
  };
  struct ClientWatches {
    std::vector<Watched> keys;
    bool touched = false;
  };
  // Removes the client's keys from watchers_ (mu_ held).
  void DropKeys(uint64_t client, ClientWatches& mine);
  // Finds a std::string key by a std::string_view, with no copy.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, ClientWatches> clients_;
  std::unordered_map<std::string, std::vector<uint64_t>, KeyHash, std::equal_to<>> watchers_;
  std::atomic<size_t> keys_{0};  // watchers_.size(), read without the mutex by Touch
};

}  // namespace larder::server
