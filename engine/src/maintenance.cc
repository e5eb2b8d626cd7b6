// Walking a generation's records, and the background work: expiry, dropping generations with
// nothing live left, persisting reuse counts, Clear, Flush, Compact, statistics.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "format.h"
#include "rocks_status.h"
#include "store_impl.h"
#include "sync_point.h"

namespace larder {

void StoreImpl::ForEachRecord(const Generation& g, const std::function<void(RecordMember)>& fn) {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, g.cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto ik = format::ParseIndexKey(it->key().ToStringView());
    auto rec = format::IndexRecord::Decode(it->value().ToStringView());
    if (!ik || !rec) continue;
    const uint32_t seg = rec->is_inline ? g.inline_seg : g.SegFor(rec->generation, rec->partition);
    const uint64_t offset = rec->is_inline ? 0 : rec->offset;
    const uint64_t check = rec->value_hash ^ format::KeyTag(ik->second);
    std::optional<Located> at;
    index_.ForHash(ik->first, [&](const Entry& e) {
      if (e.seg != seg || e.offset != offset || e.check != check) return false;
      at = Locate(e);
      return true;
    });
    if (!seg || !at) continue;
    RecordMember m;
    m.key.assign(ik->second);
    m.hash = ik->first;
    m.at = std::move(*at);
    fn(std::move(m));
  }
}

Status StoreImpl::DropGeneration(const GenerationPtr& g,
                                 const std::function<void()>& remove_entries) {
  // The drop of its column family is durable at once. Unless every write is synced, the records
  // moved out of it (entries eviction kept, in place or copied) may still be only in the
  // memtables and an unsynced WAL, and copied values only in the page cache: they reach disk
  // first (the flush syncs the blob files), or a power cut would lose entries that were
  // durable before the move.
  // A blob file whose sync failed (it keeps failing, and was reported) must not stop every drop,
  // and eviction with it: the records are flushed all the same, as RocksDB's own flushes do.
  if (!(options_.wal && options_.sync_writes) && !options_.read_only) {
    if (Status s = FlushIndex(/*values_must_sync=*/false); !s.ok()) return s;
  }
  if (Status s = gens_->DropIndex(g); !s.ok()) return s;
  remove_entries();
  if (g->live.load() > 0) {
    // Entries without a matching record (not expected): they must not outlive their segment.
    index_.ForEach([&](Entry& e) { return gens_->SegmentOf(e.seg).gen != g; });
    g->live = 0;
  }
  gens_->Release(g);
  return Status::OK();
}

StoreImpl::ExpiredFound StoreImpl::RemoveExpiredIn(size_t first_shard, size_t shards) {
  const int64_t now = NowMs();
  std::vector<Entry> expired;
  size_t looked_at = 0;
  index_.ForEachInShards(first_shard, shards, [&](Entry& e) {
    ++looked_at;
    if (e.ExpiredAt(now)) expired.push_back(e);
    return true;
  });
  for (const Entry& e : expired) RemoveExpired(e);
  return {looked_at, expired.size()};
}

size_t StoreImpl::ExpiryPass(size_t first_shard) {
  ExpiredFound pass;
  size_t shard = first_shard;
  for (size_t n = 0; n < KeyIndex::kShards; ++n) {
    if (n >= kExpiryMinShardsPerPass && pass.looked_at >= kExpiryEntriesPerPass) break;
    if (pass.expired >= kExpiryRemovalsPerPass) break;  // the next pass goes on from here
    const ExpiredFound in_shard = RemoveExpiredIn(shard, 1);
    pass.looked_at += in_shard.looked_at;
    pass.expired += in_shard.expired;
    shard = (shard + 1) % KeyIndex::kShards;
  }
  return shard;
}

void StoreImpl::DropEmptyGenerations() {
  std::vector<GenerationPtr> all = gens_->All();
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    GenerationPtr& g = all[i];
    if (!g->HoldsNothing()) continue;
    gens_->Retire(*g);  // a write pinned to it before it stopped being the head may land
    if (!g->HoldsNothing()) {
      g->retired = false;
      continue;
    }
    // A drop that fails leaves the generation for the next pass. Its files that newer
    // generations' entries still point into lose every other range now, as in a whole drop.
    if (!DropGeneration(g, [&] { PunchAroundLive(gens_->BorrowedSegmentsOf(*g)); }).ok()) break;
  }
}

void StoreImpl::ResumeIndexAndDropEmpty() {
  std::lock_guard lock(evict_mu_);
  ResumeIndex().PermitUncheckedError();  // while the disk is full: at the next call
  DropEmptyGenerations();
}

void StoreImpl::Maintain() {
  if (closed_ || options_.read_only) return;
  RemoveExpiredIn(0, KeyIndex::kShards);
  ResumeIndexAndDropEmpty();
}

void StoreImpl::PrepareSpareGenerations() {
  // As many as a burst of writes the size of the write-behind (or one large MSET) closes,
  // up to 8: with 32 MiB generations (a 1 GB budget) a 128 MiB MSET closes four heads, and
  // creating each one's column family syncs the MANIFEST.
  const uint64_t n = std::clamp<uint64_t>(kSpareGenerationBytes / generation_bytes_, 1, 8);
  // A failure (a full disk) leaves it to the next Rotate, which reports it to its writer.
  gens_->PrepareSpares(n).PermitUncheckedError();
  testing::SyncPoint("StoreImpl::PrepareSpareGenerations:Done");
}

void StoreImpl::MaintenanceLoop() {
  constexpr auto kFailedWriteRetry = std::chrono::seconds(1);  // without periodic passes
  const bool periodic = options_.maintenance_interval_ms > 0;
  const auto interval = std::chrono::milliseconds(options_.maintenance_interval_ms);
  auto next_pass = std::chrono::steady_clock::now() + interval;
  size_t cursor = 0;
  std::vector<FailedWrite> failed;  // removals to do, or to try again at the next pass
  std::unique_lock lock(maint_mu_);
  for (;;) {
    auto woken = [&] { return stop_maintenance_ || !failed_writes_.empty() || spares_wanted_; };
    if (periodic) {
      maint_cv_.wait_until(lock, next_pass, woken);
    } else if (!failed.empty()) {
      maint_cv_.wait_for(lock, kFailedWriteRetry, woken);  // removals that failed: again soon
    } else {
      maint_cv_.wait(lock, woken);
    }
    if (stop_maintenance_) break;
    for (FailedWrite& f : failed_writes_) failed.push_back(std::move(f));
    failed_writes_.clear();
    const bool spares = std::exchange(spares_wanted_, false);
    lock.unlock();
    if (spares) PrepareSpareGenerations();
    if (!failed.empty()) RemoveFailedWrites(&failed);
    if (periodic && std::chrono::steady_clock::now() >= next_pass) {
      // Bounded (ExpiryPass), so a pass stays short however many keys there are; reads never
      // see an expired entry anyway.
      cursor = ExpiryPass(cursor);
      testing::SyncPoint("StoreImpl::MaintenanceLoop:ExpiryPass");
      ResumeIndexAndDropEmpty();
      FlushIfDue();
      next_pass = std::chrono::steady_clock::now() + interval;
    }
    lock.lock();
  }
  // Close removes what is left.
  for (FailedWrite& f : failed) failed_writes_.push_back(std::move(f));
}

Status StoreImpl::PersistDirty() {
  for (const GenerationPtr& g : gens_->All()) {
    // The dirty entries, by stripe: each stripe's are rewritten under it, so that a Put,
    // Delete or SetExpiry of the key in between is neither undone nor overwritten.
    std::map<size_t, std::vector<RecordMember>> by_stripe;
    ForEachRecord(*g, [&](RecordMember m) {
      if (m.at.entry.flags & Entry::kDirty) by_stripe[m.hash % kStripes].push_back(std::move(m));
    });
    testing::SyncPoint("StoreImpl::PersistDirty:Walked");
    for (auto& [stripe, members] : by_stripe) {
      if (Status s = PersistDirtyOf(*g, stripe, members); !s.ok()) return s;
    }
  }
  return Status::OK();
}

Status StoreImpl::PersistDirtyOf(const Generation& g, size_t stripe,
                                 const std::vector<RecordMember>& members) {
  std::lock_guard lock(stripes_[stripe]);
  rocksdb::WriteBatch batch;
  std::vector<Entry> persisted;
  for (const RecordMember& m : members) {
    format::IndexRecord rec;
    std::string bytes;  // an inline value's bytes, which rec points into
    // Read again under the stripe: the version still in the index, its record as it is now.
    if (!StillIndexed(m.at) || !RecordMatches(m.hash, m.key, m.at, &rec, &bytes)) {
      continue;
    }
    // Hits do not take the stripe: the counts are taken as they are now and the mark cleared
    // in one step, so a hit after it marks the entry dirty again for the next pass.
    Entry now = m.at.entry;
    index_.Update(m.at.entry, [&](Entry& x) {
      now = x;
      x.flags &= static_cast<uint8_t>(~Entry::kDirty);
    });
    rec.reuse_count = now.reuse;
    rec.last_access_ms = now.last_access_ms;
    batch.Put(g.cf, format::IndexKey(m.hash, m.key), rec.Encode());
    persisted.push_back(m.at.entry);
  }
  if (batch.Count() == 0) return Status::OK();
  rocksdb::Status s = RocksWrite(WriteOpts(), &batch);
  if (s.ok()) return Status::OK();
  for (const Entry& e : persisted) {  // not written: the next pass tries again
    index_.Update(e, [](Entry& x) { x.flags |= Entry::kDirty; });
  }
  return Status::IOError("persisting reuse counts: " + s.ToString());
}

Status StoreImpl::Clear() {
  if (Status s = CheckWritable(); !s.ok()) return s;
  std::lock_guard lock(evict_mu_);
  uint64_t head_id;
  {
    std::lock_guard rl(rotate_mu_);
    if (Status s = gens_->Rotate(NowMs()); !s.ok()) return s;
    head_id = gens_->head_id();
  }
  std::vector<GenerationPtr> dropped;
  Status s;
  for (GenerationPtr& g : gens_->All()) {
    if (g->id >= head_id) continue;
    gens_->Retire(*g);
    s = gens_->DropIndex(g);
    if (!s.ok()) break;
    dropped.push_back(std::move(g));
  }
  // One pass over the index for all of them; what could not be dropped stays whole.
  index_.ForEach([&](Entry& e) {
    GenerationPtr g = gens_->SegmentOf(e.seg).gen;
    return !g || std::find(dropped.begin(), dropped.end(), g) == dropped.end();
  });
  for (GenerationPtr& g : dropped) {
    g->live = 0;
    gens_->Release(g);
  }
  return s;
}

Stats StoreImpl::GetStats() {
  Stats st;
  if (closed_) return st;
  st.keys = index_.size();
  st.live_bytes = index_.ValueBytes();
  const KeyIndex::ExpiryTotals expiries = index_.Expiries();
  st.expiring_keys = expiries.count;
  if (expiries.count > 0) {
    const auto mean_ms = static_cast<int64_t>(expiries.sum_ms / expiries.count);
    st.avg_ttl = static_cast<uint64_t>(std::max<int64_t>(0, mean_ms - NowMs()));
  }
  st.value_file_bytes = gens_->FileBytes();
  uint64_t wal = 0;
  rocksdb::VectorLogPtr logs;
  if (db_->GetSortedWalFiles(logs).ok()) {
    for (auto& l : logs) wal += l->SizeFileBytes();
  }
  st.index_file_bytes = sfm_->GetTotalSize() + wal;
  st.disk_bytes = st.value_file_bytes + st.index_file_bytes;
  st.index_memory_bytes = index_.MemoryBytes();
  st.pending_bytes = wbm_->memory_usage() + (writer_ ? writer_->pending_bytes() : 0);
  st.max_disk_bytes = budget_;
  st.budget_used_bytes = BudgetUsage();
  // Values under format::kMinBlobBytes live in index records, not blob files: a small share.
  st.unused_value_bytes = st.value_file_bytes - std::min(st.value_file_bytes, st.live_bytes);
  st.generations = gens_->size();
  st.index_writes_stopped = index_errors_.stopped() ? 1 : 0;
  st.first_write_demotion_percent =
      demote_first_writes_ ? static_cast<uint64_t>(demotion_.Depth() * 100) : 0;
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

void StoreImpl::FlushIfDue() {
  if (options_.wal || options_.flush_interval_ms == 0) return;
  const int64_t now = NowMs();
  const uint64_t written = index_writes_.load();
  if (written == written_at_flush_ || now - last_flush_ms_ < options_.flush_interval_ms) return;
  // A failed flush is retried at the next pass (and reported by the next SAVE or Close).
  if (Flush().ok()) {
    written_at_flush_ = written;
    last_flush_ms_ = now;
  }
}

Status StoreImpl::SyncValues() {
  if (writer_) writer_->Hurry();  // the writes the sync waits for start without delay
  return gens_->SyncAll();
}

Status StoreImpl::Flush() {
  if (!db_) return Status::IOError("store is closed");  // Close itself flushes, once closed_
  if (options_.read_only) return CheckWritable();
  // No generation is dropped while its column family is being flushed.
  std::lock_guard evict(evict_mu_);
  return FlushIndex();
}

Status StoreImpl::FlushIndex(bool values_must_sync) {
  // The resume flushes the memtables, each flush after the blob files' sync (the listener's).
  // While the disk fails a resume fails, and so would a sync of the values, for good (a failed
  // sync may have lost their unsynced bytes); stopped until a restart they are still synced,
  // for the close.
  Status resumed = ResumeIndex();
  if (!resumed.ok() && !index_errors_.failed()) return resumed;
  // Values first: a durable record must never point at bytes that are not.
  if (Status s = SyncValues(); !s.ok()) {
    if (values_must_sync) {
      resumed.PermitUncheckedError();
      return s;
    }
    s.PermitUncheckedError();
  }
  if (!resumed.ok()) return resumed;
  std::vector<GenerationPtr> held;
  const std::vector<rocksdb::ColumnFamilyHandle*> cfs = IndexColumnFamilies(&held);
  const uint64_t errors_before = index_errors_.count();
  rocksdb::Status s = db_->Flush(rocksdb::FlushOptions(), cfs);
  if (!s.ok()) return FromRocks(s, "flushing the index");
  return index_resumed_.load() ? WaitForMemtablesFlushed(errors_before) : Status::OK();
}

namespace {

// After a failed WAL append or sync DB::Resume moves to a new WAL file only if it has an active
// memtable to flush: it switches memtables, and the WAL with them. With nothing to flush the
// index would go on with the failed file, whose writer RocksDB 7.8 refuses for good once it saw
// an error (an assertion in Debian's build aborts the process at the next write); RocksWrite's
// anchor keeps one there but in rare cases. Whether some column family's active memtable holds
// an entry.
bool ResumeSwitchesWal(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& cfs) {
  for (rocksdb::ColumnFamilyHandle* cf : cfs) {
    uint64_t entries = 0;
    if (db->GetIntProperty(cf, "rocksdb.num-entries-active-mem-table", &entries) && entries > 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

// After a flush's soft error RocksDB 7.8 lets flush requests queued before it run within a
// manual resume, and one that starts before the resume queued its own keeps its old flush reason:
// it fails when it installs its result, without giving its memtables back (fixed upstream in
// 8.7.3, PR 11872), and every later resume waits for them forever. While the error stands no
// flush or compaction starts; once DB::Resume() began, anything that ends or calls into RocksDB
// may start one, until the resume's own request relabels them: a background job ending (a
// failed one holds its thread a second longer, RocksDB's backoff), an index write, a column
// family created, a compaction. So the resume begins only once no background job runs and no
// such call is inside RocksDB (IndexErrors::Admitted, which refuses new ones meanwhile): whether
// that comes within `limit`.
bool StoreImpl::IndexQuietWithin(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto running = [&](const char* property) {
    uint64_t n = 0;
    return db_->GetIntProperty(property, &n) && n > 0;
  };
  while (index_errors_.admitted() > 0 || running("rocksdb.num-running-flushes") ||
         running("rocksdb.num-running-compactions")) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

Status StoreImpl::ResumeIndex() {
  if (!index_errors_.stopped()) return Status::OK();
  if (index_errors_.failed()) return FromRocks(index_errors_.refusal(), "resuming the index");
  // Read before the marks below: an error recorded since keeps them (ClearIfNoneSince).
  const uint64_t errors_before = index_errors_.count();
  if (index_errors_.wal_failed(memtable_seals_.load())) {
    if (index_errors_.flush_only_resume()) {
      return StopUntilRestart("the index's WAL failed after a flush RocksDB retries alone");
    }
    std::vector<GenerationPtr> held;
    if (!ResumeSwitchesWal(db_.get(), IndexColumnFamilies(&held))) {
      return StopUntilRestart("the index's WAL failed with nothing to flush");
    }
  }
  if (index_errors_.flush_only_resume() && !IndexQuietWithin(std::chrono::seconds(3))) {
    return Status::IOError("the index's background work has not ended; the next pass resumes");
  }
  // A failed resume leaves the flush-only mark as it is, though RocksDB may have lowered its own:
  // a needless restart at worst, where lowering it could resume on a failed WAL file.
  rocksdb::Status s = db_->Resume();
  if (!s.ok()) return FromRocks(s, "resuming the index after a disk error");
  // Writes went through from the moment RocksDB cleared its error: one that failed since must
  // not be forgotten. The next call resumes again.
  if (!index_errors_.ClearIfNoneSince(errors_before)) {
    return Status::IOError("the index met another error while it resumed");
  }
  index_resumed_ = true;
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_, "the index resumed its writes");
  return Status::OK();
}

Status StoreImpl::StopUntilRestart(const std::string& why) {
  if (index_errors_.StopUntilRestart()) {  // RocksWrite's refusals now say a restart ends them
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_,
                 "%s: the index cannot resume its writes; a restart does", why.c_str());
  }
  return Status::IOError(why + ": a restart resumes the index's writes");
}

std::vector<rocksdb::ColumnFamilyHandle*> StoreImpl::IndexColumnFamilies(
    std::vector<GenerationPtr>* held) {
  *held = gens_->All();  // a drop cannot free a handle in use
  std::vector<rocksdb::ColumnFamilyHandle*> cfs{default_cf_};
  for (auto& g : *held) cfs.push_back(g->cf);
  return cfs;
}

uint64_t StoreImpl::UnflushedMemtables() {
  std::vector<GenerationPtr> held;
  uint64_t unflushed = 0;
  for (rocksdb::ColumnFamilyHandle* cf : IndexColumnFamilies(&held)) {
    uint64_t n = 0;
    if (db_->GetIntProperty(cf, rocksdb::DB::Properties::kNumImmutableMemTable, &n)) unflushed += n;
  }
  return unflushed;
}

Status StoreImpl::WaitForMemtablesFlushed(uint64_t errors_before) {
  while (UnflushedMemtables() > 0) {
    if (index_errors_.count() != errors_before) {
      return Status::IOError("flushing the index: a background flush failed (see LOG)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::OK();
}

Status StoreImpl::Compact() {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = PersistDirty(); !s.ok()) return s;
  // Its flush first would relabel the memtables' flush for a manual compaction: none begins
  // while the index waits out a disk error, nor runs beside a resume (ResumeIndex).
  const IndexErrors::Admitted admitted(&index_errors_);
  if (!admitted.refusal().ok()) return FromRocks(admitted.refusal(), "compacting the index");
  std::vector<GenerationPtr> all = gens_->All();
  for (auto& g : all) {
    rocksdb::Status s = db_->CompactRange(rocksdb::CompactRangeOptions(), g->cf, nullptr, nullptr);
    if (!s.ok()) return Status::IOError("compacting the index: " + s.ToString());
  }
  return Status::OK();
}

void StoreImpl::UnmapFiles() {
  gens_
      ->ForEachFile([](BlobFile& f) {
        f.Unmap();
        return Status::OK();
      })
      .PermitUncheckedError();
}

}  // namespace larder
