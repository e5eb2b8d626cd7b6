// Finding a key: the in-memory index by hash, the stored index record when two keys share a
// hash or a write must be sure whose entry it replaces.
#include "format.h"
#include "store_impl.h"
#include "sync_point.h"

namespace larder {

Located StoreImpl::Locate(const Entry& e) const {
  return Located{e, gens_->SegmentOf(e.seg)};
}

bool StoreImpl::StillIndexed(const Located& at) const {
  if (!index_.Contains(at.entry)) return false;
  const Generations::Segment now = gens_->SegmentOf(at.entry.seg);
  return now.gen == at.seg.gen && now.file == at.seg.file;
}

void StoreImpl::LeftIndex(const Located& at, const Generation* dropping) {
  if (!at.seg.gen) return;
  at.seg.gen->live--;
  if (!punch_ || !at.seg.file) return;
  if (dropping && at.seg.file->header().generation == dropping->id) return;
  gens_->Punch(Generation::Extent{at.seg.file, at.entry.offset, at.entry.size});
}

std::optional<Located> StoreImpl::LocateFirst(uint64_t hash, size_t* count) {
  std::optional<Located> first;
  // The segment is resolved while the entry is in the index, so its id cannot have been reused.
  *count = index_.ForHash(hash, [&](const Entry& e) {
    if (!first) first = Locate(e);
    return false;
  });
  return first;
}

std::optional<Located> StoreImpl::LookupFast(uint64_t hash, std::string_view key) {
  size_t n = 0;
  std::optional<Located> first = LocateFirst(hash, &n);
  if (n > 1) first = LookupExact(hash, key);
  if (first && first->entry.ExpiredAt(NowMs())) {
    RemoveExpired(first->entry);  // lazily, as Redis does on access
    return std::nullopt;
  }
  return first;
}

std::optional<Located> StoreImpl::LookupHeld(uint64_t hash, std::string_view key,
                                             std::shared_ptr<const void>* hold) {
  for (int attempt = 0; attempt < kLookupAttempts; ++attempt) {
    std::optional<Located> at = LookupFast(hash, key);
    if (!at || at->entry.is_inline() || !at->seg.file) return at;
    testing::SyncPoint("LookupHeld:BeforeHold");
    *hold = BlobFile::HoldRange(at->seg.file, at->entry.offset, at->entry.size);
    // A replacement or eviction takes the entry out of the index before it punches the range:
    // one that has not done so yet finds this hold when it punches.
    if (index_.Contains(at->entry)) return at;
    hold->reset();
  }
  return std::nullopt;
}

bool StoreImpl::RemoveExpired(const Entry& e) {
  // Removed from the index only: the record stays in its generation, where an expired record
  // is ignored at open and leaves with the generation. Under the stripe the entry cannot
  // leave the index (nor its generation be dropped) between the lookup and the erase.
  std::optional<std::string> key;
  {
    std::lock_guard stripe(Stripe(e.hash));
    std::optional<Located> at;
    index_.ForHash(e.hash, [&](const Entry& x) {
      if (x.SameVersion(e)) at = Locate(x);
      return bool(at);
    });
    if (!at || !at->seg.gen) return false;
    if (options_.listener) key = KeyOf(*at);
    if (!index_.Erase(e)) return false;
    LeftIndex(*at);
    counters_.expired_keys++;
  }
  if (key) options_.listener->OnExpired(*key);
  return true;
}

std::optional<std::string> StoreImpl::KeyOf(const Located& at) {
  if (!at.seg.gen) return std::nullopt;
  // Index keys start with the key's hash: the records of every key sharing it are adjacent.
  const std::string prefix = format::IndexKey(at.entry.hash, {});
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, at.seg.gen->cf));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    auto ik = format::ParseIndexKey(it->key().ToStringView());
    auto rec = format::IndexRecord::Decode(it->value().ToStringView());
    if (ik && rec && RecordIs(*rec, ik->second, at)) return std::string(ik->second);
  }
  return std::nullopt;
}

std::optional<Located> StoreImpl::LookupExact(uint64_t hash, std::string_view key) {
  std::vector<Located> candidates;
  index_.ForHash(hash, [&](const Entry& e) {
    candidates.push_back(Locate(e));
    return false;
  });
  for (const Located& c : candidates) {
    if (RecordMatches(hash, key, c)) return c;
  }
  return std::nullopt;
}

bool RecordIs(const format::IndexRecord& r, std::string_view key, const Located& at) {
  if (!at.seg.gen || r.is_inline != at.entry.is_inline()) return false;
  // A blob value's record names its file, which an entry kept in place borrowed from an
  // earlier generation; an inline one names its own generation.
  const uint64_t file_gen = at.seg.file ? at.seg.file->header().generation : at.seg.gen->id;
  if (r.generation != file_gen) return false;
  if (!r.is_inline && (r.partition != at.seg.partition || r.offset != at.entry.offset)) {
    return false;
  }
  return (r.value_hash ^ format::KeyTag(key)) == at.entry.check;
}

bool StoreImpl::RecordMatches(uint64_t hash, std::string_view key, const Located& at,
                              format::IndexRecord* record, std::string* bytes) {
  if (!at.seg.gen) return false;
  std::string local;
  std::string* buf = bytes ? bytes : &local;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), at.seg.gen->cf, format::IndexKey(hash, key), buf);
  if (!s.ok()) return false;
  std::optional<format::IndexRecord> r = format::IndexRecord::Decode(*buf);
  if (!r || !RecordIs(*r, key, at)) return false;
  if (record) *record = *r;
  return true;
}

uint16_t StoreImpl::HeadGen() const {
  return static_cast<uint16_t>(gens_->head_id());
}

void StoreImpl::MarkReused(const Entry& e) {
  if (!MarkUsed(e, /*reuse=*/true)) return;
  counters_.reuses++;
  // Counted towards closing the head, which the next write does (a read never waits on it).
  if (rotate_on_hits_) hit_bytes_.fetch_add(e.size, std::memory_order_relaxed);
}

bool StoreImpl::MarkUsed(const Entry& e, bool reuse) {
  const int64_t now = NowMs();
  const uint16_t gen = HeadGen();
  return index_.Update(e, [&](Entry& x) {
    if (reuse && x.reuse < 255) x.reuse++;
    x.last_access_ms = now;
    x.access_gen = gen;
    x.flags |= Entry::kDirty;
  });
}

void StoreImpl::NotePosition(const Entry& e, size_t index, size_t list_size) {
  if (list_size < 2) return;
  const auto pos = static_cast<uint8_t>(std::min<size_t>(index, Entry::kNoPosition - 1));
  // The largest place seen: a chunk keyed by its prefix's hash always sits at the same depth,
  // and a list that starts past the head (one pipelined tile of a batch) only understates it.
  // Not marked dirty: positions live in memory only.
  index_.Update(e, [&](Entry& x) {
    if (x.position == Entry::kNoPosition || x.position < pos) x.position = pos;
  });
}

void StoreImpl::NotePositions(const std::vector<std::string_view>& keys) {
  if (keys.size() < 2) return;  // spares the lookups
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!CheckKey(keys[i]).ok()) continue;
    const uint64_t hash = format::KeyHash(keys[i]);
    if (std::optional<Located> at = LookupFast(hash, keys[i])) {
      NotePosition(at->entry, i, keys.size());
    } else {
      missing_positions_.Note(hash, i);
    }
  }
}

int64_t StoreImpl::ExactExpiry(uint64_t hash, std::string_view key, const Located& at) {
  if (at.entry.expire_at_ms != Entry::kFarExpiry) return at.entry.expire_at_ms;
  format::IndexRecord r;
  return RecordMatches(hash, key, at, &r) ? r.expire_at_ms : Entry::kFarExpiry;
}

}  // namespace larder
