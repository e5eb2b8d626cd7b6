// Keyspace notifications, as Redis sends them (notify-keyspace-events): an event about a key is
// published on __keyspace@0__:<key> with the event as the message (class K) and on
// __keyevent@0__:<event> with the key as the message (class E), when the event's class is
// enabled. Commands report their events here; the engine's expiries and evictions arrive
// through EngineEventForwarder. conf/larder.conf lists the classes and the events sent.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/config_holder.h"
#include "core/key_tracking.h"
#include "core/pubsub.h"
#include "core/watched_keys.h"
#include "larder/events.h"

namespace larder::server {

class KeyspaceEvents {
 public:
  KeyspaceEvents(ConfigHolder& config, PubSub& pubsub, WatchedKeys& watched, KeyTracking& tracking)
      : config_(config), pubsub_(pubsub), watched_(watched), tracking_(tracking) {}

  // Publishes `event` about `key` if class `cls` (config::NotifyClass) is enabled. Costs three
  // atomic loads while nobody subscribes and nobody WATCHes a key. Every command reports here
  // each change it makes to a key, after the store made it, so an event of a class other than
  // keymiss, expired and evicted (which report no command's change) also touches the key's
  // WATCHers, and any event but keymiss invalidates the key for the clients tracking it,
  // whatever notify-keyspace-events says.
  void Notify(uint32_t cls, std::string_view event, std::string_view key);
  // A key left without a command and without a Redis event: a slot range's keys deleted once
  // served elsewhere, a failed import's, a value that failed verification. Only the clients
  // tracking it are told (KeyTracking); WATCH finds such keys gone by itself.
  void KeyLeft(std::string_view key) { tracking_.Invalidate(key, /*by_command=*/false); }
  // Larder's class G: one "evicted-generation" keyevent message summarising the generation.
  void NotifyGenerationEvicted(const GenerationEvicted& info);

  // While events are published: the locks of the stripes of `keys` (a write command's), in
  // order, to hold while the command changes them and reports its events, so that two writes
  // of one key publish their events in the order the store applied them. Empty (no lock)
  // when nothing is published.
  std::vector<std::unique_lock<std::mutex>> OrderWrites(const std::vector<std::string_view>& keys);
  bool Publishing() { return Enabled() != 0; }
  // Whether events of class `cls` are published now (someone subscribes, the class is on).
  bool Publishes(uint32_t cls) { return (Enabled() & cls) != 0; }
  // Whether OrderWrites({key}) would wait now (another write of a key of its stripe holds it):
  // such a write goes to the engine pool rather than block a connection's io thread.
  bool WriteWouldWait(std::string_view key);

 private:
  static constexpr size_t kStripes = 64;
  static size_t StripeOf(std::string_view key);

  // The enabled classes (the option's bits, refreshed when the configuration changes), or 0
  // while nobody subscribes to anything.
  uint32_t Enabled();

  ConfigHolder& config_;
  PubSub& pubsub_;
  WatchedKeys& watched_;
  KeyTracking& tracking_;
  std::atomic<uint64_t> config_generation_{~0ull};
  std::atomic<uint32_t> enabled_{0};
  std::array<std::mutex, kStripes> stripes_;
};

// The engine's listener (larder::Options::listener): the store is opened before the server's
// Core exists, so its events are forwarded to the KeyspaceEvents attached once it does (and
// dropped before). A value that failed verification is logged as a warning (no Redis event
// names it).
class EngineEventForwarder final : public EventListener {
 public:
  void Attach(KeyspaceEvents* events) { events_.store(events); }

  void OnExpired(std::string_view key) override;
  void OnEvicted(std::string_view key) override;
  void OnGenerationEvicted(const GenerationEvicted& info) override;
  void OnCorruptValue(std::string_view key, std::string_view reason) override;

 private:
  std::atomic<KeyspaceEvents*> events_{nullptr};
};

}  // namespace larder::server
