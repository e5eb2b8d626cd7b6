#include "core/monitors.h"

#include <cstdio>
#include <mutex>

#include "common/args.h"

namespace larder::server {

void Monitors::Add(ClientState& client) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (monitors_.emplace(client.id, Monitor{client.push, &client}).second) count_.fetch_add(1);
  client.monitor = true;
}

bool Monitors::Remove(ClientState& client) {
  if (!client.monitor.load()) return false;
  std::unique_lock<std::shared_mutex> lock(mu_);
  client.monitor = false;
  if (monitors_.erase(client.id) == 0) return false;
  count_.fetch_sub(1);
  return true;
}

void Monitors::Feed(const ClientState& client, const std::vector<std::string>& argv,
                    int64_t unix_us) {
  if (Idle()) return;
  auto frame = std::make_shared<const std::string>("+" + Line(client, argv, unix_us) + "\r\n");
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& [id, m] : monitors_) {
    // A SKIP waiting for the monitor's next command drops what others run meanwhile.
    const ClientState& s = *m.state;
    if (s.reply_off || s.reply_skip || (s.reply_skip_next && &s != &client)) continue;
    m.sink->Push(frame);
  }
}

std::string Monitors::Line(const ClientState& client, const std::vector<std::string>& argv,
                           int64_t unix_us) {
  char stamp[48];
  std::snprintf(stamp, sizeof(stamp), "%lld.%06lld", static_cast<long long>(unix_us / 1000000),
                static_cast<long long>(unix_us % 1000000));
  std::string origin = client.addr;
  if (client.unix_socket) {
    origin = "unix:" + client.addr.substr(0, client.addr.rfind(':'));
  }
  std::string line = std::string(stamp) + " [0 " + origin + "]";
  for (const std::string& arg : argv) {
    line += ' ';
    line += common::Repr(arg);
  }
  return line;
}

}  // namespace larder::server
