#include "core/watched_keys.h"

#include <algorithm>

namespace larder::server {

void WatchedKeys::Watch(uint64_t client, std::string_view key, Store& store) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ClientWatches& mine = clients_[client];
    if (mine.touched) return;  // EXEC fails whatever else is watched (as Redis's WATCH)
    for (const Watched& w : mine.keys) {
      if (w.key == key) return;
    }
    mine.keys.push_back({std::string(key), false});
    auto [it, added] = watchers_.try_emplace(std::string(key));
    it->second.push_back(client);
    if (added) keys_.fetch_add(1);
  }
  // Registered first, then asked: a command that changes the key after the answer touches it
  // here, and one that changed it before is in the answer.
  const bool exists = store.Contains(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto mine = clients_.find(client);
  if (mine == clients_.end()) return;  // the connection closed meanwhile
  for (Watched& w : mine->second.keys) {
    if (w.key == key) w.existed = exists;
  }
}

bool WatchedKeys::Changed(uint64_t client, Store& store) {
  std::vector<Watched> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto mine = clients_.find(client);
    if (mine == clients_.end() || mine->second.touched) return true;
    keys = mine->second.keys;
  }
  // Only a key gone counts: one that appears was written by a command, which touched it, but
  // for a BITFIELD whose writes FAIL refused (it creates the key unannounced, and Redis's EXEC
  // runs then too).
  return std::any_of(keys.begin(), keys.end(),
                     [&store](const Watched& w) { return w.existed && !store.Contains(w.key); });
}

void WatchedKeys::DropKeys(uint64_t client, ClientWatches& mine) {
  for (const Watched& w : mine.keys) {
    auto it = watchers_.find(w.key);
    if (it == watchers_.end()) continue;
    std::erase(it->second, client);
    if (it->second.empty()) {
      watchers_.erase(it);
      keys_.fetch_sub(1);
    }
  }
  mine.keys.clear();
}

void WatchedKeys::UnwatchAll(uint64_t client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto mine = clients_.find(client);
  if (mine == clients_.end()) return;
  DropKeys(client, mine->second);
  clients_.erase(mine);
}

void WatchedKeys::Touch(std::string_view key) {
  if (keys_.load() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  const std::vector<uint64_t> watchers = it->second;  // DropKeys erases from it
  for (uint64_t client : watchers) {
    auto mine = clients_.find(client);
    if (mine == clients_.end()) continue;
    mine->second.touched = true;
    DropKeys(client, mine->second);  // nothing more can change EXEC's answer
  }
}

bool WatchedKeys::Touched(uint64_t client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto mine = clients_.find(client);
  return mine != clients_.end() && mine->second.touched;
}

size_t WatchedKeys::clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(clients_.begin(), clients_.end(),
                                           [](const auto& c) { return !c.second.keys.empty(); }));
}

}  // namespace larder::server
