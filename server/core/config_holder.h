// ConfigHolder: the configuration in force, shared by every thread. Readers take cheap
// immutable snapshots; CONFIG GET/SET/REWRITE are serialised here.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace larder::server {

class ConfigHolder {
 public:
  // `config` must outlive the holder; from now on only the holder touches it.
  explicit ConfigHolder(config::Config* config);

  // A snapshot of the configuration in force (one shared_ptr copy under a mutex).
  std::shared_ptr<const config::ServerConfig> snapshot() const;
  // Bumped by every successful Set: holders of a cached snapshot refresh when it moves.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // CONFIG GET / SET / REWRITE (config/config.h has the contracts and error texts).
  std::vector<std::pair<std::string, std::string>> Get(std::string_view pattern) const;
  std::optional<std::string> Set(const std::vector<std::pair<std::string, std::string>>& pairs);
  std::optional<std::string> Rewrite() const;

 private:
  config::Config* config_;
  mutable std::mutex mu_;
  std::shared_ptr<const config::ServerConfig> snapshot_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace larder::server
