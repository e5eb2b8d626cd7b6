// Core: the server-wide state every command and connection shares, in named parts. main.cc
// owns each part and builds the Core before the network layer starts; every part outlives it.
// Thread-safe: each part is.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <shared_mutex>

#include "cluster/cluster_state.h"
#include "cluster/migrator.h"
#include "cluster/slot_keys.h"
#include "core/client_pause.h"
#include "core/client_registry.h"
#include "core/command_metrics.h"
#include "core/config_holder.h"
#include "core/error_stats.h"
#include "core/fair_shared_mutex.h"
#include "core/keyspace_events.h"
#include "core/latency_monitor.h"
#include "core/monitors.h"
#include "core/pubsub.h"
#include "core/server_stats.h"
#include "core/slowlog.h"
#include "larder/clock.h"
#include "larder/store.h"

namespace larder::server {

// Facts about this process that INFO and LASTSAVE report.
struct ProcessInfo {
  int64_t start_ms = 0;                // when the server started (Unix ms)
  int64_t tcp_port = 0;                // the port listened on; 0 = none
  std::string config_file;             // the config file's absolute path; empty = none
  int64_t io_threads = 0;              // the io threads serving connections (Server)
  std::atomic<int64_t> lastsave_s{0};  // last SAVE/BGSAVE (or the start), Unix seconds
};

struct Core {
  Core(Store& store_in, ConfigHolder& config_in, ServerStats& stats_in, const Clock& clock_in)
      : store(store_in), config(config_in), stats(stats_in), clock(clock_in) {}

  Store& store;
  ConfigHolder& config;
  ServerStats& stats;
  // The one time source: the engine was opened with the same clock (main.cc).
  const Clock& clock;
  // The connected clients; set once, before the network layer starts.
  ClientRegistry* clients = nullptr;
  // Asks the server to stop (after the current command); set once by main.
  std::function<void()> request_shutdown;
  ProcessInfo process;
  // Channels, patterns and their subscribers (SUBSCRIBE, PUBLISH, keyspace notifications).
  PubSub pubsub;
  // Keyspace notifications: commands and the engine's listener report events here.
  KeyspaceEvents events{config, pubsub};
  // Per-command calls, time and latency histograms; sized by main from the command table.
  CommandStatsTable commands;
  // Error replies by code (INFO errorstats); every connection's reply writers report here.
  ErrorStats errors{stats};
  SlowLog slowlog;
  LatencyMonitor latency;
  Monitors monitors;
  ClientPause pause;
  // Cluster mode's node id, topology, migrations and routing (`cluster-enabled`).
  cluster::ClusterState cluster;
  // Taken shared by every command, exclusively by read-modify-write commands and by EXEC
  // (commands/command_spec.h: `exclusive`, `locks_itself`).
  FairSharedMutex exec_lock;
  // Slot migrations out of this node (CLUSTERX MIGRATE). Its drain waits for the commands in
  // flight by taking the server lock exclusively once.
  cluster::SlotMigrator migrator{store, cluster,
                                 [this] { std::unique_lock<FairSharedMutex> drained(exec_lock); },
                                 [this] { return config.snapshot()->requirepass; }};

  int64_t NowMs() const { return clock.NowMs(); }

  // How Forget may delete the keys of an import whose link closed.
  enum class KeyDeletion {
    kTakeLock,  // takes exec_lock shared for it (a closing connection)
    kLockHeld,  // the caller, a command, holds exec_lock shared (RESET)
    kNone,      // never (a destructor, which may run where the lock is held): the keys stay
  };
  // Ends the client's session-wide roles: its subscriptions and MONITOR mode (it disconnected,
  // or RESET), and the import it is the link of, if one is running: the import fails and its
  // keys are deleted (as CLUSTER IMPORT's failure state does).
  void Forget(ClientState& client, KeyDeletion deletion) {
    pubsub.Forget(client);
    monitors.Remove(client);
    if (!client.importing) return;
    client.importing = false;
    const std::optional<cluster::SlotRange> failed = cluster.ImportLinkClosed(client.id);
    if (!failed || deletion == KeyDeletion::kNone) return;
    std::shared_lock<FairSharedMutex> lock(exec_lock, std::defer_lock);
    if (deletion == KeyDeletion::kTakeLock) lock.lock();
    cluster::DeleteKeysInRange(store, *failed);
  }
};

}  // namespace larder::server
