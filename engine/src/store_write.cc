// The write paths of StoreImpl. A value goes from the caller's buffer to the head
// generation's blob file in one write; then, under the key's stripe, one WriteBatch writes its
// index record (and deletes the replaced version's record in another generation), and the
// in-memory index is updated. A record therefore only ever points at bytes already written.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>
#include <string>

#include "format.h"
#include "rocks_status.h"
#include "store_impl.h"
#include "sync_point.h"

namespace larder {

namespace {

// `now` + `ttl_ms` (> 0), or InvalidArgument when the sum passes the clock's range, as Redis
// refuses such a time ("invalid expire time").
Result<int64_t> ExpiryAfter(int64_t now, int64_t ttl_ms) {
  if (now > 0 && ttl_ms > std::numeric_limits<int64_t>::max() - now) {
    return Status::InvalidArgument("ttl of " + std::to_string(ttl_ms) +
                                   " ms is past the clock's range");
  }
  return now + ttl_ms;
}

// What a conditional Put found, for its ConditionNotMet.
const char* ConditionMessage(PutMode mode) {
  return mode == PutMode::kIfAbsent ? "the key exists (put only if absent)"
                                    : "the key does not exist (put only if present)";
}

}  // namespace

Status Store::Put(std::string_view key, std::string_view value, int64_t ttl_ms) {
  if (ttl_ms < 0) {
    return Status::InvalidArgument("ttl of " + std::to_string(ttl_ms) +
                                   " ms: must be >= 0 (0 = no expiry)");
  }
  PutOptions o;
  if (ttl_ms > 0) {
    Result<int64_t> at = ExpiryAfter(NowMs(), ttl_ms);
    if (!at.ok()) return at.status();
    o.expire_at_ms = *at;
  }
  return Put(key, value, o);
}

Status Store::Expire(std::string_view key, int64_t ttl_ms) {
  const int64_t now = NowMs();
  // A time before now deletes, as Redis's EXPIRE does; never 0, which would persist.
  if (ttl_ms <= 0) return SetExpiry(key, std::min<int64_t>(now, 0) - 1);
  Result<int64_t> at = ExpiryAfter(now, ttl_ms);
  return at.ok() ? SetExpiry(key, *at) : at.status();
}

Status StoreImpl::CheckOpen() const {
  return closed_ ? Status::IOError("store is closed") : Status::OK();
}

Status StoreImpl::CheckWritable() const {
  if (options_.read_only) return Status::NotSupported(dir_ + " is open read-only");
  return CheckOpen();
}

Status StoreImpl::CheckKey(std::string_view key) const {
  if (closed_) return Status::IOError("store is closed");
  if (key.empty()) return Status::InvalidArgument("empty key");
  if (key.size() > options_.max_key_bytes) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes exceeds max_key_bytes (" +
                                   std::to_string(options_.max_key_bytes) + ")");
  }
  return Status::OK();
}

Status StoreImpl::CheckLookupKey(std::string_view key) const {
  Status s = CheckKey(key);
  return s.IsInvalidArgument() ? Status::NotFound() : s;
}

rocksdb::WriteOptions StoreImpl::WriteOpts() const {
  rocksdb::WriteOptions wo;
  wo.disableWAL = !options_.wal;
  wo.sync = options_.wal && options_.sync_writes;
  // A write may race with the drop of the generation holding a key's older record; its delete
  // of that record is then moot, not an error.
  wo.ignore_missing_column_families = true;
  return wo;
}

Status StoreImpl::AppendValue(std::string_view key, std::string_view value, const HandedOver& owned,
                              bool wait_for_room, const Generations::WriteTicket& t, Entry* e,
                              format::IndexRecord* rec) {
  // WAL off: a caller's string (PutOwned) is taken as it is and written in the background
  // (ValueWriter); with direct_writes every value is copied into an aligned engine buffer for
  // O_DIRECT and written in the background. A value the caller keeps (Put), written through
  // the page cache, goes in place from the caller's memory: a copy into an engine buffer would
  // cost what the copy into the page cache does, plus a fresh allocation, and that copy would
  // still follow. After a background write failed, every value goes in place until a write
  // succeeds again, so that a full disk answers the writer itself.
  std::shared_ptr<PendingWrite> pending;
  if (MayWriteBehind(owned) && !write_failed_.load()) {
    if (options_.direct_writes) {
      pending = PendingWrite::CopyOf(value);
    } else if (owned) {
      pending = PendingWrite::Adopt(owned.Take());
    }
  }
  BlobFilePtr file;
  {
    auto lease = gens_->LeasePartition(t, NowMs());
    if (!lease.ok()) return lease.status();
    BlobFile& f = lease->file();
    const uint64_t before = f.disk_bytes();
    uint64_t offset = 0;
    if (pending) {
      f.AppendPending(pending, &offset);
    } else if (Status s = f.Append(value.data(), value.size(), &offset); !s.ok()) {
      return s;
    } else {
      write_failed_ = false;
    }
    const uint64_t grown = f.disk_bytes() - before;
    gens_->AddFileBytes(grown);
    t.gen().bytes += grown;
    e->seg = lease->seg();
    e->offset = offset;
    rec->partition = lease->partition();
    rec->offset = offset;
    file = lease->file_ptr();
  }
  if (pending) {
    pending->memtable_epoch = memtable_seals_.load();  // before the record is written
    pending->direct = options_.direct_writes;
    // The file by a weak pointer: the pending write is the file's, and must not keep it.
    pending->on_error = [this, f = FailedWrite{e->hash, std::string(key), *e, file}](
                            const Status&) { OnFailedWrite(f); };
    writer_->Submit(std::move(file), e->offset, std::move(pending), wait_for_room);
    return Status::OK();
  }
  // With sync_writes an acknowledged value must be durable before its record is. The lease is
  // released first: the sync covers this value, and the next writer may append meanwhile.
  return options_.wal && options_.sync_writes ? file->Sync() : Status::OK();
}

void StoreImpl::OnFailedWrite(FailedWrite f) {
  counters_.failed_writes++;
  write_failed_ = true;
  QueueFailedWrite(std::move(f));
}

void StoreImpl::QueueFailedWrite(FailedWrite f) {
  {
    std::lock_guard lock(maint_mu_);
    failed_writes_.push_back(std::move(f));
  }
  maint_cv_.notify_all();
}

void StoreImpl::SettlePut(uint64_t hash, std::string_view key, const Entry& e) {
  if (e.is_inline()) return;
  BlobFilePtr file = gens_->SegmentOf(e.seg).file;
  if (file && file->SettlePut(e.offset)) QueueFailedWrite({hash, std::string(key), e, file});
}

void StoreImpl::RemoveFailedWrites(std::vector<FailedWrite>* failed) {
  testing::SyncPoint("StoreImpl::RemoveFailedWrites");
  std::vector<FailedWrite> left;
  for (FailedWrite& f : *failed) {
    BlobFilePtr file = f.file.lock();  // none: its generation is gone, and the key with it
    {
      std::lock_guard stripe(Stripe(f.hash));
      if (file && file->DeferRemovalUntilIndexed(f.version.offset)) continue;  // the Put queues it
      std::optional<Located> at = LookupExact(f.hash, f.key);
      // The version by its bytes' place (eviction may move its entry to another generation's
      // segment, keeping the bytes); replaced or deleted meanwhile, it is gone already. A
      // removal that fails keeps the bytes readable.
      const bool current = at && file && at->seg.file == file &&
                           at->entry.offset == f.version.offset &&
                           at->entry.check == f.version.check;
      if (current) {
        Status removed;
        testing::SyncPoint("StoreImpl::RemoveFailedWrites:Remove", &removed);
        if (removed.ok()) removed = RemoveLocked(f.hash, f.key, *at);
        if (!removed.ok()) {
          left.push_back(std::move(f));
          continue;
        }
      }
    }
    if (file) file->ForgetFailed(f.version.offset);
  }
  failed->swap(left);
  testing::SyncPoint("StoreImpl::RemoveFailedWrites:Done");
}

Status StoreImpl::StageValue(uint64_t hash, std::string_view key, std::string_view value,
                             const HandedOver& owned, bool wait_for_room, uint64_t value_hash,
                             const Generations::WriteTicket& t, Entry* e,
                             format::IndexRecord* rec) {
  Generation& gen = t.gen();
  e->hash = hash;
  e->check = value_hash ^ format::KeyTag(key);
  e->size = static_cast<uint32_t>(value.size());
  e->access_gen = static_cast<uint16_t>(gen.id);
  rec->generation = gen.id;
  rec->value_size = value.size();
  rec->value_hash = value_hash;
  if (value.size() >= format::kMinBlobBytes) {
    return AppendValue(key, value, owned, wait_for_room, t, e, rec);
  }
  e->seg = gen.inline_seg;
  e->flags = Entry::kInline;
  rec->is_inline = true;
  rec->inline_value = value;
  gen.bytes += format::StoredBytes(key.size(), value.size());
  return Status::OK();
}

void StoreImpl::AbandonStaged(const Entry& e) {
  if (e.is_inline() || !punch_) return;
  // A value that failed before it was appended has no segment (0, never used): no file.
  if (BlobFilePtr file = gens_->SegmentOf(e.seg).file) {
    gens_->Punch(Generation::Extent{std::move(file), e.offset, e.size});
  }
}

Result<Generations::WriteTicket> StoreImpl::WriteVersion(uint64_t hash, std::string_view key,
                                                         std::string_view value,
                                                         const HandedOver& owned,
                                                         bool wait_for_room, uint64_t value_hash,
                                                         int64_t expire_at_ms, int64_t now,
                                                         Entry* e, format::IndexRecord* rec) {
  auto ticket = gens_->BeginWrite();
  if (!ticket.ok()) return ticket.status();
  *e = Entry{};
  *rec = format::IndexRecord{};
  e->expire_at_ms = rec->expire_at_ms = expire_at_ms;
  e->last_access_ms = rec->created_ms = rec->last_access_ms = now;
  if (Status s = StageValue(hash, key, value, owned, wait_for_room, value_hash, *ticket, e, rec);
      !s.ok()) {
    AbandonStaged(*e);
    return s;
  }
  return ticket;
}

Status StoreImpl::IndexVersion(uint64_t hash, std::string_view key, Entry* e,
                               const format::IndexRecord& rec, Generation& gen,
                               const std::optional<Located>& old, const HandedOver& owned) {
  rocksdb::WriteBatch batch;
  AddVersion(&batch, hash, key, e, rec, gen, old);
  Status indexed = WriteIndex(&batch, "writing the index");
  SettleVersion(indexed.ok(), hash, key, *e, gen, old, owned);
  return indexed;
}

void StoreImpl::AddVersion(rocksdb::WriteBatch* batch, uint64_t hash, std::string_view key,
                           Entry* e, const format::IndexRecord& rec, const Generation& gen,
                           const std::optional<Located>& old) {
  e->position = missing_positions_.Take(hash);
  if (e->position == Entry::kNoPosition && old) e->position = old->entry.position;
  const std::string ik = format::IndexKey(hash, key);
  batch->Put(gen.cf, ik, rec.Encode());
  if (old && old->seg.gen && old->seg.gen->id != gen.id) batch->Delete(old->seg.gen->cf, ik);
}

void StoreImpl::SettleVersion(bool indexed, uint64_t hash, std::string_view key, const Entry& e,
                              Generation& gen, const std::optional<Located>& old,
                              const HandedOver& owned) {
  if (indexed) {
    if (old && index_.Replace(old->entry, e)) {
      LeftIndex(*old);
      if (old->seg.file) old->seg.file->Supersede(old->entry.offset, memtable_seals_.load());
    } else {
      index_.Insert(e);
    }
    gen.live++;
  }
  if (MayWriteBehind(owned)) SettlePut(hash, key, e);
  if (!indexed) AbandonStaged(e);
}

void StoreImpl::RotateIfFull(const Generation& gen) {
  if (gen.bytes + hit_bytes_.load(std::memory_order_relaxed) >= generation_bytes_) MaybeRotate();
}

rocksdb::Status StoreImpl::RocksWrite(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch) {
  const IndexErrors::Admitted admitted(&index_errors_);
  testing::RocksWriteSteps steps;
  steps.refuse = !admitted.refusal().ok();
  // The count read before the anchor: a seal in between makes the next write anchor again.
  const uint64_t anchor = memtable_seals_.load() + 1;
  steps.anchor = !wo.disableWAL && wal_anchored_.load(std::memory_order_relaxed) != anchor;
  testing::SyncPoint("StoreImpl::RocksWrite", &steps);
  // Also after StopUntilRestart, where RocksDB may have resumed already (ResumeIndex).
  if (steps.refuse) return admitted.refusal();
  if (steps.anchor) {
    rocksdb::WriteOptions memtable_only;
    memtable_only.disableWAL = true;
    if (db_->Put(memtable_only, default_cf_, format::kWalAnchorKey, "").ok()) {
      wal_anchored_.store(anchor, std::memory_order_relaxed);
    }
  }
  return db_->Write(wo, batch);
}

Status StoreImpl::WriteIndex(rocksdb::WriteBatch* batch, const char* what) {
  if (batch->Count() == 0) return Status::OK();
  if (rocksdb::Status s = RocksWrite(WriteOpts(), batch); !s.ok()) return FromRocks(s, what);
  index_writes_++;
  return Status::OK();
}

void StoreImpl::AddRemoval(rocksdb::WriteBatch* batch, uint64_t hash, std::string_view key,
                           const Located& at) const {
  if (at.seg.gen) batch->Delete(at.seg.gen->cf, format::IndexKey(hash, key));
}

void StoreImpl::Removed(const Located& at) {
  if (index_.Erase(at.entry)) LeftIndex(at);
  if (at.seg.file) at.seg.file->Supersede(at.entry.offset, memtable_seals_.load());
}

Status StoreImpl::RemoveLocked(uint64_t hash, std::string_view key, const Located& at) {
  rocksdb::WriteBatch batch;
  AddRemoval(&batch, hash, key, at);
  if (Status s = WriteIndex(&batch, "deleting from the index"); !s.ok()) return s;
  Removed(at);
  return Status::OK();
}

bool StoreImpl::PutInMemory(std::string_view key, uint64_t value_bytes) {
  if (!writer_ || write_failed_.load() || !CheckKey(key).ok() ||
      value_bytes > options_.max_value_bytes) {
    return false;
  }
  const uint64_t stored = format::StoredBytes(key.size(), value_bytes);
  if (BudgetUsage() + stored > budget_) return false;  // MakeRoom would evict
  GenerationPtr head = gens_->Head();
  if (!head || head->bytes + hit_bytes_.load() + stored >= generation_bytes_) {
    return false;  // the write would close the head (MaybeRotate)
  }
  if (value_bytes >= format::kMinBlobBytes && !writer_->HasRoomFor(format::AlignUp(value_bytes))) {
    return false;  // Submit would wait for the writer
  }
  // PutImpl confirms the key's current entry by its record (LookupExact).
  const uint64_t hash = format::KeyHash(key);
  size_t n = 0;
  std::optional<Located> at = LocateFirst(hash, &n);
  return n == 0 || (n == 1 && RecordCached(hash, key, *at));
}

Status StoreImpl::Put(std::string_view key, std::string_view value, const PutOptions& opts) {
  return PutImpl(key, value, HandedOver{}, opts);
}

Status StoreImpl::PutOwned(std::string_view key, std::string&& value, const PutOptions& opts) {
  return PutImpl(key, value, HandedOver{&value, nullptr}, opts);
}

// `value` stays readable as a view until StageValue; only its size is used after it (its
// bytes may have moved into a pending write by then).
Status StoreImpl::CheckPut(std::string_view key, uint64_t value_bytes) const {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value_bytes > options_.max_value_bytes) {
    return Status::InvalidArgument("value of " + std::to_string(value_bytes) +
                                   " bytes exceeds max_value_bytes (" +
                                   std::to_string(options_.max_value_bytes) + ")");
  }
  if (const uint64_t stored = format::StoredBytes(key.size(), value_bytes); stored > budget_) {
    return Status::NoSpace("a value of " + std::to_string(stored) +
                           " bytes cannot fit in max_disk_bytes (" + std::to_string(budget_) + ")");
  }
  return Status::OK();
}

Status StoreImpl::PutImpl(std::string_view key, std::string_view value, const HandedOver& owned,
                          const PutOptions& opts) {
  if (Status s = CheckPut(key, value.size()); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  const int64_t now = NowMs();
  const bool conditional = opts.mode != PutMode::kAlways;
  std::unique_lock stripe(Stripe(hash), std::defer_lock);
  auto condition_holds = [&](const std::optional<Located>& old) {
    bool live = old && !old->entry.ExpiredAt(now);
    return opts.mode == PutMode::kAlways || (opts.mode == PutMode::kIfAbsent) != live;
  };
  if (conditional) {
    // NX / XX: the condition and the write are one step for other writers of the key.
    stripe.lock();
    if (!condition_holds(LookupExact(hash, key)))
      return Status::ConditionNotMet(ConditionMessage(opts.mode));
  }
  if (!opts.keep_ttl && opts.expire_at_ms != 0 && opts.expire_at_ms <= now) {
    // Already expired: the key goes away and nothing is written.
    if (!stripe.owns_lock()) stripe.lock();
    std::optional<Located> old = LookupExact(hash, key);
    return old ? RemoveLocked(hash, key, *old) : Status::OK();
  }
  const uint64_t stored = format::StoredBytes(key.size(), value.size());
  if (!conditional) {
    if (Status s = MakeRoom(stored); !s.ok()) return s;
  } else if (BudgetUsage() + stored > budget_) {
    // Evicting needs the stripes: let go of this one meanwhile, then check again.
    stripe.unlock();
    if (Status s = MakeRoom(stored); !s.ok()) return s;
    stripe.lock();
    if (!condition_holds(LookupExact(hash, key)))
      return Status::ConditionNotMet(ConditionMessage(opts.mode));
  }
  const uint64_t value_hash = format::Checksum(value);  // outside the stripe for plain SETs

  Entry e;
  format::IndexRecord rec;
  auto ticket = WriteVersion(hash, key, value, owned, !opts.never_wait_for_writers, value_hash,
                             opts.expire_at_ms, now, &e, &rec);
  if (!ticket.ok()) return ticket.status();
  Generation& gen = ticket->gen();
  testing::SyncPoint("StoreImpl::PutImpl:BeforeCommit");
  if (!stripe.owns_lock()) stripe.lock();
  std::optional<Located> old = LookupExact(hash, key);
  if (opts.keep_ttl) {
    rec.expire_at_ms = old && !old->entry.ExpiredAt(now) ? ExactExpiry(hash, key, *old) : 0;
    e.expire_at_ms = rec.expire_at_ms;
  }
  if (Status s = IndexVersion(hash, key, &e, rec, gen, old, owned); !s.ok()) return s;
  stripe.unlock();
  counters_.bytes_written += value.size();
  RotateIfFull(gen);
  return Status::OK();
}

Status StoreImpl::Delete(std::string_view key) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  std::unique_lock lock(Stripe(hash));
  std::optional<Located> at = LookupExact(hash, key);
  if (!at) return Status::NotFound();
  Status s = RemoveLocked(hash, key, *at);
  if (!s.ok()) return s;
  if (at->entry.ExpiredAt(NowMs())) {
    counters_.expired_keys++;
    lock.unlock();
    if (options_.listener) options_.listener->OnExpired(key);
    return Status::NotFound();
  }
  return Status::OK();
}

Status StoreImpl::SetExpiry(std::string_view key, int64_t expire_at_ms) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  std::lock_guard lock(Stripe(hash));
  std::optional<Located> at = LookupExact(hash, key);
  if (!at || at->entry.ExpiredAt(NowMs())) {
    if (at) RemoveLocked(hash, key, *at).PermitUncheckedError();  // maintenance retries
    return Status::NotFound();
  }
  if (expire_at_ms != 0 && expire_at_ms <= NowMs()) return RemoveLocked(hash, key, *at);
  format::IndexRecord rec;
  std::string bytes;
  if (!RecordMatches(hash, key, *at, &rec, &bytes)) return Status::NotFound();
  rec.expire_at_ms = expire_at_ms;
  rocksdb::WriteBatch batch;
  batch.Put(at->seg.gen->cf, format::IndexKey(hash, key), rec.Encode());
  if (Status s = WriteIndex(&batch, "writing the index"); !s.ok()) return s;
  index_.Update(at->entry, [&](Entry& x) { x.expire_at_ms = expire_at_ms; });
  return Status::OK();
}

}  // namespace larder
