#include "net/metrics_endpoint.h"

#include "net/tcp_listener.h"

namespace larder::server {

namespace {

constexpr size_t kMaxHeadBytes = 8 * 1024;
constexpr auto kRequestTimeout = std::chrono::seconds(10);

std::string HttpResponse(std::string_view status, std::string_view content_type,
                         std::string_view body, std::string_view extra_headers = "") {
  std::string out = "HTTP/1.1 ";
  out.append(status);
  out += "\r\nContent-Type: ";
  out.append(content_type);
  out += "\r\nContent-Length: " + std::to_string(body.size());
  out += "\r\nConnection: close\r\n";
  out.append(extra_headers);
  out += "\r\n";
  out.append(body);
  return out;
}

// One scrape: reads the request head, writes the response, closes.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(asio::ip::tcp::socket socket, const MetricsEndpoint& endpoint)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), endpoint_(endpoint) {}

  void Start() {
    timer_.expires_after(kRequestTimeout);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) self->Close();
    });
    Read();
  }

 private:
  void Read() {
    socket_.async_read_some(
        asio::buffer(chunk_), [self = shared_from_this()](const asio::error_code& ec, size_t n) {
          if (ec) return self->Close();
          self->head_.append(self->chunk_, n);
          if (self->head_.find("\r\n\r\n") != std::string::npos) {
            return self->Write(self->endpoint_.Respond(self->head_));
          }
          if (self->head_.size() > kMaxHeadBytes) {
            return self->Write(HttpResponse("431 Request Header Fields Too Large", "text/plain",
                                            "request head over 8 KiB\n"));
          }
          self->Read();
        });
  }

  void Write(std::string response) {
    response_ = std::move(response);
    asio::async_write(
        socket_, asio::buffer(response_),
        [self = shared_from_this()](const asio::error_code&, size_t) { self->Close(); });
  }

  void Close() {
    asio::error_code ignored;
    timer_.cancel();
    socket_.shutdown(asio::socket_base::shutdown_both, ignored);
    socket_.close(ignored);
  }

  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  const MetricsEndpoint& endpoint_;
  char chunk_[2048];
  std::string head_, response_;
};

}  // namespace

std::string MetricsEndpoint::Respond(std::string_view head) const {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !line.substr(sp2 + 1).starts_with("HTTP/1.")) {
    return HttpResponse("400 Bad Request", "text/plain", "not an HTTP/1.x request\n");
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") {
    return HttpResponse("405 Method Not Allowed", "text/plain", "only GET is served\n",
                        "Allow: GET, HEAD\r\n");
  }
  if (path != "/metrics") {
    return HttpResponse("404 Not Found", "text/plain", "metrics are at /metrics\n");
  }
  std::string response =
      HttpResponse("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_());
  if (method == "HEAD") response.resize(response.find("\r\n\r\n") + 4);
  return response;
}

std::optional<std::string> MetricsEndpoint::Listen(const std::vector<std::string>& bind, int port) {
  std::vector<std::string> skipped;  // the client port's listeners said so already
  return ListenOnBind(io_, bind, port, asio::socket_base::max_listen_connections, " (metrics)",
                      &acceptors_, &skipped);
}

void MetricsEndpoint::Accept(size_t i) {
  acceptors_[i]->async_accept([this, i](const asio::error_code& ec, asio::ip::tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(s), *this)->Start();
    if (ec) {
      // EMFILE and the like: try again shortly rather than spin.
      auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      return retry->async_wait([this, i, retry](const asio::error_code& e) {
        if (!e) Accept(i);
      });
    }
    Accept(i);
  });
}

void MetricsEndpoint::Start() {
  for (size_t i = 0; i < acceptors_.size(); ++i) Accept(i);
  thread_ = std::thread([this] { io_.run(); });
}

void MetricsEndpoint::Stop() {
  if (!thread_.joinable()) return;
  io_.stop();
  thread_.join();
}

}  // namespace larder::server
