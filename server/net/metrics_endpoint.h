// MetricsEndpoint: the `metrics-port` HTTP listener Prometheus scrapes. It answers
// `GET /metrics` (any query string) with the page `render` builds, 404 for other paths, 405 for
// other methods, 400 for anything that is not an HTTP/1.x request head within 8 KiB and 10 s;
// one response per connection (Connection: close). It runs on its own thread, so a scrape never
// waits behind clients and clients never wait behind a scrape.
#pragma once

#include <asio.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace larder::server {

class MetricsEndpoint {
 public:
  explicit MetricsEndpoint(std::function<std::string()> render) : render_(std::move(render)) {}
  ~MetricsEndpoint() { Stop(); }

  // Listens on `port` at every address of `bind`; returns the error (naming the address).
  std::optional<std::string> Listen(const std::vector<std::string>& bind, int port);
  void Start();
  void Stop();

  // The response to one request head (exposed for tests): status line, headers and body.
  std::string Respond(std::string_view head) const;

 private:
  void Accept(size_t i);

  std::function<std::string()> render_;
  asio::io_context io_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::thread thread_;
};

}  // namespace larder::server
