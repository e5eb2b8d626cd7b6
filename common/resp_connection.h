// RespConnection: one RESP2 client connection to larder-server (or any Redis-protocol store)
// over a unix socket or TCP: the native LMCache plugin's server mode
// (connectors/python/native/server_backend.h) and a slot migration's link from one cluster
// node to another (server/cluster/migrator.cc). Header-only, so the Python module needs no
// library of Larder's beyond the engine.
//
// Contract:
// - Every wait on the socket (connect, each send, each receive) is bounded by `timeout_ms`; a
//   wait that runs out, a closed connection or a reply that is not RESP2 of the expected type
//   returns false with error() set, and the connection is then broken(): its caller drops it
//   and connects anew. No call raises, none blocks longer than the timeout per wait.
// - An error reply (`-ERR ...`) is a reply, not a failure: the stream stays in step.
// - A bulk reply can be read straight into the caller's memory (ReadBulkInto): the bytes go
//   from the socket into the buffer with no copy in between, except those already buffered.
// - Not thread-safe: one connection per worker thread.
#pragma once

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace larder::common {

// Where the server listens: a unix socket path (anything with a '/'), or host:port.
struct ServerAddress {
  std::string unix_path;
  std::string host;
  std::string port;

  static bool Parse(const std::string& s, ServerAddress* out, std::string* error) {
    if (s.find('/') != std::string::npos) {
      out->unix_path = s.rfind("unix://", 0) == 0 ? s.substr(7) : s;
      if (out->unix_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
        *error = "unix socket path too long: " + s;
        return false;
      }
      return true;
    }
    size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
      *error = "server must be a unix socket path or host:port, got '" + s + "'";
      return false;
    }
    out->host = s.substr(0, colon);
    out->port = s.substr(colon + 1);
    if (out->host.front() == '[' || out->host.back() == ']') {  // [::1]:6379, as in a URL
      if (out->host.size() < 3 || out->host.front() != '[' || out->host.back() != ']') {
        *error = "server must be a unix socket path or host:port, got '" + s + "'";
        return false;
      }
      out->host = out->host.substr(1, out->host.size() - 2);
    }
    return true;
  }
};

// One reply header: '+', '-', ':', '$' or '*' and the rest of its line (for '$', the length;
// for '*', the number of elements).
struct ReplyHeader {
  char type = 0;
  std::string line;
  int64_t number = 0;  // ':' value, '$' length or '*' count (-1 = null)
};

class RespConnection {
 public:
  RespConnection(ServerAddress address, int timeout_ms)
      : address_(std::move(address)), timeout_ms_(timeout_ms) {}
  ~RespConnection() { Close(); }
  RespConnection(const RespConnection&) = delete;
  RespConnection& operator=(const RespConnection&) = delete;

  bool broken() const { return fd_ < 0; }
  const std::string& error() const { return error_; }

  // Connects (and sends AUTH when a password is given); false with error() on failure.
  bool Connect(const std::string& username, const std::string& password) {
    Close();
    if (!OpenSocket()) return Fail(error_);
    if (password.empty()) return true;
    std::vector<std::string_view> auth{"AUTH"};
    if (!username.empty()) auth.push_back(username);
    auth.push_back(password);
    std::string cmd = Command(auth);
    ReplyHeader h;
    if (!SendAll({{cmd.data(), cmd.size()}}) || !ReadHeader(&h)) return false;
    if (h.type != '+') return Fail("AUTH refused: " + h.line);
    return true;
  }

  // The RESP array for `args`; with `tail_len` >= 0 a last bulk header of that length is
  // appended, its payload to be sent separately (a SET's value, from the caller's memory).
  static std::string Command(const std::vector<std::string_view>& args, int64_t tail_len = -1) {
    std::string out = "*" + std::to_string(args.size() + (tail_len >= 0)) + "\r\n";
    for (std::string_view a : args) {
      out += "$" + std::to_string(a.size()) + "\r\n";
      out.append(a);
      out += "\r\n";
    }
    if (tail_len >= 0) out += "$" + std::to_string(tail_len) + "\r\n";
    return out;
  }

  // Sends `args` as one RESP array; the arguments go out from the caller's memory (a value of
  // many MiB is not copied), only their headers are built.
  bool SendCommand(const std::vector<std::string_view>& args) {
    std::vector<std::string> heads;
    heads.reserve(args.size() + 1);
    heads.push_back("*" + std::to_string(args.size()) + "\r\n");
    for (std::string_view a : args) heads.push_back("$" + std::to_string(a.size()) + "\r\n");
    static constexpr char kCrlf[] = "\r\n";
    std::vector<iovec> parts{{heads[0].data(), heads[0].size()}};
    for (size_t i = 0; i < args.size(); ++i) {
      parts.push_back({heads[i + 1].data(), heads[i + 1].size()});
      if (!args[i].empty()) parts.push_back({const_cast<char*>(args[i].data()), args[i].size()});
      parts.push_back({const_cast<char*>(kCrlf), 2});
    }
    return SendAll(std::move(parts));
  }

  // Sends every byte of `parts` (one sendmsg per round, no SIGPIPE).
  bool SendAll(std::vector<iovec> parts) {
    size_t i = 0;
    while (i < parts.size()) {
      msghdr msg{};
      msg.msg_iov = &parts[i];
      msg.msg_iovlen = std::min<size_t>(parts.size() - i, IOV_MAX);
      ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN && Wait(POLLOUT)) continue;
        return Fail(errno == EAGAIN ? error_ : std::string("send: ") + std::strerror(errno));
      }
      for (size_t left = static_cast<size_t>(n); left > 0 && i < parts.size();) {
        size_t take = std::min(left, parts[i].iov_len);
        parts[i].iov_base = static_cast<char*>(parts[i].iov_base) + take;
        parts[i].iov_len -= take;
        left -= take;
        if (parts[i].iov_len == 0) ++i;
      }
      while (i < parts.size() && parts[i].iov_len == 0) ++i;
    }
    return true;
  }

  // Reads one reply header line; an array's ('*') elements follow as replies of their own.
  // RESP3 types are not expected here.
  bool ReadHeader(ReplyHeader* h) {
    std::string line;
    if (!ReadLine(&line)) return false;
    h->type = line[0];
    h->line = line.substr(1);
    if (h->type == '+' || h->type == '-') return true;
    if (h->type != ':' && h->type != '$' && h->type != '*') {
      return Fail("unexpected reply: " + line.substr(0, 64));
    }
    char* end = nullptr;
    errno = 0;
    h->number = std::strtoll(h->line.c_str(), &end, 10);
    if (errno || end == h->line.c_str() || *end) return Fail("bad number in reply: " + line);
    if (h->type != ':' && h->number < -1) {
      return Fail((h->type == '$' ? "bad bulk length: " : "bad array length: ") + line);
    }
    return true;
  }

  // Reads a bulk payload of `len` bytes and its CRLF: into `dest` when given, else discarded.
  bool ReadBulkInto(char* dest, size_t len) {
    if (!ReadExact(dest, len)) return false;
    char crlf[2];
    if (!ReadExact(crlf, 2)) return false;
    if (crlf[0] != '\r' || crlf[1] != '\n') return Fail("bulk reply without CRLF");
    return true;
  }

  // Drops the connection, recording why (for a reply the caller cannot follow); false.
  bool Abandon(std::string why) { return Fail(std::move(why)); }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    begin_ = end_ = 0;
  }

 private:
  static constexpr size_t kReadBuffer = 64 * 1024;
  static constexpr size_t kMaxLine = 4096;

  bool Fail(std::string msg) {
    error_ = std::move(msg);
    Close();
    return false;
  }

  // Waits for `events` on the socket for at most the timeout.
  bool Wait(short events) {
    pollfd p{fd_, events, 0};
    for (;;) {
      int r = ::poll(&p, 1, timeout_ms_);
      if (r > 0) return true;
      if (r == 0) return Fail("no answer within " + std::to_string(timeout_ms_) + " ms");
      if (errno != EINTR) return Fail(std::string("poll: ") + std::strerror(errno));
    }
  }

  bool OpenSocket() {
    if (!address_.unix_path.empty()) {
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::memcpy(sa.sun_path, address_.unix_path.data(), address_.unix_path.size());
      return ConnectTo(AF_UNIX, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(address_.host.c_str(), address_.port.c_str(), &hints, &res);
    if (rc != 0) {
      error_ = "cannot resolve " + address_.host + ": " + ::gai_strerror(rc);
      return false;
    }
    bool ok = false;
    for (addrinfo* a = res; a && !ok; a = a->ai_next) {
      ok = ConnectTo(a->ai_family, a->ai_addr, a->ai_addrlen);
    }
    ::freeaddrinfo(res);
    return ok;
  }

  bool ConnectTo(int family, const sockaddr* sa, socklen_t len) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error_ = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    if (::connect(fd_, sa, len) == 0) return true;
    if (errno != EINPROGRESS && errno != EAGAIN) {
      error_ = std::string("connect: ") + std::strerror(errno);
      Close();
      return false;
    }
    if (!Wait(POLLOUT)) return false;
    int err = 0;
    socklen_t el = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err == 0) return true;
    error_ = std::string("connect: ") + std::strerror(err);
    Close();
    return false;
  }

  // Receives at most `len` bytes into `dest`, waiting at most the timeout for the first.
  bool RecvSome(char* dest, size_t len, size_t* got) {
    for (;;) {
      ssize_t n = ::recv(fd_, dest, len, 0);
      if (n > 0) {
        *got = static_cast<size_t>(n);
        return true;
      }
      if (n == 0) return Fail("connection closed by the server");
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return Fail(std::string("recv: ") + std::strerror(errno));
      if (!Wait(POLLIN)) return false;
    }
  }

  bool ReadLine(std::string* line) {
    for (;;) {
      std::string_view have(buf_.data() + begin_, end_ - begin_);
      size_t nl = have.find("\r\n");
      if (nl != std::string_view::npos && nl > 0) {
        line->assign(have.substr(0, nl));
        begin_ += nl + 2;
        return true;
      }
      if (nl == 0 || have.size() > kMaxLine) return Fail("malformed reply line");
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      if (buf_.size() < kReadBuffer) buf_.resize(kReadBuffer);
      size_t got = 0;
      if (!RecvSome(buf_.data() + end_, buf_.size() - end_, &got)) return false;
      end_ += got;
    }
  }

  // `len` bytes into dest (or dropped when dest is null): first what is buffered, then the
  // rest straight from the socket.
  bool ReadExact(char* dest, size_t len) {
    size_t from_buf = std::min(len, end_ - begin_);
    if (dest) std::memcpy(dest, buf_.data() + begin_, from_buf);
    begin_ += from_buf;
    size_t done = from_buf;
    char scratch[16384];
    while (done < len) {
      char* to = dest ? dest + done : scratch;
      size_t want = dest ? len - done : std::min(len - done, sizeof scratch);
      size_t got = 0;
      if (!RecvSome(to, want, &got)) return false;
      done += got;
    }
    return true;
  }

  ServerAddress address_;
  int timeout_ms_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  std::string error_;
};

}  // namespace larder::common
