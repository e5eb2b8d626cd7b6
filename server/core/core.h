// Core: the server-wide state every command and connection shares, in named parts. main.cc
// owns each part and builds the Core before the network layer starts; every part outlives it.
// Thread-safe: each part is.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
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
#include "core/key_tracking.h"
#include "core/keyspace_events.h"
#include "core/latency_monitor.h"
#include "core/monitors.h"
#include "core/pubsub.h"
#include "core/server_stats.h"
#include "core/slowlog.h"
#include "core/watched_keys.h"
#include "larder/clock.h"
#include "larder/store.h"

namespace larder::server {

// A run id as Redis makes one: 40 random hex digits.
std::string NewRunId();

// Facts about this process that INFO and LASTSAVE report.
struct ProcessInfo {
  // INFO's run_id, new at each start: tells a restart from a long run.
  const std::string run_id = NewRunId();
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
  // The keys WATCHed by clients; every change a command reports to `events` touches them.
  WatchedKeys watched;
  // Client-side caching (CLIENT TRACKING); every change reported to `events` invalidates.
  KeyTracking tracking;
  // Keyspace notifications: commands and the engine's listener report events here.
  KeyspaceEvents events{config, pubsub, watched, tracking};
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
  // Taken shared by every command that touches keys, publishes or administers, exclusively by
  // read-modify-write commands and by EXEC (commands/command_spec.h: TakesServerLock,
  // `exclusive`, `locks_itself`).
  FairSharedMutex exec_lock;
  // Slot migrations out of this node (CLUSTERX MIGRATE). Its drain waits for the commands in
  // flight by taking the server lock exclusively once.
  cluster::SlotMigrator migrator{store, cluster,
                                 [this] { std::unique_lock<FairSharedMutex> drained(exec_lock); },
                                 [this] { return config.snapshot()->requirepass; },
                                 [this](std::string_view key) { events.KeyLeft(key); }};

  int64_t NowMs() const { return clock.NowMs(); }

  // Runs `job` on the engine pool, off the io threads and never where exec_lock is held; set
  // once by main before the network layer starts.
  std::function<void(std::function<void()>)> run_in_background;
  // Held while an import starts and while a failed import's key is deleted, so that a deletion
  // never removes a key written by an import started after it was decided.
  std::mutex import_starts;

  // What Forget does with the keys of an import that fails by it.
  enum class FailedImportKeys {
    kDelete,  // deleted by a job in the background (as CLUSTER IMPORT's failure state does)
    kKeep,    // kept (a destructor, which may run once the engine pool is gone): this node does
              // not serve the range, and eviction reclaims them
  };
  // Ends the client's session-wide roles: its subscriptions, watched keys, key tracking and
  // MONITOR mode (RESET, or it disconnected), and the import it is the link of, if one is
  // running: the import fails. Takes no server lock and never waits for the deletion, which
  // scans the whole index.
  void Forget(ClientState& client, FailedImportKeys keys);
  // The client's connection closed (called again as it is destroyed): Forget, and the clients
  // redirecting their invalidations to it lose them.
  void Disconnected(ClientState& client, FailedImportKeys keys) {
    Forget(client, keys);
    tracking.TargetGone(client.id);
  }

  // Leaves MULTI, dropping what it queued, and forgets the client's WATCHed keys: EXEC
  // (whatever it answers, a refused EXEC too) and DISCARD, as Redis's discardTransaction.
  void EndTransaction(ClientState& client) {
    client.EndTransaction();
    Unwatch(client);
  }
  // UNWATCH: forgets the client's WATCHed keys (EndTransaction does too).
  void Unwatch(ClientState& client) {
    client.watching = false;
    watched.UnwatchAll(client.id);
  }

 private:
  // The job Forget starts: deletes the keys of `range`, whose import by `link` failed, under
  // exec_lock shared, until an import of slots of the range starts (its start deletes them
  // itself, and what its link writes from then on stays); an import of other slots does not
  // stop it.
  void DeleteFailedImport(cluster::SlotRange range, uint64_t link);
};

}  // namespace larder::server
