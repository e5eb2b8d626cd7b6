// Index: the in-memory map key -> Entry (where a value lives and how it has been used),
// rebuilt from the "meta" column family at open. Sharded by key hash; ordered by hash inside
// the whole index so that Scan can resume from a numeric cursor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format.h"

namespace larder {

struct Entry {
  uint64_t generation = 0;
  uint64_t value_size = 0;
  uint64_t checksum = 0;
  int64_t expire_at_ms = 0;  // 0 = none
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  uint32_t reuse_count = 0;  // reuses since written or last kept by eviction
  bool dirty = false;        // reuse fields changed since the MetaRecord was written

  bool ExpiredAt(int64_t now) const { return expire_at_ms != 0 && expire_at_ms <= now; }
  // The same stored version of a key (an overwrite or a move changes one of these).
  bool SameVersion(uint64_t gen, uint64_t sum) const {
    return generation == gen && checksum == sum;
  }
  bool SameVersion(const Entry& o) const { return SameVersion(o.generation, o.checksum); }
  format::MetaRecord ToMeta() const;
  static Entry FromMeta(const format::MetaRecord& m);
};

uint64_t KeyHash(std::string_view key);

class Index {
 public:
  static constexpr int kShardBits = 6;
  static constexpr size_t kShards = size_t{1} << kShardBits;

  std::optional<Entry> Find(uint64_t hash, std::string_view key) const;
  void Upsert(uint64_t hash, std::string_view key, const Entry& e);
  // Removes the key only if its entry is still the version (generation, checksum) given.
  bool EraseIf(uint64_t hash, std::string_view key, uint64_t generation, uint64_t checksum);
  // Applies `fn` to the live entry of the same version; false if it changed or is gone.
  bool UpdateIf(uint64_t hash, std::string_view key, uint64_t generation, uint64_t checksum,
                const std::function<void(Entry&)>& fn);
  void Clear();
  // Removes every entry for which pred(key, entry) is true; returns how many.
  size_t RemoveIf(const std::function<bool(const std::string&, const Entry&)>& pred);

  // Calls fn(key, entry) for every entry, shard by shard, under the shard's lock.
  void ForEach(const std::function<void(const std::string&, Entry&)>& fn);

  // Keys with hash >= cursor, in hash order, up to about `count` examined entries (entries
  // with equal hashes are never split). `accept` filters. Returns the next cursor (0 = done).
  uint64_t Scan(uint64_t cursor, size_t count,
                const std::function<bool(const std::string&, const Entry&)>& accept,
                std::vector<std::string>* out) const;

 private:
  struct Key {
    uint64_t hash;
    std::string key;
  };
  struct Probe {
    uint64_t hash;
    std::string_view key;
  };
  struct Less {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      if (a.hash != b.hash) return a.hash < b.hash;
      return std::string_view(a.key) < std::string_view(b.key);
    }
  };
  struct Shard {
    mutable std::mutex mu;
    std::map<Key, Entry, Less> map;
  };
  static size_t ShardOf(uint64_t hash) { return hash >> (64 - kShardBits); }

  // Calls fn(shard, iterator) under the shard lock if the key holds that version.
  template <typename F>
  bool WithVersion(uint64_t hash, std::string_view key, uint64_t gen, uint64_t sum, F&& fn) {
    Shard& s = shards_[ShardOf(hash)];
    std::lock_guard lock(s.mu);
    auto it = s.map.find(Probe{hash, key});
    if (it == s.map.end() || !it->second.SameVersion(gen, sum)) return false;
    fn(s, it);
    return true;
  }

  Shard shards_[kShards];
};

}  // namespace larder
