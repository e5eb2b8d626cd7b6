// CLUSTERX: how kvrocks-controller manages a node, with Kvrocks's syntax, rules and error
// texts, so the controller manages Larder nodes unchanged. The controller sends
// `CLUSTERX SETNODEID <id>` then `CLUSTERX SETNODES "<nodes>" <version>` to every node on
// each change, polls CLUSTER INFO, and moves slots with CLUSTERX MIGRATE (cluster/migrator.h).
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

void ReplyResult(Ctx& ctx, const std::optional<std::string>& error) {
  if (error) return ctx.w.Error(*error);
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

constexpr SubcommandRow kSubcommands[] = {
    {"version", 2, Version, "VERSION", "Return the version of the cluster topology."},
    {"myid", 2, MyId, "MYID", "Return the node id."},
    {"setnodeid", 3, SetNodeId, "SETNODEID <id>", "Set this node's id (40 characters).", kAdmin},
    {"setnodes", -4, SetNodes, "SETNODES <nodes> <version> [FORCE]",
     "Set the cluster topology; a lower version is refused unless FORCE.", kAdmin},
    {"setslot", 6, SetSlot, "SETSLOT <slot|first-last> NODE <id> <version>",
     "Move a slot range to a master; <version> is the current one + 1.", kAdmin},
};

void ClusterX(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return ctx.w.Error("ERR Cluster mode is not enabled");
  RunSubcommand(ctx, kSubcommands);
}

constexpr CommandRow kRows[] = {
    {"clusterx", -2, "admin loading stale", kNoKeys, ClusterX},
};

}  // namespace

std::span<const CommandRow> ClusterXCommands() {
  return kRows;
}

}  // namespace larder::server
