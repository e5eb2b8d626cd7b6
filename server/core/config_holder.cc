#include "core/config_holder.h"

namespace larder::server {

ConfigHolder::ConfigHolder(config::Config* config)
    : config_(config), snapshot_(std::make_shared<config::ServerConfig>(config->values())) {}

std::shared_ptr<const config::ServerConfig> ConfigHolder::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

std::vector<std::pair<std::string, std::string>> ConfigHolder::Get(std::string_view pattern) const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_->Get(pattern);
}

std::optional<std::string> ConfigHolder::Set(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::lock_guard<std::mutex> lock(mu_);
  auto err = config_->Set(pairs);
  if (!err) {
    snapshot_ = std::make_shared<config::ServerConfig>(config_->values());
    generation_.fetch_add(1, std::memory_order_release);
  }
  return err;
}

std::optional<std::string> ConfigHolder::Rewrite() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_->Rewrite();
}

}  // namespace larder::server
