#include "load_conn.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace larder::bench {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "resp-load: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

}  // namespace

std::unique_ptr<Conn> Conn::Dial(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) {
    std::fprintf(stderr, "resp-load: cannot resolve %s\n", host.c_str());
    return nullptr;
  }
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    std::fprintf(stderr, "resp-load: connect %s:%d: %s\n", host.c_str(), port,
                 std::strerror(errno));
    freeaddrinfo(res);
    if (fd >= 0) close(fd);
    return nullptr;
  }
  freeaddrinfo(res);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return std::unique_ptr<Conn>(new Conn(fd));
}

Conn::~Conn() {
  close(fd_);
}

void Conn::SendCommand(const std::vector<std::string_view>& args) {
  // Headers for every argument go in one string; bodies are sent from the caller's memory.
  std::string head = "*" + std::to_string(args.size()) + "\r\n";
  std::vector<size_t> head_end;  // where each argument's header ends in `head`
  std::vector<std::string> heads;
  heads.reserve(args.size());
  for (size_t a = 0; a < args.size(); ++a) {
    heads.push_back((a ? "\r\n$" : "$") + std::to_string(args[a].size()) + "\r\n");
  }
  heads.front() = head + heads.front();
  static const char kCrlf[] = "\r\n";
  std::vector<iovec> iov;
  for (size_t a = 0; a < args.size(); ++a) {
    iov.push_back({heads[a].data(), heads[a].size()});
    iov.push_back({const_cast<char*>(args[a].data()), args[a].size()});
  }
  iov.push_back({const_cast<char*>(kCrlf), 2});
  size_t first = 0;
  while (first < iov.size()) {
    ssize_t w =
        writev(fd_, &iov[first], static_cast<int>(std::min<size_t>(iov.size() - first, 64)));
    if (w < 0) {
      if (errno == EINTR) continue;
      Die("write");
    }
    size_t left = static_cast<size_t>(w);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
}

std::string Conn::ReadLine() {
  for (;;) {
    size_t e = in_.find("\r\n", pos_);
    if (e != std::string::npos) {
      std::string line = in_.substr(pos_, e - pos_);
      pos_ = e + 2;
      return line;
    }
    if (pos_ > 0) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    char buf[65536];
    ssize_t r = read(fd_, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) Die("read (connection closed?)");
    in_.append(buf, static_cast<size_t>(r));
  }
}

void Conn::ReadExact(char* dst, size_t n, void* hash) {
  auto* st = static_cast<XXH3_state_t*>(hash);
  size_t have = std::min(n, in_.size() - pos_);
  if (dst) std::memcpy(dst, in_.data() + pos_, have);
  if (st && dst) XXH3_64bits_update(st, dst, have);
  pos_ += have;
  size_t done = have;
  char sink[65536];
  while (done < n) {
    char* to = dst ? dst + done : sink;
    size_t want = dst ? n - done : std::min(n - done, sizeof sink);
    ssize_t r = read(fd_, to, want);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) Die("read (connection closed?)");
    if (st && dst) XXH3_64bits_update(st, to, static_cast<size_t>(r));
    done += static_cast<size_t>(r);
  }
}

std::string Conn::ReadSimple() {
  std::string line = ReadLine();
  if (!line.empty() && line[0] == '$') {
    int64_t len = std::strtoll(line.c_str() + 1, nullptr, 10);
    if (len >= 0) ReadExact(nullptr, static_cast<size_t>(len) + 2);
  }
  return line;
}

int64_t Conn::ReadBulkInto(char* buf, size_t cap, uint64_t* xxh3) {
  std::string line = ReadLine();
  if (line.empty() || line[0] != '$') return -2;
  int64_t len = std::strtoll(line.c_str() + 1, nullptr, 10);
  if (len < 0) return -1;
  if (static_cast<uint64_t>(len) <= cap) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    ReadExact(buf, static_cast<size_t>(len), st);
    *xxh3 = XXH3_64bits_digest(st);
    XXH3_freeState(st);
  } else {
    ReadExact(nullptr, static_cast<size_t>(len));
  }
  char crlf[2];
  ReadExact(crlf, 2);
  if (crlf[0] != '\r' || crlf[1] != '\n') return -2;  // the body was not `len` bytes long
  return len;
}

}  // namespace larder::bench
