// Opening a TCP listener on one `bind` address, as both the client port (net/server.cc) and the
// metrics port (net/metrics_endpoint.cc) do: SO_REUSEADDR, IPv6 addresses without their IPv4
// mapping (an IPv4 address is bound separately, as in Redis), then listen(backlog).
#pragma once

#include <asio.hpp>
#include <memory>
#include <string>

namespace larder::server {

struct TcpListener {
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;  // null on failure
  bool bad_address = false;                           // `host` is not an IP address
  std::string error;                                  // why it failed (the system's words)
};

inline TcpListener ListenTcp(asio::io_context& io, const std::string& host, int port, int backlog) {
  TcpListener out;
  asio::error_code ec;
  const asio::ip::address addr = asio::ip::make_address(host, ec);
  if (ec) {
    out.bad_address = true;
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
  } else {
    out.acceptor = std::move(acc);
  }
  return out;
}

}  // namespace larder::server
