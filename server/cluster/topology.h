// The cluster's topology as kvrocks-controller pushes it (CLUSTERX SETNODES): which node owns
// each of the 16384 slots, where every node listens, and the version the controller stamped
// on it. Immutable once built: ClusterState swaps whole topologies, so a reader holding one
// sees a consistent map.
//
// The text form is Kvrocks's, one node per line ('\n'-separated, blank lines and repeated
// spaces ignored):
//
//   <id> <host> <port> master - [<slot>|<first>-<last> ...]
//   <id> <host> <port> slave|replica <master-id>
//
// Node ids are 40 characters (the controller's are random alphanumerics, Redis's hex). A
// range "<first>-<last>" needs first < last; a single slot is written alone, as the controller
// writes it. Errors are Kvrocks's texts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/key_slot.h"

namespace larder::server::cluster {

inline constexpr size_t kNodeIdLength = 40;

struct SlotRange {
  int first = 0;
  int last = 0;  // inclusive

  bool Contains(int slot) const { return slot >= first && slot <= last; }
  bool Overlaps(SlotRange other) const { return first <= other.last && other.first <= last; }
  bool operator==(const SlotRange&) const = default;
  // "5" or "0-5460": Kvrocks's and the controller's form.
  std::string ToString() const;
};

// "N" or "a-b" (a <= b when `allow_equal`, else a < b, as SETNODES insists), both in
// [0, 16383]; nullopt if malformed.
std::optional<SlotRange> ParseSlotRange(std::string_view text, bool allow_equal);

struct ClusterNode {
  std::string id;
  std::string host;
  int port = 0;
  bool master = true;
  std::string master_id;         // a replica's master; empty for a master
  std::vector<SlotRange> slots;  // a master's slots, merged and sorted (empty for a replica)
};

class Topology {
 public:
  // Parses SETNODES's text. On failure, *error holds the reason (without "ERR ").
  static std::optional<Topology> Parse(std::string_view text, int64_t version, std::string* error);

  int64_t version() const { return version_; }
  const std::vector<ClusterNode>& nodes() const { return nodes_; }
  // The master that owns `slot`, or nullptr if none does.
  const ClusterNode* OwnerOf(int slot) const {
    const int16_t i = owner_[slot];
    return i < 0 ? nullptr : &nodes_[static_cast<size_t>(i)];
  }
  const ClusterNode* Find(std::string_view id) const;
  // The replicas of master `id`, in the order they were given.
  std::vector<const ClusterNode*> ReplicasOf(std::string_view id) const;
  int SlotsAssigned() const;
  // Masters that own at least one slot (CLUSTER INFO's cluster_size).
  int MastersWithSlots() const;
  // The same topology with `range` owned by master `id` (CLUSTERX SETSLOT); nullopt with
  // *error if `id` is not a known master.
  std::optional<Topology> WithSlotsMovedTo(SlotRange range, std::string_view id, int64_t version,
                                           std::string* error) const;
  // SETNODES's text for this topology (what Parse reads back).
  std::string ToNodesText() const;

 private:
  // Rebuilds owner_ and every master's merged `slots` from the owners given per slot.
  void AssignOwners(const std::array<int16_t, kSlotCount>& owner);

  int64_t version_ = -1;
  std::vector<ClusterNode> nodes_;
  std::array<int16_t, kSlotCount> owner_{};  // index into nodes_, -1 = unassigned
};

}  // namespace larder::server::cluster
