// Generations: the value column families, each holding one window of writes. Writes go to the
// newest ("head"); eviction drops the oldest whole, which deletes its blob files at once with
// no data rewritten (DropColumnFamily + DestroyColumnFamilyHandle).
#pragma once

#include <rocksdb/db.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "larder/status.h"

namespace larder {

struct Generation {
  Generation(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, uint64_t id, int64_t start_ms)
      : db(db), cf(cf), id(id), start_ms(start_ms) {}
  // Destroys the handle: once the CF is dropped and no reader holds it, its files go.
  ~Generation() { db->DestroyColumnFamilyHandle(cf); }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  rocksdb::DB* const db;
  rocksdb::ColumnFamilyHandle* const cf;
  const uint64_t id;
  // When it became the head (ms). Opened from disk: the oldest write it holds.
  std::atomic<int64_t> start_ms;
  std::atomic<uint64_t> bytes{0};  // bytes written into it (keys + headers + values)
  std::atomic<bool> dropped{false};
};

using GenerationPtr = std::shared_ptr<Generation>;

// The ordered set of generations. Writers hold `write_lock()` shared while they write into
// the head, so that the head is never dropped under them; rotation and drops take it
// exclusively.
class Generations {
 public:
  Generations(rocksdb::DB* db, rocksdb::ColumnFamilyOptions cf_options)
      : db_(db), cf_options_(std::move(cf_options)) {}

  // Adopts a generation opened with the DB.
  void Adopt(GenerationPtr g);

  std::shared_mutex& write_lock() { return mu_; }

  // Caller holds write_lock() (shared or exclusive).
  GenerationPtr HeadLocked() const { return gens_.empty() ? nullptr : gens_.rbegin()->second; }

  GenerationPtr Find(uint64_t id) const;
  GenerationPtr Head() const;
  GenerationPtr Oldest() const;
  // The generation after `id` in age order, or nullptr.
  GenerationPtr Next(uint64_t id) const;
  std::vector<GenerationPtr> All() const;
  size_t size() const;

  // Creates a new head generation (exclusive lock taken inside).
  Status Rotate(int64_t now_ms);
  // Drops generation `id` (must not be the head unless `allow_head`). Exclusive lock inside.
  Status Drop(uint64_t id, bool allow_head = false);
  // Releases every handle (before the DB closes).
  void ReleaseAll();

 private:
  Status CreateLocked(uint64_t id, int64_t now_ms);

  rocksdb::DB* db_;
  rocksdb::ColumnFamilyOptions cf_options_;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, GenerationPtr> gens_;
};

}  // namespace larder
