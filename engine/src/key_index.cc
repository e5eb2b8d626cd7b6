#include "key_index.h"

#include <algorithm>

namespace larder {

namespace {

// Access times are kept in seconds since 2020-01-01 (32 bits: until 2156).
constexpr int64_t kAccessEpochMs = 1577836800000;
// Expiries take the low 42 bits of a slot's meta word (Entry::kFarExpiry is all ones).
constexpr int kExpiryBits = 42;
constexpr uint64_t kExpiryMask = (uint64_t{1} << kExpiryBits) - 1;
static_assert(Entry::kFarExpiry == static_cast<int64_t>(kExpiryMask));

}  // namespace

// 40 bytes. loc = seg (24 bits) | offset / kValueAlign (28) | reuse (8) | position's high bits
// (2) | flags (2); meta = expiry ms (42) | position's low bits (6) | access_gen (16).
struct KeyIndex::Slot {
  uint64_t hash;
  uint64_t check;
  uint64_t loc;
  uint32_t size;
  uint32_t access_s;
  uint64_t meta;

  static Slot Pack(const Entry& e) {
    Slot s;
    s.hash = e.hash;
    s.check = e.check;
    s.loc = (uint64_t{e.seg} << 40) | ((e.offset >> 12) << 12) | (uint64_t{e.reuse} << 4) |
            (static_cast<uint64_t>(e.position >> 6) << 2) | (e.flags & 0x3);
    s.size = e.size;
    int64_t secs =
        e.last_access_ms > kAccessEpochMs ? (e.last_access_ms - kAccessEpochMs) / 1000 : 0;
    s.access_s = static_cast<uint32_t>(std::min<int64_t>(secs, UINT32_MAX));
    uint64_t exp = static_cast<uint64_t>(e.expire_at_ms > Entry::kMaxExpiry
                                             ? Entry::kFarExpiry
                                             : std::max<int64_t>(0, e.expire_at_ms));
    s.meta = exp | (uint64_t{e.position & 63u} << kExpiryBits) | (uint64_t{e.access_gen} << 48);
    return s;
  }

  Entry Unpack() const {
    Entry e;
    e.hash = hash;
    e.check = check;
    e.seg = static_cast<uint32_t>(loc >> 40);
    e.offset = ((loc >> 12) & ((uint64_t{1} << 28) - 1)) << 12;
    e.reuse = static_cast<uint8_t>(loc >> 4);
    e.flags = static_cast<uint8_t>(loc & 0x3);
    e.size = size;
    e.last_access_ms = kAccessEpochMs + int64_t{access_s} * 1000;
    e.expire_at_ms = static_cast<int64_t>(meta & kExpiryMask);
    e.position = static_cast<uint8_t>(((loc >> 2) & 3) << 6 | ((meta >> kExpiryBits) & 63));
    e.access_gen = static_cast<uint16_t>(meta >> 48);
    return e;
  }

  bool SameVersion(const Entry& e) const {
    return hash == e.hash && check == e.check && (loc >> 12) == Pack(e).loc >> 12;
  }
};
struct KeyIndex::Shard {
  static_assert(sizeof(Slot) == 40, "the index promises 40 bytes per slot");
  static constexpr size_t kTail = 64;  // slots past the last home, so runs need no wrap-around

  mutable std::mutex mu;
  std::unique_ptr<Slot[]> slots;
  size_t cap = 0;  // home slots
  size_t len = 0;  // cap + kTail
  size_t count = 0;
  uint64_t bytes = 0;                // sum of the entries' sizes
  size_t expiring = 0;               // entries with an expiry
  unsigned __int128 expiry_sum = 0;  // sum of their expiry times (ms)

  static uint64_t ExpiryOf(const Slot& s) { return s.meta & kExpiryMask; }
  // Counts a slot into (Add) or out of (Sub) the shard's totals.
  void Add(const Slot& s) {
    ++count;
    bytes += s.size;
    if (uint64_t exp = ExpiryOf(s)) {
      ++expiring;
      expiry_sum += exp;
    }
  }
  void Sub(const Slot& s) {
    --count;
    bytes -= s.size;
    if (uint64_t exp = ExpiryOf(s)) {
      --expiring;
      expiry_sum -= exp;
    }
  }
  // Overwrites an occupied slot, keeping the totals.
  void Set(size_t pos, const Slot& s) {
    Sub(slots[pos]);
    Add(s);
    slots[pos] = s;
  }

  size_t Home(uint64_t hash) const {
    return static_cast<size_t>((static_cast<unsigned __int128>(hash << kShardBits) * cap) >> 64);
  }
  // The first slot at or after hash's home holding no smaller hash (or empty, or len).
  size_t LowerBound(uint64_t hash) const {
    if (len == 0) return 0;
    size_t pos = Home(hash);
    while (pos < len && slots[pos].hash != 0 && slots[pos].hash < hash) ++pos;
    return pos;
  }
  // Position of the slot of version e, or len.
  size_t FindVersion(const Entry& e) const {
    for (size_t i = LowerBound(e.hash); i < len && slots[i].hash == e.hash; ++i) {
      if (slots[i].SameVersion(e)) return i;
    }
    return len;
  }
  // Rebuilds with `new_cap` home slots; false if the entries do not fit (then nothing changed).
  bool Rebuild(size_t new_cap) {
    Shard next;
    next.cap = new_cap;
    next.len = new_cap + kTail;
    next.slots.reset(new Slot[next.len]());
    size_t at = 0;
    for (size_t i = 0; i < len; ++i) {
      if (slots[i].hash == 0) continue;
      at = std::max(at, next.Home(slots[i].hash));
      if (at >= next.len) return false;
      next.slots[at++] = slots[i];
    }
    slots = std::move(next.slots);
    cap = next.cap;
    len = next.len;
    return true;
  }
  void Grow() {
    size_t want = cap < 1024 ? std::max<size_t>(16, cap * 2) : cap + cap / 4;
    while (!Rebuild(want)) want += want / 2;
  }
  void Insert(const Slot& s) {
    if ((count + 1) * 10 > cap * 9) Grow();
    for (;;) {
      size_t pos = LowerBound(s.hash);
      size_t end = pos;
      while (end < len && slots[end].hash != 0) ++end;
      if (end == len) {
        Grow();
        continue;
      }
      std::memmove(&slots[pos + 1], &slots[pos], (end - pos) * sizeof(Slot));
      slots[pos] = s;
      Add(s);
      return;
    }
  }
  void EraseAt(size_t pos) {
    Sub(slots[pos]);
    size_t j = pos + 1;
    for (; j < len && slots[j].hash != 0 && Home(slots[j].hash) < j; ++j) {
      slots[j - 1] = slots[j];
    }
    slots[j - 1] = Slot{};
  }
};

KeyIndex::KeyIndex() : shards_(new Shard[kShards]) {}
KeyIndex::~KeyIndex() = default;

size_t KeyIndex::ForHash(uint64_t hash, const std::function<bool(const Entry&)>& fn) const {
  const Shard& s = shards_[ShardOf(hash)];
  std::lock_guard lock(s.mu);
  size_t n = 0;
  for (size_t i = s.LowerBound(hash); i < s.len && s.slots[i].hash == hash; ++i) {
    ++n;
    if (fn(s.slots[i].Unpack())) break;
  }
  return n;
}

size_t KeyIndex::Find(uint64_t hash, Entry* out) const {
  const Shard& s = shards_[ShardOf(hash)];
  std::lock_guard lock(s.mu);
  size_t i = s.LowerBound(hash), n = 0;
  for (; i + n < s.len && s.slots[i + n].hash == hash; ++n) {
  }
  if (n > 0) *out = s.slots[i].Unpack();
  return n;
}

bool KeyIndex::Contains(const Entry& e) const {
  const Shard& s = shards_[ShardOf(e.hash)];
  std::lock_guard lock(s.mu);
  return s.FindVersion(e) != s.len;
}

void KeyIndex::Insert(const Entry& e) {
  Shard& s = shards_[ShardOf(e.hash)];
  std::lock_guard lock(s.mu);
  s.Insert(Slot::Pack(e));
}

bool KeyIndex::Replace(const Entry& old, const Entry& now) {
  Shard& s = shards_[ShardOf(old.hash)];
  std::lock_guard lock(s.mu);
  size_t pos = s.FindVersion(old);
  if (pos == s.len) return false;
  s.Set(pos, Slot::Pack(now));
  return true;
}

bool KeyIndex::Erase(const Entry& e) {
  Shard& s = shards_[ShardOf(e.hash)];
  std::lock_guard lock(s.mu);
  size_t pos = s.FindVersion(e);
  if (pos == s.len) return false;
  s.EraseAt(pos);
  return true;
}

bool KeyIndex::Update(const Entry& e, const std::function<void(Entry&)>& fn) {
  Shard& s = shards_[ShardOf(e.hash)];
  std::lock_guard lock(s.mu);
  size_t pos = s.FindVersion(e);
  if (pos == s.len) return false;
  Entry x = s.slots[pos].Unpack();
  fn(x);
  s.Set(pos, Slot::Pack(x));
  return true;
}

void KeyIndex::ForEach(const std::function<bool(Entry&)>& fn) {
  ForEachInShards(0, kShards, fn);
}

void KeyIndex::ForEachInShards(size_t first, size_t n, const std::function<bool(Entry&)>& fn) {
  for (size_t sh = first; sh < kShards && sh < first + n; ++sh) {
    Shard& s = shards_[sh];
    std::lock_guard lock(s.mu);
    for (size_t i = 0; i < s.len;) {
      if (s.slots[i].hash == 0) {
        ++i;
        continue;
      }
      Entry x = s.slots[i].Unpack();
      if (!fn(x)) {
        s.EraseAt(i);  // the next entry may have moved into slot i: look at it again
        continue;
      }
      s.Set(i++, Slot::Pack(x));
    }
  }
}

uint64_t KeyIndex::Scan(uint64_t cursor, size_t count, std::vector<Entry>* out) const {
  if (count == 0) count = 1;
  size_t examined = 0;
  uint64_t last = 0;
  for (size_t sh = ShardOf(cursor); sh < kShards; ++sh) {
    const Shard& s = shards_[sh];
    std::lock_guard lock(s.mu);
    for (size_t i = sh == ShardOf(cursor) ? s.LowerBound(cursor) : 0; i < s.len; ++i) {
      const Slot& slot = s.slots[i];
      if (slot.hash == 0) continue;
      // Stop between two distinct hashes once `count` entries were examined; never 0, since
      // hashes are never 0.
      if (examined >= count && slot.hash != last) return slot.hash;
      ++examined;
      last = slot.hash;
      out->push_back(slot.Unpack());
    }
  }
  return 0;
}

void KeyIndex::Clear() {
  for (size_t sh = 0; sh < kShards; ++sh) {
    Shard& s = shards_[sh];
    std::lock_guard lock(s.mu);
    s.slots.reset();
    s.cap = s.len = s.count = s.expiring = 0;
    s.bytes = 0;
    s.expiry_sum = 0;
  }
}

void KeyIndex::ShrinkToFit() {
  for (size_t sh = 0; sh < kShards; ++sh) {
    Shard& s = shards_[sh];
    std::lock_guard lock(s.mu);
    size_t want = s.count == 0 ? 0 : s.count * 100 / 85 + 1;
    if (want == 0) {
      s.slots.reset();
      s.cap = s.len = 0;
    } else if (want < s.cap) {
      while (!s.Rebuild(want)) want += want / 4 + 1;
    }
  }
}

template <typename Fn>
auto KeyIndex::SumOverShards(Fn of_shard) const {
  decltype(of_shard(shards_[0])) sum{};
  for (size_t sh = 0; sh < kShards; ++sh) {
    std::lock_guard lock(shards_[sh].mu);
    sum += of_shard(shards_[sh]);
  }
  return sum;
}

size_t KeyIndex::size() const {
  return SumOverShards([](const Shard& s) { return s.count; });
}

uint64_t KeyIndex::ValueBytes() const {
  return SumOverShards([](const Shard& s) { return s.bytes; });
}

KeyIndex::ExpiryTotals KeyIndex::Expiries() const {
  return SumOverShards([](const Shard& s) { return ExpiryTotals{s.expiring, s.expiry_sum}; });
}

uint64_t KeyIndex::MemoryBytes() const {
  return sizeof(Shard) * kShards +
         SumOverShards([](const Shard& s) { return uint64_t{s.len * sizeof(Slot)}; });
}

void MissingPositions::Note(uint64_t hash, size_t index) {
  const uint64_t place = std::min<size_t>(index, Entry::kNoPosition - 1);
  slots_[hash & (kSlots - 1)].store((hash & ~uint64_t{255}) | (place + 1),
                                    std::memory_order_relaxed);
}

uint8_t MissingPositions::Take(uint64_t hash) {
  std::atomic<uint64_t>& slot = slots_[hash & (kSlots - 1)];
  uint64_t v = slot.load(std::memory_order_relaxed);
  if (v == 0 || (v & ~uint64_t{255}) != (hash & ~uint64_t{255})) return Entry::kNoPosition;
  slot.compare_exchange_strong(v, 0, std::memory_order_relaxed);
  return static_cast<uint8_t>((v & 255) - 1);
}

}  // namespace larder
