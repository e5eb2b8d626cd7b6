// The server's configuration as typed values. Every field is default-initialised to the
// default declared for its option in option_table.cc (config_test checks they agree), so a
// default-constructed ServerConfig is exactly what larder-server runs with and no config file.
//
// Field names follow the option names with '-' replaced by '_'. Ranges and units are enforced
// by the option table when values are parsed; code reading a ServerConfig may rely on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace larder::config {

// `client-output-buffer-limit normal <hard> <soft> <soft-seconds>`: a client is disconnected
// when its pending replies reach `hard_bytes`, or stay above `soft_bytes` for `soft_seconds`.
// 0 disables the respective limit.
struct ClientOutputBufferLimit {
  uint64_t hard_bytes = 0;
  uint64_t soft_bytes = 0;
  int64_t soft_seconds = 0;
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
  int64_t io_threads = 2;                      // [1, 64] threads serving connections
  int64_t engine_threads = 8;                  // [1, 256] threads running blocking engine calls
  int64_t pipeline_nice = 10;                  // [0, 19] CPU nice of the pipelined-batch threads

  // --- security ---
  std::string requirepass;  // "" = no AUTH required; <= 512 bytes, no control characters

  // --- limits ---
  uint64_t proto_max_bulk_len = 512ull << 20;          // >= 1 MiB
  uint64_t client_query_buffer_limit = 1ull << 30;     // >= 1 MiB
  ClientOutputBufferLimit client_output_buffer_limit;  // the `normal` class

  // --- engine ---
  std::string dir = "./data";                 // data directory; never settable at runtime
  uint64_t max_disk_bytes = 0;                // 0 = 80% of the space available to the store
  std::string eviction_policy = "lru-reuse";  // lru-reuse | lru | fifo | none
  double max_reinsert_fraction = 0.5;         // [0, 1]
  uint64_t generation_bytes = 0;              // 0 = max_disk_bytes / 32 in [8 MiB, 64 GiB]
  bool wal = false;                           // write-ahead log
  bool wal_sync = false;                      // fsync the WAL on every write
  uint64_t blob_cache_bytes = 0;              // ignored (the page cache holds hot values)
  uint64_t memtable_bytes = 0;                // index memtables; 0 = from the budget
  int64_t maintenance_interval_ms = 1000;     // [0, 2^32-1]; 0 = no background maintenance
  int64_t max_key_bytes = 65536;              // [1, 2^32-1]

  // --- logging / process ---
  std::string loglevel = "notice";  // debug | verbose | notice | warning
  std::string logfile;              // "" = stderr
  std::string pidfile;              // "" = no pid file
  bool daemonize = false;
  int64_t databases = 1;  // only db 0 exists
};

}  // namespace larder::config
