#include "config/option_table.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/args.h"
#include "common/text.h"
#include "common/units.h"
#include "config/bind_address.h"
#include "larder/options.h"

namespace larder::config {
namespace {

using Args = std::vector<std::string>;
using common::EqualsNoCase;
using common::FormatBytesHuman;
using common::ParseBytes;
using common::ParseNumber;

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr bool kRuntime = true;   // CONFIG SET may change the option
constexpr bool kStartup = false;  // only the config file and the command line may
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();

// Shortest text that parses back to exactly `v`.
std::string FormatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string RangeText(int64_t min, int64_t max) {
  if (max == kNoMax) return " >= " + std::to_string(min);
  return " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

Option Make(std::string_view name, Type type, bool mut, std::string_view doc, int min_args = 1,
            int max_args = 1) {
  Option o;
  o.name = name;
  o.type = type;
  o.runtime_mutable = mut;
  o.doc = doc;
  o.min_args = min_args;
  o.max_args = max_args;
  return o;
}

// Builders: each ties an option's parse/format to one typed ServerConfig member.

Option Bool(std::string_view name, bool ServerConfig::*field, bool mut, std::string_view doc) {
  Option o = Make(name, Type::kBool, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    if (EqualsNoCase(a[0], "yes")) {
      c->*field = true;
    } else if (EqualsNoCase(a[0], "no")) {
      c->*field = false;
    } else {
      return QuoteForMessage(a[0]) + " is not yes or no";
    }
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field ? "yes" : "no"}; };
  return o;
}

Option Int(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t min, int64_t max,
           std::string_view doc) {
  Option o = Make(name, Type::kInteger, mut, doc);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    // As Redis's string2ll: no leading zeros ("06379" is refused, not read as 6379; "-0" too).
    const std::string_view digits = std::string_view(a[0]).substr(a[0].starts_with('-'));
    const bool leading_zero = digits.starts_with('0') && (digits.size() > 1 || a[0] == "-0");
    auto v = leading_zero ? std::nullopt : ParseNumber<int64_t>(a[0]);
    if (!v || *v < min || *v > max) {
      return QuoteForMessage(a[0]) + " is not an integer" + RangeText(min, max);
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {std::to_string(c.*field)}; };
  return o;
}

Option Bytes(std::string_view name, uint64_t ServerConfig::*field, bool mut, int64_t min,
             std::string_view doc) {
  Option o = Make(name, Type::kBytes, mut, doc);
  o.parse = [field, min](const Args& a, ServerConfig* c) -> Error {
    auto v = ParseBytes(a[0]);
    if (!v || *v < static_cast<uint64_t>(min) || *v > static_cast<uint64_t>(kNoMax)) {
      return QuoteForMessage(a[0]) + " is not a byte count" +
             (min > 0 ? RangeText(min, kNoMax) : "") +
             " (integer with optional unit k, kb, m, mb, g, gb)";
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool human) -> Args {
    return {human ? FormatBytesHuman(c.*field) : std::to_string(c.*field)};
  };
  return o;
}

Option Double(std::string_view name, double ServerConfig::*field, bool mut, double min, double max,
              std::string_view doc) {
  Option o = Make(name, Type::kDouble, mut, doc);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    auto v = ParseNumber<double>(a[0]);
    if (!v || !std::isfinite(*v) || *v < min || *v > max) {
      return QuoteForMessage(a[0]) + " is not a number in [" + FormatDouble(min) + ", " +
             FormatDouble(max) + "]";
    }
    c->*field = *v + 0.0;  // -0 becomes 0
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {FormatDouble(c.*field)}; };
  return o;
}

Option Octal(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t max,
             std::string_view doc) {
  Option o = Make(name, Type::kOctal, mut, doc);
  o.parse = [field, max](const Args& a, ServerConfig* c) -> Error {
    std::string_view s = a[0];
    auto v = s.size() <= 12 ? ParseNumber<int64_t>(s, 8) : std::nullopt;
    if (!v || *v < 0 || *v > max) {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof(buf), max, 8);
      return QuoteForMessage(s) + " is not an octal mode in [0, " + std::string(buf, r.ptr) + "]";
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), c.*field, 8);
    return {std::string(buf, r.ptr)};
  };
  return o;
}

Option String(std::string_view name, std::string ServerConfig::*field, bool mut,
              std::string_view doc) {
  Option o = Make(name, Type::kString, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    c->*field = a[0];
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field}; };
  return o;
}

Option Enum(std::string_view name, std::string ServerConfig::*field, bool mut,
            std::vector<std::string_view> choices, std::string_view doc) {
  Option o = Make(name, Type::kEnum, mut, doc);
  o.parse = [field, choices](const Args& a, ServerConfig* c) -> Error {
    for (std::string_view choice : choices) {
      if (EqualsNoCase(a[0], choice)) {
        c->*field = std::string(choice);
        return std::nullopt;
      }
    }
    std::string list;
    for (std::string_view choice : choices)
      list += (list.empty() ? "" : ", ") + std::string(choice);
    return QuoteForMessage(a[0]) + " is not one of " + list;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field}; };
  return o;
}

Option StringList(std::string_view name, std::vector<std::string> ServerConfig::*field, bool mut,
                  std::string_view doc) {
  Option o = Make(name, Type::kStringList, mut, doc, 1, -1);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    c->*field = a;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return c.*field; };
  return o;
}

// Numbers, each within [min, max]; CONFIG SET takes them as one space-separated argument, and
// "" is none (Redis's latency-tracking-info-percentiles).
Option NumberList(std::string_view name, std::vector<double> ServerConfig::*field, bool mut,
                  double min, double max, std::string_view doc) {
  Option o = Make(name, Type::kNumberList, mut, doc, 1, -1);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    std::vector<double> values;
    for (const std::string& arg : a) {
      auto words = common::SplitArgs(arg);
      if (!words) return QuoteForMessage(arg) + " is not a list of numbers";
      for (const std::string& word : *words) {
        auto v = ParseNumber<double>(word);
        if (!v || !std::isfinite(*v) || *v < min || *v > max) {
          return QuoteForMessage(word) + " is not a number in [" + FormatDouble(min) + ", " +
                 FormatDouble(max) + "]";
        }
        values.push_back(*v + 0.0);
      }
    }
    c->*field = std::move(values);
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    Args out;
    for (double v : c.*field) out.push_back(FormatDouble(v));
    return out.empty() ? Args{""} : out;
  };
  return o;
}

// Redis syntax: one or more `<class> <hard> <soft> <soft-seconds>` groups. Larder has no
// replicas, so groups for that class are checked and then ignored.
Option OutputBufferLimit(std::string_view name, bool mut, std::string_view doc) {
  Option o = Make(name, Type::kClientOutputBufferLimit, mut, doc, 4, -1);
  o.parse = [](const Args& a, ServerConfig* c) -> Error {
    if (a.size() % 4 != 0) {
      return std::string("expected groups of <class> <hard-bytes> <soft-bytes> <soft-seconds>");
    }
    for (size_t i = 0; i < a.size(); i += 4) {
      std::string cls = common::ToLower(a[i]);
      if (cls != "normal" && cls != "replica" && cls != "slave" && cls != "pubsub") {
        return QuoteForMessage(a[i]) + " is not a client class (normal, replica, pubsub)";
      }
      auto hard = ParseBytes(a[i + 1]);
      auto soft = ParseBytes(a[i + 2]);
      auto secs = ParseNumber<int64_t>(a[i + 3]);
      if (!hard) return QuoteForMessage(a[i + 1]) + " is not a byte count";
      if (!soft) return QuoteForMessage(a[i + 2]) + " is not a byte count";
      if (!secs || *secs < 0) return QuoteForMessage(a[i + 3]) + " is not an integer >= 0";
      if (cls == "normal") c->client_output_buffer_limit = {*hard, *soft, *secs};
      if (cls == "pubsub") c->client_output_buffer_limit_pubsub = {*hard, *soft, *secs};
    }
    return std::nullopt;
  };
  o.format = [](const ServerConfig& c, bool human) -> Args {
    auto bytes = [human](uint64_t v) { return human ? FormatBytesHuman(v) : std::to_string(v); };
    Args out;
    for (const auto& [cls, l] : {std::pair{"normal", c.client_output_buffer_limit},
                                 std::pair{"pubsub", c.client_output_buffer_limit_pubsub}}) {
      Args group = {cls, bytes(l.hard_bytes), bytes(l.soft_bytes), std::to_string(l.soft_seconds)};
      out.insert(out.end(), group.begin(), group.end());
    }
    return out;
  };
  return o;
}

// The letters of `notify-keyspace-events`, in the order Redis prints them (notify.c's
// keyspaceEventsFlagsToString): the classes (or A for all of A's), then K, E, m, and Larder's G.
struct NotifyLetter {
  char letter;
  uint32_t bits;
};
constexpr NotifyLetter kNotifyClassLetters[] = {
    {'g', kNotifyGeneric}, {'$', kNotifyString}, {'l', kNotifyList},    {'s', kNotifySet},
    {'h', kNotifyHash},    {'z', kNotifyZset},   {'x', kNotifyExpired}, {'e', kNotifyEvicted},
    {'t', kNotifyStream},  {'d', kNotifyModule}, {'n', kNotifyNew},
};
constexpr NotifyLetter kNotifyOtherLetters[] = {
    {'K', kNotifyKeyspace},   {'E', kNotifyKeyevent}, {'m', kNotifyKeyMiss},
    {'G', kNotifyGeneration}, {'A', kNotifyAll},
};

// Redis's syntax: a string of class letters, "" for none; any other character is refused with
// Redis's message (G added to its list).
Option KeyspaceEvents(std::string_view name, uint32_t ServerConfig::*field, bool mut,
                      std::string_view doc) {
  Option o = Make(name, Type::kString, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    uint32_t bits = 0;
    for (char ch : a[0]) {
      uint32_t found = 0;
      for (const NotifyLetter& l : kNotifyClassLetters) found |= l.letter == ch ? l.bits : 0;
      for (const NotifyLetter& l : kNotifyOtherLetters) found |= l.letter == ch ? l.bits : 0;
      if (found == 0) {
        return std::string("Invalid event class character. Use 'Ag$lshzxeKEtmdnG'.");
      }
      bits |= found;
    }
    c->*field = bits;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    const uint32_t bits = c.*field;
    std::string out;
    if ((bits & kNotifyAll) == kNotifyAll) {
      out += 'A';  // and, as in Redis, no 'n' (which Larder never sends anyway)
    } else {
      for (const NotifyLetter& l : kNotifyClassLetters) out += (bits & l.bits) ? l.letter : '\0';
      std::erase(out, '\0');
    }
    for (const NotifyLetter& l : kNotifyOtherLetters) {
      if (l.bits != kNotifyAll && (bits & l.bits)) out += l.letter;
    }
    return {out};
  };
  return o;
}

// Pairs of key suffixes, `<first> <second> ...`; a single "" means none.
Option SuffixPairs(std::string_view name,
                   std::vector<std::pair<std::string, std::string>> ServerConfig::*field, bool mut,
                   std::string_view doc) {
  Option o = Make(name, Type::kSuffixPairs, mut, doc, 1, -1);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    (c->*field).clear();
    if (a.size() == 1 && a[0].empty()) return std::nullopt;
    if (a.size() % 2 != 0) return std::string("expected pairs of key suffixes, or \"\" for none");
    for (size_t i = 0; i < a.size(); i += 2) {
      if (a[i].empty() || a[i + 1].empty() || a[i] == a[i + 1]) {
        return QuoteForMessage(a[i]) + " " + QuoteForMessage(a[i + 1]) +
               " is not a pair of two different, non-empty suffixes";
      }
      (c->*field).emplace_back(a[i], a[i + 1]);
    }
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    Args out;
    for (const auto& [first, second] : c.*field) {
      out.push_back(first);
      out.push_back(second);
    }
    return out.empty() ? Args{""} : out;
  };
  return o;
}

Option WithCheck(Option o, std::function<Error(const ServerConfig&)> check) {
  o.validate = std::move(check);
  return o;
}

Option Sensitive(Option o) {
  o.sensitive = true;
  return o;
}

Option RereadsFiles(Option o) {
  o.rereads_files = true;
  return o;
}

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
      Int("slowlog-log-slower-than", &S::slowlog_log_slower_than, kRuntime, INT64_MIN, INT64_MAX,
          "log commands taking this many microseconds or more; 0 = all, negative = none"),
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
