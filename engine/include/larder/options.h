// Options for opening a Store. Every field documents its default.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "larder/clock.h"
#include "larder/events.h"

namespace larder {

// Which entries leave first when the disk budget is reached. Eviction works on generations
// (see docs/architecture.md): the oldest generation is dropped, and the policy decides which of
// its live entries are kept (moved to a newer generation) first.
enum class EvictionPolicy {
  kLruReuse,  // in place: every entry used since the generation closed (see keep_in_place);
              // the others go a part at a time, deepest in a prefix first, and values
              // never read since written may go earlier, by a depth learned online
              // (docs/architecture.md, "Learned demotion of first writes");
              // copying: entries reused (GET hit or TOUCH) since they were written or last
              // kept, if last used while one of the newer half of the generations was the head
  kLru,       // in place: as kLruReuse without the learned demotion; copying: entries
              // accessed after the next-older generation began (recency only)
  kFifo,      // keep nothing: the oldest writes go first
  kNone,      // never evict: a write over budget fails with Status::NoSpace
};

// "lru-reuse", "lru", "fifo", "none" (the names used by the config file).
const char* EvictionPolicyName(EvictionPolicy p);
bool ParseEvictionPolicy(const std::string& name, EvictionPolicy* out);

// The most reads Options::read_queue_depth may keep in flight.
inline constexpr int kMaxReadQueueDepth = 256;
// The smallest Options::memtable_bytes and generation_bytes a store takes (0 = derived).
inline constexpr uint64_t kMinMemtableBytes = uint64_t{4} << 20;
inline constexpr uint64_t kMinGenerationBytes = uint64_t{1} << 20;

struct Options {
  // Create the data directory and database if missing. Default: true.
  bool create_if_missing = true;

  // Open without changing anything in the directory: the index opened read-only (RocksDB's
  // OpenForReadOnly), blob files opened for reading, no LOG written, and nothing the open finds
  // expired, damaged or unreferenced removed (it is left out of the index, as a read-write open
  // would drop it). Writes (Put, PutOwned, CheckPut, Delete, SetExpiry, Clear, EvictTo, Flush,
  // Compact) answer NotSupported; a value that fails verification reads as a miss and stays
  // on disk. The directory is still locked against a read-write open (a running larder), unless
  // its LOCK file cannot be opened for writing (a read-only mount, another user's directory):
  // then the open only checks that no process holds the lock. A data directory of an older
  // format is refused (it must be opened read-write once to be converted); create_if_missing is
  // ignored. For inspecting a directory without altering it (larder-admin stats, keys, get and
  // verify). Default: false.
  bool read_only = false;

  // Disk budget in bytes for everything in the data directory (blob files, the index's SST
  // and WAL files, with unflushed index memtable bytes counted as already written). Writes keep
  // succeeding by evicting; usage never exceeds the budget by more than one generation, plus
  // the values freed while a read still holds them (OpenValue, GetFileRange: a reply being
  // sent), which are counted free at once and given back to the filesystem when their reads
  // end (at most the bytes of the reads in flight). 0 =
  // 80% of the filesystem's capacity available to the store when it opens (free space + what
  // the store already uses). Default: 0.
  uint64_t max_disk_bytes = 0;

  // Target bytes per generation (one window of accesses: a column family of index records and
  // its blob files). The head closes after this many bytes of writes, and of writes and hits
  // where eviction keeps entries in place by recency (kLruReuse, kLru with keep_in_place).
  // 0 = max_disk_bytes / 32 clamped to [1 MiB, 64 GiB], so that dropping one returns at most
  // ~3% of the budget and a small budget still holds data; a size set is at least 1 MiB.
  // Smaller generations evict with finer granularity; larger ones need fewer column families.
  // Default: 0.
  uint64_t generation_bytes = 0;

  // Default: kLruReuse.
  EvictionPolicy eviction_policy = EvictionPolicy::kLruReuse;

  // Eviction keeps entries in place: a kept entry's index record moves to the generation it was
  // last used in and its bytes stay in their blob file, whose dropped values are freed in place
  // (fallocate's FALLOC_FL_PUNCH_HOLE); keeping then writes no value bytes. The recency
  // policies (kLruReuse, kLru, the same in place) then keep every entry used since the evicted
  // generation closed, so eviction drops the least recently used entries first. Where the
  // filesystem cannot free a range, and with false, kept entries are copied into the newest
  // generation instead (bounded by max_reinsert_fraction). Default: true.
  bool keep_in_place = true;

  // When kept entries are copied (see keep_in_place): at most this fraction of a generation's
  // bytes is re-inserted when it is evicted; the most recently reused entries win. Bounds write
  // amplification to 1 + this. Default: 0.5.
  double max_reinsert_fraction = 0.5;

  // Key suffix pairs evicted together: when a key ending in `first` is evicted, the key with
  // the same stem ending in `second` is removed too, wherever it lives (e.g. a payload and the
  // small key that describes it; larder-server's `evict-together` option sets LMCache's pair).
  // Default: none.
  std::vector<std::pair<std::string, std::string>> evict_together;

  // Write-ahead log of the index (values go to blob files either way, written once). Off: a
  // crash loses the writes whose index records were not flushed yet (they read as misses,
  // never as wrong bytes); a clean Close() loses nothing. On: acknowledged writes survive a
  // process crash. docs/reliability.md states what each mode survives. Default: false.
  bool wal = false;

  // With wal: make every acknowledged write durable before acknowledging it (fdatasync of the
  // value's blob file, then of the WAL; concurrent writers share the syncs), so it survives a
  // power cut. Default: false.
  bool sync_writes = false;

  // Memory of the index's memtables (records of ~100 bytes + key; values never pass through
  // them). 0 = max_disk_bytes / 256 clamped to [16 MiB, 256 MiB]; else at least 4 MiB (one
  // memtable). Writers stall when full.
  // Default: 0.
  uint64_t memtable_bytes = 0;

  // With the WAL off, a value of 16 KiB or more given with PutOwned (or any value, with
  // direct_writes: an aligned copy) is acknowledged once it is in a buffer, and background
  // writers move it to its blob file about 20 ms later; reads are served from the buffer
  // meanwhile, and a value replaced or deleted before then is never written. A value given with
  // Put goes to its file as the call runs (one copy into the page cache, from the caller's
  // memory, where a buffer would cost the same copy again). This bounds the bytes waiting there;
  // writers wait beyond it (but for PutOptions::never_wait_for_writers, queued past it), and
  // writes start at once past half of it. A crash loses them, as it
  // loses every write of the WAL-off mode not flushed yet; a flush waits for them. (A value
  // whose write failed leaves this count and stays in memory until its key is removed.)
  // 0 = max_disk_bytes / 64 clamped to [64 MiB, 1 GiB]. Default: 0.
  uint64_t write_buffer_bytes = 0;

  // WAL off: the background writers write values with O_DIRECT from their aligned buffers,
  // bypassing the page cache. Off, they write through it (a copy on the writer thread), so a
  // value just written is read back at memory speed, as most KV-cache chunks are (measured
  // with larder-peers: buffered writes were faster for Put, warm and cold Get alike).
  // Default: false.
  bool direct_writes = false;

  // Read cold values with O_DIRECT when the caller's buffer is 4 KiB-aligned (GetInto,
  // MultiGetInto): the disk writes straight into the caller's memory and the page cache is
  // bypassed (and not filled). Warm values are faster through the page cache. Default: false.
  bool direct_reads = false;

  // Read values the page cache holds through one read-only mapping of each value file, kept
  // for later reads: the read copies the bytes out of the mapping and hashes each piece of the
  // copy while it is in the CPU's cache, one pass over memory where pread and a hash make two,
  // and a value read again finds its pages mapped (measured with larder-peers, warm Get). The
  // server's GET with sendfile hashes the value through the same mapping. Mapped pages count in
  // the process's resident set, as file pages, and are reclaimed under memory pressure as any
  // page cache, but fadvise(DONTNEED) and drop_caches skip them (Store::UnmapFiles). Off, every
  // read is a pread into the caller's memory, then a hash, and sendfile's hash maps the value
  // for that call only. Default: true.
  bool mapped_reads = true;

  // Reads MultiGetInto keeps in flight at once (the engine's read threads), 1 to
  // kMaxReadQueueDepth. Default: 8.
  int read_queue_depth = 8;

  // Largest key accepted, in bytes. Default: 64 KiB.
  uint32_t max_key_bytes = 64 * 1024;

  // Largest value accepted, in bytes; at most 4 GiB - 1. Default: 512 MiB.
  uint64_t max_value_bytes = 512ull << 20;

  // With the WAL off, how often the background thread makes the writes acknowledged since the
  // last flush durable (Flush: the blob files synced, then the index's memtables written), so
  // that a crash loses at most about this much; 0 leaves it to the memtables filling up (index
  // records are small: that can be a long time). Needs maintenance_interval_ms > 0; runs at
  // that granularity. Default: 1000.
  uint32_t flush_interval_ms = 1000;

  // How often the background thread drops expired entries and fully expired generations, in
  // milliseconds. A pass looks at about 2^18 entries, or at 1/16 of the index where that is
  // more, and removes at most 2^14: every expired entry is found within one pass in an index
  // of up to 2^18 entries, and within 16 in any, unless more than 2^14 expire together (the
  // passes after go on from where one stopped). 0 disables these passes (Maintain() can still
  // be called). With the WAL off the thread runs either way: it removes the keys whose
  // background writes failed. Default: 1000.
  uint32_t maintenance_interval_ms = 1000;

  // Tune glibc malloc for multi-MiB buffers (mmap threshold, trim threshold, top pad) when the
  // first Store opens. Get allocates a buffer per value read; with glibc defaults each is an
  // mmap plus a page fault per 4 KiB, which caps reads near 1 GB/s. Process-wide.
  // Default: true.
  bool tune_allocator = true;

  // RocksDB background threads: one flushes the index, the others compact it; fewer than 2 is
  // taken as 2. Default: 2.
  int background_threads = 2;

  // Time source for expiry and reuse times. nullptr = the system clock. Tests inject one.
  std::shared_ptr<Clock> clock;

  // Told of entries that expire, are evicted or fail verification (larder/events.h). With a
  // listener, removing an expired entry the maintenance thread found costs one index read to
  // name its key.
  // nullptr = nobody is told. Default: nullptr.
  std::shared_ptr<EventListener> listener;
};

}  // namespace larder
