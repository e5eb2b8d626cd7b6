// PeerLink: a blocking RESP2 connection from this node to another cluster node, for a slot
// migration's commands (AUTH, CLUSTER IMPORT, SET ... PXAT, DEL). Requests go out as arrays of
// bulk strings with writev, values straight from the caller's memory; replies are read as
// their first line (a migration's commands reply +OK, :n or -error). Every call has a
// timeout, so a dead peer fails the migration instead of stalling it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace larder::server::cluster {

class PeerLink {
 public:
  PeerLink() = default;
  PeerLink(const PeerLink&) = delete;
  PeerLink& operator=(const PeerLink&) = delete;
  ~PeerLink();

  // Connects to host:port; every later send or receive waits at most `timeout`. The reason on
  // failure, else nullopt.
  std::optional<std::string> Connect(const std::string& host, int port,
                                     std::chrono::milliseconds timeout);
  // Sends one command. The reason on failure, else nullopt.
  std::optional<std::string> Send(const std::vector<std::string_view>& args);
  // Reads one reply's first line ("+OK", ":1", "-ERR ..."); a bulk or array reply is refused.
  // The reason on failure, else nullopt with *line set.
  std::optional<std::string> ReadLine(std::string* line);
  // Send, then ReadLine, expecting a reply that is not an error.
  std::optional<std::string> Call(const std::vector<std::string_view>& args);

 private:
  int fd_ = -1;
  std::string in_;  // received bytes not yet consumed
};

}  // namespace larder::server::cluster
