#include "generations.h"

#include <algorithm>

#include "format.h"
#include "rocks_status.h"
#include "sync_point.h"

namespace larder {

Generations::WriteTicket::~WriteTicket() {
  if (!gen_) return;
  {
    std::lock_guard lock(gen_->mu);
    gen_->writers--;
  }
  gen_->idle_cv.notify_all();
}

uint32_t Generation::SegFor(uint64_t file_gen, uint16_t partition) const {
  std::lock_guard lock(mu);
  return SegForLocked(file_gen, partition);
}

uint32_t Generation::SegForLocked(uint64_t file_gen, uint16_t partition) const {
  if (file_gen == id) return partition < file_segs.size() ? file_segs[partition] : 0;
  auto it = borrowed.find({file_gen, partition});
  return it == borrowed.end() ? 0 : it->second.seg;
}

Generations::Lease::Lease(Lease&& o) noexcept
    : gen_(std::move(o.gen_)), partition_(o.partition_), file_(std::move(o.file_)), seg_(o.seg_) {}

Generations::Lease::~Lease() {
  if (!gen_) return;
  {
    std::lock_guard lock(gen_->mu);
    gen_->idle.push_back(partition_);
  }
  gen_->idle_cv.notify_all();
}

Generations::Generations(rocksdb::DB* db, IndexErrors* errors,
                         rocksdb::ColumnFamilyOptions cf_options, std::string values_dir,
                         bool durable_files, uint16_t spread_partitions)
    : db_(db),
      errors_(errors),
      cf_options_(std::move(cf_options)),
      values_dir_(std::move(values_dir)),
      durable_files_(durable_files),
      spread_partitions_(std::clamp<uint16_t>(spread_partitions, 1, kMaxPartitions)),
      segs_(1) {}

uint32_t Generations::AllocSegLocked(Segment s) {
  if (!free_segs_.empty()) {
    uint32_t id = free_segs_.back();
    free_segs_.pop_back();
    segs_[id] = std::move(s);
    return id;
  }
  segs_.push_back(std::move(s));
  return static_cast<uint32_t>(segs_.size() - 1);
}

GenerationPtr Generations::Adopt(uint64_t id, rocksdb::ColumnFamilyHandle* cf) {
  auto g = std::make_shared<Generation>(db_, cf, id, 0);
  std::unique_lock lock(mu_);
  g->inline_seg = AllocSegLocked(Segment{g, nullptr, 0});
  gens_[id] = g;
  head_id_ = gens_.rbegin()->first;
  return g;
}

void Generations::AttachFile(Generation& g, BlobFilePtr file) {
  const uint16_t part = file->header().partition;
  file_bytes_ += file->accounted();
  g.bytes += file->disk_bytes();
  uint32_t seg;
  {
    std::unique_lock lock(mu_);
    seg = AllocSegLocked(Segment{gens_.at(g.id), file, part});
    holders_[file.get()] = 1;
  }
  std::lock_guard lock(g.mu);
  if (g.files.size() <= part) {
    g.files.resize(part + 1);
    g.file_segs.resize(part + 1);
  }
  g.files[part] = std::move(file);
  g.file_segs[part] = seg;
  // A file from before the open takes no more writes: new ones go to a fresh head.
}

void Generations::AdoptOrphan(BlobFilePtr file) {
  file_bytes_ += file->accounted();
  std::unique_lock lock(mu_);
  const format::BlobFileHeader& h = file->header();
  orphans_[{h.generation, h.partition}] = std::move(file);
}

std::vector<BlobFilePtr> Generations::DropUnheldOrphans() {
  std::vector<BlobFilePtr> unheld, held;
  {
    std::unique_lock lock(mu_);
    for (auto& [name, f] : orphans_) {
      (holders_.count(f.get()) ? held : unheld).push_back(std::move(f));
    }
    orphans_.clear();
  }
  for (const BlobFilePtr& f : unheld) {
    SubFileBytes(f->accounted());
    f->MarkDeleted();
  }
  return held;
}

BlobFilePtr Generations::FileOf(uint64_t gen, uint16_t partition) const {
  GenerationPtr g;
  {
    std::shared_lock lock(mu_);
    auto orphan = orphans_.find({gen, partition});
    if (orphan != orphans_.end()) return orphan->second;
    auto it = gens_.find(gen);
    if (it == gens_.end()) return nullptr;
    g = it->second;
  }
  std::lock_guard lock(g->mu);
  return partition < g->files.size() ? g->files[partition] : nullptr;
}

uint32_t Generations::Borrow(Generation& g, const BlobFilePtr& file) {
  const std::pair<uint64_t, uint16_t> name{file->header().generation, file->header().partition};
  std::lock_guard glock(g.mu);  // g.mu before mu_, as LeasePartition takes them
  uint32_t seg = g.SegForLocked(name.first, name.second);
  if (seg != 0 || name.first == g.id) return seg;
  {
    std::unique_lock lock(mu_);
    seg = AllocSegLocked(Segment{gens_.at(g.id), file, name.second});
    holders_[file.get()]++;
  }
  g.borrowed[name] = Generation::Borrowed{file, seg};
  return seg;
}

void Generations::SubFileBytes(uint64_t n) {
  file_bytes_ -= std::min(file_bytes_.load(), n);
}

void Generations::Punch(const Generation::Extent& e) {
  SubFileBytes(e.file->Punch(e.offset, e.size));
}

void Generations::PunchAllBut(BlobFile& file, std::vector<std::pair<uint64_t, uint64_t>> live) {
  SubFileBytes(file.PunchAllBut(std::move(live)));
}

bool Generations::IsBorrowed(const BlobFile& file) const {
  std::shared_lock lock(mu_);
  auto it = holders_.find(&file);
  return it != holders_.end() && it->second > 1;
}

std::unordered_map<uint32_t, BlobFilePtr> Generations::SegmentsWhere(
    const std::function<bool(const Segment&)>& pred) const {
  std::unordered_map<uint32_t, BlobFilePtr> out;
  std::shared_lock lock(mu_);
  for (uint32_t id = 1; id < segs_.size(); ++id) {
    const Segment& s = segs_[id];
    if (s.file && pred(s)) out.emplace(id, s.file);
  }
  return out;
}

std::unordered_map<uint32_t, BlobFilePtr> Generations::BorrowedSegmentsOf(
    const Generation& owner) const {
  return SegmentsWhere([&](const Segment& s) {
    return s.gen.get() != &owner && s.file->header().generation == owner.id;
  });
}

std::unordered_map<uint32_t, BlobFilePtr> Generations::SegmentsOf(
    const std::vector<BlobFilePtr>& files) const {
  return SegmentsWhere([&](const Segment& s) {
    return std::find(files.begin(), files.end(), s.file) != files.end();
  });
}

Generations::Segment Generations::SegmentOf(uint32_t seg) const {
  std::shared_lock lock(mu_);
  return seg < segs_.size() ? segs_[seg] : Segment{};
}

GenerationPtr Generations::Find(uint64_t id) const {
  std::shared_lock lock(mu_);
  auto it = gens_.find(id);
  return it == gens_.end() ? nullptr : it->second;
}

GenerationPtr Generations::Head() const {
  std::shared_lock lock(mu_);
  return gens_.empty() ? nullptr : gens_.rbegin()->second;
}

std::vector<GenerationPtr> Generations::All() const {
  std::shared_lock lock(mu_);
  std::vector<GenerationPtr> out;
  out.reserve(gens_.size());
  for (auto& [id, g] : gens_) out.push_back(g);
  return out;
}

size_t Generations::size() const {
  std::shared_lock lock(mu_);
  return gens_.size();
}

Result<Generations::WriteTicket> Generations::BeginWrite() const {
  std::shared_lock lock(mu_);
  if (gens_.empty()) return Status::IOError("store is closed");
  GenerationPtr head = gens_.rbegin()->second;
  head->writers++;  // under mu_: a rotation and the head's retirement cannot pass between
  return WriteTicket(std::move(head));
}

std::optional<Generations::WriteTicket> Generations::Rejoin(const GenerationPtr& g) const {
  std::lock_guard lock(g->mu);  // Retire marks it under g->mu before it waits for the writers
  if (g->retired.load()) return std::nullopt;
  g->writers++;
  return WriteTicket(g);
}

Status Generations::CreatePartitionLocked(Generation& g, int64_t now_ms) {
  format::BlobFileHeader h;
  h.generation = g.id;
  h.partition = static_cast<uint16_t>(g.files.size());
  h.created_ms = now_ms;
  auto f = BlobFile::Create(values_dir_ + "/" + format::BlobFileName(g.id, h.partition), h,
                            durable_files_);
  if (!f.ok()) return f.status();
  uint32_t seg;
  {
    std::unique_lock lock(mu_);
    seg = AllocSegLocked(Segment{gens_.at(g.id), *f, h.partition});
    holders_[f->get()] = 1;
  }
  file_bytes_ += (*f)->disk_bytes();
  g.bytes += (*f)->disk_bytes();
  g.files.push_back(std::move(f).value());
  g.file_segs.push_back(seg);
  g.idle.push_back(h.partition);
  return Status::OK();
}

Result<Generations::Lease> Generations::LeasePartition(const WriteTicket& t, int64_t now_ms) {
  Generation& g = t.gen();
  std::unique_lock lock(g.mu);
  if (g.files.size() < spread_partitions_) {
    if (Status s = CreatePartitionLocked(g, now_ms); !s.ok()) return s;
  }
  for (;;) {
    while (g.idle.empty()) {
      if (g.files.size() < kMaxPartitions) {
        if (Status s = CreatePartitionLocked(g, now_ms); !s.ok()) return s;
        break;
      }
      if (g.failed_partitions == g.files.size()) {
        return Status::IOError("every blob file of generation " + std::to_string(g.id) +
                               " failed to sync; writes fail until it is no longer the head");
      }
      g.idle_cv.wait(lock);
    }
    // The longest idle: released partitions go to the back, so writers take the files in turn.
    uint16_t part = g.idle.front();
    g.idle.erase(g.idle.begin());
    if (!g.files[part]->SyncFailed()) return Lease(t.ptr(), part, g.files[part], g.file_segs[part]);
    g.failed_partitions++;  // it lost pages: it takes no more writes, never idle again
  }
}

Result<std::pair<uint64_t, rocksdb::ColumnFamilyHandle*>> Generations::CreateNextLocked() {
  uint64_t id = 1;
  if (!spares_.empty()) {
    id = spares_.back().first + 1;
  } else {
    std::shared_lock lock(mu_);
    if (!gens_.empty()) id = gens_.rbegin()->first + 1;
  }
  // Without mu_: creating a column family waits out a write stall, which only a flush ends,
  // and a flush first syncs the blob files (SyncAll takes mu_); reads take it too.
  testing::SyncPoint("Generations::CreateNextLocked");
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  const IndexErrors::Admitted admitted(errors_);  // a creation may start a flush
  rocksdb::Status s = admitted.refusal();
  if (s.ok()) s = db_->CreateColumnFamily(cf_options_, format::IndexCfName(id), &cf);
  if (!s.ok()) return FromRocks(s, "creating generation " + std::to_string(id));
  return std::make_pair(id, cf);
}

Status Generations::PrepareSpares(size_t n) {
  for (;;) {
    // One creation per hold of spare_mu_: a Rotate waits for one at most.
    std::lock_guard spare(spare_mu_);
    if (spares_.size() >= n) return Status::OK();
    auto made = CreateNextLocked();
    if (!made.ok()) return made.status();
    spares_.push_back(*made);
  }
}

Status Generations::Rotate(int64_t now_ms) {
  std::pair<uint64_t, rocksdb::ColumnFamilyHandle*> next;
  {
    std::lock_guard spare(spare_mu_);
    if (!spares_.empty()) {
      next = spares_.front();
      spares_.pop_front();
    } else {
      auto made = CreateNextLocked();
      if (!made.ok()) return made.status();
      next = *made;
    }
  }
  const auto [id, cf] = next;
  auto g = std::make_shared<Generation>(db_, cf, id, now_ms);
  std::unique_lock lock(mu_);
  g->inline_seg = AllocSegLocked(Segment{g, nullptr, 0});
  gens_[id] = std::move(g);
  head_id_ = id;
  return Status::OK();
}

void Generations::Retire(Generation& g) {
  std::unique_lock lock(g.mu);
  g.retired = true;
  g.idle_cv.wait(lock, [&] { return g.writers.load() == 0; });
}

Status Generations::DropIndex(const GenerationPtr& g) {
  rocksdb::Status rs = db_->DropColumnFamily(g->cf);
  if (rs.ok()) return Status::OK();
  g->retired = false;
  return FromRocks(rs, "dropping generation " + std::to_string(g->id));
}

void Generations::Release(const GenerationPtr& g, bool unlink_files) {
  std::vector<BlobFilePtr> files;
  std::vector<uint32_t> segs{g->inline_seg};
  {
    std::lock_guard glock(g->mu);
    files = g->files;
    segs.insert(segs.end(), g->file_segs.begin(), g->file_segs.end());
    for (const auto& [name, b] : g->borrowed) {
      files.push_back(b.file);
      segs.push_back(b.seg);
    }
  }
  std::vector<BlobFilePtr> unheld;
  {
    std::unique_lock lock(mu_);
    gens_.erase(g->id);
    for (uint32_t seg : segs) {
      segs_[seg] = Segment{};
      free_segs_.push_back(seg);
    }
    for (BlobFilePtr& f : files) {
      if (!f) continue;
      auto it = holders_.find(f.get());
      if (it != holders_.end() && --it->second > 0) continue;
      if (it != holders_.end()) holders_.erase(it);
      unheld.push_back(std::move(f));
    }
  }
  g->dropped = true;
  if (!unlink_files) return;  // they stay on disk, and in FileBytes
  for (const BlobFilePtr& f : unheld) {
    SubFileBytes(f->accounted());
    f->MarkDeleted();
  }
}

Status Generations::ForEachFile(const std::function<Status(BlobFile&)>& fn) const {
  for (const GenerationPtr& g : All()) {
    std::vector<BlobFilePtr> files;
    {
      std::lock_guard lock(g->mu);
      files = g->files;
      for (const auto& [name, b] : g->borrowed) files.push_back(b.file);
    }
    for (const BlobFilePtr& f : files) {
      if (!f) continue;
      if (Status s = fn(*f); !s.ok()) return s;
    }
  }
  return Status::OK();
}

Status Generations::SyncAll() const {
  // Every file, whatever one of them answers (one whose sync failed keeps failing): the first
  // error is returned.
  Status first;
  Status walked = ForEachFile([&](BlobFile& f) {
    if (!f.NeedsSync()) return Status::OK();
    if (Status s = f.Sync(); !s.ok() && first.ok()) first = std::move(s);
    return Status::OK();
  });
  walked.PermitUncheckedError();  // the function above never fails
  return first;
}

void Generations::ReleaseAll() {
  {
    std::lock_guard spare(spare_mu_);
    for (auto& [id, cf] : spares_) {
      // Nothing was written to it; a failed drop leaves an empty generation to the next open.
      db_->DropColumnFamily(cf).PermitUncheckedError();
      db_->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
    }
    spares_.clear();
  }
  std::unique_lock lock(mu_);
  gens_.clear();
  segs_.assign(1, Segment{});
  free_segs_.clear();
  holders_.clear();
  orphans_.clear();
}

}  // namespace larder
