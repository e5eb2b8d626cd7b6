// The values StoreImpl's parts (store_*.cc, eviction.cc, maintenance.cc, staged_puts.cc) pass
// between them: statistics counters, located entries, records found by a walk, values handed
// over for a background write, and staged puts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "format.h"
#include "generations.h"
#include "key_index.h"
#include "larder/stats.h"
#include "larder/status.h"

namespace larder {

// The monotonic statistics (stats_fields.h), counted as they happen.
struct Counters {
#define LARDER_COUNTER_MEMBER(name, doc) std::atomic<uint64_t> name{0};
  LARDER_STAT_COUNTERS(LARDER_COUNTER_MEMBER)
#undef LARDER_COUNTER_MEMBER
};

// Where an entry's bytes are, resolved from its segment while the entry is in the index.
struct Located {
  Entry entry;
  Generations::Segment seg;
};

// Whether index record `r` of `key` describes the value `at` points at.
bool RecordIs(const format::IndexRecord& r, std::string_view key, const Located& at);

// The verdict on `key`'s value (entry `e`) read whole with status `read` and XXH3 `sum`: OK, the
// read's failure as a Corruption, or a Corruption "checksum mismatch".
Status CheckRead(const Status& read, uint64_t sum, std::string_view key, const Entry& e);

// An index record of a generation together with its entry in the index, as a walk found them:
// what eviction, persistence and verification walk. Whoever acts on one later reads the record
// and the entry again under the key's stripe (RecordMatches, KeyIndex::Update).
struct RecordMember {
  std::string key;
  uint64_t hash = 0;
  Located at;
};

// A value's buffer the store may keep for a background write (ValueWriter) instead of writing
// the value as the call runs: the caller's string, taken over (PutOwned), or a buffer shared
// with a StagedPut. Empty: the caller keeps its bytes.
struct HandedOver {
  std::string* string = nullptr;
  std::shared_ptr<const std::string> shared;

  explicit operator bool() const { return string != nullptr || shared != nullptr; }
  std::shared_ptr<const std::string> Take() const {
    return shared ? shared : std::make_shared<const std::string>(std::move(*string));
  }
};

// One value of a StagedPuts batch: written (Stage), not yet indexed (Commit).
struct StagedPut {
  std::string key;
  std::string_view value;  // the caller's (valid until the commit: StagedPuts::Stage) or in:
  std::shared_ptr<const std::string> bytes;  // StageOwned's
  uint64_t hash = 0;
  uint64_t value_hash = 0;
  int64_t expire_at_ms = 0;
  bool remove = false;  // expired already: the commit removes the key, nothing is written
  GenerationPtr gen;    // where the value went (null: not written, or removal)
  Entry e;
  format::IndexRecord rec;
};

}  // namespace larder
