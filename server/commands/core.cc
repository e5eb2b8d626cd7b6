#include "commands/context.h"

namespace larder::server {

Core::Core(Store* store, config::Config* config, ClientRegistry* clients)
    : store_(store),
      config_(config),
      clients_(clients),
      snapshot_(std::make_shared<config::ServerConfig>(config->values())) {}

std::shared_ptr<const config::ServerConfig> Core::cfg() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return snapshot_;
}

std::vector<std::pair<std::string, std::string>> Core::ConfigGet(std::string_view pattern) {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config_->Get(pattern);
}

std::optional<std::string> Core::ConfigSet(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::lock_guard<std::mutex> lock(config_mu_);
  auto err = config_->Set(pairs);
  if (!err) {
    snapshot_ = std::make_shared<config::ServerConfig>(config_->values());
    config_gen_.fetch_add(1, std::memory_order_release);
  }
  return err;
}

std::optional<std::string> Core::ConfigRewrite() {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config_->Rewrite();
}

void Core::ResetStats() {
  total_commands = 0;
  total_connections = 0;
  rejected_connections = 0;
  net_input_bytes = 0;
  net_output_bytes = 0;
}

}  // namespace larder::server
