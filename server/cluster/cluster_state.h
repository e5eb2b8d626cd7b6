// ClusterState: this node's view of the cluster (`cluster-enabled yes`): its node id, the
// topology kvrocks-controller pushed, the slot migrations under way, and the routing decision
// every keyed command passes (MOVED, CROSSSLOT, TRYAGAIN, CLUSTERDOWN).
//
// The node id and topology survive a restart in `<dir>/nodes.conf`, in Kvrocks's format:
//
//   version <n>
//   id <node id>
//   node <id> <host> <port> master - <slots...>
//   node <id> <host> <port> slave <master id>
//
// A change is written to the file (a temporary file, fsync, rename) before it is applied, so
// a change that could not be saved changes nothing. Migration state is not saved: a restart
// ends a migration, and the controller sees the migration fail.
//
// Thread-safe: every member takes the state's own lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cluster/topology.h"

namespace larder::server::cluster {

// What a keyed command asks of the routing check.
struct RouteQuery {
  int slot = 0;            // the slot of every key of the command
  bool write = false;      // the command writes
  bool asking = false;     // the client sent ASKING just before
  bool readonly = false;   // the client sent READONLY (reads from a replica)
  bool importing = false;  // the client is the link a migration source imports through
};

// A migration out of this node (CLUSTERX MIGRATE), as CLUSTER INFO reports it.
enum class MigrationState { kNone, kStart, kSuccess, kFail };  // MigrationStateName indexes
const char* MigrationStateName(MigrationState s);

// An import into this node (CLUSTER IMPORT), as CLUSTER INFO reports it.
enum class ImportState { kNone, kStart, kSuccess, kError };  // ImportStateName indexes
const char* ImportStateName(ImportState s);

struct MigrationInfo {
  MigrationState state = MigrationState::kNone;
  std::optional<SlotRange> range;
  std::string destination_id;
};

struct ImportInfo {
  ImportState state = ImportState::kNone;
  std::optional<SlotRange> range;
  uint64_t link = 0;  // the client id of the connection that started it
};

class ClusterState {
 public:
  // Turns cluster mode on and loads `<dir>/nodes.conf` if it exists. Returns the reason the
  // file could not be read (file, line, what is wrong), or nullopt.
  std::optional<std::string> Enable(const std::string& dir);
  bool enabled() const { return enabled_; }

  std::string MyId() const;
  int64_t Version() const;
  // The current topology, or nullptr before the first SETNODES.
  std::shared_ptr<const Topology> Current() const;

  // CLUSTERX SETNODEID / SETNODES / SETSLOT and CLUSTER RESET. Each returns the error reply's
  // text (with its code), or nullopt once the change is saved and applied.
  std::optional<std::string> SetNodeId(const std::string& id);
  std::optional<std::string> SetNodes(std::string_view text, int64_t version, bool force);
  std::optional<std::string> SetSlot(SlotRange range, std::string_view node_id, int64_t version);
  std::optional<std::string> Reset();

  // The error reply for a command whose keys all hash to `q.slot`, or nullopt if this node
  // serves it.
  std::optional<std::string> Route(const RouteQuery& q) const;

  // Migration out of this node: Begin marks the range as migrating to `destination_id`;
  // Forbid makes writes to it answer TRYAGAIN; Finish records the outcome. On success each
  // slot of the range answers MOVED to the destination until a topology gives that slot away
  // (slot by slot: a later migration does not change it).
  void BeginMigration(SlotRange range, const std::string& destination_id);
  void ForbidWrites(SlotRange range);
  // Ends the migration. Returns the ranges of it a topology already gave away (the controller
  // switched before this end): they keep no redirect, and the caller deletes their keys that
  // this node does not serve when it gets to them.
  [[nodiscard]] std::vector<SlotRange> FinishMigration(bool success);
  MigrationInfo Migration() const;
  // Whether a slot of `range` was migrated out and no topology has given it away yet.
  bool AnyMigrated(SlotRange range) const;

  // Import into this node (CLUSTER IMPORT): the imported range is served to the importing
  // link (and to ASKING clients) while it runs; once it succeeded its slots are served to
  // everyone, with those of earlier imports, until the next SETNODES (or a SETSLOT of the
  // slot) assigns them, as Kvrocks does.
  // `link`: the client id of the connection sending it (a start makes it the import's link).
  std::optional<std::string> SetImport(SlotRange range, ImportState state, uint64_t link);
  ImportInfo Import() const;
  // The migrated slots a topology change gave away (their keys are this node's to delete), as
  // ranges, once; empty otherwise.
  std::vector<SlotRange> TakeGivenAwayRanges();
  // Connection `link` closed: if it is the link of an import still running, that import failed,
  // and its range is returned (its keys are this node's to delete); nullopt otherwise.
  std::optional<SlotRange> ImportLinkClosed(uint64_t link);

 private:
  std::optional<std::string> Save(const std::string& id,
                                  const std::shared_ptr<const Topology>& t) const;
  const ClusterNode* Myself() const;  // with mu_ held
  int64_t VersionLocked() const;      // with mu_ held: the topology's version, -1 if none
  // With mu_ held: saves `t` and makes it current (then ForgetGivenAway); the save's error
  // reply, with nothing changed, if it fails. `assigned`: the range a SETSLOT moved (whose
  // imported slots it assigns), or nullopt for a whole topology (SETNODES: all of them).
  std::optional<std::string> Install(Topology t, std::optional<SlotRange> assigned);
  // With mu_ held, after a topology change: a migrated slot the topology gave away needs no
  // redirect of its own any more (it goes to given_away_, for deletion), nor a write ban.
  void ForgetGivenAway();

  bool enabled_ = false;
  std::string nodes_file_;
  mutable std::shared_mutex mu_;
  std::string my_id_;
  std::shared_ptr<const Topology> topology_;
  MigrationInfo migration_;
  std::optional<SlotRange> forbidden_;   // the running migration's write ban
  std::map<int, std::string> migrated_;  // slot -> the destination it moved to
  std::vector<SlotRange> given_away_;    // migrated slots a topology gave away
  ImportInfo import_;                    // the last import, for CLUSTER INFO
  std::set<int> imported_;               // slots imported, until a topology assigns them
};

}  // namespace larder::server::cluster
