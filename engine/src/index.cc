#include "index.h"

namespace larder {

format::MetaRecord Entry::ToMeta() const {
  format::MetaRecord m;
  m.generation = generation;
  m.value_size = value_size;
  m.checksum = checksum;
  m.expire_at_ms = expire_at_ms;
  m.created_ms = created_ms;
  m.last_access_ms = last_access_ms;
  m.reuse_count = reuse_count;
  return m;
}

Entry Entry::FromMeta(const format::MetaRecord& m) {
  Entry e;
  e.generation = m.generation;
  e.value_size = m.value_size;
  e.checksum = m.checksum;
  e.expire_at_ms = m.expire_at_ms;
  e.created_ms = m.created_ms;
  e.last_access_ms = m.last_access_ms;
  e.reuse_count = m.reuse_count;
  return e;
}

uint64_t KeyHash(std::string_view key) {
  return format::Checksum(key);
}

std::optional<Entry> Index::Find(uint64_t hash, std::string_view key) const {
  const Shard& s = shards_[ShardOf(hash)];
  std::lock_guard lock(s.mu);
  auto it = s.map.find(Probe{hash, key});
  if (it == s.map.end()) return std::nullopt;
  return it->second;
}

void Index::Upsert(uint64_t hash, std::string_view key, const Entry& e) {
  Shard& s = shards_[ShardOf(hash)];
  std::lock_guard lock(s.mu);
  auto it = s.map.find(Probe{hash, key});
  if (it != s.map.end()) {
    it->second = e;
  } else {
    s.map.emplace(Key{hash, std::string(key)}, e);
  }
}

bool Index::EraseIf(uint64_t hash, std::string_view key, uint64_t generation, uint64_t checksum) {
  return WithVersion(hash, key, generation, checksum, [](Shard& s, auto it) { s.map.erase(it); });
}

bool Index::UpdateIf(uint64_t hash, std::string_view key, uint64_t generation, uint64_t checksum,
                     const std::function<void(Entry&)>& fn) {
  return WithVersion(hash, key, generation, checksum, [&](Shard&, auto it) { fn(it->second); });
}

void Index::Clear() {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    s.map.clear();
  }
}

size_t Index::RemoveIf(const std::function<bool(const std::string&, const Entry&)>& pred) {
  size_t n = 0;
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    n += std::erase_if(s.map, [&](const auto& kv) { return pred(kv.first.key, kv.second); });
  }
  return n;
}

void Index::ForEach(const std::function<void(const std::string&, Entry&)>& fn) {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    for (auto& [k, e] : s.map) fn(k.key, e);
  }
}

uint64_t Index::Scan(uint64_t cursor, size_t count,
                     const std::function<bool(const std::string&, const Entry&)>& accept,
                     std::vector<std::string>* out) const {
  if (count == 0) count = 1;
  size_t examined = 0;
  uint64_t last_hash = 0;
  for (size_t sh = ShardOf(cursor); sh < kShards; ++sh) {
    const Shard& s = shards_[sh];
    std::lock_guard lock(s.mu);
    auto it = s.map.lower_bound(Probe{cursor, std::string_view()});
    for (; it != s.map.end(); ++it) {
      // Stop between two distinct hashes once `count` entries were examined. The cursor is
      // never 0 then: a smaller-or-equal hash was examined before it.
      if (examined >= count && it->first.hash != last_hash) return it->first.hash;
      ++examined;
      last_hash = it->first.hash;
      if (accept(it->first.key, it->second)) out->push_back(it->first.key);
    }
  }
  return 0;
}

}  // namespace larder
