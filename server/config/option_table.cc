#include "config/option_table.h"

#include <cstdint>
#include <limits>

#include "common/args.h"
#include "common/text.h"
#include "config/bind_address.h"
#include "config/option_builders.h"
#include "larder/options.h"

namespace larder::config {
namespace {

using namespace builder;  // NOLINT: the rows below read as a table of builder calls
using common::EqualsNoCase;

constexpr bool kRuntime = true;   // CONFIG SET may change the option
constexpr bool kStartup = false;  // only the config file and the command line may
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();

Error CheckDir(const ServerConfig& c) {
  if (c.dir.empty()) return std::string("the data directory must not be empty");
  return std::nullopt;
}

// A size option that is 0 (derived from max-disk-bytes) or at least `floor`, the engine's
// minimum (larder/options.h), so that the file's line names what the store would refuse.
std::function<Error(const ServerConfig&)> ZeroOrAtLeast(uint64_t ServerConfig::*field,
                                                        uint64_t floor) {
  return [field, floor](const ServerConfig& c) -> Error {
    if (c.*field == 0 || c.*field >= floor) return std::nullopt;
    return "must be 0 (derived from max-disk-bytes) or at least " + std::to_string(floor >> 20) +
           "mb, not " + std::to_string(c.*field);
  };
}

Error CheckBind(const ServerConfig& c) {
  for (const std::string& entry : c.bind) {
    if (!ParseBindAddress(entry)) {
      return "invalid address " + QuoteForMessage(entry) +
             ": an IPv4 or IPv6 address, * or ::*, optionally prefixed with - (skipped when "
             "this machine lacks it)";
    }
  }
  return std::nullopt;
}

Error CheckPassword(const ServerConfig& c) {
  constexpr size_t kMaxPassword = 512;
  if (c.requirepass.size() > kMaxPassword) return std::string("password longer than 512 bytes");
  for (char ch : c.requirepass) {
    auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) return std::string("password contains control characters");
  }
  return std::nullopt;
}

// tls-protocols: words from TLSv1.2 and TLSv1.3 (older versions are refused outright, as their
// ciphers are broken; Redis accepts and warns).
Error CheckTlsProtocols(const ServerConfig& c) {
  for (std::string_view word : common::SplitNonEmpty(c.tls_protocols, ' ')) {
    if (!EqualsNoCase(word, "TLSv1.2") && !EqualsNoCase(word, "TLSv1.3")) {
      return QuoteForMessage(word) + " is not TLSv1.2 or TLSv1.3";
    }
  }
  return std::nullopt;
}

using S = ServerConfig;

std::vector<Option> NetworkRows() {
  return {
      WithCheck(StringList("bind", &S::bind, kStartup, "addresses to listen on"), CheckBind),
      Int("port", &S::port, kStartup, 0, 65535, "TCP port; 0 = no TCP listener"),
      String("unixsocket", &S::unixsocket, kStartup, "unix socket path; empty = none"),
      Octal("unixsocketperm", &S::unixsocketperm, kStartup, 0777,
            "unix socket permissions; 0 = leave them to the umask"),
      Int("tcp-backlog", &S::tcp_backlog, kStartup, 0, 2147483647, "listen() backlog"),
      Int("maxclients", &S::maxclients, kRuntime, 1, 1000000,
          "most simultaneous clients; further connections are refused"),
      Int("timeout", &S::timeout, kRuntime, 0, 2147483647,
          "close clients idle this many seconds; 0 = never"),
      Int("tcp-keepalive", &S::tcp_keepalive, kRuntime, 0, 2147483647,
          "TCP keepalive period in seconds; 0 = off"),
      Bool("protected-mode", &S::protected_mode, kRuntime,
           "without requirepass, refuse clients that are not on loopback or the unix socket"),
      Int("io-threads", &S::io_threads, kStartup, 0, 64,
          "threads serving connections; 0 = half the CPUs, 1 or 2"),
      Int("engine-threads", &S::engine_threads, kStartup, 1, 256,
          "threads running blocking engine calls"),
      Int("pipeline-nice", &S::pipeline_nice, kStartup, 0, 19,
          "CPU nice value of the threads running pipelined batches; 0 = no separate threads"),
      Enum("sendfile", &S::sendfile, kRuntime, {"remote", "always", "never"},
           "send GET's values from their files with sendfile: to clients on other hosts, to "
           "every client, or to none"),
      Bytes("inline-get-max-bytes", &S::inline_get_max_bytes, kRuntime, 0,
            "a GET of a value in memory up to this size runs on the connection's io thread; "
            "0 = every GET on engine-threads"),
      Bool("cluster-enabled", &S::cluster_enabled, kStartup,
           "serve the Redis Cluster protocol, with the topology kvrocks-controller pushes"),
  };
}

std::vector<Option> SecurityAndLimitRows() {
  return {
      // security
      Sensitive(WithCheck(
          String("requirepass", &S::requirepass, kRuntime, "password for AUTH; empty = none"),
          CheckPassword)),
      // TLS: every option but the port rebuilds the TLS context when set at runtime
      Int("tls-port", &S::tls_port, kStartup, 0, 65535, "TLS port; 0 = no TLS listener"),
      RereadsFiles(
          String("tls-cert-file", &S::tls_cert_file, kRuntime, "server certificate chain (PEM)")),
      RereadsFiles(String("tls-key-file", &S::tls_key_file, kRuntime, "server private key (PEM)")),
      Sensitive(String("tls-key-file-pass", &S::tls_key_file_pass, kRuntime,
                       "passphrase of an encrypted tls-key-file; empty = not encrypted")),
      RereadsFiles(String("tls-dh-params-file", &S::tls_dh_params_file, kRuntime,
                          "Diffie-Hellman parameters (PEM) for TLSv1.2's DHE ciphers; empty = "
                          "OpenSSL's built-in groups")),
      RereadsFiles(String("tls-ca-cert-file", &S::tls_ca_cert_file, kRuntime,
                          "CA certificates that sign client certificates (PEM)")),
      RereadsFiles(String("tls-ca-cert-dir", &S::tls_ca_cert_dir, kRuntime,
                          "directory of hashed CA certificates that sign client certificates")),
      Enum("tls-auth-clients", &S::tls_auth_clients, kRuntime, {"yes", "no", "optional"},
           "client certificates: required, not asked for, or checked when sent"),
      WithCheck(String("tls-protocols", &S::tls_protocols, kRuntime,
                       "TLS versions accepted; empty = TLSv1.2 TLSv1.3"),
                CheckTlsProtocols),
      String("tls-ciphers", &S::tls_ciphers, kRuntime,
             "TLSv1.2 ciphers, OpenSSL syntax; empty = OpenSSL's default"),
      String("tls-ciphersuites", &S::tls_ciphersuites, kRuntime,
             "TLSv1.3 ciphersuites, OpenSSL syntax; empty = OpenSSL's default"),
      Bool("tls-prefer-server-ciphers", &S::tls_prefer_server_ciphers, kRuntime,
           "the server's cipher order wins over the client's"),
      Bool("tls-session-caching", &S::tls_session_caching, kRuntime,
           "cache TLS sessions so that clients reconnect without a full handshake"),
      Int("tls-session-cache-size", &S::tls_session_cache_size, kRuntime, 0, 2147483647,
          "TLS sessions cached; 0 = no limit"),
      Int("tls-session-cache-timeout", &S::tls_session_cache_timeout, kRuntime, 0, 2147483647,
          "seconds a cached TLS session can be resumed (0 = OpenSSL's default, 2 hours)"),
      // --- limits ---
      // limits
      Bytes("proto-max-bulk-len", &S::proto_max_bulk_len, kRuntime, kMiB,
            "largest bulk string (key or value) a client may send"),
      Bytes("client-query-buffer-limit", &S::client_query_buffer_limit, kRuntime, kMiB,
            "largest unparsed input buffered per client"),
      OutputBufferLimit("client-output-buffer-limit", kRuntime,
                        "disconnect clients whose pending replies exceed these limits"),
  };
}

std::vector<Option> ObservabilityRows() {
  return {
      KeyspaceEvents("notify-keyspace-events", &S::notify_keyspace_events, kRuntime,
                     "keyspace notification classes (Redis's letters, plus G); \"\" = none"),
      Int("tracking-table-max-keys", &S::tracking_table_max_keys, kRuntime, 0, INT64_MAX,
          "keys client-side caching remembers for its clients; 0 = no limit"),
      Int("slowlog-log-slower-than", &S::slowlog_log_slower_than, kRuntime, -1, INT64_MAX,
          "log commands taking this many microseconds or more; 0 = all, -1 = none"),
      Int("slowlog-max-len", &S::slowlog_max_len, kRuntime, 0, INT64_MAX,
          "entries the slow log keeps"),
      Int("latency-monitor-threshold", &S::latency_monitor_threshold, kRuntime, 0, INT64_MAX,
          "record commands taking this many milliseconds or more (LATENCY); 0 = off"),
      Bool("latency-tracking", &S::latency_tracking, kRuntime,
           "per-command latency histograms (INFO latencystats, LATENCY HISTOGRAM, metrics)"),
      NumberList("latency-tracking-info-percentiles", &S::latency_tracking_info_percentiles,
                 kRuntime, 0.0, 100.0, "percentiles INFO latencystats reports"),
      Int("metrics-port", &S::metrics_port, kStartup, 0, 65535,
          "Prometheus endpoint (HTTP GET /metrics) on the bind addresses; 0 = off"),
  };
}

// The engine's options (config/engine_options.cc maps them onto larder::Options).
std::vector<Option> EngineRows() {
  return {
      WithCheck(String("dir", &S::dir, kStartup, "data directory"), CheckDir),
      Bytes("max-disk-bytes", &S::max_disk_bytes, kStartup, 0,
            "disk budget; 0 = 80% of the space available to the store"),
      Enum("eviction-policy", &S::eviction_policy, kStartup, {"lru-reuse", "lru", "fifo", "none"},
           "what leaves first when the budget is reached"),
      SuffixPairs("evict-together", &S::evict_together, kStartup,
                  "key suffix pairs evicted together; \"\" = none"),
      Bool("keep-in-place", &S::keep_in_place, kStartup,
           "eviction keeps entries where their bytes lie, freeing the rest in place"),
      Double("max-reinsert-fraction", &S::max_reinsert_fraction, kStartup, 0.0, 1.0,
             "most of an evicted generation copied into the newest one"),
      WithCheck(Bytes("generation-bytes", &S::generation_bytes, kStartup, 0,
                      "bytes per generation; 0 = max-disk-bytes/32 in [1mb, 64gb]; else >= 1mb"),
                ZeroOrAtLeast(&S::generation_bytes, kMinGenerationBytes)),
      Bool("wal", &S::wal, kStartup, "write-ahead log: acknowledged writes survive a crash"),
      Bool("wal-sync", &S::wal_sync, kStartup,
           "make every acknowledged write durable (blob file, then WAL)"),
      Bytes("blob-cache-bytes", &S::blob_cache_bytes, kStartup, 0,
            "ignored: the page cache holds hot values"),
      WithCheck(
          Bytes("memtable-bytes", &S::memtable_bytes, kStartup, 0,
                "index memtable memory; 0 = max-disk-bytes/256 in [16mb, 256mb]; else >= 4mb"),
          ZeroOrAtLeast(&S::memtable_bytes, kMinMemtableBytes)),
      Bytes("write-buffer-bytes", &S::write_buffer_bytes, kStartup, 0,
            "values acknowledged, not yet written (wal no); 0 = max-disk-bytes/64 in [64mb, 1gb]"),
      Bool("direct-writes", &S::direct_writes, kStartup,
           "wal no: write values with O_DIRECT, bypassing the page cache"),
      Bool("direct-reads", &S::direct_reads, kStartup,
           "read cold values into aligned buffers with O_DIRECT (in-process GetInto)"),
      Bool("mapped-reads", &S::mapped_reads, kStartup,
           "read cached values through mappings of the value files, kept for later reads"),
      Int("read-queue-depth", &S::read_queue_depth, kStartup, 1, kMaxReadQueueDepth,
          "reads a batched in-process read keeps in flight"),
      Int("maintenance-interval-ms", &S::maintenance_interval_ms, kStartup, 0, kUint32Max,
          "period of expiry maintenance; 0 = off"),
      Int("flush-interval-ms", &S::flush_interval_ms, kStartup, 0, kUint32Max,
          "wal no: make acknowledged writes durable this often; 0 = when memtables fill"),
      Int("max-key-bytes", &S::max_key_bytes, kStartup, 1, kUint32Max, "largest key accepted"),
  };
}

std::vector<Option> ProcessRows() {
  return {
      Enum("loglevel", &S::loglevel, kRuntime, {"debug", "verbose", "notice", "warning"},
           "log verbosity"),
      String("logfile", &S::logfile, kStartup, "log file; empty = stderr"),
      String("pidfile", &S::pidfile, kStartup, "pid file; empty = none"),
      Bool("daemonize", &S::daemonize, kStartup, "detach and run in the background"),
      Int("databases", &S::databases, kStartup, 1, 1, "number of databases (only db 0)"),
  };
}

// Every option, in config-file section order.
std::vector<Option> BuildTable() {
  std::vector<Option> table;
  for (auto rows :
       {NetworkRows, SecurityAndLimitRows, ObservabilityRows, EngineRows, ProcessRows}) {
    for (Option& o : rows()) table.push_back(std::move(o));
  }
  return table;
}

}  // namespace

const std::vector<Option>& OptionTable() {
  static const std::vector<Option> table = BuildTable();
  return table;
}

const Option* FindOption(std::string_view name) {
  for (const Option& o : OptionTable()) {
    if (EqualsNoCase(o.name, name)) return &o;
  }
  return nullptr;
}

size_t OptionIndex(const Option& opt) {
  return static_cast<size_t>(&opt - OptionTable().data());
}

std::string QuoteForMessage(std::string_view s) {
  constexpr size_t kMaxShown = 64;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out + "'";
}

std::string ConfigLine(const Option& opt, const ServerConfig& cfg) {
  std::string line(opt.name);
  for (const std::string& arg : opt.format(cfg, /*human=*/true))
    line += " " + common::QuoteArg(arg);
  return line;
}

std::string DefaultLine(const Option& opt) {
  return ConfigLine(opt, ServerConfig{});
}

std::string FormatValue(const Option& opt, const ServerConfig& cfg) {
  std::vector<std::string> args = opt.format(cfg, /*human=*/false);
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) out += (i == 0 ? "" : " ") + args[i];
  return out;
}

}  // namespace larder::config
