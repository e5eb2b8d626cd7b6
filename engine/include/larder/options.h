// Options for opening a Store. Every field documents its default.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "larder/clock.h"

namespace larder {

// Which entries leave first when the disk budget is reached. Eviction works on whole
// generations (see docs/architecture.md): the oldest generation is dropped, and the policy
// decides which of its live entries are re-inserted into the newest generation first.
enum class EvictionPolicy {
  kLruReuse,  // keep entries reused (GET hit or TOUCH) since they were written or last kept
  kLru,       // keep entries accessed after the next-older generation began (recency only)
  kFifo,      // keep nothing: the oldest writes go first
  kNone,      // never evict: a write over budget fails with Status::NoSpace
};

// "lru-reuse", "lru", "fifo", "none" (the names used by the config file).
const char* EvictionPolicyName(EvictionPolicy p);
bool ParseEvictionPolicy(const std::string& name, EvictionPolicy* out);

struct Options {
  // Create the data directory and database if missing. Default: true.
  bool create_if_missing = true;

  // Disk budget in bytes for everything in the data directory (SST + blob + WAL, with
  // unflushed memtable bytes counted as already written). Writes keep succeeding by evicting;
  // usage never exceeds the budget by more than one generation. 0 = 80% of the filesystem's
  // capacity available to the store when it opens (free space + what the store already uses).
  // Default: 0.
  uint64_t max_disk_bytes = 0;

  // Target bytes per generation (column family of one window of writes). 0 = max_disk_bytes/16
  // clamped to [64 MiB, 4 GiB]. Smaller generations evict with finer granularity; larger ones
  // need fewer column families. Default: 0.
  uint64_t generation_bytes = 0;

  // Default: kLruReuse.
  EvictionPolicy eviction_policy = EvictionPolicy::kLruReuse;

  // At most this fraction of a generation's bytes is re-inserted when it is evicted; the most
  // recently reused entries win. Bounds write amplification to 1 + this. Default: 0.5.
  double max_reinsert_fraction = 0.5;

  // Key suffix pairs evicted together: when a key ending in `first` is evicted, the key with
  // the same stem ending in `second` is removed too, wherever it lives. The default pairs
  // LMCache's redis:// layout (`<chunk>kv_bytes` + `<chunk>metadata`), so a chunk's metadata
  // never claims a payload that eviction already dropped (LMCache's EXISTS probes metadata).
  // Default: {{"kv_bytes", "metadata"}}.
  std::vector<std::pair<std::string, std::string>> evict_together = {{"kv_bytes", "metadata"}};

  // Write-ahead log. Off: a crash loses writes not yet flushed (they read as misses, never as
  // wrong bytes); a clean Close() loses nothing. On: acknowledged writes survive a crash, and
  // every value is written twice (WAL + blob file). Default: false.
  bool wal = false;

  // fsync the WAL on every write (only with wal = true). Default: false.
  bool sync_writes = false;

  // DRAM cache of hot values (RocksDB blob cache), in bytes; 0 disables it. Default: 0.
  uint64_t blob_cache_bytes = 0;

  // Total memtable memory (every value passes through a memtable before its flush writes it
  // to a blob file). Writers stall when it is full. Default: 1 GiB.
  uint64_t memtable_bytes = 1ull << 30;

  // Largest key accepted, in bytes. Default: 64 KiB.
  uint32_t max_key_bytes = 64 * 1024;

  // Largest value accepted, in bytes. Default: 512 MiB.
  uint64_t max_value_bytes = 512ull << 20;

  // How often the background thread drops expired entries and fully expired generations,
  // in milliseconds; 0 disables the thread (Maintain() can still be called). Default: 1000.
  uint32_t maintenance_interval_ms = 1000;

  // Tune glibc malloc for multi-MiB buffers (mmap threshold, trim threshold, top pad) when the
  // first Store opens. RocksDB's blob read path allocates two fresh buffers per read; with
  // glibc defaults each is an mmap plus a page fault per 4 KiB, which caps reads near 1 GB/s.
  // Process-wide. Default: true.
  bool tune_allocator = true;

  // RocksDB background threads (flush + compaction). Default: 2.
  int background_threads = 2;

  // Time source for expiry and reuse times. nullptr = the system clock. Tests inject one.
  std::shared_ptr<Clock> clock;
};

}  // namespace larder
