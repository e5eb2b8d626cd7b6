// What cluster clients read (CLUSTER and its subcommands, READONLY, READWRITE, ASKING), with
// Redis 7's replies; the controller's side (CLUSTERX, CLUSTER IMPORT) is clusterx_cmds.cc.
// Every command here answers "ERR This instance has cluster support disabled" unless
// `cluster-enabled yes`, as Redis does.
#include <mutex>
#include <optional>
#include <string>

#include "cluster/slot_keys.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

using cluster::ClusterNode;
using cluster::SlotRange;
using cluster::Topology;

constexpr std::string_view kErrDisabled = "ERR This instance has cluster support disabled";
constexpr std::string_view kErrNotInitialized = "CLUSTERDOWN The cluster is not initialized";

// The topology, or nullptr after replying CLUSTERDOWN (no SETNODES yet), as Kvrocks does.
std::shared_ptr<const Topology> TopologyOrReply(Ctx& ctx) {
  auto t = ctx.core.cluster.Current();
  if (!t) ctx.w.Error(kErrNotInitialized);
  return t;
}

// CLUSTER INFO: Redis's first fields, with the controller's version as both epochs (what
// kvrocks-controller compares), then the migration and import lines Kvrocks adds.
void Info(Ctx& ctx) {
  auto t = TopologyOrReply(ctx);
  if (!t) return;
  const std::string version = std::to_string(t->version());
  std::string out =
      "cluster_state:ok\r\ncluster_slots_assigned:" + std::to_string(t->SlotsAssigned()) +
      "\r\ncluster_slots_ok:" + std::to_string(t->SlotsAssigned()) +
      "\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:" +
      std::to_string(t->nodes().size()) +
      "\r\ncluster_size:" + std::to_string(t->MastersWithSlots()) +
      "\r\ncluster_current_epoch:" + version + "\r\ncluster_my_epoch:" + version + "\r\n";
  const cluster::MigrationInfo m = ctx.core.cluster.Migration();
  if (m.state != cluster::MigrationState::kNone) {
    out += "migrating_slot(s): " + m.range->ToString() +
           "\r\ndestination_node: " + m.destination_id +
           "\r\nmigrating_state: " + MigrationStateName(m.state) + "\r\n";
  }
  const cluster::ImportInfo i = ctx.core.cluster.Import();
  if (i.state != cluster::ImportState::kNone) {
    out += "importing_slot(s): " + i.range->ToString() +
           "\r\nimport_state: " + ImportStateName(i.state) + "\r\n";
  }
  ctx.w.Verbatim("txt", out);
}

// One CLUSTER NODES line: "<id> <host>:<port>@<bus port> [myself,]master|slave <master|->
// <ping sent> <pong received> <epoch> connected [<slots>]". Larder has no cluster bus: the bus
// port is the client port + 10000, as Redis derives it, and the times are now.
std::string NodeLine(const ClusterNode& n, bool myself, int64_t version, int64_t now_ms) {
  std::string line = n.id + " " + n.host + ":" + std::to_string(n.port) + "@" +
                     std::to_string(n.port + 10000) + " " + (myself ? "myself," : "") +
                     (n.master ? "master - " : "slave " + n.master_id + " ") +
                     std::to_string(now_ms - 1) + " " + std::to_string(now_ms) + " " +
                     std::to_string(version) + " connected";
  for (const SlotRange& r : n.slots) line += " " + r.ToString();
  return line + "\n";
}

// What myself's CLUSTER NODES line adds while a migration or an import runs, as Kvrocks
// writes it: " [<range>->-<destination id>]", " [<range>-<-<id of the range's owner>]".
std::string TransferMarkers(const Ctx& ctx, const Topology& t) {
  std::string out;
  const cluster::MigrationInfo m = ctx.core.cluster.Migration();
  if (m.state == cluster::MigrationState::kStart) {
    out += " [" + m.range->ToString() + "->-" + m.destination_id + "]";
  }
  const cluster::ImportInfo i = ctx.core.cluster.Import();
  if (i.state == cluster::ImportState::kStart) {
    const ClusterNode* owner = t.OwnerOf(i.range->first);
    out += " [" + i.range->ToString() + "-<-" + (owner ? owner->id : "") + "]";
  }
  return out;
}

void Nodes(Ctx& ctx) {
  auto t = TopologyOrReply(ctx);
  if (!t) return;
  const std::string me = ctx.core.cluster.MyId();
  std::string out;
  for (const ClusterNode& n : t->nodes()) {
    std::string line = NodeLine(n, n.id == me, t->version(), ctx.NowMs());
    if (n.id == me) line.insert(line.size() - 1, TransferMarkers(ctx, *t));
    out += line;
  }
  ctx.w.Verbatim("txt", out);
}

// A node as CLUSTER SLOTS lists it (Redis 7): host, port, id, and an empty metadata map.
void SlotsNode(Ctx& ctx, const ClusterNode& n) {
  ctx.w.ArrayHeader(4);
  ctx.w.BulkString(n.host);
  ctx.w.Integer(n.port);
  ctx.w.BulkString(n.id);
  ctx.w.MapHeader(0);
}

void Slots(Ctx& ctx) {
  auto t = TopologyOrReply(ctx);
  if (!t) return;
  size_t ranges = 0;
  for (const ClusterNode& n : t->nodes()) ranges += n.slots.size();
  ctx.w.ArrayHeader(ranges);
  for (const ClusterNode& n : t->nodes()) {
    const auto replicas = t->ReplicasOf(n.id);
    for (const SlotRange& r : n.slots) {
      ctx.w.ArrayHeader(3 + replicas.size());
      ctx.w.Integer(r.first);
      ctx.w.Integer(r.last);
      SlotsNode(ctx, n);
      for (const ClusterNode* replica : replicas) SlotsNode(ctx, *replica);
    }
  }
}

// A node as CLUSTER SHARDS lists it (Redis 7's fields; Larder does not replicate, so the
// offset is 0).
void ShardNode(Ctx& ctx, const ClusterNode& n) {
  ctx.w.MapHeader(7);
  ctx.w.BulkString("id");
  ctx.w.BulkString(n.id);
  ctx.w.BulkString("port");
  ctx.w.Integer(n.port);
  ctx.w.BulkString("ip");
  ctx.w.BulkString(n.host);
  ctx.w.BulkString("endpoint");
  ctx.w.BulkString(n.host);
  ctx.w.BulkString("role");
  ctx.w.BulkString(n.master ? "master" : "replica");
  ctx.w.BulkString("replication-offset");
  ctx.w.Integer(0);
  ctx.w.BulkString("health");
  ctx.w.BulkString("online");
}

// CLUSTER SHARDS: one shard per master, with its slot ranges (as a flat list of bounds) and
// its nodes, master first.
void Shards(Ctx& ctx) {
  auto t = TopologyOrReply(ctx);
  if (!t) return;
  size_t masters = 0;
  for (const ClusterNode& n : t->nodes()) masters += n.master ? 1 : 0;
  ctx.w.ArrayHeader(masters);
  for (const ClusterNode& n : t->nodes()) {
    if (!n.master) continue;
    const auto replicas = t->ReplicasOf(n.id);
    ctx.w.MapHeader(2);
    ctx.w.BulkString("slots");
    ctx.w.ArrayHeader(2 * n.slots.size());
    for (const SlotRange& r : n.slots) {
      ctx.w.Integer(r.first);
      ctx.w.Integer(r.last);
    }
    ctx.w.BulkString("nodes");
    ctx.w.ArrayHeader(1 + replicas.size());
    ShardNode(ctx, n);
    for (const ClusterNode* replica : replicas) ShardNode(ctx, *replica);
  }
}

void KeySlot(Ctx& ctx) {
  ctx.w.Integer(cluster::KeySlot(ctx.argv[2]));
}

void MyId(Ctx& ctx) {
  ctx.w.BulkString(ctx.core.cluster.MyId());
}

// Parses a slot argument as Redis does: an integer, then "ERR Invalid slot" outside
// [0, 16383]. False once replied.
bool ArgSlot(Ctx& ctx, std::string_view arg, int* slot) {
  int64_t v;
  if (!ArgInt64(ctx, arg, &v)) return false;
  if (v < 0 || v >= cluster::kSlotCount) {
    ctx.w.Error("ERR Invalid slot");
    return false;
  }
  *slot = static_cast<int>(v);
  return true;
}

void CountKeysInSlot(Ctx& ctx) {
  int slot;
  if (!ArgSlot(ctx, ctx.argv[2], &slot)) return;
  int64_t n = 0;
  cluster::ForEachKeyInRange(ctx.store(), {slot, slot}, [&](const std::string&) {
    ++n;
    return true;
  });
  ctx.w.Integer(n);
}

void GetKeysInSlot(Ctx& ctx) {
  int64_t slot, count;
  if (!ArgInt64(ctx, ctx.argv[2], &slot) || !ArgInt64(ctx, ctx.argv[3], &count)) return;
  if (slot < 0 || slot >= cluster::kSlotCount || count < 0) {
    return ctx.w.Error("ERR Invalid slot or number of keys");
  }
  std::vector<std::string> keys;
  const int s = static_cast<int>(slot);
  cluster::ForEachKeyInRange(ctx.store(), {s, s}, [&](const std::string& key) {
    if (keys.size() >= static_cast<size_t>(count)) return false;
    keys.push_back(key);
    return true;
  });
  ctx.w.ArrayHeader(keys.size());
  for (const std::string& key : keys) ctx.w.BulkString(key);
}

// CLUSTER RESET [HARD|SOFT]: forgets the node id and the topology (the node answers
// CLUSTERDOWN until the controller pushes one again). Refused while the node holds keys, as
// Redis refuses it for a master with keys.
void Reset(Ctx& ctx) {
  if (ctx.argc() == 3 && !EqualsNoCase(ctx.argv[2], "hard") && !EqualsNoCase(ctx.argv[2], "soft")) {
    return ctx.w.Error(kErrSyntax);
  }
  // Redis's own text here (its CLUSTER falls through to the end)
  if (ctx.argc() > 3) return ReplySubcommandSyntax(ctx);
  if (!ctx.store().Scan(0, "", 64).keys.empty()) {
    return ctx.w.Error("ERR CLUSTER RESET can't be called with master nodes containing keys");
  }
  if (auto error = ctx.core.cluster.Reset()) return ctx.w.Error(*error);
  ctx.w.SimpleString("OK");
}

// CLUSTER IMPORT <slot|first-last> <state>, sent by a migration source over the link it then
// writes the range's keys through (Kvrocks's protocol): 0 starts an import (the range's old
// keys are deleted and this link may write the range), 1 ends it successfully (the range is
// served to everyone until the topology assigns it), 2 ends it failed (its keys are deleted).
// If the link closes (or RESETs) during an import, the import fails and its keys are deleted.
void Import(Ctx& ctx) {
  const std::optional<SlotRange> range = cluster::ParseSlotRange(ctx.argv[2], true);
  if (!range) return ctx.w.Error("ERR Slot range is invalid");
  int64_t state;
  if (!ArgInt64(ctx, ctx.argv[3], &state)) return;
  if (state < 0 || state > 2) return ctx.w.Error("ERR Invalid import state");
  auto t = ctx.core.cluster.Current();
  const std::string me = ctx.core.cluster.MyId();
  const ClusterNode* myself = t ? t->Find(me) : nullptr;
  if (myself != nullptr && !myself->master) return ctx.w.Error("ERR Slave can't import slot");
  for (int s = range->first; t && s <= range->last; ++s) {
    if (myself != nullptr && t->OwnerOf(s) == myself) {
      return ctx.w.Error("ERR Can't import slot which belongs to me");
    }
  }
  static constexpr cluster::ImportState kStates[] = {
      cluster::ImportState::kStart, cluster::ImportState::kSuccess, cluster::ImportState::kError};
  const cluster::ImportInfo running = ctx.core.cluster.Import();
  if (state == 0 && running.state == cluster::ImportState::kStart && running.range == *range) {
    ctx.client.importing = true;  // a repeated start, as Kvrocks: what arrived stays
    return ctx.w.SimpleString("OK");
  }
  std::optional<std::string> error;
  {
    // A failed import's deletion in the background stops at a new start (Core::Forget).
    std::lock_guard starting(ctx.core.import_starts);
    error = ctx.core.cluster.SetImport(*range, kStates[state], ctx.client.id);
  }
  if (error) return ctx.w.Error(*error);
  if (state != 1) {
    cluster::DeleteKeysInRange(ctx.store(), *range,
                               [&](std::string_view key) { ctx.core.events.KeyLeft(key); });
  }
  ctx.client.importing = state == 0;
  ctx.w.SimpleString("OK");
}

// CLUSTER LINKS: the cluster bus's links, of which Larder has none (kvrocks-controller pushes
// the topology to each node).
void Links(Ctx& ctx) {
  ctx.w.ArrayHeader(0);
}

constexpr SubcommandRow kSubcommands[] = {
    {"info", 2, Info, "INFO", "Return information about the cluster."},
    {"nodes", 2, Nodes, "NODES", "Return cluster configuration seen by node."},
    {"slots", 2, Slots, "SLOTS", "Return information about slots range mappings."},
    {"shards", 2, Shards, "SHARDS", "Return information about slot range mappings and nodes."},
    {"keyslot", 3, KeySlot, "KEYSLOT <key>", "Return the hash slot for <key>."},
    {"myid", 2, MyId, "MYID", "Return the node id."},
    {"links", 2, Links, "LINKS",
     "Return information about all network links between this node and its peers: none, "
     "Larder has no cluster bus."},
    {"countkeysinslot", 3, CountKeysInSlot, "COUNTKEYSINSLOT <slot>",
     "Return the number of keys in <slot>."},
    {"getkeysinslot", 4, GetKeysInSlot, "GETKEYSINSLOT <slot> <count>",
     "Return key names stored by current node in a slot."},
    {"reset", -2, Reset, "RESET [HARD|SOFT]",
     "Forget the node id and the topology; refused while the node holds keys.", kAdmin},
    {"import", 4, Import, "IMPORT <slot|first-last> <0|1|2>",
     "Migration target: start (0), succeed (1) or fail (2) importing a slot range.", kAdmin},
};

// As Redis: an unknown subcommand or a wrong arity is answered before a disabled cluster.
void Cluster(Ctx& ctx) {
  if (!ctx.core.cluster.enabled() && SubcommandRuns(ctx, kSubcommands)) {
    return ctx.w.Error(kErrDisabled);
  }
  RunSubcommand(ctx, kSubcommands);  // disabled: only its error, no handler runs
}

// READONLY / READWRITE: whether this connection may read a slot from a replica of its owner.
void ReadOnly(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return ctx.w.Error(kErrDisabled);
  ctx.client.cluster_readonly = true;
  ctx.w.SimpleString("OK");
}

void ReadWrite(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return ctx.w.Error(kErrDisabled);
  ctx.client.cluster_readonly = false;
  ctx.w.SimpleString("OK");
}

// ASKING: the next command may use a slot this node is importing.
void Asking(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return ctx.w.Error(kErrDisabled);
  ctx.client.asking = true;
  ctx.w.SimpleString("OK");
}

constexpr CommandRow kRows[] = {
    {"cluster", -2, "loading stale", kNoKeys, Cluster, kSubcommands},
    {"readonly", 1, "fast loading stale", kNoKeys, ReadOnly},
    {"readwrite", 1, "fast loading stale", kNoKeys, ReadWrite},
    {"asking", 1, "fast", kNoKeys, Asking},
};

}  // namespace

std::span<const CommandRow> ClusterCommands() {
  return kRows;
}

}  // namespace larder::server
