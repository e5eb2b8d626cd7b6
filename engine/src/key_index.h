// KeyIndex: the in-memory index, key hash -> where the value lives, in 40 bytes per key.
//
// It keeps no keys: an entry is found by the key's 64-bit KeyHash, and the full key stays on
// disk (in the generation's RocksDB index records). Two keys with the same KeyHash get two
// entries; the store tells them apart by the stored key (write paths) or by `check`, which folds
// a second hash of the key into the value's checksum (read paths). See docs/architecture.md.
//
// Layout: 256 shards by the top 8 bits of the hash, each an array of 40-byte slots kept sorted
// by hash with linear probing and no wrap-around ("ordered hashing", Amble & Knuth): an entry
// sits at or after its home slot (the hash scaled to the array), with no empty slot in between.
// Lookups stop at the first larger hash or empty slot; deletion shifts the run after it back;
// iteration in slot order is iteration in hash order, which is SCAN's cursor order. Shards grow
// by 1.25x (2x while small) above 90% load, so the index costs 44-56 bytes per key.
//
// Thread-safety: every method locks the shards it touches; callbacks run under a shard lock and
// must not call back into the index.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace larder {

// One entry, unpacked. Times are Unix ms; sizes in bytes.
struct Entry {
  // Flag bits.
  static constexpr uint8_t kInline = 1;  // the value lives in its index record
  static constexpr uint8_t kDirty = 2;   // reuse/access fields changed since the record was written

  uint64_t hash = 0;         // format::KeyHash(key), never 0
  uint64_t check = 0;        // value_hash ^ format::KeyTag(key)
  uint32_t seg = 0;          // the segment (blob file, or a generation's inline values)
  uint64_t offset = 0;       // in the blob file; a multiple of format::kValueAlign
  uint32_t size = 0;         // value bytes
  int64_t expire_at_ms = 0;  // 0 = none; kFarExpiry = later than the index can hold
  int64_t last_access_ms = 0;
  uint16_t access_gen = 0;  // low 16 bits of the head generation at the last write/hit/touch
  uint8_t reuse = 0;        // hits + touches since written or last kept (saturates at 255)
  uint8_t flags = 0;
  // The largest index at which an ordered key list (two keys or more) found the key, or named
  // it missing before its Put: its depth in a prefix, 0 = the first chunk. Eviction drops higher
  // positions first (a prefix is useless past its first missing chunk). kNoPosition until a list
  // names it; not persisted (a reopened store starts with none).
  uint8_t position = kNoPosition;

  static constexpr uint8_t kNoPosition = 255;  // list positions saturate below it
  // An expiry later than this (May 2109) is kept as kFarExpiry (the exact time is in the index
  // record).
  static constexpr int64_t kMaxExpiry = (int64_t{1} << 42) - 2;
  static constexpr int64_t kFarExpiry = (int64_t{1} << 42) - 1;

  bool ExpiredAt(int64_t now) const { return expire_at_ms != 0 && expire_at_ms <= now; }
  bool is_inline() const { return flags & kInline; }
  // The same stored version of a key (an overwrite, a move or a delete changes one of these).
  bool SameVersion(const Entry& o) const {
    return hash == o.hash && seg == o.seg && offset == o.offset && check == o.check;
  }
};

class KeyIndex {
 public:
  static constexpr int kShardBits = 8;
  static constexpr size_t kShards = size_t{1} << kShardBits;
  static constexpr uint32_t kMaxSeg = (1u << 24) - 1;
  static constexpr uint64_t kMaxOffset = (uint64_t{1} << 40) - 1;  // 1 TiB per blob file

  KeyIndex();
  ~KeyIndex();
  KeyIndex(const KeyIndex&) = delete;
  KeyIndex& operator=(const KeyIndex&) = delete;

  // Calls fn(const Entry&) for every entry with `hash`, in order, under the shard lock, until
  // fn returns true. Returns how many entries were visited.
  size_t ForHash(uint64_t hash, const std::function<bool(const Entry&)>& fn) const;
  // The first entry with `hash` into *out; returns how many entries have that hash (0: none).
  size_t Find(uint64_t hash, Entry* out) const;
  // Whether the entry of version `e` is in the index.
  bool Contains(const Entry& e) const;
  // Adds an entry (another entry with the same hash may exist: a different key).
  void Insert(const Entry& e);
  // Replaces the entry of version `old` by `now` (same hash). False if `old` is gone.
  bool Replace(const Entry& old, const Entry& now);
  // Removes the entry of version `e`. False if it is gone.
  bool Erase(const Entry& e);
  // Applies fn to the entry of version `e` under the shard lock; false if it is gone. fn must
  // not change the fields SameVersion compares.
  bool Update(const Entry& e, const std::function<void(Entry&)>& fn);
  // Calls fn for every entry, shard by shard under each shard's lock; fn may change the entry
  // (not its version fields) and returns false to remove it.
  void ForEach(const std::function<bool(Entry&)>& fn);
  // ForEach over shards [first, first + n) only (maintenance walks the index a slice at a time).
  void ForEachInShards(size_t first, size_t n, const std::function<bool(Entry&)>& fn);
  // Entries with hash >= cursor in hash order, about `count` of them (entries with equal
  // hashes are never split); `out` gets copies. Returns the next cursor (0 = done).
  uint64_t Scan(uint64_t cursor, size_t count, std::vector<Entry>* out) const;
  // Removes everything.
  void Clear();
  // Shrinks every shard to its entries (after a bulk load).
  void ShrinkToFit();

  size_t size() const;
  // Sum of the entries' value sizes.
  uint64_t ValueBytes() const;
  // The entries that have an expiry: how many, and the sum of their expiry times.
  struct ExpiryTotals {
    uint64_t count = 0;
    unsigned __int128 sum_ms = 0;
    ExpiryTotals& operator+=(const ExpiryTotals& o) {
      count += o.count;
      sum_ms += o.sum_ms;
      return *this;
    }
  };
  ExpiryTotals Expiries() const;
  // Bytes of memory the slots occupy.
  uint64_t MemoryBytes() const;

 private:
  struct Slot;
  struct Shard;
  // The sum (operator+=) of of_shard(shard) over every shard, each read under its lock.
  template <typename Fn>
  auto SumOverShards(Fn of_shard) const;
  static size_t ShardOf(uint64_t hash) { return hash >> (64 - kShardBits); }

  std::unique_ptr<Shard[]> shards_;
};

// The places of keys an ordered key list named while they were missing (LMCache looks a prefix
// up, then stores the chunks it lacked): the Put that writes such a key takes its place from
// here, so a chunk has its depth before any list finds it. A fixed table by hash; a key sharing
// a slot with a newer one loses its place.
class MissingPositions {
 public:
  void Note(uint64_t hash, size_t index);
  // The place noted for `hash` (Entry::kNoPosition if none), forgotten.
  uint8_t Take(uint64_t hash);

 private:
  static constexpr size_t kSlots = size_t{1} << 14;  // 128 KiB
  // (hash with its low 8 bits cleared) | (place + 1); 0 = empty.
  std::array<std::atomic<uint64_t>, kSlots> slots_{};
};

}  // namespace larder
