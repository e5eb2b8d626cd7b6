// One `bind` entry as Redis 7 reads it: an IPv4 or IPv6 address (with its %scope where it needs
// one), `*` (every IPv4 address) or `::*` (every IPv6 address), each optionally prefixed with
// `-`: an optional address, skipped when the machine does not have it (Redis 7's stock
// `bind 127.0.0.1 -::1` on a host without IPv6). Unlike Redis, host names are not taken: a
// listener binds addresses, and a name could resolve to another address at the next start.
#pragma once

#include <arpa/inet.h>

#include <optional>
#include <string>
#include <string_view>

namespace larder::config {

struct BindAddress {
  std::string ip;         // a numeric address
  bool optional = false;  // written with a leading '-'
};

// The entry's address, or nullopt when it is none of the forms above.
inline std::optional<BindAddress> ParseBindAddress(std::string_view entry) {
  BindAddress out;
  if (entry.starts_with('-')) {
    out.optional = true;
    entry.remove_prefix(1);
  }
  if (entry == "*") {
    out.ip = "0.0.0.0";
  } else if (entry == "::*") {
    out.ip = "::";
  } else {
    out.ip = std::string(entry);
  }
  unsigned char scratch[sizeof(in6_addr)];
  if (inet_pton(AF_INET, out.ip.c_str(), scratch) == 1) return out;
  // An IPv6 address may name its interface: fe80::1%eth0 (the listener resolves the scope).
  const std::string v6 = out.ip.substr(0, out.ip.find('%'));
  if (v6.size() + 1 == out.ip.size() || inet_pton(AF_INET6, v6.c_str(), scratch) != 1) {
    return std::nullopt;
  }
  return out;
}

}  // namespace larder::config
