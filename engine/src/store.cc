// The read and write paths of StoreImpl.
#include <rocksdb/write_batch.h>

#include "format.h"
#include "larder/glob.h"
#include "store_impl.h"

namespace larder {

Value::Value() = default;
Value::~Value() = default;
Value::Value(Value&&) noexcept = default;
Value& Value::operator=(Value&&) noexcept = default;

Status Store::Put(std::string_view key, std::string_view value, int64_t ttl_ms) {
  PutOptions o;
  if (ttl_ms > 0) o.expire_at_ms = SystemClock()->NowMs() + ttl_ms;
  return Put(key, value, o);
}

Status Store::Expire(std::string_view key, int64_t ttl_ms) {
  return SetExpiry(key, SystemClock()->NowMs() + ttl_ms);
}

Status StoreImpl::CheckOpen() const {
  return closed_ ? Status::IOError("store is closed") : Status::OK();
}

Status StoreImpl::CheckKey(std::string_view key) const {
  if (closed_) return Status::IOError("store is closed");
  if (key.empty()) return Status::InvalidArgument("empty key");
  if (key.size() > options_.max_key_bytes) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes exceeds max-key-bytes (" +
                                   std::to_string(options_.max_key_bytes) + ")");
  }
  return Status::OK();
}

std::optional<Entry> StoreImpl::LiveEntry(uint64_t hash, std::string_view key, bool stripe_held) {
  std::optional<Entry> e = index_.Find(hash, key);
  if (e && e->ExpiredAt(Now())) {
    std::unique_lock lock(Stripe(hash), std::defer_lock);
    if (!stripe_held) lock.lock();
    std::optional<Entry> again = index_.Find(hash, key);
    if (again && again->ExpiredAt(Now())) {
      RemoveLocked(hash, key, *again);
      counters_.expired_keys++;
    }
    return std::nullopt;
  }
  return e;
}

void StoreImpl::RemoveLocked(uint64_t hash, std::string_view key, const Entry& e) {
  if (!index_.EraseIf(hash, key, e.generation, e.checksum)) return;
  rocksdb::WriteBatch batch;
  batch.Delete(meta_cf_, key);
  std::shared_lock gl(gens_->write_lock());
  if (GenerationPtr g = gens_->Find(e.generation); g && !g->dropped) batch.Delete(g->cf, key);
  db_->Write(WriteOpts(), &batch);
}

Status StoreImpl::WriteMeta(std::string_view key, const Entry& e) {
  rocksdb::Status s = db_->Put(WriteOpts(), meta_cf_, key, e.ToMeta().Encode());
  return s.ok() ? Status::OK() : Status::IOError("writing metadata: " + s.ToString());
}

Status StoreImpl::Put(std::string_view key, std::string_view value, const PutOptions& opts) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() > options_.max_value_bytes) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes exceeds max-value-bytes (" +
                                   std::to_string(options_.max_value_bytes) + ")");
  }
  if (Status s = MakeRoom(format::StoredBytes(key.size(), value.size())); !s.ok()) return s;

  const uint64_t hash = KeyHash(key);
  const uint64_t checksum = format::Checksum(value);  // computed outside every lock

  std::lock_guard stripe(Stripe(hash));
  std::optional<Entry> old = LiveEntry(hash, key, true);
  if ((opts.mode == PutMode::kIfAbsent && old) || (opts.mode == PutMode::kIfPresent && !old)) {
    return Status::ConditionNotMet("condition not met");
  }
  const int64_t now = Now();
  Entry e;
  e.value_size = value.size();
  e.checksum = checksum;
  e.expire_at_ms = opts.keep_ttl ? (old ? old->expire_at_ms : 0) : opts.expire_at_ms;
  e.created_ms = e.last_access_ms = now;
  if (e.expire_at_ms != 0 && e.expire_at_ms <= now) {  // already expired: the key goes away
    if (old) RemoveLocked(hash, key, *old);
    return Status::OK();
  }
  if (Status s = WriteToHead(key, value, &e, old); !s.ok()) return s;
  index_.Upsert(hash, key, e);
  counters_.bytes_written += value.size();
  if (GenerationPtr head = gens_->Find(e.generation); head && head->bytes >= generation_bytes_) {
    MaybeRotate();
  }
  return Status::OK();
}

Status StoreImpl::WriteToHead(std::string_view key, std::string_view value, Entry* e,
                              const std::optional<Entry>& old) {
  format::ValueHeader header;
  header.value_size = value.size();
  header.checksum = e->checksum;
  char hbuf[format::ValueHeader::kSize];
  header.EncodeTo(hbuf);
  const uint64_t stored = format::StoredBytes(key.size(), value.size());
  std::shared_lock gl(gens_->write_lock());
  GenerationPtr head = gens_->HeadLocked();
  e->generation = head->id;
  rocksdb::WriteBatch batch(stored + 128);
  rocksdb::Slice parts[2] = {rocksdb::Slice(hbuf, sizeof(hbuf)),
                             rocksdb::Slice(value.data(), value.size())};
  rocksdb::Slice key_slice(key.data(), key.size());
  batch.Put(head->cf, rocksdb::SliceParts(&key_slice, 1), rocksdb::SliceParts(parts, 2));
  batch.Put(meta_cf_, key_slice, e->ToMeta().Encode());
  if (old && old->generation != head->id) {
    if (GenerationPtr og = gens_->Find(old->generation); og) batch.Delete(og->cf, key_slice);
  }
  rocksdb::Status s = db_->Write(WriteOpts(), &batch);
  if (s.IsNoSpace()) return Status::NoSpace("disk full writing to " + dir_ + ": " + s.ToString());
  if (!s.ok()) return Status::IOError("write failed: " + s.ToString());
  head->bytes += stored;
  return Status::OK();
}

Result<Value> StoreImpl::ReadVerified(uint64_t hash, std::string_view key, const Entry& e,
                                      bool count_and_remove, bool rocksdb_checksums) {
  GenerationPtr g = gens_->Find(e.generation);
  if (!g) return Status::NotFound();
  // XXH3 below covers the value. RocksDB's own check would CRC every blob record in software
  // (~1.3 GB/s per thread against ~18 GB/s without); it cannot check SST blocks alone. The
  // SST blocks a lookup parses were checked when the store opened (DropDamagedGenerations).
  rocksdb::ReadOptions ro;
  ro.verify_checksums = rocksdb_checksums;
  auto pin = std::make_unique<Value::Pin>();
  rocksdb::Status s = db_->Get(ro, g->cf, rocksdb::Slice(key.data(), key.size()), &pin->slice);
  std::string problem;
  if (s.IsNotFound()) {
    problem = kValueMissing;
  } else if (!s.ok()) {
    problem = s.ToString();
  } else {
    std::string_view rec = pin->slice.ToStringView();
    auto h = format::ValueHeader::Decode(rec);
    if (!h) {
      problem = "bad value header";
    } else if (h->value_size != e.value_size || h->checksum != e.checksum) {
      problem = "header does not match metadata";
    } else if (format::Checksum(rec.data() + format::ValueHeader::kSize, h->value_size) !=
               h->checksum) {
      problem = "checksum mismatch";
    }
  }
  if (problem.empty()) {
    Value v;
    v.data_ = pin->slice.data() + format::ValueHeader::kSize;
    v.size_ = e.value_size;
    v.pin_ = std::move(pin);
    return v;
  }
  if (g->dropped) return Status::NotFound();  // evicted while we read: a plain miss
  if (count_and_remove) {
    // Writers hold the stripe, so under it the index says whether this version is still the
    // current one. If not, an overwrite or delete raced with the read: not corruption.
    std::lock_guard lock(Stripe(hash));
    std::optional<Entry> cur = index_.Find(hash, key);
    if (!cur || !cur->SameVersion(e)) {
      return Status::NotFound(kChangedDuringRead);
    }
    counters_.corruptions++;
    RemoveLocked(hash, key, e);
  }
  return Status::Corruption(problem);
}

Result<Value> StoreImpl::Get(std::string_view key) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  const uint64_t hash = KeyHash(key);
  std::optional<Entry> e;
  Result<Value> v = Status::NotFound();
  // A version replaced while being read is read again (bounded: a key rewritten faster than
  // it can be read is reported as a miss).
  for (int attempt = 0; attempt < 3; ++attempt) {
    e = LiveEntry(hash, key);
    if (!e) break;
    v = ReadVerified(hash, key, *e, /*count_and_remove=*/true);
    if (v.ok() || v.status().message() != kChangedDuringRead) break;
  }
  if (!v.ok()) {
    counters_.misses++;
    return Status::NotFound(v.status().IsCorruption() ? "corrupt value removed" : "");
  }
  const int64_t now = Now();
  index_.UpdateIf(hash, key, e->generation, e->checksum, [now](Entry& x) {
    x.reuse_count++;
    x.last_access_ms = now;
    x.dirty = true;
  });
  counters_.hits++;
  counters_.reuses++;
  counters_.bytes_read += v->size();
  return v;
}

std::vector<Result<Value>> StoreImpl::MultiGet(const std::vector<std::string_view>& keys) {
  std::vector<Result<Value>> out;
  out.reserve(keys.size());
  for (auto k : keys) out.push_back(Get(k));
  return out;
}

uint64_t StoreImpl::Exists(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  for (auto k : keys) {
    if (CheckKey(k).ok() && LiveEntry(KeyHash(k), k)) ++n;
  }
  return n;
}

uint64_t StoreImpl::PrefixCount(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  for (auto k : keys) {
    if (!CheckKey(k).ok() || !LiveEntry(KeyHash(k), k)) break;
    ++n;
  }
  return n;
}

Status StoreImpl::Delete(std::string_view key) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  const uint64_t hash = KeyHash(key);
  std::lock_guard lock(Stripe(hash));
  std::optional<Entry> e = LiveEntry(hash, key, true);
  if (!e) return Status::NotFound();
  RemoveLocked(hash, key, *e);
  return Status::OK();
}

Status StoreImpl::SetExpiry(std::string_view key, int64_t expire_at_ms) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  const uint64_t hash = KeyHash(key);
  std::lock_guard lock(Stripe(hash));
  std::optional<Entry> e = LiveEntry(hash, key, true);
  if (!e) return Status::NotFound();
  if (expire_at_ms != 0 && expire_at_ms <= Now()) {
    RemoveLocked(hash, key, *e);
    return Status::OK();
  }
  e->expire_at_ms = expire_at_ms;
  e->dirty = false;
  if (Status s = WriteMeta(key, *e); !s.ok()) return s;
  index_.UpdateIf(hash, key, e->generation, e->checksum,
                  [&](Entry& x) { x.expire_at_ms = expire_at_ms; });
  return Status::OK();
}

int64_t StoreImpl::Ttl(std::string_view key) {
  if (!CheckKey(key).ok()) return kTtlNoKey;
  std::optional<Entry> e = LiveEntry(KeyHash(key), key);
  if (!e) return kTtlNoKey;
  if (e->expire_at_ms == 0) return kTtlNoExpiry;
  return std::max<int64_t>(0, e->expire_at_ms - Now());
}

Result<KeyInfo> StoreImpl::Info(std::string_view key) {
  if (Status s = CheckKey(key); !s.ok()) return s;
  std::optional<Entry> e = LiveEntry(KeyHash(key), key);
  if (!e) return Status::NotFound();
  KeyInfo i;
  i.value_size = e->value_size;
  i.expire_at_ms = e->expire_at_ms;
  i.created_ms = e->created_ms;
  i.last_access_ms = e->last_access_ms;
  i.reuse_count = e->reuse_count;
  i.generation = e->generation;
  return i;
}

uint64_t StoreImpl::Touch(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  const int64_t now = Now();
  for (auto k : keys) {
    if (!CheckKey(k).ok()) continue;
    const uint64_t hash = KeyHash(k);
    std::optional<Entry> e = LiveEntry(hash, k);
    if (!e) continue;
    if (index_.UpdateIf(hash, k, e->generation, e->checksum, [now](Entry& x) {
          x.reuse_count++;
          x.last_access_ms = now;
          x.dirty = true;
        })) {
      ++n;
      counters_.reuses++;
    }
  }
  return n;
}

ScanPage StoreImpl::Scan(uint64_t cursor, std::string_view pattern, size_t count) {
  ScanPage page;
  if (closed_) return page;
  const int64_t now = Now();
  const bool all = pattern.empty() || pattern == "*";
  page.next_cursor = index_.Scan(
      cursor, count,
      [&](const std::string& k, const Entry& e) {
        return !e.ExpiredAt(now) && (all || GlobMatch(pattern, k));
      },
      &page.keys);
  return page;
}

}  // namespace larder
