// The server's configuration as typed values. Every field is default-initialised to the
// default declared for its option in option_table.cc (config_test checks they agree), so a
// default-constructed ServerConfig is exactly what larder-server runs with and no config file.
// A field that sets an engine option (config/engine_options.cc) takes its default from
// larder::Options itself, except where its comment says why it differs (engine_defaults_test
// checks the mapping); conf/larder.conf repeats the defaults (config_test checks it too).
//
// Field names follow the option names with '-' replaced by '_'. Ranges and units are enforced
// by the option table when values are parsed; code reading a ServerConfig may rely on them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "larder/options.h"

namespace larder::config {

// The engine's own defaults, which the engine options below start from.
inline const larder::Options kEngineDefaults{};

// `client-output-buffer-limit normal <hard> <soft> <soft-seconds>`: a client is disconnected
// when its pending replies reach `hard_bytes`, or stay above `soft_bytes` for `soft_seconds`.
// 0 disables the respective limit.
struct ClientOutputBufferLimit {
  uint64_t hard_bytes = 0;
  uint64_t soft_bytes = 0;
  int64_t soft_seconds = 0;
};

// `notify-keyspace-events` classes, as Redis's notify.c numbers them, plus Larder's own
// generation class. The letters are config/option_builders.cc's (KeyspaceEvents).
enum NotifyClass : uint32_t {
  kNotifyKeyspace = 1u << 0,     // K: __keyspace@0__:<key> channels
  kNotifyKeyevent = 1u << 1,     // E: __keyevent@0__:<event> channels
  kNotifyGeneric = 1u << 2,      // g: del, expire, rename_from, rename_to, copy_to, persist, ...
  kNotifyString = 1u << 3,       // $: set, append, incrby, incrbyfloat, setrange
  kNotifyList = 1u << 4,         // l
  kNotifySet = 1u << 5,          // s
  kNotifyHash = 1u << 6,         // h
  kNotifyZset = 1u << 7,         // z
  kNotifyExpired = 1u << 8,      // x: expired
  kNotifyEvicted = 1u << 9,      // e: evicted
  kNotifyStream = 1u << 10,      // t
  kNotifyKeyMiss = 1u << 11,     // m: keymiss (not in A)
  kNotifyModule = 1u << 12,      // d
  kNotifyNew = 1u << 13,         // n: new (not in A; Larder never sends it)
  kNotifyGeneration = 1u << 14,  // G: evicted-generation, one summary per generation (not in A)
  // A: what Redis's "A" stands for.
  kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList | kNotifySet | kNotifyHash |
               kNotifyZset | kNotifyExpired | kNotifyEvicted | kNotifyStream | kNotifyModule,
};

struct ServerConfig {
  // --- network ---
  std::vector<std::string> bind{"127.0.0.1"};  // addresses to listen on (at least one)
  int64_t port = 6379;                         // [0, 65535]; 0 = no TCP listener
  std::string unixsocket;                      // "" = no unix socket
  int64_t unixsocketperm = 0;                  // [0, 0777]; 0 = leave it to the umask
  int64_t tcp_backlog = 511;                   // listen() backlog
  int64_t maxclients = 10000;                  // [1, 1000000]
  int64_t timeout = 0;                         // idle seconds before a client is closed; 0 = never
  int64_t tcp_keepalive = 300;                 // seconds; 0 = no SO_KEEPALIVE
  bool protected_mode = true;                  // refuse non-loopback clients without requirepass
  int64_t io_threads = 0;                      // [0, 64]; 0 = ActiveIoThreads decides
  int64_t engine_threads = 8;                  // [1, 256] threads running blocking engine calls
  int64_t pipeline_nice = 10;                  // [0, 19] CPU nice of the pipelined-batch threads
  std::string sendfile = "remote";             // remote | always | never: GET's sendfile use
  // GETs of values in memory up to this run on the io thread; 0 = every GET on engine-threads
  uint64_t inline_get_max_bytes = 16ull << 20;

  // --- cluster ---
  bool cluster_enabled = false;  // Redis Cluster protocol, topology from kvrocks-controller

  // --- security ---
  std::string requirepass;  // "" = no AUTH required; <= 512 bytes, no control characters

  // --- TLS (redis.conf's names and meanings; net/tls_context.h builds the context) ---
  int64_t tls_port = 0;                  // [0, 65535]; 0 = no TLS listener
  std::string tls_cert_file;             // PEM certificate chain the server presents
  std::string tls_key_file;              // PEM private key of that certificate
  std::string tls_key_file_pass;         // its passphrase, if encrypted; "" = not encrypted
  std::string tls_dh_params_file;        // PEM DH parameters for DHE; "" = OpenSSL's own
  std::string tls_ca_cert_file;          // PEM CA bundle client certificates are checked against
  std::string tls_ca_cert_dir;           // or a directory of hashed CA certificates
  std::string tls_auth_clients = "yes";  // yes | no | optional: client certificates
  std::string tls_protocols;     // space-separated TLSv1.2 / TLSv1.3; "" = "TLSv1.2 TLSv1.3"
  std::string tls_ciphers;       // TLSv1.2 cipher list (OpenSSL syntax); "" = OpenSSL's default
  std::string tls_ciphersuites;  // TLSv1.3 ciphersuites (OpenSSL syntax); "" = OpenSSL's default
  bool tls_prefer_server_ciphers = false;   // the server's cipher order wins
  bool tls_session_caching = true;          // clients may resume cached TLS sessions
  int64_t tls_session_cache_size = 20480;   // sessions cached; 0 = no limit
  int64_t tls_session_cache_timeout = 300;  // seconds a cached session stays resumable

  // --- limits ---
  uint64_t proto_max_bulk_len = 512ull << 20;          // >= 1 MiB
  uint64_t client_query_buffer_limit = 1ull << 30;     // >= 1 MiB
  ClientOutputBufferLimit client_output_buffer_limit;  // the `normal` class
  // The `pubsub` class: clients with a subscription (Redis's default).
  ClientOutputBufferLimit client_output_buffer_limit_pubsub{32ull << 20, 8ull << 20, 60};

  // --- events ---
  uint32_t notify_keyspace_events = 0;        // NotifyClass bits; 0 = no keyspace notifications
  int64_t tracking_table_max_keys = 1000000;  // client-side caching's table; 0 = no limit

  // --- observability ---
  int64_t slowlog_log_slower_than = 10000;  // microseconds; 0 = every command, -1 = none
  int64_t slowlog_max_len = 128;            // entries kept
  int64_t latency_monitor_threshold = 0;    // milliseconds; 0 = the latency monitor is off
  bool latency_tracking = true;             // per-command latency histograms
  std::vector<double> latency_tracking_info_percentiles{50.0, 99.0, 99.9};  // INFO latencystats
  int64_t metrics_port = 0;  // Prometheus endpoint (HTTP GET /metrics); 0 = off

  // --- engine (larder::Options; see larder/options.h for each) ---
  std::string dir = "./data";  // data directory; never settable at runtime
  uint64_t max_disk_bytes = kEngineDefaults.max_disk_bytes;  // 0 = 80% of the space available
  std::string eviction_policy = EvictionPolicyName(kEngineDefaults.eviction_policy);
  bool keep_in_place = kEngineDefaults.keep_in_place;
  double max_reinsert_fraction = kEngineDefaults.max_reinsert_fraction;  // [0, 1]
  uint64_t generation_bytes = kEngineDefaults.generation_bytes;  // 0 = derived from the budget
  bool wal = kEngineDefaults.wal;
  bool wal_sync = kEngineDefaults.sync_writes;  // fsync the WAL on every write
  // Accepted and ignored, so that older config files still load: values are read through the
  // page cache, which holds hot ones without a second copy.
  uint64_t blob_cache_bytes = 0;
  uint64_t memtable_bytes = kEngineDefaults.memtable_bytes;          // 0 = from the budget
  uint64_t write_buffer_bytes = kEngineDefaults.write_buffer_bytes;  // 0 = from the budget
  bool direct_reads = kEngineDefaults.direct_reads;
  bool mapped_reads = kEngineDefaults.mapped_reads;
  bool direct_writes = kEngineDefaults.direct_writes;
  int64_t read_queue_depth = kEngineDefaults.read_queue_depth;                // [1, 256]
  int64_t maintenance_interval_ms = kEngineDefaults.maintenance_interval_ms;  // [0, 2^32-1]
  int64_t flush_interval_ms = kEngineDefaults.flush_interval_ms;              // [0, 2^32-1]
  int64_t max_key_bytes = kEngineDefaults.max_key_bytes;                      // [1, 2^32-1]
  // Key suffix pairs evicted together (`evict-together kv_bytes metadata`). The server's own
  // default, not the engine's: it pairs LMCache's redis:// layout (<chunk>kv_bytes +
  // <chunk>metadata, whose EXISTS probe reads the metadata key), which is what Larder serves,
  // and main.cc passes it to the engine explicitly.
  std::vector<std::pair<std::string, std::string>> evict_together{{"kv_bytes", "metadata"}};

  // --- logging / process ---
  std::string loglevel = "notice";  // debug | verbose | notice | warning
  std::string logfile;              // "" = stderr
  std::string pidfile;              // "" = no pid file
  bool daemonize = false;
  int64_t databases = 1;  // only db 0 exists
};

// The threads serving connections: `io-threads`, or for 0 half the CPUs this process may run on
// (its affinity mask), at least 1 and at most 2 (why: conf/larder.conf, io-threads).
int64_t ActiveIoThreads(const ServerConfig& cfg);

}  // namespace larder::config
