// The read paths of StoreImpl: one read of the value's bytes into the caller's memory, then
// XXH3 over them, checked against the index (which folds a hash of the key in, so the bytes
// are known to be this key's).
#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "format.h"
#include "larder/glob.h"
#include "store_impl.h"

namespace larder {

namespace {

constexpr uint64_t kMinDirectBytes = 64 * 1024;
// Below this a value is read with pread: its system call costs more than the copy it saves.
constexpr uint64_t kMinMappedBytes = 64 * 1024;

bool Aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % format::kValueAlign == 0;
}

// Where the value of `at` is stored, for a message: its blob file and offset, or the index
// record of its generation for a value stored inline.
std::string WhereStored(const Located& at) {
  if (at.entry.is_inline() || !at.seg.file) return "inline in " + at.seg.gen->cf->GetName();
  const std::string& path = at.seg.file->path();
  return path.substr(path.rfind('/') + 1) + " at offset " + std::to_string(at.entry.offset);
}

}  // namespace

Value::Value() = default;
Value::~Value() = default;
Value::Value(Value&&) noexcept = default;
Value& Value::operator=(Value&&) noexcept = default;

Status StoreImpl::ReadVerified(uint64_t hash, std::string_view key, const Located& at, char* buf,
                               bool allow_direct) {
  const Entry& e = at.entry;
  uint64_t sum = 0;
  Status read = Status::OK();
  if (e.is_inline()) {
    format::IndexRecord r;
    std::string bytes;
    if (!RecordMatches(hash, key, at, &r, &bytes)) return Status::NotFound();
    std::memcpy(buf, r.inline_value.data(), e.size);
    sum = format::Checksum(buf, e.size);
  } else {
    if (!at.seg.file) return Status::NotFound();
    const bool direct =
        allow_direct && options_.direct_reads && Aligned(buf) && e.size >= kMinDirectBytes;
    read = direct ? ReadDirectThenHash(*at.seg.file, e, buf, &sum)
                  : ReadCachedOrInPieces(*at.seg.file, e, buf, &sum);
  }
  return CheckRead(read, sum, key, e);
}

Status CheckRead(const Status& read, uint64_t sum, std::string_view key, const Entry& e) {
  if (!read.ok()) return Status::Corruption(read.message());
  if ((sum ^ format::KeyTag(key)) != e.check) return Status::Corruption("checksum mismatch");
  return Status::OK();
}

// A value the page cache holds is copied out of the file's mapping and hashed in the same pass
// (BlobFile::CopyCached); otherwise it is read through the page cache a piece at a time, each
// piece hashed while it is still in the CPU's cache, and for a cold value the disk reads ahead
// of the copy and hash.
Status StoreImpl::ReadCachedOrInPieces(BlobFile& f, const Entry& e, char* buf, uint64_t* sum) {
  constexpr size_t kPiece = 256 * 1024;
  format::ChecksumStream stream;
  if (options_.mapped_reads && e.size >= kMinMappedBytes) {
    Status mapped;
    if (f.CopyCached(e.offset, buf, e.size, &stream, &mapped)) {
      *sum = stream.Digest();
      return Status::OK();
    }
    if (!mapped.ok()) return mapped;
  }
  size_t done = 0;
  if (e.size > kPiece) {
    // A value not wholly cached has its reads queued first (Prefetch), so the disk works ahead
    // of the pieces; one already cached costs no more than this first piece.
    if (Status s = f.ReadFirstPiece(e.offset, e.size, buf, kPiece); !s.ok()) return s;
    stream.Update(buf, kPiece);
    done = kPiece;
  }
  while (done < e.size) {
    const size_t n = std::min<size_t>(kPiece, e.size - done);
    if (Status s = f.Read(e.offset + done, buf + done, n); !s.ok()) return s;
    stream.Update(buf + done, n);
    done += n;
  }
  *sum = stream.Digest();
  return Status::OK();
}

// O_DIRECT for the aligned body in one request (the disk's queue wants it whole), the
// unaligned tail through the page cache, then one hash over the result.
Status StoreImpl::ReadDirectThenHash(BlobFile& f, const Entry& e, char* buf, uint64_t* sum) {
  const uint64_t body = e.size / format::kValueAlign * format::kValueAlign;
  Status s = f.ReadDirect(e.offset, buf, body);
  if (s.ok()) s = f.Read(e.offset + body, buf + body, e.size - body);
  if (!s.ok()) return s;
  *sum = format::Checksum(buf, e.size);
  return Status::OK();
}

Status StoreImpl::OnBadValue(uint64_t hash, std::string_view key, const Located& at,
                             Status read_status) {
  std::string reason;
  Status removed;
  {
    std::lock_guard stripe(Stripe(hash));
    if (!StillIndexed(at)) return Status::NotFound("changed during read");  // replaced, evicted
    if (!RecordMatches(hash, key, at)) return Status::NotFound();           // another key's bytes
    counters_.corruptions++;
    reason = read_status.message() + " (" + WhereStored(at) + ")";
    // Read-only, the key stays (a miss at every read). Otherwise it goes: a corrupt value is a
    // miss from now on. If even the removal fails, reads keep finding the bad bytes and keep
    // answering a miss (counted and logged each time).
    if (options_.read_only) return Status::Corruption(reason);
    removed = RemoveLocked(hash, key, at);
  }
  if (!removed.ok()) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_,
                 "value of a %zu-byte key failed verification: %s; removing it failed: %s",
                 key.size(), reason.c_str(), removed.ToString().c_str());
    return Status::Corruption(reason);
  }
  rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_,
               "value of a %zu-byte key failed verification and was removed: %s", key.size(),
               reason.c_str());
  if (options_.listener) options_.listener->OnCorruptValue(key, reason);
  return Status::Corruption(reason);
}

Result<uint64_t> StoreImpl::ReadInto(uint64_t hash, std::string_view key, char* buf, size_t cap) {
  for (int attempt = 0;; ++attempt) {
    std::optional<Located> at = LookupFast(hash, key);
    if (!at) break;
    if (at->entry.size > cap) {
      return Status::InvalidArgument("buffer of " + std::to_string(cap) +
                                     " bytes is smaller than the value (" +
                                     std::to_string(at->entry.size) + " bytes)");
    }
    Status s = ReadVerified(hash, key, *at, buf, /*allow_direct=*/true);
    if (s.ok()) {
      MarkReused(at->entry);
      counters_.hits++;
      counters_.bytes_read += at->entry.size;
      return uint64_t{at->entry.size};
    }
    if (s.IsCorruption()) s = OnBadValue(hash, key, *at, s);
    // A version replaced while being read is read again, once.
    if (attempt == 0 && s.message() == "changed during read") continue;
    counters_.misses++;
    return Status::NotFound(s.IsCorruption() ? CorruptMissText() : "");
  }
  counters_.misses++;
  return Status::NotFound();
}

Result<uint64_t> StoreImpl::GetInto(std::string_view key, char* buf, size_t cap) {
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  return ReadInto(format::KeyHash(key), key, buf, cap);
}

Result<Value> StoreImpl::Get(std::string_view key) {
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::optional<Located> at = LookupFast(hash, key);
    if (!at) break;
    Value v;
    v.buf_.reset(new char[at->entry.size]);  // not zeroed: the read fills it
    Result<uint64_t> n = ReadInto(hash, key, v.buf_.get(), at->entry.size);
    if (n.ok()) {
      v.data_ = v.buf_.get();
      v.size_ = *n;
      return v;
    }
    if (!n.status().IsInvalidArgument()) return n.status();
    // Overwritten by a larger value since the lookup: size the buffer again.
  }
  counters_.misses++;
  return Status::NotFound();
}

bool StoreImpl::InMemory(std::string_view key, uint64_t max_bytes) {
  if (!CheckKey(key).ok()) return false;
  const uint64_t hash = format::KeyHash(key);
  size_t n = 0;
  std::optional<Located> at = LocateFirst(hash, &n);
  if (n != 1) return false;  // a second entry under the hash is told apart by reading records
  const Entry& e = at->entry;
  // An expired entry is removed by the read, which may read its record.
  if (e.ExpiredAt(NowMs()) || e.size > max_bytes || !at->seg.gen) return false;
  if (e.is_inline()) return RecordCached(hash, key, *at);
  return at->seg.file && at->seg.file->InMemory(e.offset, e.size, options_.mapped_reads);
}

bool StoreImpl::RecordCached(uint64_t hash, std::string_view key, const Located& at) {
  if (!at.seg.gen) return false;
  rocksdb::ReadOptions ro;
  ro.read_tier = rocksdb::kBlockCacheTier;  // Incomplete rather than a read from an SST file
  std::string record;
  const rocksdb::Status s = db_->Get(ro, at.seg.gen->cf, format::IndexKey(hash, key), &record);
  return s.ok() || s.IsNotFound();  // Incomplete: the block must be read from an SST file
}

std::vector<Result<Value>> StoreImpl::MultiGet(const std::vector<std::string_view>& keys) {
  NotePositions(keys);
  std::vector<Result<Value>> out;
  out.reserve(keys.size());
  for (auto k : keys) out.push_back(Get(k));
  return out;
}

std::vector<Result<uint64_t>> StoreImpl::MultiGetInto(const std::vector<std::string_view>& keys,
                                                      const std::vector<Buffer>& bufs) {
  std::vector<Result<uint64_t>> out(keys.size(), Status::InvalidArgument("not read"));
  Status refused = CheckOpen();  // once closed, the read pool is gone
  if (refused.ok() && bufs.size() != keys.size()) {
    refused = Status::InvalidArgument("MultiGetInto needs one buffer per key");
  }
  if (!refused.ok()) {
    std::fill(out.begin(), out.end(), refused);
    return out;
  }
  NotePositions(keys);
  read_pool_->ParallelFor(keys.size(),
                          [&](size_t i) { out[i] = GetInto(keys[i], bufs[i].data, bufs[i].cap); });
  return out;
}

uint64_t StoreImpl::Exists(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  for (auto k : keys) {
    if (CheckKey(k).ok() && LookupFast(format::KeyHash(k), k)) ++n;
  }
  return n;
}

uint64_t StoreImpl::PrefixCount(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  for (; n < keys.size(); ++n) {
    if (!CheckKey(keys[n]).ok()) return n;
    const uint64_t hash = format::KeyHash(keys[n]);
    std::optional<Located> at = LookupFast(hash, keys[n]);
    if (!at) break;
    NotePosition(at->entry, n, keys.size());
    if (demote_first_writes_) demotion_.Request(hash);
  }
  // The rest are what the caller will store, in this order; the ones it has already are used
  // by this request as much as the leading ones (LMCache stores the missing chunks and skips
  // those), so they are marked used: once the gap is stored, the next turn reads them all.
  for (size_t i = n; i < keys.size(); ++i) {
    if (!CheckKey(keys[i]).ok()) continue;
    const uint64_t hash = format::KeyHash(keys[i]);
    if (demote_first_writes_) demotion_.Request(hash);  // found, or about to be stored
    if (keys.size() < 2) break;
    if (std::optional<Located> at = LookupFast(hash, keys[i])) {
      NotePosition(at->entry, i, keys.size());
      MarkUsed(at->entry);
    } else {
      missing_positions_.Note(hash, i);
    }
  }
  return n;
}

int64_t StoreImpl::Ttl(std::string_view key) {
  if (!CheckKey(key).ok()) return kTtlNoKey;
  const uint64_t hash = format::KeyHash(key);
  std::optional<Located> at = LookupFast(hash, key);
  if (!at) return kTtlNoKey;
  if (at->entry.expire_at_ms == 0) return kTtlNoExpiry;
  return std::max<int64_t>(0, ExactExpiry(hash, key, *at) - NowMs());
}

Result<KeyInfo> StoreImpl::Info(std::string_view key) {
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  std::optional<Located> at = LookupFast(hash, key);
  if (!at) return Status::NotFound();
  KeyInfo i;
  i.value_size = at->entry.size;
  i.expire_at_ms = at->entry.expire_at_ms == 0 ? 0 : ExactExpiry(hash, key, *at);
  i.last_access_ms = at->entry.last_access_ms;
  i.reuse_count = at->entry.reuse;
  i.generation = at->seg.gen ? at->seg.gen->id : 0;
  return i;
}

uint64_t StoreImpl::Touch(const std::vector<std::string_view>& keys) {
  uint64_t n = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string_view k = keys[i];
    if (!CheckKey(k).ok()) continue;
    std::optional<Located> at = LookupFast(format::KeyHash(k), k);
    if (!at) continue;
    NotePosition(at->entry, i, keys.size());
    MarkReused(at->entry);
    ++n;
  }
  return n;
}

ScanPage StoreImpl::Scan(uint64_t cursor, std::string_view pattern, size_t count) {
  ScanPage page;
  if (closed_) return page;
  std::vector<Entry> entries;
  page.next_cursor = index_.Scan(cursor, count, &entries);
  const int64_t now = NowMs();
  const bool all = pattern.empty() || pattern == "*";
  for (const Entry& e : entries) {
    if (e.ExpiredAt(now)) continue;
    Located at = Locate(e);
    if (!at.seg.gen) continue;  // evicted since
    // The key is in the generation's records, under its hash.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), at.seg.gen->cf));
    const std::string prefix = format::IndexKey(e.hash, "");
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      auto ik = format::ParseIndexKey(it->key().ToStringView());
      auto r = format::IndexRecord::Decode(it->value().ToStringView());
      if (!ik || !r || !RecordIs(*r, ik->second, at)) continue;
      if (all || GlobMatch(pattern, ik->second)) page.keys.emplace_back(ik->second);
      break;
    }
  }
  return page;
}

}  // namespace larder
