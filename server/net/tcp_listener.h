// Opening TCP listeners on the `bind` addresses, as both the client port (net/server.cc) and
// the metrics port (net/metrics_endpoint.cc) do: SO_REUSEADDR, IPv6 addresses without their IPv4
// mapping (an IPv4 address is bound separately, as in Redis), then listen(backlog).
#pragma once

#include <asio.hpp>
#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/bind_address.h"

namespace larder::server {

struct TcpListener {
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;  // null on failure
  bool unavailable = false;  // this machine has no such address (or no such address family)
  std::string error;         // why it failed (the system's words)
};

inline TcpListener ListenTcp(asio::io_context& io, const std::string& host, int port, int backlog) {
  TcpListener out;
  asio::error_code ec;
  const asio::ip::address addr = asio::ip::make_address(host, ec);
  if (ec) {
    out.error = ec.message();
    return out;
  }
  const asio::ip::tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(io);
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && addr.is_v6()) acc->set_option(asio::ip::v6_only(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(backlog, ec);
  if (ec) {
    out.error = ec.message();
    out.unavailable = ec == asio::error_code(EADDRNOTAVAIL, asio::system_category()) ||
                      ec == asio::error::address_family_not_supported;
  } else {
    out.acceptor = std::move(acc);
  }
  return out;
}

// Listeners at `port` on every `bind` entry (config/bind_address.h: checked when the config was
// read), appended to *out. An optional entry ("-::1") whose address this machine lacks is
// skipped, and named in *skipped. nullopt, or the error naming the address and `label`.
inline std::optional<std::string> ListenOnBind(
    asio::io_context& io, const std::vector<std::string>& bind, int port, int backlog,
    std::string_view label, std::vector<std::unique_ptr<asio::ip::tcp::acceptor>>* out,
    std::vector<std::string>* skipped) {
  for (const std::string& entry : bind) {
    const std::optional<config::BindAddress> addr = config::ParseBindAddress(entry);
    if (!addr) return "bind: invalid address '" + entry + "'";
    TcpListener l = ListenTcp(io, addr->ip, port, backlog);
    if (!l.acceptor && l.unavailable && addr->optional) {
      skipped->push_back(addr->ip);
      continue;
    }
    if (!l.acceptor) {
      return "could not listen on " + addr->ip + ":" + std::to_string(port) + std::string(label) +
             ": " + l.error;
    }
    out->push_back(std::move(l.acceptor));
  }
  return std::nullopt;
}

}  // namespace larder::server
