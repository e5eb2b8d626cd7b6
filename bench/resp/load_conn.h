// Conn: one blocking RESP connection for the load generator. Requests go out as RESP arrays
// of bulk strings with one writev; replies are read through a small buffer, and bulk bodies
// straight into the caller's buffer (no copy for multi-MiB values).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace larder::bench {

class Conn {
 public:
  // Connects (TCP_NODELAY on); nullptr with a message on stderr on failure.
  static std::unique_ptr<Conn> Dial(const std::string& host, int port);
  ~Conn();

  // Sends one command; returns once every byte is written. Exits the process on I/O error.
  void SendCommand(const std::vector<std::string_view>& args);

  // Reads a reply that is not a bulk string and returns its first line ("+OK", ":1", "-ERR
  // ..."); a bulk reply is read and returned as "$<len>".
  std::string ReadSimple();

  // Reads a bulk-string reply into buf[0..cap). Returns its length (the body is discarded if
  // longer than cap), -1 for a null reply, -2 for any other reply. When the body fits, *xxh3
  // is its XXH3-64, computed piece by piece as it arrives (while the bytes are in cache).
  int64_t ReadBulkInto(char* buf, size_t cap, uint64_t* xxh3);

 private:
  explicit Conn(int fd) : fd_(fd) {}
  std::string ReadLine();
  // Reads n bytes into dst (discards them if dst is null), feeding them to `hash` if set.
  void ReadExact(char* dst, size_t n, void* hash = nullptr);

  int fd_;
  std::string in_;  // buffered bytes not yet consumed: in_[pos_..]
  size_t pos_ = 0;
};

}  // namespace larder::bench
