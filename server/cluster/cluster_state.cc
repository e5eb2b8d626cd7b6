#include "cluster/cluster_state.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "common/files.h"
#include "common/text.h"

namespace larder::server::cluster {

namespace {

constexpr char kNodesFileName[] = "nodes.conf";

bool Overlaps(const std::optional<SlotRange>& a, int slot) {
  return a && a->Contains(slot);
}

// Appends `slot` to `ranges`, built in ascending slot order: it extends the last range when it
// follows it.
void AppendSlot(std::vector<SlotRange>* ranges, int slot) {
  if (!ranges->empty() && ranges->back().last + 1 == slot) {
    ranges->back().last = slot;
  } else {
    ranges->push_back({slot, slot});
  }
}

// Redis's redirect: "MOVED <slot> <host>:<port>".
std::string Moved(int slot, const ClusterNode& node) {
  return "MOVED " + std::to_string(slot) + " " + node.host + ":" + std::to_string(node.port);
}

}  // namespace

const char* MigrationStateName(MigrationState s) {
  static constexpr const char* kNames[] = {"none", "start", "success", "fail"};
  return kNames[static_cast<int>(s)];
}

const char* ImportStateName(ImportState s) {
  static constexpr const char* kNames[] = {"none", "start", "success", "error"};
  return kNames[static_cast<int>(s)];
}

std::optional<std::string> ClusterState::Enable(const std::string& dir) {
  enabled_ = true;
  nodes_file_ = dir + "/" + kNodesFileName;
  std::ifstream in(nodes_file_);
  if (!in) return std::nullopt;  // a node that never had a topology
  int64_t version = -1;
  std::string id, nodes, line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string key;
    if (!(words >> key)) continue;
    std::string rest;
    std::getline(words >> std::ws, rest);
    if (key == "version") {
      const std::optional<int64_t> v = common::ParseNumber<int64_t>(rest);
      if (!v) {
        return nodes_file_ + ":" + std::to_string(number) + ": version '" + rest +
               "' is not an integer";
      }
      version = *v;
    } else if (key == "id") {
      id = rest;
    } else if (key == "node") {
      nodes += rest + "\n";
    } else {
      return nodes_file_ + ":" + std::to_string(number) + ": unknown key '" + key + "'";
    }
  }
  std::unique_lock lock(mu_);
  my_id_ = id;
  if (version < 0 || nodes.empty()) return std::nullopt;
  std::string error;
  std::optional<Topology> t = Topology::Parse(nodes, version, &error);
  if (!t) return nodes_file_ + ": " + error;
  topology_ = std::make_shared<const Topology>(std::move(*t));
  return std::nullopt;
}

std::string ClusterState::MyId() const {
  std::shared_lock lock(mu_);
  return my_id_;
}

int64_t ClusterState::Version() const {
  std::shared_lock lock(mu_);
  return VersionLocked();
}

int64_t ClusterState::VersionLocked() const {
  return topology_ ? topology_->version() : -1;
}

std::optional<std::string> ClusterState::Install(Topology t, std::optional<SlotRange> assigned) {
  auto next = std::make_shared<const Topology>(std::move(t));
  if (auto error = Save(my_id_, next)) return error;
  topology_ = std::move(next);
  ForgetGivenAway();
  if (!assigned) {
    imported_.clear();
  } else {
    imported_.erase(imported_.lower_bound(assigned->first), imported_.upper_bound(assigned->last));
  }
  return std::nullopt;
}

std::shared_ptr<const Topology> ClusterState::Current() const {
  std::shared_lock lock(mu_);
  return topology_;
}

std::optional<std::string> ClusterState::Save(const std::string& id,
                                              const std::shared_ptr<const Topology>& t) const {
  std::string text = "version " + std::to_string(t ? t->version() : -1) + "\nid " + id + "\n";
  if (t) {
    std::istringstream lines(t->ToNodesText());
    for (std::string line; std::getline(lines, line);) text += "node " + line + "\n";
  }
  std::optional<std::string> error = common::WriteFileAtomically(nodes_file_, text);
  if (error) return "ERR cannot save the cluster topology to " + nodes_file_ + " (" + *error + ")";
  return std::nullopt;
}

std::optional<std::string> ClusterState::SetNodeId(const std::string& id) {
  std::unique_lock lock(mu_);
  if (auto error = Save(id, topology_)) return error;
  my_id_ = id;
  return std::nullopt;
}

std::optional<std::string> ClusterState::SetNodes(std::string_view text, int64_t version,
                                                  bool force) {
  if (version < 0) return "ERR Invalid cluster version";
  std::unique_lock lock(mu_);
  const int64_t current = VersionLocked();
  if (!force && version < current) return "ERR Invalid cluster version";
  if (!force && version == current) return std::nullopt;
  std::string error;
  std::optional<Topology> t = Topology::Parse(text, version, &error);
  if (!t) return "ERR " + error;
  return Install(std::move(*t), std::nullopt);
}

std::optional<std::string> ClusterState::SetSlot(SlotRange range, std::string_view node_id,
                                                 int64_t version) {
  std::unique_lock lock(mu_);
  if (!topology_ || version != VersionLocked() + 1) return "ERR Invalid cluster version";
  std::string error;
  std::optional<Topology> t = topology_->WithSlotsMovedTo(range, node_id, version, &error);
  if (!t) return "ERR " + error;
  return Install(std::move(*t), range);
}

std::optional<std::string> ClusterState::Reset() {
  std::unique_lock lock(mu_);
  if (migration_.state == MigrationState::kStart) {
    return "ERR Can't reset cluster while migrating slot";
  }
  if (import_.state == ImportState::kStart) return "ERR Can't reset cluster while importing slot";
  if (auto error = Save("", nullptr)) return error;
  my_id_.clear();
  topology_.reset();
  migration_ = {};
  import_ = {};
  forbidden_.reset();
  migrated_.clear();
  given_away_.clear();
  imported_.clear();
  return std::nullopt;
}

void ClusterState::ForgetGivenAway() {
  const ClusterNode* myself = Myself();
  if (forbidden_ && topology_->OwnerOf(forbidden_->first) != myself) forbidden_.reset();
  for (auto it = migrated_.begin(); it != migrated_.end();) {
    if (topology_->OwnerOf(it->first) == myself) {
      ++it;
      continue;
    }
    AppendSlot(&given_away_, it->first);
    it = migrated_.erase(it);
  }
}

const ClusterNode* ClusterState::Myself() const {
  return topology_ ? topology_->Find(my_id_) : nullptr;
}

std::optional<std::string> ClusterState::Route(const RouteQuery& q) const {
  std::shared_lock lock(mu_);
  if (!topology_) return "CLUSTERDOWN Hash slot not served";
  const ClusterNode* owner = topology_->OwnerOf(q.slot);
  const ClusterNode* myself = Myself();
  if (owner != nullptr && owner == myself) {
    const auto migrated = migrated_.find(q.slot);
    const ClusterNode* migrated_to =
        migrated != migrated_.end() ? topology_->Find(migrated->second) : nullptr;
    if (migrated_to != nullptr) return Moved(q.slot, *migrated_to);
    if (q.write && (migrated != migrated_.end() || Overlaps(forbidden_, q.slot))) {
      return "TRYAGAIN Can't write to slot being migrated which is in write forbidden phase";
    }
    return std::nullopt;
  }
  if (imported_.count(q.slot)) return std::nullopt;
  if (import_.state == ImportState::kStart && Overlaps(import_.range, q.slot) &&
      (q.asking || q.importing)) {
    return std::nullopt;
  }
  if (owner != nullptr && myself != nullptr && !myself->master && myself->master_id == owner->id &&
      q.readonly && !q.write) {
    return std::nullopt;
  }
  if (owner == nullptr) return "CLUSTERDOWN Hash slot not served";
  return Moved(q.slot, *owner);
}

void ClusterState::BeginMigration(SlotRange range, const std::string& destination_id) {
  std::unique_lock lock(mu_);
  migration_ = {MigrationState::kStart, range, destination_id};
  forbidden_.reset();
}

void ClusterState::ForbidWrites(SlotRange range) {
  std::unique_lock lock(mu_);
  forbidden_ = range;
}

std::vector<SlotRange> ClusterState::FinishMigration(bool success) {
  std::unique_lock lock(mu_);
  migration_.state = success ? MigrationState::kSuccess : MigrationState::kFail;
  forbidden_.reset();
  if (!success) return {};
  // A slot a topology switched before this end is given away already: a redirect kept for it
  // would outlive a later topology giving it back (MOVED to a node that does not own it).
  std::vector<SlotRange> gone;
  const ClusterNode* myself = Myself();
  for (int s = migration_.range->first; s <= migration_.range->last; ++s) {
    if (topology_ && topology_->OwnerOf(s) != myself) {
      AppendSlot(&gone, s);
      continue;
    }
    migrated_[s] = migration_.destination_id;
  }
  return gone;
}

bool ClusterState::AnyMigrated(SlotRange range) const {
  std::shared_lock lock(mu_);
  auto it = migrated_.lower_bound(range.first);
  return it != migrated_.end() && it->first <= range.last;
}

MigrationInfo ClusterState::Migration() const {
  std::shared_lock lock(mu_);
  return migration_;
}

std::optional<std::string> ClusterState::SetImport(SlotRange range, ImportState state,
                                                   uint64_t link) {
  std::unique_lock lock(mu_);
  if (state == ImportState::kStart) {
    if (import_.state == ImportState::kStart && import_.range != range) {
      return "ERR only one importing job is allowed, current importing: " +
             import_.range->ToString();
    }
    import_ = {ImportState::kStart, range, link};
    return std::nullopt;
  }
  if (import_.state != ImportState::kStart || import_.range != range) {
    return "ERR mismatch slot, importing slot(s): " +
           (import_.range ? import_.range->ToString() : std::string("-1")) +
           ", but got: " + range.ToString();
  }
  import_.state = state;
  if (state == ImportState::kSuccess) {
    for (int s = range.first; s <= range.last; ++s) imported_.insert(s);
  }
  return std::nullopt;
}

std::vector<SlotRange> ClusterState::TakeGivenAwayRanges() {
  std::unique_lock lock(mu_);
  return std::exchange(given_away_, {});
}

std::optional<SlotRange> ClusterState::ImportLinkClosed(uint64_t link) {
  std::unique_lock lock(mu_);
  if (import_.state != ImportState::kStart || import_.link != link) return std::nullopt;
  import_.state = ImportState::kError;
  return import_.range;
}

ImportInfo ClusterState::Import() const {
  std::shared_lock lock(mu_);
  return import_;
}

}  // namespace larder::server::cluster
