// Disk budget, eviction (generation drop with reinsertion), expiry maintenance, Clear, Stats.
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/transaction_log.h>

#include <algorithm>

#include "format.h"
#include "store_impl.h"

namespace larder {

uint64_t StoreImpl::BudgetUsage() const {
  const uint64_t pending = wbm_->memory_usage();
  return sfm_->GetTotalSize() + pending * (options_.wal ? 2 : 1);
}

Status StoreImpl::MakeRoom(uint64_t incoming) {
  if (incoming > budget_) {
    return Status::NoSpace("a value of " + std::to_string(incoming) +
                           " bytes cannot fit in max-disk-bytes (" + std::to_string(budget_) + ")");
  }
  if (BudgetUsage() + incoming <= budget_) return Status::OK();
  if (options_.eviction_policy == EvictionPolicy::kNone) {
    return Status::NoSpace("max-disk-bytes (" + std::to_string(budget_) +
                           ") reached and eviction-policy is none");
  }
  std::lock_guard lock(evict_mu_);
  EvictUntil(budget_, incoming, options_.eviction_policy);
  return Status::OK();
}

void StoreImpl::EvictUntil(uint64_t target, uint64_t incoming, EvictionPolicy policy) {
  uint64_t estimate = BudgetUsage();
  while (estimate + incoming > target) {
    uint64_t freed = EvictOldest(policy);
    if (freed == 0) break;
    estimate = std::min(BudgetUsage(), estimate - std::min(estimate, freed));
  }
}

Status StoreImpl::EvictTo(uint64_t target_bytes) {
  if (Status s = CheckOpen(); !s.ok()) return s;
  EvictionPolicy p = options_.eviction_policy;
  if (p == EvictionPolicy::kNone) p = EvictionPolicy::kFifo;
  std::lock_guard lock(evict_mu_);
  EvictUntil(target_bytes, 0, p);
  return Status::OK();
}

void StoreImpl::MaybeRotate() {
  std::lock_guard lock(rotate_mu_);
  GenerationPtr head = gens_->Head();
  // A failed rotation leaves the head in place: writes keep going there and the next one
  // retries.
  if (head->bytes >= generation_bytes_ && !gens_->Rotate(Now()).ok()) return;
}

bool StoreImpl::Reinsert(const std::string& key, const Entry& e) {
  const uint64_t hash = KeyHash(key);
  std::lock_guard stripe(Stripe(hash));
  std::optional<Entry> cur = index_.Find(hash, key);
  if (!cur || !cur->SameVersion(e)) return true;
  Result<Value> v = ReadVerified(hash, key, *cur, /*count_and_remove=*/false);
  if (!v.ok()) {
    if (v.status().IsCorruption()) counters_.corruptions++;
    return false;
  }
  Entry moved = *cur;
  moved.reuse_count = 0;  // it must be reused again to be kept again
  moved.dirty = false;
  // No `old`: the copy left behind goes with its generation, so no tombstone is written.
  if (!WriteToHead(key, v->view(), &moved, std::nullopt).ok()) return false;
  index_.Upsert(hash, key, moved);
  counters_.reinserted_keys++;
  counters_.reinserted_bytes += v->size();
  return true;
}

uint64_t StoreImpl::EvictOldest(EvictionPolicy policy) {
  std::vector<GenerationPtr> all = gens_->All();
  if (all.size() == 1) {
    if (all[0]->bytes == 0) return 0;  // nothing but an empty head
    std::lock_guard lock(rotate_mu_);
    if (!gens_->Rotate(Now()).ok()) return 0;
    all = gens_->All();
  }
  GenerationPtr victim = all[0];
  const int64_t next_start = all[1]->start_ms;
  const int64_t now = Now();

  using Member = std::pair<std::string, Entry>;
  std::vector<Member> keep, drop;
  index_.ForEach([&](const std::string& k, Entry& e) {
    if (e.generation != victim->id) return;
    bool kept = false;
    if (!e.ExpiredAt(now)) {
      if (policy == EvictionPolicy::kLruReuse) kept = e.reuse_count > 0;
      if (policy == EvictionPolicy::kLru)
        kept = e.last_access_ms >= next_start && e.reuse_count > 0;
    }
    (kept ? keep : drop).emplace_back(k, e);
  });

  // Most recently used first, up to the reinsertion cap; the rest is dropped.
  std::sort(keep.begin(), keep.end(), [](const Member& a, const Member& b) {
    return a.second.last_access_ms > b.second.last_access_ms;
  });
  const uint64_t cap = static_cast<uint64_t>(options_.max_reinsert_fraction * victim->bytes);
  uint64_t reinserted = 0;
  for (Member& m : keep) {
    if (reinserted + m.second.value_size <= cap && Reinsert(m.first, m.second)) {
      reinserted += m.second.value_size;
    } else {
      drop.push_back(std::move(m));
    }
  }

  rocksdb::WriteBatch batch;
  for (const auto& [key, e] : drop) {
    const uint64_t hash = KeyHash(key);
    std::lock_guard stripe(Stripe(hash));
    if (!index_.EraseIf(hash, key, victim->id, e.checksum)) continue;
    batch.Delete(meta_cf_, key);
    if (e.ExpiredAt(now)) {
      counters_.expired_keys++;
    } else {
      counters_.evicted_keys++;
      counters_.evicted_bytes += e.value_size;
    }
  }
  if (batch.Count() > 0) db_->Write(WriteOpts(), &batch);
  EvictCompanions(drop, victim->id);
  if (!gens_->Drop(victim->id).ok()) return 0;
  const uint64_t bytes = victim->bytes;
  return std::max<uint64_t>(1, bytes - std::min(bytes, reinserted));
}

void StoreImpl::EvictCompanions(const std::vector<std::pair<std::string, Entry>>& evicted,
                                uint64_t victim_id) {
  for (const auto& [key, e] : evicted) {
    for (const auto& [first, second] : options_.evict_together) {
      if (key.size() < first.size() ||
          key.compare(key.size() - first.size(), first.size(), first) != 0) {
        continue;
      }
      std::string companion = key.substr(0, key.size() - first.size()) + second;
      const uint64_t hash = KeyHash(companion);
      std::lock_guard stripe(Stripe(hash));
      std::optional<Entry> c = index_.Find(hash, companion);
      if (!c || c->generation == victim_id) continue;  // absent, or goes with the generation
      RemoveLocked(hash, companion, *c);
      counters_.evicted_keys++;
      counters_.evicted_bytes += c->value_size;
    }
  }
}

void StoreImpl::Maintain() {
  if (closed_) return;
  const int64_t now = Now();
  std::vector<std::string> expired;
  std::vector<std::pair<std::string, Entry>> dirty;
  std::map<uint64_t, uint64_t> live;
  index_.ForEach([&](const std::string& k, Entry& e) {
    if (e.ExpiredAt(now)) {
      expired.push_back(k);
      return;
    }
    live[e.generation]++;
    if (e.dirty) dirty.emplace_back(k, e);
  });
  for (const std::string& k : expired) LiveEntry(KeyHash(k), k);  // removes it if still expired
  // Generations with nothing live left (expired, overwritten, deleted) go now, whole.
  {
    std::lock_guard lock(evict_mu_);
    std::vector<GenerationPtr> all = gens_->All();
    for (size_t i = 0; i + 1 < all.size(); ++i) {
      // A drop that fails leaves the generation for the next pass.
      if (live.count(all[i]->id) == 0 && !gens_->Drop(all[i]->id).ok()) break;
    }
  }
  PersistEntries(dirty);
}

void StoreImpl::MaintenanceLoop() {
  std::unique_lock lock(maint_mu_);
  while (!stop_maintenance_) {
    maint_cv_.wait_for(lock, std::chrono::milliseconds(options_.maintenance_interval_ms));
    if (stop_maintenance_) break;
    lock.unlock();
    Maintain();
    lock.lock();
  }
}

Status StoreImpl::Clear() {
  if (Status s = CheckOpen(); !s.ok()) return s;
  std::lock_guard lock(evict_mu_);
  uint64_t head_id;
  {
    std::lock_guard rl(rotate_mu_);
    if (Status s = gens_->Rotate(Now()); !s.ok()) return s;
    head_id = gens_->Head()->id;
  }
  index_.RemoveIf([&](const std::string&, const Entry& e) { return e.generation < head_id; });
  rocksdb::WriteBatch batch;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto m = format::MetaRecord::Decode(it->value().ToStringView());
    if (!m || m->generation < head_id) batch.Delete(meta_cf_, it->key());
  }
  it.reset();
  if (batch.Count() > 0) db_->Write(WriteOpts(), &batch);
  for (GenerationPtr& g : gens_->All()) {
    if (g->id >= head_id) continue;
    if (Status s = gens_->Drop(g->id); !s.ok()) return s;
  }
  return Status::OK();
}

Stats StoreImpl::GetStats() {
  Stats st;
  if (closed_) return st;
  const int64_t now = Now();
  index_.ForEach([&](const std::string&, Entry& e) {
    if (e.ExpiredAt(now)) return;
    st.keys++;
    st.live_bytes += e.value_size;
  });
  uint64_t wal = 0;
  rocksdb::VectorLogPtr logs;
  if (db_->GetSortedWalFiles(logs).ok()) {
    for (auto& l : logs) wal += l->SizeFileBytes();
  }
  st.disk_bytes = sfm_->GetTotalSize() + wal;
  st.pending_bytes = wbm_->memory_usage();
  st.max_disk_bytes = budget_;
  st.generations = gens_->size();
#define LARDER_COPY_COUNTER(name, doc) st.name = counters_.name.load();
  LARDER_STAT_COUNTERS(LARDER_COPY_COUNTER)
#undef LARDER_COPY_COUNTER
  return st;
}

void StoreImpl::ResetCounters() {
#define LARDER_RESET_COUNTER(name, doc) counters_.name.store(0);
  LARDER_STAT_COUNTERS(LARDER_RESET_COUNTER)
#undef LARDER_RESET_COUNTER
}

VerifyReport StoreImpl::VerifyAll(void (*progress)(uint64_t, uint64_t, void*), void* arg) {
  VerifyReport r;
  r.corrupt = open_corrupt_ + open_damaged_;
  r.missing = open_orphans_;
  std::vector<std::pair<std::string, Entry>> all;
  index_.ForEach([&](const std::string& k, Entry& e) { all.emplace_back(k, e); });
  r.entries = all.size() + open_corrupt_ + open_orphans_ + open_damaged_;
  r.corrupt_sst_files = damaged_sst_files_.size();
  for (const std::string& f : damaged_sst_files_) {
    r.problems.push_back(f + ": failed its block checksums at open; generation dropped");
  }
  if (open_damaged_)
    r.problems.push_back(std::to_string(open_damaged_) +
                         " entries lost with the generations dropped for a damaged SST file");
  for (const std::string& k : damaged_keys_) {
    r.problems.push_back(k + ": lost with its generation (damaged SST file)");
  }
  if (open_corrupt_)
    r.problems.push_back(std::to_string(open_corrupt_) + " unreadable metadata records");
  if (open_orphans_)
    r.problems.push_back(std::to_string(open_orphans_) +
                         " metadata records without their generation");
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& [k, e] = all[i];
    Result<Value> v = ReadVerified(KeyHash(k), k, e, /*count_and_remove=*/false,
                                   /*rocksdb_checksums=*/true);
    if (v.ok()) {
      r.ok++;
    } else {
      (v.status().message() == kValueMissing ? r.missing : r.corrupt)++;
      if (r.problems.size() < 1000) {
        r.problems.push_back("generation " + std::to_string(e.generation) + " key '" + k +
                             "': " + v.status().message());
      }
    }
    if (progress && (i % 64 == 0 || i + 1 == all.size())) progress(i + 1, all.size(), arg);
  }
  VerifySstFiles(&r);
  return r;
}

void StoreImpl::VerifySstFiles(VerifyReport* r) {
  std::vector<rocksdb::LiveFileMetaData> files;
  db_->GetLiveFilesMetaData(&files);
  rocksdb::Options opts(db_->GetDBOptions(), rocksdb::ColumnFamilyOptions());
  for (const auto& f : files) {
    r->sst_files++;
    const std::string path = f.directory + "/" + f.relative_filename;
    rocksdb::SstFileReader reader(opts);
    rocksdb::Status s = reader.Open(path);
    if (s.ok()) s = reader.VerifyChecksum();
    if (s.ok()) continue;
    r->corrupt_sst_files++;
    if (r->problems.size() < 1000) {
      r->problems.push_back("file " + path + " (column family " + f.column_family_name +
                            "): " + s.ToString());
    }
  }
}

Result<VerifyReport> Verify(const std::string& dir, void (*progress)(uint64_t, uint64_t, void*),
                            void* arg) {
  Options o;
  o.create_if_missing = false;
  o.maintenance_interval_ms = 0;
  o.max_disk_bytes = ~0ull >> 2;
  StoreImpl store(o, dir);
  if (Status s = store.OpenDb(); !s.ok()) return s;
  return store.VerifyAll(progress, arg);
}

}  // namespace larder
