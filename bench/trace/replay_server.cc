// The replay's server backend: a larder-server started for one replay, driven over RESP
// (common/resp_connection.h) as LMCache's Larder connector drives it (LARDER.PREFIX, MGET,
// then EXISTS pipelined and SET).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>

#include "bench_util.h"
#include "common/resp_connection.h"
#include "replay.h"

namespace larder::bench {
namespace {

// A free TCP port on 127.0.0.1 (the kernel's pick; free again once this returns).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// The value of `field` in an INFO reply ("field:value" lines); 0 if absent.
uint64_t InfoField(const std::string& info, const std::string& field) {
  const size_t at = info.find("\n" + field + ":");
  return at == std::string::npos ? 0
                                 : std::strtoull(info.c_str() + at + field.size() + 2, nullptr, 10);
}

// Every wait on the server is bounded; a replay cannot go on past a broken connection.
constexpr int kReplyTimeoutMs = 60'000;

class ServerStore : public ChunkStore {
 public:
  ServerStore(pid_t pid, std::unique_ptr<common::RespConnection> conn, uint64_t value_cap,
              std::string info_path)
      : pid_(pid),
        conn_(std::move(conn)),
        buf_(value_cap, '\0'),
        info_path_(std::move(info_path)) {}
  ~ServerStore() override {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

  uint64_t PrefixCount(const std::vector<std::string>& keys) override {
    std::vector<std::string_view> args{"LARDER.PREFIX"};
    args.insert(args.end(), keys.begin(), keys.end());
    Send(args);
    const common::ReplyHeader h = Header();
    return h.type == ':' ? static_cast<uint64_t>(h.number) : 0;
  }
  uint64_t ReadChecked(const std::vector<std::string>& keys, const std::vector<uint64_t>& chunks,
                       uint64_t n) override {
    if (n == 0) return 0;
    std::vector<std::string_view> args{"MGET"};
    args.insert(args.end(), keys.begin(), keys.begin() + static_cast<ptrdiff_t>(n));
    Send(args);
    if (Header().number != static_cast<int64_t>(n)) return 0;
    uint64_t good = 0;
    bool whole = true;
    for (uint64_t j = 0; j < n; ++j) {
      const common::ReplyHeader h = Header();
      const bool fits = h.type == '$' && h.number == static_cast<int64_t>(buf_.size());
      if (h.type == '$' && h.number >= 0) {
        Check(conn_->ReadBulkInto(fits ? buf_.data() : nullptr, static_cast<size_t>(h.number)));
      }
      uint64_t stamp = 0;
      if (fits) std::memcpy(&stamp, buf_.data(), 8);
      whole = whole && fits && stamp == chunks[j];
      good += whole;
    }
    return good;
  }
  uint64_t StoreMissing(const std::vector<std::string>& keys, const std::vector<uint64_t>& chunks,
                        uint64_t from, std::string& value) override {
    for (uint64_t j = from; j < keys.size(); ++j) Send({"EXISTS", keys[j]});
    std::vector<uint64_t> missing;
    for (uint64_t j = from; j < keys.size(); ++j) {
      const common::ReplyHeader h = Header();
      if (h.type == ':' && h.number == 0) missing.push_back(j);
    }
    // One SET at a time: the value buffer carries each one's stamp.
    uint64_t failed = 0;
    for (uint64_t j : missing) {
      std::memcpy(value.data(), &chunks[j], 8);
      Send({"SET", keys[j], value});
      failed += Header().type != '+';
    }
    return failed;
  }
  void AdvanceTo(int64_t) override {}
  void Finish(ReplayResult* r) override {
    Send({"INFO", "larder"});
    const common::ReplyHeader h = Header();
    std::string info = "\n";
    if (h.type == '$' && h.number > 0) {
      info.resize(1 + static_cast<size_t>(h.number));
      Check(conn_->ReadBulkInto(info.data() + 1, static_cast<size_t>(h.number)));
    }
    r->reinserted_bytes = InfoField(info, "reinserted_bytes");
    r->written_bytes = InfoField(info, "bytes_written") + r->reinserted_bytes;
    r->live_bytes = InfoField(info, "live_bytes");
    r->max_disk_bytes = InfoField(info, "max_disk_bytes");
    r->device_bytes = ProcIoBytes("write_bytes", pid_);
    std::ofstream(info_path_) << info.substr(1);  // how the budget was spent, for a reader
  }

 private:
  // Exits (status 2) when the connection broke: the replay's figures would mean nothing.
  void Check(bool ok) {
    if (ok) return;
    std::fprintf(stderr, "larder-trace: larder-server connection: %s\n", conn_->error().c_str());
    std::exit(2);
  }
  void Send(const std::vector<std::string_view>& args) { Check(conn_->SendCommand(args)); }
  common::ReplyHeader Header() {
    common::ReplyHeader h;
    Check(conn_->ReadHeader(&h));
    return h;
  }

  pid_t pid_;
  std::unique_ptr<common::RespConnection> conn_;
  std::string buf_;
  std::string info_path_;
};

}  // namespace

std::unique_ptr<ChunkStore> StartServerStore(const ReplayConfig& c, const std::string& bin,
                                             uint64_t value_bytes) {
  const int port = FreePort();
  const std::vector<std::string> args = {bin,
                                         "--port",
                                         std::to_string(port),
                                         "--bind",
                                         "127.0.0.1",
                                         "--dir",
                                         c.dir,
                                         "--max-disk-bytes",
                                         std::to_string(c.max_disk_bytes),
                                         "--eviction-policy",
                                         c.policy,
                                         "--logfile",
                                         c.dir + ".log"};
  std::vector<char*> argv;  // built before fork: the child only calls async-signal-safe code
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 200; ++i) {  // up to 10 s to start
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (waitpid(pid, nullptr, WNOHANG) == pid) break;
    common::ServerAddress at{"", "127.0.0.1", std::to_string(port)};
    auto conn = std::make_unique<common::RespConnection>(at, kReplyTimeoutMs);
    if (conn->Connect("", "")) {
      return std::make_unique<ServerStore>(pid, std::move(conn), value_bytes, c.dir + ".info");
    }
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::fprintf(stderr, "%s did not start on port %d (log: %s.log)\n", bin.c_str(), port,
               c.dir.c_str());
  return nullptr;
}

}  // namespace larder::bench
