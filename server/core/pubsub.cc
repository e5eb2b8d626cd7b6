#include "core/pubsub.h"

#include <mutex>

#include "larder/glob.h"
#include "resp/reply_writer.h"

namespace larder::server {

namespace {

constexpr size_t Index(PubSub::Kind kind) {
  return kind == PubSub::Kind::kChannel ? 0 : 1;
}

}  // namespace

std::atomic<uint32_t>& PubSub::CountOf(ClientState& client, Kind kind) {
  return kind == Kind::kChannel ? client.channels : client.patterns;
}

bool PubSub::Subscribe(ClientState& client, Kind kind, std::string_view name) {
  std::unique_lock lock(mu_);
  Subscriber& sub = clients_[client.id];
  if (!sub.sink) sub.sink = client.push;
  if (!sub.names[Index(kind)].emplace(name).second) return false;
  std::string key(name);
  if (kind == Kind::kChannel) {
    channels_[key][client.id] = sub.sink;
  } else {
    patterns_[key][client.id] = sub.sink;
  }
  CountOf(client, kind).fetch_add(1);
  subscriptions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool PubSub::Unsubscribe(ClientState& client, Kind kind, std::string_view name) {
  std::unique_lock lock(mu_);
  auto it = clients_.find(client.id);
  if (it == clients_.end()) return false;
  auto& names = it->second.names[Index(kind)];
  auto at = names.find(name);
  if (at == names.end()) return false;
  names.erase(at);
  auto drop = [&](auto& map, auto key) {
    auto m = map.find(key);
    m->second.erase(client.id);
    if (m->second.empty()) map.erase(m);
  };
  if (kind == Kind::kChannel) {
    drop(channels_, std::string(name));
  } else {
    drop(patterns_, name);
  }
  if (it->second.names[0].empty() && it->second.names[1].empty()) clients_.erase(it);
  CountOf(client, kind).fetch_sub(1);
  subscriptions_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

std::vector<std::string> PubSub::SubscriptionsOf(const ClientState& client, Kind kind) const {
  std::shared_lock lock(mu_);
  auto it = clients_.find(client.id);
  if (it == clients_.end()) return {};
  const auto& names = it->second.names[Index(kind)];
  return {names.begin(), names.end()};
}

void PubSub::Forget(ClientState& client) {
  if (!client.subscribed()) return;  // every disconnect comes here: no lock for most
  for (Kind kind : {Kind::kChannel, Kind::kPattern}) {
    for (const std::string& name : SubscriptionsOf(client, kind)) Unsubscribe(client, kind, name);
  }
}

size_t PubSub::Publish(std::string_view channel, std::string_view message) {
  std::vector<std::pair<std::shared_ptr<PushSink>, std::shared_ptr<const std::string>>> out;
  {
    std::shared_lock lock(mu_);
    if (auto it = channels_.find(std::string(channel)); it != channels_.end()) {
      auto frame =
          std::make_shared<const std::string>(resp::BulkArrayFrame({"message", channel, message}));
      for (const auto& [id, sink] : it->second) out.emplace_back(sink, frame);
    }
    for (const auto& [pattern, members] : patterns_) {
      if (!GlobMatch(pattern, channel)) continue;
      auto frame = std::make_shared<const std::string>(
          resp::BulkArrayFrame({"pmessage", pattern, channel, message}));
      for (const auto& [id, sink] : members) out.emplace_back(sink, frame);
    }
  }
  for (auto& [sink, frame] : out) sink->Push(std::move(frame));
  return out.size();
}

std::vector<std::string> PubSub::ActiveChannels(std::string_view pattern) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, members] : channels_) {
    if (pattern.empty() || GlobMatch(pattern, name)) out.push_back(name);
  }
  return out;
}

size_t PubSub::NumSub(std::string_view channel) const {
  std::shared_lock lock(mu_);
  auto it = channels_.find(std::string(channel));
  return it == channels_.end() ? 0 : it->second.size();
}

size_t PubSub::NumPat() const {
  std::shared_lock lock(mu_);
  return patterns_.size();
}

size_t PubSub::NumChannels() const {
  std::shared_lock lock(mu_);
  return channels_.size();
}

}  // namespace larder::server
