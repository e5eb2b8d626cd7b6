// CLUSTERX: how kvrocks-controller manages a node, with Kvrocks's syntax, rules and error
// texts, so the controller manages Larder nodes unchanged. The controller sends
// `CLUSTERX SETNODEID <id>` then `CLUSTERX SETNODES "<nodes>" <version>` to every node on
// each change, polls CLUSTER INFO, and moves slots with CLUSTERX MIGRATE (cluster/migrator.h).
#include <shared_mutex>

#include "cluster/slot_keys.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

using cluster::SlotRange;

void Version(Ctx& ctx) {
  ctx.w.BulkString(std::to_string(ctx.core.cluster.Version()));
}

void MyId(Ctx& ctx) {
  ctx.w.BulkString(ctx.core.cluster.MyId());
}

// After a topology change: once the topology gave a migrated range away, this node deletes
// its copy (under the server lock, as any write), then replies.
void ReplyResult(Ctx& ctx, const std::optional<std::string>& error) {
  if (error) return ctx.w.Error(*error);
  const std::vector<SlotRange> gone = ctx.core.cluster.TakeGivenAwayRanges();
  if (!gone.empty()) {
    std::shared_lock<FairSharedMutex> lock(ctx.core.exec_lock);
    for (const SlotRange& range : gone) {
      cluster::DeleteKeysInRange(ctx.store(), range,
                                 [&](std::string_view key) { ctx.core.events.KeyLeft(key); });
    }
  }
  ctx.w.SimpleString("OK");
}

// CLUSTERX SETNODEID <id>: this node's id (40 characters), saved with the topology.
void SetNodeId(Ctx& ctx) {
  if (ctx.argv[2].size() != cluster::kNodeIdLength) {
    return ctx.w.Error("ERR Invalid cluster node id");
  }
  ReplyResult(ctx, ctx.core.cluster.SetNodeId(ctx.argv[2]));
}

// CLUSTERX SETNODES "<nodes>" <version> [FORCE]: the whole topology (topology.h's text form).
// A lower version is refused and the same version is a no-op, unless FORCE.
void SetNodes(Ctx& ctx) {
  if (ctx.argc() > 5) return ReplySubcommandSyntax(ctx);
  int64_t version;
  if (!ParseInt64(ctx.argv[3], &version)) return ctx.w.Error("ERR Invalid version");
  const bool force = ctx.argc() == 5;
  if (force && !EqualsNoCase(ctx.argv[4], "force")) {
    return ctx.w.Error("ERR Invalid setnodes options");
  }
  ReplyResult(ctx, ctx.core.cluster.SetNodes(ctx.argv[2], version, force));
}

// CLUSTERX SETSLOT <slot|first-last> NODE <id> <version>: moves the range to master <id>; the
// version must be exactly the current one + 1.
void SetSlot(Ctx& ctx) {
  const std::optional<SlotRange> range = cluster::ParseSlotRange(ctx.argv[2], true);
  if (!range) return ctx.w.Error("ERR Invalid slot range: " + ctx.argv[2]);
  if (!EqualsNoCase(ctx.argv[3], "node")) return ctx.w.Error("ERR Invalid setslot options");
  if (ctx.argv[4].size() != cluster::kNodeIdLength) return ctx.w.Error("ERR Invalid node id");
  int64_t version;
  if (!ArgInt64(ctx, ctx.argv[5], &version)) return;
  if (version < 0) return ctx.w.Error("ERR Invalid version");
  ReplyResult(ctx, ctx.core.cluster.SetSlot(*range, ctx.argv[4], version));
}

// CLUSTERX MIGRATE <slot|first-last> <destination id> [async | sync [timeout seconds]]: moves
// the range's values to the destination master (cluster/migrator.h). async (the default, and
// what the controller sends) replies +OK at once, and CLUSTER INFO's migrating_state tells
// the outcome; sync replies when it ends: +OK, the error, or a null reply on timeout (0 = no
// limit).
void Migrate(Ctx& ctx) {
  if (ctx.argc() > 6) return ReplySubcommandSyntax(ctx);
  const std::optional<SlotRange> range = cluster::ParseSlotRange(ctx.argv[2], true);
  bool sync = false;
  int64_t timeout_s = 0;
  if (ctx.argc() >= 5) {
    sync = EqualsNoCase(ctx.argv[4], "sync");
    if (!sync && !EqualsNoCase(ctx.argv[4], "async")) {
      return ctx.w.Error("ERR Invalid sync flag");
    }
    if (ctx.argc() == 6 && !sync) {
      return ctx.w.Error("ERR Async migration does not support timeout");
    }
    if (ctx.argc() == 6 && (!ParseInt64(ctx.argv[5], &timeout_s) || timeout_s < 0)) {
      return ctx.w.Error("ERR Invalid timeout");
    }
  }
  if (!range) return ctx.w.Error("ERR Slot range is invalid");
  if (auto error = ctx.core.migrator.Start(*range, ctx.argv[3])) return ctx.w.Error(*error);
  if (!sync) return ctx.w.SimpleString("OK");
  const std::optional<std::string> outcome =
      ctx.core.migrator.Wait(std::chrono::milliseconds(timeout_s * 1000));
  if (!outcome) return ctx.w.Null();
  if (!outcome->empty()) return ctx.w.Error(*outcome);
  ctx.w.SimpleString("OK");
}

constexpr SubcommandRow kSubcommands[] = {
    {"version", 2, Version, "VERSION", "Return the version of the cluster topology."},
    {"myid", 2, MyId, "MYID", "Return the node id."},
    {"setnodeid", 3, SetNodeId, "SETNODEID <id>", "Set this node's id (40 characters).", kAdmin},
    {"setnodes", -4, SetNodes, "SETNODES <nodes> <version> [FORCE]",
     "Set the cluster topology; a lower version is refused unless FORCE.", kAdmin},
    {"setslot", 6, SetSlot, "SETSLOT <slot|first-last> NODE <id> <version>",
     "Move a slot range to a master; <version> is the current one + 1.", kAdmin},
    {"migrate", -4, Migrate, "MIGRATE <slot|first-last> <node id> [ASYNC|SYNC [<timeout>]]",
     "Move a slot range's values to another master.", kAdmin},
};

void ClusterX(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return ctx.w.Error("ERR Cluster mode is not enabled");
  RunSubcommand(ctx, kSubcommands);
}

constexpr CommandRow kRows[] = {
    // `locks_itself`: no subcommand touches keys under the dispatch lock (a topology change
    // that gives a migrated range away takes it to delete the range), and MIGRATE SYNC waits
    // for a migration whose last step takes it exclusively. `no_multi` (refused inside MULTI)
    // for the same reason: EXEC would run it under its exclusive hold.
    {"clusterx", -2, "admin loading stale no_multi locks_itself", kNoKeys, ClusterX, kSubcommands},
};

}  // namespace

std::span<const CommandRow> ClusterXCommands() {
  return kRows;
}

}  // namespace larder::server
