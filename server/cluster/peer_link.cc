#include "cluster/peer_link.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace larder::server::cluster {

namespace {

std::string ErrnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

PeerLink::~PeerLink() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> PeerLink::Connect(const std::string& host, int port,
                                             std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found)) {
    return "cannot resolve " + where + ": " + ::gai_strerror(rc);
  }
  std::string error = "cannot connect to " + where;
  for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      fd_ = fd;
    } else {
      error = ErrnoText("cannot connect to " + where);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) return error;
  return std::nullopt;
}

std::optional<std::string> PeerLink::Send(const std::vector<std::string_view>& args) {
  if (fd_ < 0) return "not connected";
  // Headers first, then one iovec per piece, so values go out from the caller's memory.
  std::vector<std::string> headers;
  headers.reserve(args.size() + 1);
  headers.push_back("*" + std::to_string(args.size()) + "\r\n");
  for (std::string_view a : args) headers.push_back("$" + std::to_string(a.size()) + "\r\n");
  std::vector<iovec> iov;
  iov.reserve(3 * args.size() + 1);
  auto add = [&iov](const void* p, size_t n) {
    if (n > 0) iov.push_back({const_cast<void*>(p), n});
  };
  add(headers[0].data(), headers[0].size());
  for (size_t i = 0; i < args.size(); ++i) {
    add(headers[i + 1].data(), headers[i + 1].size());
    add(args[i].data(), args[i].size());
    add("\r\n", 2);
  }
  size_t first = 0;
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    const ssize_t n = ::writev(fd_, iov.data() + first, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoText("cannot send to the migration target");
    size_t left = static_cast<size_t>(n);
    while (left > 0 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return std::nullopt;
}

std::optional<std::string> PeerLink::ReadLine(std::string* line) {
  if (fd_ < 0) return "not connected";
  size_t eol;
  while ((eol = in_.find("\r\n")) == std::string::npos) {
    if (in_.size() > (1 << 20)) return "the migration target sent an overlong reply";
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return "the migration target closed the connection";
    if (n < 0) return ErrnoText("no reply from the migration target");
    in_.append(buf, static_cast<size_t>(n));
  }
  *line = in_.substr(0, eol);
  in_.erase(0, eol + 2);
  if (line->empty() || (line->front() != '+' && line->front() != '-' && line->front() != ':')) {
    return "unexpected reply from the migration target: " + line->substr(0, 64);
  }
  return std::nullopt;
}

std::optional<std::string> PeerLink::Call(const std::vector<std::string_view>& args) {
  if (auto error = Send(args)) return error;
  std::string line;
  if (auto error = ReadLine(&line)) return error;
  if (line.front() == '-') return "the migration target replied " + line.substr(1);
  return std::nullopt;
}

}  // namespace larder::server::cluster
