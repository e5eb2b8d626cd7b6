// StoreImpl: the engine behind larder::Store. See docs/architecture.md for the layout and the
// SET/GET paths; format.h for the bytes on disk.
//
// Locking, outermost first: evict_mu_ (one eviction at a time) -> key stripe (one writer per
// key at a time) -> Generations::write_lock (shared while writing into the head) -> index
// shard. Reads take only the index shard, briefly.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/write_buffer_manager.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "generations.h"
#include "index.h"
#include "larder/store.h"

namespace larder {

// The monotonic statistics (stats_fields.h), counted as they happen.
struct Counters {
#define LARDER_COUNTER_MEMBER(name, doc) std::atomic<uint64_t> name{0};
  LARDER_STAT_COUNTERS(LARDER_COUNTER_MEMBER)
#undef LARDER_COUNTER_MEMBER
};

// ReadVerified's messages that callers act on: the metadata's value is absent (Verify counts it
// as missing, not corrupt), and the version was replaced while being read (Get reads again).
inline constexpr char kValueMissing[] = "value missing";
inline constexpr char kChangedDuringRead[] = "changed during read";

struct Value::Pin {
  rocksdb::PinnableSlice slice;
};

class StoreImpl final : public Store {
 public:
  StoreImpl(const Options& options, std::string dir);
  ~StoreImpl() override;

  Status OpenDb();

  using Store::Put;
  Status Put(std::string_view key, std::string_view value, const PutOptions& opts) override;
  Result<Value> Get(std::string_view key) override;
  std::vector<Result<Value>> MultiGet(const std::vector<std::string_view>& keys) override;
  uint64_t Exists(const std::vector<std::string_view>& keys) override;
  uint64_t PrefixCount(const std::vector<std::string_view>& keys) override;
  Status Delete(std::string_view key) override;
  Status SetExpiry(std::string_view key, int64_t expire_at_ms) override;
  int64_t Ttl(std::string_view key) override;
  Result<KeyInfo> Info(std::string_view key) override;
  uint64_t Touch(const std::vector<std::string_view>& keys) override;
  ScanPage Scan(uint64_t cursor, std::string_view pattern, size_t count) override;
  Status Clear() override;
  void Maintain() override;
  Status EvictTo(uint64_t target_bytes) override;
  Stats GetStats() override;
  void ResetCounters() override;
  Status Flush() override;
  Status Compact() override;
  Status Close() override;

  // Reads and checks every entry without repairing anything (larder::Verify).
  VerifyReport VerifyAll(void (*progress)(uint64_t, uint64_t, void*), void* arg);
  // Checks every block of every live SST file; adds the bad files to `r`.
  void VerifySstFiles(VerifyReport* r);

 private:
  static constexpr size_t kStripes = 256;

  int64_t Now() const { return options_.clock->NowMs(); }
  Status CheckKey(std::string_view key) const;
  Status CheckOpen() const;
  std::mutex& Stripe(uint64_t hash) { return stripes_[hash % kStripes]; }
  // The live (present, unexpired) entry of a key; expired entries are removed on the way.
  // `stripe_held`: the caller already holds the key's stripe.
  std::optional<Entry> LiveEntry(uint64_t hash, std::string_view key, bool stripe_held = false);
  // Removes one version of a key (index, meta record, value); caller holds its stripe.
  void RemoveLocked(uint64_t hash, std::string_view key, const Entry& e);
  // Reads and verifies the value of `e`. NotFound on any failure (corruption counted).
  // `rocksdb_checksums`: RocksDB checks its own SST block and blob-record CRCs too (slow; Verify).
  Result<Value> ReadVerified(uint64_t hash, std::string_view key, const Entry& e,
                             bool count_corruption_and_remove, bool rocksdb_checksums = false);
  // At open: checks every SST file of every generation against its block checksums and drops
  // each generation holding a damaged one (its entries become misses, counted as corruptions).
  // Reads then parse only checked blocks without RocksDB's costly per-read CRC, and Debian's
  // librocksdb, built with assertions, cannot abort on a malformed block written before open.
  Status DropDamagedGenerations();
  rocksdb::WriteOptions WriteOpts() const;
  // Writes `value` (checksum already computed) as `e` into the head generation in one batch
  // with its metadata and a tombstone for `old`'s copy in another generation. Sets
  // e->generation; caller holds the key's stripe and updates the index after.
  Status WriteToHead(std::string_view key, std::string_view value, Entry* e,
                     const std::optional<Entry>& old);
  Status WriteMeta(std::string_view key, const Entry& e);

  // Disk bytes that count against the budget (SST + blob, WAL, unflushed memtables).
  uint64_t BudgetUsage() const;
  // Evicts until `incoming` more bytes fit in the budget (or NoSpace with kNone).
  Status MakeRoom(uint64_t incoming);
  // Evicts the oldest generation by `policy`. Returns the bytes it freed net of reinsertion
  // (0 if nothing is left to evict), so callers need not wait for RocksDB's file and memtable
  // accounting to catch up before deciding whether to evict again.
  uint64_t EvictOldest(EvictionPolicy policy);
  // Evicts until usage + incoming <= target (or nothing is left). Caller holds evict_mu_.
  void EvictUntil(uint64_t target, uint64_t incoming, EvictionPolicy policy);
  // Removes the Options::evict_together companions of evicted keys that live elsewhere.
  void EvictCompanions(const std::vector<std::pair<std::string, Entry>>& evicted,
                       uint64_t victim_id);
  // Re-writes a kept entry of a generation being evicted into the head.
  bool Reinsert(const std::string& key, const Entry& e);
  void MaybeRotate();
  // Writes the reuse fields of entries marked dirty to their metadata records.
  void PersistDirty();
  void PersistEntries(const std::vector<std::pair<std::string, Entry>>& dirty);
  void MaintenanceLoop();

  Options options_;
  const std::string dir_;
  uint64_t budget_ = 0;
  uint64_t generation_bytes_ = 0;
  std::atomic<bool> closed_{false};

  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  std::shared_ptr<rocksdb::SstFileManager> sfm_;
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;
  std::shared_ptr<rocksdb::Cache> blob_cache_;
  std::unique_ptr<Generations> gens_;
  Index index_;
  std::mutex stripes_[kStripes];
  std::mutex evict_mu_;
  std::mutex rotate_mu_;
  Counters counters_;
  uint64_t open_orphans_ = 0;  // meta records without a generation, found at open
  uint64_t open_corrupt_ = 0;  // undecodable meta records, found at open
  uint64_t open_damaged_ = 0;  // entries of generations dropped at open for a damaged SST
  std::set<uint64_t> damaged_generations_;  // dropped at open; see DropDamagedGenerations
  std::vector<std::string> damaged_sst_files_;
  std::vector<std::string> damaged_keys_;  // the first kMaxReportedDamagedKeys, for Verify
  static constexpr uint64_t kMaxReportedDamagedKeys = 1000;

  std::thread maintenance_;
  std::mutex maint_mu_;
  std::condition_variable maint_cv_;
  bool stop_maintenance_ = false;
};

}  // namespace larder
