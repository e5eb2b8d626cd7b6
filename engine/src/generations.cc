#include "generations.h"

#include <mutex>

#include "format.h"

namespace larder {

void Generations::Adopt(GenerationPtr g) {
  std::unique_lock lock(mu_);
  gens_[g->id] = std::move(g);
}

GenerationPtr Generations::Find(uint64_t id) const {
  std::shared_lock lock(mu_);
  auto it = gens_.find(id);
  return it == gens_.end() ? nullptr : it->second;
}

GenerationPtr Generations::Head() const {
  std::shared_lock lock(mu_);
  return HeadLocked();
}

GenerationPtr Generations::Oldest() const {
  std::shared_lock lock(mu_);
  return gens_.empty() ? nullptr : gens_.begin()->second;
}

GenerationPtr Generations::Next(uint64_t id) const {
  std::shared_lock lock(mu_);
  auto it = gens_.upper_bound(id);
  return it == gens_.end() ? nullptr : it->second;
}

std::vector<GenerationPtr> Generations::All() const {
  std::shared_lock lock(mu_);
  std::vector<GenerationPtr> out;
  for (auto& [id, g] : gens_) out.push_back(g);
  return out;
}

size_t Generations::size() const {
  std::shared_lock lock(mu_);
  return gens_.size();
}

Status Generations::CreateLocked(uint64_t id, int64_t now_ms) {
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  rocksdb::Status s = db_->CreateColumnFamily(cf_options_, format::GenerationCfName(id), &cf);
  if (!s.ok())
    return Status::IOError("creating generation " + std::to_string(id) + ": " + s.ToString());
  gens_[id] = std::make_shared<Generation>(db_, cf, id, now_ms);
  return Status::OK();
}

Status Generations::Rotate(int64_t now_ms) {
  std::unique_lock lock(mu_);
  uint64_t next = gens_.empty() ? 1 : gens_.rbegin()->first + 1;
  return CreateLocked(next, now_ms);
}

Status Generations::Drop(uint64_t id, bool allow_head) {
  GenerationPtr victim;
  {
    std::unique_lock lock(mu_);
    auto it = gens_.find(id);
    if (it == gens_.end()) return Status::OK();
    if (!allow_head && std::next(it) == gens_.end()) {
      return Status::InvalidArgument("cannot drop the head generation");
    }
    rocksdb::Status s = db_->DropColumnFamily(it->second->cf);
    if (!s.ok())
      return Status::IOError("dropping generation " + std::to_string(id) + ": " + s.ToString());
    it->second->dropped = true;
    victim = std::move(it->second);
    gens_.erase(it);
  }
  // `victim` is released here, outside the lock; readers still holding it keep the files alive
  // until they finish.
  return Status::OK();
}

void Generations::ReleaseAll() {
  std::unique_lock lock(mu_);
  gens_.clear();
}

}  // namespace larder
