// SlotMigrator: moves a slot range's live values, with their expiry, from this node to
// another master (CLUSTERX MIGRATE), the way Kvrocks migrates, so kvrocks-controller drives it
// unchanged:
//
//   1. On its own connection to the destination: AUTH (this node's requirepass, if any), then
//      CLUSTER IMPORT <range> 0.
//   2. Every key of the range, read (and so verified) from the engine, goes out as a pipelined
//      SET <key> <value> [PXAT <ms>]. Writes to the range go on meanwhile; their keys are noted
//      (NoteWrite) and sent again, as SET or as DEL if they are gone, in up to 10 rounds.
//   3. Writes to the range are refused with TRYAGAIN; once the writes in flight finished
//      (`drain`), the last noted keys are sent and CLUSTER IMPORT <range> 1 ends the import.
//      From then on this node answers MOVED to the destination for the range, and the
//      destination serves it, until the controller's next topology gives it the range.
//   4. On any failure the write ban ends, CLUSTER IMPORT <range> 2 discards the destination's
//      copy, and CLUSTER INFO reports migrating_state fail.
//
// Reads of the range are served here throughout, until step 3 ends. A write that arrives
// during step 3 gets TRYAGAIN; clients retry it, and after the switch the retry is redirected
// to the destination. One migration runs at a time, on its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/resp_connection.h"
#include "larder/store.h"

namespace larder::server::cluster {

class SlotMigrator {
 public:
  // `drain` returns once every command that was running when it was called has finished;
  // `password` gives the requirepass to AUTH with at the destination ("" = none); `deleted` is
  // told of each key the migrator deletes once its slot is served elsewhere.
  SlotMigrator(Store& store, ClusterState& state, std::function<void()> drain,
               std::function<std::string()> password, std::function<void(std::string_view)> deleted)
      : store_(store),
        state_(state),
        drain_(std::move(drain)),
        password_(std::move(password)),
        deleted_(std::move(deleted)) {}
  ~SlotMigrator();

  // Starts migrating `range` to master `destination_id`, after Kvrocks's checks. The error
  // reply's text, or nullopt once the migration runs.
  std::optional<std::string> Start(SlotRange range, const std::string& destination_id);
  // Waits up to `timeout` (0 = no limit) for the running migration: nullopt if it is still
  // running, else its error text ("" on success).
  std::optional<std::string> Wait(std::chrono::milliseconds timeout);

  // Tells the migrator a command wrote `key`; called, under the server's command lock, after
  // every write of a keyed command while a migration runs.
  void NoteWrite(std::string_view key);
  // Makes the running migration (if any) fail with `why` at its next step, before it would
  // hand the range over: FLUSHALL calls it, as in Kvrocks, since the values being sent are
  // gone. The destination is told to drop what it received (CLUSTER IMPORT ... 2).
  void Abort(std::string why);
  bool active() const { return active_.load(std::memory_order_acquire); }

 private:
  void Run(SlotRange range, const ClusterNode& destination);
  std::optional<std::string> Migrate(SlotRange range, common::RespConnection& link);
  // Sends the current value (or a DEL) of each key, pipelined.
  std::optional<std::string> SendKeys(const std::vector<std::string>& keys,
                                      common::RespConnection& link);
  std::vector<std::string> TakeNoted();
  // Why the migration must stop (Abort or shutdown), or nullopt.
  std::optional<std::string> AbortReason();

  Store& store_;
  ClusterState& state_;
  std::function<void()> drain_;
  std::function<std::string()> password_;
  std::function<void(std::string_view)> deleted_;
  std::thread thread_;
  std::atomic<bool> active_{false};
  std::atomic<bool> aborting_{false};  // AbortReason() has a reason

  std::mutex mu_;  // guards the fields below
  std::condition_variable done_cv_;
  bool done_ = true;
  std::string error_;
  std::string abort_reason_;
  std::optional<SlotRange> range_;
  std::unordered_set<std::string> noted_;
};

}  // namespace larder::server::cluster
