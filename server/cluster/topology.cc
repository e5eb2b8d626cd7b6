#include "cluster/topology.h"

#include <algorithm>
#include <unordered_set>

#include "common/text.h"

namespace larder::server::cluster {

namespace {

// The error of one node line, or empty once it is parsed into *node and its slots recorded in
// `owner` under index `index`.
std::string ParseNodeLine(const std::vector<std::string_view>& f, int16_t index, ClusterNode* node,
                          std::array<int16_t, kSlotCount>* owner) {
  if (f.size() < 5) return "Invalid cluster nodes info";
  if (f[0].size() != kNodeIdLength) return "Invalid cluster node id";
  node->id = std::string(f[0]);
  node->host = std::string(f[1]);
  const std::optional<int> port = common::ParseNumber<int>(f[2]);
  if (!port || *port <= 0 || *port > 65535) return "Invalid cluster node port";
  node->port = *port;
  if (common::EqualsNoCase(f[3], "master")) {
    node->master = true;
    if (f[4] != "-") return "Invalid cluster nodes info";
  } else if (common::EqualsNoCase(f[3], "slave") || common::EqualsNoCase(f[3], "replica")) {
    node->master = false;
    if (f[4].size() != kNodeIdLength || f.size() != 5) return "Invalid cluster nodes info";
    node->master_id = std::string(f[4]);
    return "";
  } else {
    return "Invalid cluster node role";
  }
  for (size_t i = 5; i < f.size(); ++i) {
    if (f[i].size() == kNodeIdLength) {
      return "Invalid nodes definition: Missing newline between node entries.";
    }
    const std::optional<SlotRange> range = ParseSlotRange(f[i], /*allow_equal=*/false);
    if (!range) return "Slot is out of range";
    for (int s = range->first; s <= range->last; ++s) {
      if ((*owner)[s] >= 0) return "Slot distribution is overlapped";
      (*owner)[s] = index;
    }
  }
  return "";
}

}  // namespace

std::string SlotRange::ToString() const {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

std::optional<SlotRange> ParseSlotRange(std::string_view text, bool allow_equal) {
  const size_t dash = text.find('-');
  const std::optional<int> first = common::ParseNumber<int>(text.substr(0, dash));
  const std::optional<int> last =
      dash == std::string_view::npos ? first : common::ParseNumber<int>(text.substr(dash + 1));
  if (!first || !last || *first < 0 || *last >= kSlotCount) return std::nullopt;
  if (dash != std::string_view::npos && (allow_equal ? *first > *last : *first >= *last)) {
    return std::nullopt;
  }
  return SlotRange{*first, *last};
}

std::optional<Topology> Topology::Parse(std::string_view text, int64_t version,
                                        std::string* error) {
  Topology t;
  t.version_ = version;
  std::array<int16_t, kSlotCount> owner;
  owner.fill(-1);
  std::unordered_set<std::string> ids;
  // Lines and fields as Kvrocks splits them: runs of separators, empty pieces dropped.
  for (std::string_view line : common::SplitNonEmpty(text, '\n')) {
    const std::vector<std::string_view> fields = common::SplitNonEmpty(line, ' ');
    if (fields.empty()) continue;
    if (t.nodes_.size() >= static_cast<size_t>(kSlotCount)) {
      *error = "Invalid cluster nodes info";
      return std::nullopt;
    }
    ClusterNode node;
    *error = ParseNodeLine(fields, static_cast<int16_t>(t.nodes_.size()), &node, &owner);
    if (error->empty() && !ids.insert(node.id).second) *error = "Duplicate cluster node id";
    if (!error->empty()) return std::nullopt;
    t.nodes_.push_back(std::move(node));
  }
  if (t.nodes_.empty()) {
    *error = "Invalid cluster nodes info";
    return std::nullopt;
  }
  t.AssignOwners(owner);
  return t;
}

void Topology::AssignOwners(const std::array<int16_t, kSlotCount>& owner) {
  owner_ = owner;
  for (ClusterNode& node : nodes_) node.slots.clear();
  for (int s = 0; s < kSlotCount; ++s) {
    if (owner_[s] < 0) continue;
    std::vector<SlotRange>& slots = nodes_[static_cast<size_t>(owner_[s])].slots;
    if (!slots.empty() && slots.back().last == s - 1) {
      slots.back().last = s;
    } else {
      slots.push_back({s, s});
    }
  }
}

const ClusterNode* Topology::Find(std::string_view id) const {
  for (const ClusterNode& node : nodes_) {
    if (node.id == id) return &node;
  }
  return nullptr;
}

std::vector<const ClusterNode*> Topology::ReplicasOf(std::string_view id) const {
  std::vector<const ClusterNode*> out;
  for (const ClusterNode& node : nodes_) {
    if (!node.master && node.master_id == id) out.push_back(&node);
  }
  return out;
}

int Topology::SlotsAssigned() const {
  return static_cast<int>(
      std::count_if(owner_.begin(), owner_.end(), [](int16_t i) { return i >= 0; }));
}

int Topology::MastersWithSlots() const {
  return static_cast<int>(std::count_if(nodes_.begin(), nodes_.end(), [](const ClusterNode& n) {
    return n.master && !n.slots.empty();
  }));
}

std::optional<Topology> Topology::WithSlotsMovedTo(SlotRange range, std::string_view id,
                                                   int64_t version, std::string* error) const {
  const ClusterNode* target = Find(id);
  if (target == nullptr) {
    *error = "No this node in the cluster";
    return std::nullopt;
  }
  if (!target->master) {
    *error = "The node isn't a master";
    return std::nullopt;
  }
  Topology t = *this;
  t.version_ = version;
  std::array<int16_t, kSlotCount> owner = owner_;
  const auto index = static_cast<int16_t>(target - nodes_.data());
  for (int s = range.first; s <= range.last; ++s) owner[s] = index;
  t.AssignOwners(owner);
  return t;
}

std::string Topology::ToNodesText() const {
  std::string out;
  for (const ClusterNode& node : nodes_) {
    out += node.id + " " + node.host + " " + std::to_string(node.port);
    if (node.master) {
      out += " master -";
      for (const SlotRange& r : node.slots) out += " " + r.ToString();
    } else {
      out += " slave " + node.master_id;
    }
    out += "\n";
  }
  return out;
}

}  // namespace larder::server::cluster
