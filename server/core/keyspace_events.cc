#include "core/keyspace_events.h"

#include <algorithm>
#include <functional>

#include <string>

#include "common/args.h"
#include "log.h"

namespace larder::server {

using config::kNotifyEvicted;
using config::kNotifyExpired;
using config::kNotifyGeneration;
using config::kNotifyKeyevent;
using config::kNotifyKeyMiss;
using config::kNotifyKeyspace;

uint32_t KeyspaceEvents::Enabled() {
  if (pubsub_.Idle()) return 0;
  const uint64_t generation = config_.generation();
  if (config_generation_.load(std::memory_order_acquire) != generation) {
    enabled_.store(config_.snapshot()->notify_keyspace_events, std::memory_order_relaxed);
    config_generation_.store(generation, std::memory_order_release);
  }
  return enabled_.load(std::memory_order_relaxed);
}

size_t KeyspaceEvents::StripeOf(std::string_view key) {
  return std::hash<std::string_view>{}(key) % kStripes;
}

bool KeyspaceEvents::WriteWouldWait(std::string_view key) {
  if (!Publishing()) return false;
  std::unique_lock<std::mutex> probe(stripes_[StripeOf(key)], std::try_to_lock);
  return !probe.owns_lock();
}

std::vector<std::unique_lock<std::mutex>> KeyspaceEvents::OrderWrites(
    const std::vector<std::string_view>& keys) {
  std::vector<size_t> stripes;
  for (std::string_view key : keys) stripes.push_back(StripeOf(key));
  std::sort(stripes.begin(), stripes.end());  // one order for every command: no deadlock
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripes.size());
  for (size_t s : stripes) locks.emplace_back(stripes_[s]);
  return locks;
}

void KeyspaceEvents::Notify(uint32_t cls, std::string_view event, std::string_view key) {
  const bool by_command = (cls & (kNotifyKeyMiss | kNotifyExpired | kNotifyEvicted)) == 0;
  if (by_command) watched_.Touch(key);
  if (cls != kNotifyKeyMiss) tracking_.Invalidate(key, by_command);
  const uint32_t enabled = Enabled();
  if ((enabled & cls) == 0) return;
  if (enabled & kNotifyKeyspace) {
    pubsub_.Publish(std::string("__keyspace@0__:").append(key), event);
  }
  if (enabled & kNotifyKeyevent) {
    pubsub_.Publish(std::string("__keyevent@0__:").append(event), key);
  }
}

void KeyspaceEvents::NotifyGenerationEvicted(const GenerationEvicted& info) {
  const uint32_t needed = kNotifyGeneration | kNotifyKeyevent;
  if ((Enabled() & needed) != needed) return;
  const std::string summary = "generation=" + std::to_string(info.generation) +
                              " evicted_keys=" + std::to_string(info.evicted_keys) +
                              " evicted_bytes=" + std::to_string(info.evicted_bytes) +
                              " expired_keys=" + std::to_string(info.expired_keys) +
                              " reinserted_keys=" + std::to_string(info.reinserted_keys) +
                              " reinserted_bytes=" + std::to_string(info.reinserted_bytes) +
                              " whole=" + (info.whole ? "1" : "0");
  pubsub_.Publish("__keyevent@0__:evicted-generation", summary);
}

void EngineEventForwarder::OnExpired(std::string_view key) {
  if (KeyspaceEvents* e = events_.load()) e->Notify(kNotifyExpired, "expired", key);
}

void EngineEventForwarder::OnEvicted(std::string_view key) {
  if (KeyspaceEvents* e = events_.load()) e->Notify(kNotifyEvicted, "evicted", key);
}

void EngineEventForwarder::OnGenerationEvicted(const GenerationEvicted& info) {
  if (KeyspaceEvents* e = events_.load()) e->NotifyGenerationEvicted(info);
}

void EngineEventForwarder::OnCorruptValue(std::string_view key, std::string_view reason) {
  if (KeyspaceEvents* e = events_.load()) e->KeyLeft(key);
  // A line names at most the first 256 bytes of a key.
  constexpr size_t kKeyShown = 256;
  std::string shown = common::Repr(key.substr(0, kKeyShown));
  if (key.size() > kKeyShown) shown += "...";
  Log(LogLevel::kWarning, "the value of key " + shown + " failed verification and was removed (" +
                              std::string(reason) + "); it is a miss from now on");
}

}  // namespace larder::server
