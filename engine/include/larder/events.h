// EventListener: what the store tells its owner about entries that leave on their own — by
// expiry, by eviction, or because their value failed verification — as opposed to the Delete
// and Put calls the owner made itself. larder-server turns the first two into Redis keyspace
// notifications (`expired`, `evicted`) and its per-generation event, and logs the third.
#pragma once

#include <cstdint>
#include <string_view>

namespace larder {

// One eviction of a generation (whole, or a part of its entries), reported after the per-key
// calls for its entries.
struct GenerationEvicted {
  uint64_t generation = 0;        // its id (ids grow with each new generation)
  uint64_t evicted_keys = 0;      // live entries dropped (companions included)
  uint64_t evicted_bytes = 0;     // their value bytes
  uint64_t expired_keys = 0;      // expired entries that left with it
  uint64_t reinserted_keys = 0;   // entries the policy kept, now in a newer generation
  uint64_t reinserted_bytes = 0;  // their value bytes
  // True: the generation went. False: a part of its entries did (eviction in place drops the
  // oldest generation's least valuable entries a part at a time; it stays the oldest).
  bool whole = true;
};

// Called on the engine's threads: the writer whose Put made room, the maintenance thread, or a
// reader that found an entry expired or a value damaged (the caller's thread, a read thread of
// MultiGetInto, or the one calling ValueReader::Finish). Each call comes after the entry left the
// index; calls for one key come in the order its entries left. The engine may hold its internal
// locks (the eviction lock) during a call: an implementation must be quick, must not block, and
// must not call back into the Store. The default implementations ignore the event.
class EventListener {
 public:
  virtual ~EventListener() = default;
  // `key`'s entry expired and was removed (by a read, DEL, maintenance or eviction).
  virtual void OnExpired(std::string_view key) { (void)key; }
  // `key`'s live entry was evicted to keep the disk budget (also an Options::evict_together
  // companion of an evicted key).
  virtual void OnEvicted(std::string_view key) { (void)key; }
  // A generation, or a part of it (info.whole), was evicted; after the OnEvicted calls of its
  // keys.
  virtual void OnGenerationEvicted(const GenerationEvicted& info) { (void)info; }
  // A read found `key`'s value damaged (its bytes failed XXH3, or could not be read): the entry
  // was removed and counted in Stats::corruptions, and the read answered a miss (or cut the
  // value short, ValueReader). `reason` says what failed and where the value lay (its blob file
  // and offset). Called on the reading thread with no engine lock held, once per entry removed
  // (if removing it fails, the LOG says so and the listener is not called).
  virtual void OnCorruptValue(std::string_view key, std::string_view reason) {
    (void)key;
    (void)reason;
  }
};

}  // namespace larder
