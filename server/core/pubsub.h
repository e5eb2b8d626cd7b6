// PubSub: the channels and patterns clients subscribe to, and publishing to them, as Redis
// does (SUBSCRIBE, PSUBSCRIBE, PUBLISH, PUBSUB). Messages go to each subscriber's PushSink,
// which queues them on its connection: a publisher never waits for a subscriber, and a slow
// subscriber is bounded by its connection's `pubsub` output limit.
//
// Thread-safe. Publish takes a shared lock; subscribing takes it exclusively.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/client_state.h"

namespace larder::server {

class PubSub {
 public:
  enum class Kind { kChannel, kPattern };

  // Subscribes `client` (through client.push) to a channel or pattern; false if it already
  // was. Keeps client.channels / client.patterns current.
  bool Subscribe(ClientState& client, Kind kind, std::string_view name);
  // Unsubscribes; false if it was not subscribed.
  bool Unsubscribe(ClientState& client, Kind kind, std::string_view name);
  // The client's channels or patterns, sorted.
  std::vector<std::string> SubscriptionsOf(const ClientState& client, Kind kind) const;
  // Drops every subscription of the client (it disconnected, or RESET).
  void Forget(ClientState& client);

  // Sends `message` to the subscribers of `channel` and of every pattern matching it (a client
  // subscribed both ways gets both); returns how many messages were queued.
  size_t Publish(std::string_view channel, std::string_view message);
  // Whether nobody subscribes to anything (one atomic load).
  bool Idle() const { return subscriptions_.load(std::memory_order_relaxed) == 0; }

  // PUBSUB: channels with a subscriber matching `pattern` (all when empty), the subscribers of
  // `channel`, the patterns subscribed to; and the channels with a subscriber (INFO's
  // pubsub_channels).
  std::vector<std::string> ActiveChannels(std::string_view pattern) const;
  size_t NumSub(std::string_view channel) const;
  size_t NumPat() const;
  size_t NumChannels() const;

 private:
  struct Subscriber {
    std::shared_ptr<PushSink> sink;
    std::set<std::string, std::less<>> names[2];  // by Kind
  };
  using Members = std::unordered_map<uint64_t, std::shared_ptr<PushSink>>;

  std::atomic<uint32_t>& CountOf(ClientState& client, Kind kind);

  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, Subscriber> clients_;
  std::unordered_map<std::string, Members> channels_;
  std::map<std::string, Members, std::less<>> patterns_;
  std::atomic<size_t> subscriptions_{0};
};

}  // namespace larder::server
