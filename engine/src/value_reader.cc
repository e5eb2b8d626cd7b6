// OpenValue: a sequential verified read (larder::ValueReader) for callers that move a value on
// in pieces, hashing each piece as it is read and checking the whole at Finish(). A value in a
// blob file keeps its range from being punched while the reader lives (LookupHeld), one whose
// write is still pending is copied out of its buffer at open (a replacement may drop that
// buffer unwritten), and one the page cache does not hold has the reads of the rest queued at
// the first Read (BlobFile::ReadFirstPiece), so the disk works ahead of the pieces. So a value
// replaced or evicted while it is read is still read whole: Finish fails only for bytes that are
// damaged or cannot be read.
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <cstring>

#include "format.h"
#include "store_impl.h"

namespace larder {

namespace {

class ValueReaderImpl final : public ValueReader {
 public:
  // `held`: the value's bytes in memory (an inline value's index record, or the copy of a
  // pending write), or empty to read them from the file.
  ValueReaderImpl(StoreImpl* store, uint64_t hash, std::string_view key, Located at,
                  std::string held, std::shared_ptr<const void> hold)
      : store_(store),
        hash_(hash),
        key_(key),
        at_(std::move(at)),
        held_(std::move(held)),
        held_at_(at_.entry.is_inline() ? format::IndexRecord::kInlineOffset : 0),
        hold_(std::move(hold)),
        state_(XXH3_createState()) {
    XXH3_64bits_reset(state_);
  }
  ~ValueReaderImpl() override { XXH3_freeState(state_); }

  uint64_t size() const override { return at_.entry.size; }
  uint64_t remaining() const override { return at_.entry.size - pos_; }

  Status Read(char* buf, size_t n) override {
    if (n > remaining()) return Status::InvalidArgument("read past the end of the value");
    if (!read_.ok()) return Status::Corruption("an earlier read failed");
    if (!held_.empty()) {
      std::memcpy(buf, held_.data() + held_at_ + pos_, n);
    } else if (Status s = ReadFile(buf, n); !s.ok()) {
      read_ = s;
      return Status::Corruption(s.message());
    }
    XXH3_64bits_update_dispatch(state_, buf, n);
    pos_ += n;
    return Status::OK();
  }

  Status Finish() override {
    if (read_.ok() && remaining() != 0) {
      return Status::InvalidArgument("Finish before the last byte was read");
    }
    return store_->FinishRead(hash_, key_, at_,
                              CheckRead(read_, XXH3_64bits_digest(state_), key_, at_.entry));
  }

 private:
  // The first read of a value longer than it queues the reads of the rest unless the page cache
  // holds that first piece (as Get does), so the disk works ahead of the reads that follow.
  Status ReadFile(char* buf, size_t n) const {
    const BlobFile& f = *at_.seg.file;
    const Entry& e = at_.entry;
    if (pos_ != 0 || n == e.size) return f.Read(e.offset + pos_, buf, n);
    return f.ReadFirstPiece(e.offset, e.size, buf, n);
  }

  StoreImpl* const store_;
  const uint64_t hash_;
  const std::string key_;
  const Located at_;
  const std::string held_;                  // see the constructor
  const size_t held_at_;                    // where the value starts in held_
  const std::shared_ptr<const void> hold_;  // a file value's range, unpunched while read
  XXH3_state_t* const state_;
  uint64_t pos_ = 0;
  Status read_ = Status::OK();  // the first failed Read's error
};

}  // namespace

Result<std::unique_ptr<ValueReader>> StoreImpl::OpenValue(std::string_view key) {
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  std::shared_ptr<const void> hold;
  std::optional<Located> at;
  std::string held;
  for (int attempt = 0; attempt < kLookupAttempts; ++attempt) {
    at = LookupHeld(hash, key, &hold);
    held.clear();
    if (at && at->entry.is_inline()) {
      if (!RecordMatches(hash, key, *at, nullptr, &held)) at.reset();  // another key's
    } else if (at && at->seg.file && at->seg.file->IsPending(at->entry.offset, at->entry.size)) {
      held.resize(at->entry.size);
      if (!at->seg.file->ReadPending(at->entry.offset, held.data(), held.size())) {
        held.clear();
        // Written since (in the file, held), or dropped: then replaced first, so look again.
        if (!StillIndexed(*at)) {
          at.reset();
          continue;
        }
      }
    }
    break;
  }
  if (!at || (!at->entry.is_inline() && !at->seg.file)) {
    counters_.misses++;
    return Status::NotFound();
  }
  return std::unique_ptr<ValueReader>(
      new ValueReaderImpl(this, hash, key, std::move(*at), std::move(held), std::move(hold)));
}

Result<Store::FileRange> StoreImpl::GetFileRange(std::string_view key) {
  if (Status s = CheckLookupKey(key); !s.ok()) return s;
  const uint64_t hash = format::KeyHash(key);
  // Held from before the hash until the caller has sent the range: a range freed in place
  // (a replaced or evicted value, see BlobFile::Punch) waits for it, so what is sent is what
  // was verified.
  std::shared_ptr<const void> hold;
  std::optional<Located> at = LookupHeld(hash, key, &hold);
  if (!at) {
    counters_.misses++;
    return Status::NotFound();
  }
  const Entry& e = at->entry;
  BlobFile* f = at->seg.file.get();
  if (e.is_inline() || !f || f->IsPending(e.offset, e.size)) {
    return Status::NotSupported("the value is not in a file");
  }
  // Hashed where the bytes lie in the page cache (a cold value is read into it first), so the
  // caller's sendfile finds them there.
  uint64_t hash_read = 0;
  Status s = f->HashInPlace(e.offset, e.size, options_.mapped_reads, &hash_read);
  if (Status fin = FinishRead(hash, key, *at, CheckRead(s, hash_read, key, e)); !fin.ok()) {
    return fin.IsCorruption() ? Status::NotFound(CorruptMissText()) : Status::NotFound();
  }
  return FileRange{f->fd(), e.offset, e.size, std::move(hold)};
}

void StoreImpl::Prefetch(const std::vector<std::string_view>& keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string_view key = keys[i];
    if (!CheckKey(key).ok()) continue;
    std::optional<Located> at = LookupFast(format::KeyHash(key), key);
    if (!at) continue;
    NotePosition(at->entry, i, keys.size());
    if (at->entry.is_inline() || !at->seg.file) continue;
    at->seg.file->Prefetch(at->entry.offset, at->entry.size);  // a pending range reads nothing
  }
}

Status StoreImpl::FinishRead(uint64_t hash, std::string_view key, const Located& at,
                             const Status& read) {
  if (read.ok()) {
    MarkReused(at.entry);
    counters_.hits++;
    counters_.bytes_read += at.entry.size;
    return Status::OK();
  }
  counters_.misses++;
  Status s = OnBadValue(hash, key, at, read);
  return s.IsCorruption() ? s : Status::Corruption("the value read was not this key's");
}

}  // namespace larder
