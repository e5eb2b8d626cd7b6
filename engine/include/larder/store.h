// Store: the Larder engine. A disk-budgeted, TTL-aware store of large immutable values kept in
// blob files Larder writes itself (RocksDB keeps the index), evicting the entries least
// recently reused when the budget is reached. See docs/architecture.md.
//
// Thread-safety: every method may be called from any number of threads at once, except Close
// (and the destructor): it must not run while another call is in flight, and every
// ValueReader must be destroyed before it.
// Keys are binary strings of 1..Options::max_key_bytes bytes; values are binary strings of
// 0..Options::max_value_bytes bytes. Times are Unix milliseconds from Options::clock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "larder/options.h"
#include "larder/stats.h"
#include "larder/status.h"

namespace larder {

// A value read from the store, verified against its checksum: one buffer, filled by one read.
class Value {
 public:
  Value();
  ~Value();
  Value(Value&&) noexcept;
  Value& operator=(Value&&) noexcept;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  friend class StoreImpl;
  std::unique_ptr<char[]> buf_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// A verified sequential read of one value, for callers that move it on in pieces while they
// read the next (the server's GET of a large cold value). Read() the value's bytes in order,
// then Finish(): only then are the bytes known good. A value that fails verification is counted
// in Stats::corruptions and removed, and Finish returns Corruption: the caller must not deliver
// what it read (a sender withholds the last piece until Finish succeeds, so no reader receives
// a complete wrong value). After a failed Read, Finish may be called at once (it fails too).
// While the reader lives, an eviction that frees the value's range in place waits for it.
class ValueReader {
 public:
  virtual ~ValueReader() = default;
  // The value's size in bytes.
  virtual uint64_t size() const = 0;
  // Bytes not read yet.
  virtual uint64_t remaining() const = 0;
  // Reads the next n <= remaining() bytes into buf.
  virtual Status Read(char* buf, size_t n) = 0;
  // After the last byte: checks the whole value (see above). Counts the hit or the miss.
  virtual Status Finish() = 0;
};

// TTL sentinels returned by Store::Ttl (Redis's TTL/PTTL conventions).
inline constexpr int64_t kTtlNoKey = -2;     // the key does not exist
inline constexpr int64_t kTtlNoExpiry = -1;  // the key exists and has no expiry

// Put modes (Redis SET NX / XX).
enum class PutMode { kAlways, kIfAbsent, kIfPresent };

struct PutOptions {
  // Absolute expiry (Unix ms); 0 = none.
  int64_t expire_at_ms = 0;
  PutMode mode = PutMode::kAlways;
  // Keep the existing entry's expiry (Redis KEEPTTL); expire_at_ms is then ignored.
  bool keep_ttl = false;
  // With the WAL off, the call never waits for the background writers' room: a value they
  // write (PutOwned's, or any with direct_writes) is queued even past their room
  // (Options::write_buffer_bytes), so a PutOwned buffer the caller already holds stays
  // allocated until written rather than until the call returns, and the writers start at once.
  // For a caller holding a lock that others wait on (the server's MSET and transactions); the
  // next writers without it wait for the longer backlog instead. Default: false (wait).
  bool never_wait_for_writers = false;
};

// One page of a Scan.
struct ScanPage {
  uint64_t next_cursor = 0;  // 0 when the scan is complete
  std::vector<std::string> keys;
};

// What the store knows of a key without reading its value.
struct KeyInfo {
  uint64_t value_size = 0;
  int64_t expire_at_ms = 0;    // 0 = none
  int64_t last_access_ms = 0;  // last write, hit or touch (second precision)
  uint32_t reuse_count = 0;    // hits + touches since the write or since eviction kept it,
                               // saturating at 255
  uint64_t generation = 0;
};

// Puts whose values are written ahead of their keys (Store::StagePuts): Stage does what costs
// (the checks, the checksum, eviction to make room, the value's bytes into the store's files,
// the rotation of a full generation) and leaves the value where no read finds it; Commit then
// makes every staged value its key's, in the order staged, writing only their index records.
// For a caller that must make several keys change together under a lock others wait for (the
// server's MSET): it stages before it takes the lock and commits holding it.
//
// Not thread-safe (one caller's batch); calls into the store run concurrently with any other.
// Must be destroyed before the Store is closed (Close, or its destructor), as a ValueReader;
// destroying it frees the values staged and not committed.
class StagedPuts {
 public:
  virtual ~StagedPuts() = default;
  // Checks `key` and the value as Put does and writes the value's bytes; an error stages
  // nothing (the values staged before stay staged). `value` is read again by Commit if the
  // generation it went to was dropped meanwhile (eviction, Clear): it must stay valid and
  // unchanged until Commit returns or this object is destroyed. opts.mode must be kAlways and
  // keep_ttl false (InvalidArgument); an expiry already past when it is staged makes Commit
  // remove the key.
  virtual Status Stage(std::string_view key, std::string_view value, const PutOptions& opts) = 0;
  // Stage that takes `value`'s buffer instead of reading the caller's memory again, as PutOwned
  // does: with the WAL off (and direct_writes off) the value is written in the background from
  // it, and the batch keeps it until the commit. Afterwards `value` is valid but its contents
  // are unspecified.
  virtual Status StageOwned(std::string_view key, std::string&& value, const PutOptions& opts) = 0;
  // Makes every staged value its key's, replacing any value the key had, in one index write:
  // all of them or none, for readers and across a crash (with the WAL on, its one sync where
  // sync_writes; with it off, the flush that persists the index takes the write whole). A key
  // staged twice gets its last value, as by Puts in order. A value whose generation was dropped
  // since it was staged (eviction of the oldest, Clear) is written again first, as its Stage
  // wrote it. On an error (the index write failing, such a rewrite failing) no key changed and
  // every staged value is freed. Afterwards the object holds nothing and may stage again.
  virtual Status Commit() = 0;
  // Values staged and not yet committed.
  virtual size_t size() const = 0;
};

class Store {
 public:
  // Opens (or creates) the store in `dir`. Fails with Busy if another process holds it.
  static Result<std::unique_ptr<Store>> Open(const Options& options, const std::string& dir);

  virtual ~Store() = default;

  // Stores `value` under `key`, replacing any previous value. Evicts as needed to stay within
  // the disk budget; with EvictionPolicy::kNone a write that does not fit fails with NoSpace.
  // Returns ConditionNotMet (nothing written) when `opts.mode` is kIfAbsent/kIfPresent and the
  // condition does not hold.
  virtual Status Put(std::string_view key, std::string_view value, const PutOptions& opts) = 0;
  // Put that may take `value`'s buffer instead of copying it: with the WAL off (and
  // direct_writes off) the background write goes out from it, so a server can hand over the
  // buffer a request arrived in. Afterwards `value` is valid but its contents are unspecified.
  virtual Status PutOwned(std::string_view key, std::string&& value, const PutOptions& opts) = 0;
  // Put with a relative expiry: ttl_ms > 0 expires the key that many ms from NowMs(), 0 = no
  // expiry. InvalidArgument (nothing written) for a negative ttl_ms, or one that takes the
  // expiry past the clock's range.
  Status Put(std::string_view key, std::string_view value, int64_t ttl_ms = 0);
  // The checks Put makes of its arguments before it writes anything: InvalidArgument for an
  // empty key, a key over Options::max_key_bytes or a value over max_value_bytes, NoSpace for a
  // value larger than the whole disk budget (IOError once closed). OK says only that the
  // arguments are acceptable; the Put may still fail (NoSpace with EvictionPolicy::kNone, an
  // I/O error). Lets a caller writing several values refuse the lot before the first.
  virtual Status CheckPut(std::string_view key, uint64_t value_bytes) const = 0;
  // An empty batch of staged puts (StagedPuts): values written now, indexed together later.
  virtual std::unique_ptr<StagedPuts> StagePuts() = 0;

  // The value of `key`, verified, or NotFound (absent, expired, or failed verification — the
  // last is counted in Stats::corruptions and the key removed). Counts a reuse. Here and in
  // every read, removal and expiry change, a key no Put could store (empty, or over
  // Options::max_key_bytes) is NotFound, as any other absent key.
  virtual Result<Value> Get(std::string_view key) = 0;

  // Get for many keys; one Result per key, in order.
  virtual std::vector<Result<Value>> MultiGet(const std::vector<std::string_view>& keys) = 0;

  // Reads the verified value of `key` into buf[0..cap) and returns its size: a value the page
  // cache holds is copied from the file's mapping (see UnmapFiles) and hashed (XXH3) a piece at a
  // time as it is copied; another is read into the caller's memory (O_DIRECT with
  // Options::direct_reads when buf is 4 KiB-aligned), then hashed. NotFound as Get;
  // InvalidArgument (buffer untouched) if cap is smaller than the value. On any error the
  // buffer's contents are unspecified. Counts a reuse.
  virtual Result<uint64_t> GetInto(std::string_view key, char* buf, size_t cap) = 0;

  // GetInto for many keys at once: the reads run on the engine's read threads, up to
  // Options::read_queue_depth at a time, so a batch of cold values keeps the disk's queue full.
  // One Result per key, in order.
  struct Buffer {
    char* data;
    size_t cap;
  };
  virtual std::vector<Result<uint64_t>> MultiGetInto(const std::vector<std::string_view>& keys,
                                                     const std::vector<Buffer>& bufs) = 0;

  // A sequential verified read of `key` (see ValueReader); NotFound as Get. The reader reads
  // the version the call found, whole, even if the key is replaced, deleted or evicted while it
  // reads (a value whose write is still pending is copied at open for that). A value the page
  // cache does not hold has the reads of the rest queued at the first Read() (unless that one
  // reads it whole; the kernel queues at most its read-ahead limit at once, and its read-ahead
  // follows the later Reads), so the disk works ahead of the ones that follow.
  virtual Result<std::unique_ptr<ValueReader>> OpenValue(std::string_view key) = 0;

  // Where the verified value of `key` lies in its blob file, for callers that send it with
  // sendfile(2) rather than copying it (the server's GET). The bytes were read and checked
  // (XXH3) by this call, so they sit in the page cache; `keepalive` keeps the file open, and
  // the range as it was verified, while the caller holds it (an eviction that frees the range
  // in place waits for it to go).
  // NotFound as Get; NotSupported for a value that is not in a file (a small value stored in
  // the index, or one not written to disk yet): read it with Get or GetInto. Counts a reuse.
  struct FileRange {
    int fd = -1;
    uint64_t offset = 0;
    uint64_t size = 0;
    std::shared_ptr<const void> keepalive;
  };
  virtual Result<FileRange> GetFileRange(std::string_view key) = 0;

  // Starts reading the values of `keys` into the page cache and returns without waiting, so
  // that the reads that follow (GetFileRange, Get, GetInto) find them there and the disk works
  // on all of them at once (the server calls it for a pipeline of GETs, and for MGET). A hint:
  // absent keys, values held in memory and errors are ignored; counts no reuse (an expired
  // entry it meets is removed and counted, as any lookup does).
  virtual void Prefetch(const std::vector<std::string_view>& keys) = 0;

  // Whether a read of `key` (Get, GetInto, GetFileRange) would find everything it needs in
  // memory now, so it would not wait for the disk: the key is present and unexpired, no other
  // key shares its hash, its value is at most `max_bytes`, and the value's bytes are in the
  // page cache (every page), in a write not yet written out, or, for a small value stored in
  // the index, in RocksDB's memtables or block cache. No disk I/O; reads, changes and counts
  // nothing. An answer for choosing where to run the read (a server runs such reads on its
  // event loop, the others on threads that may block), not a promise: a page the kernel
  // reclaims before the read is read back from the disk.
  virtual bool InMemory(std::string_view key, uint64_t max_bytes) = 0;

  // Whether a Put or PutOwned of a value of `value_bytes` under `key`, with no condition
  // (PutMode::kAlways), would complete in memory now, without waiting for the disk: the WAL is
  // off and no background write has failed, so the value goes to the write-behind (or, below
  // format's blob threshold, into the index's memtable), which has room for it; the write fits
  // under the budget (no eviction) and in the head generation (no new generation); and the
  // key's current record, if any, is one the write reads from memory (memtables or block
  // cache; a second key under the same hash is told apart by reading records). No disk I/O;
  // reads, changes and counts nothing. Like InMemory, an answer for choosing where to run the
  // write (a server runs such writes on its event loop), not a promise.
  virtual bool PutInMemory(std::string_view key, uint64_t value_bytes) = 0;

  // How many of `keys` exist (a key listed twice counts twice), from the in-memory index: no
  // value is read (an expired entry it meets is removed, which writes to the index). The index
  // identifies keys by a 64-bit hash, so for a key that is absent this answers 1 with
  // probability (keys stored) / 2^64 (5e-13 at 10 M keys); reads never return another key's
  // value (see docs/architecture.md).
  virtual uint64_t Exists(const std::vector<std::string_view>& keys) = 0;
  bool Contains(std::string_view key) { return Exists({key}) == 1; }

  // How many leading keys of the ordered list exist: the length of the cached prefix. Keys
  // found past the first missing one are marked used (recency only, not a reuse): the caller
  // stores the missing ones (LMCache does, in this order), and then they serve the prefix's
  // next read; the leading keys are marked by the read that follows.
  //
  // Key lists are read as prefixes: PrefixCount, MultiGet, MultiGetInto, Touch and Prefetch
  // note each found key's place in a list of two keys or more (the largest seen: its depth in
  // the prefix), and eviction keeps the earlier places first among entries last used in the
  // same second (docs/architecture.md, "Eviction").
  virtual uint64_t PrefixCount(const std::vector<std::string_view>& keys) = 0;

  // Removes `key`. NotFound if it did not exist.
  virtual Status Delete(std::string_view key) = 0;

  // Sets an absolute expiry (Unix ms) on an existing key; 0 removes it (Persist). A time in the
  // past deletes the key. NotFound if the key does not exist.
  virtual Status SetExpiry(std::string_view key, int64_t expire_at_ms) = 0;
  // SetExpiry ttl_ms from NowMs(); ttl_ms <= 0 deletes the key, as Redis's EXPIRE does.
  // InvalidArgument (nothing changed) when the expiry would pass the clock's range.
  Status Expire(std::string_view key, int64_t ttl_ms);
  Status Persist(std::string_view key) { return SetExpiry(key, 0); }

  // The time expiries are measured against: Options::clock, Unix ms.
  virtual int64_t NowMs() const = 0;

  // Remaining time to live in ms, or kTtlNoKey / kTtlNoExpiry.
  virtual int64_t Ttl(std::string_view key) = 0;

  // Metadata of a live key, without reading its value. NotFound if absent or expired.
  virtual Result<KeyInfo> Info(std::string_view key) = 0;

  // Counts a reuse of `key` without reading it (what a hit would do for eviction). Returns how
  // many of the keys existed.
  virtual uint64_t Touch(const std::vector<std::string_view>& keys) = 0;

  // Iterates live keys in a stable order (by key hash). Start with cursor 0; continue with
  // next_cursor until it is 0. Every key present for the whole scan is returned at least once.
  // `pattern` is a Redis glob ("" or "*" = all); `count` bounds the keys examined per call.
  virtual ScanPage Scan(uint64_t cursor, std::string_view pattern, size_t count) = 0;

  // Removes every key and drops every generation.
  virtual Status Clear() = 0;

  // Drops expired entries and fully expired generations now, and lets the index take writes
  // again if it stopped on a full disk that has room again (also runs in the background; a
  // Flush does the latter too).
  virtual void Maintain() = 0;

  // Evicts whole generations, by the configured policy, until disk usage is at most
  // `target_bytes` (or only the newest generation is left). EvictionPolicy::kNone evicts
  // in FIFO order here, since the caller asked explicitly.
  virtual Status EvictTo(uint64_t target_bytes) = 0;

  // A snapshot of the counters.
  virtual Stats GetStats() = 0;
  virtual void ResetCounters() = 0;

  // Makes every acknowledged write durable: syncs the blob files, then writes the index's
  // memtables to disk, so that a crash or a power cut loses nothing written before.
  virtual Status Flush() = 0;

  // Compacts the index (small: keys and locations). Never rewrites values: space comes back by
  // dropping generations.
  virtual Status Compact() = 0;

  // Reads of cached values go through one read-only mapping of each value file, kept for the
  // next reads (docs/architecture.md, "Read paths"). The kernel reclaims mapped pages under
  // memory pressure as any page cache, but posix_fadvise(POSIX_FADV_DONTNEED) and drop_caches
  // skip them: this lets go of every mapping (reads map the files again as needed), so that the
  // store's values can be dropped from the page cache, as a benchmark of cold reads does.
  virtual void UnmapFiles() = 0;

  // Flushes (when the WAL is off) and closes. Further calls that can fail return IOError; the
  // others answer as for an empty store (Exists 0, Ttl kTtlNoKey, Scan done, zero Stats). A
  // second Close returns OK. Also called by the destructor. See "Thread-safety" above.
  virtual Status Close() = 0;
};

// Checks a data directory's values and index without serving it or changing it (the directory
// must not be open elsewhere). It opens the directory read-only (Options::read_only), naming in
// the report the records and files that open finds damaged (a read-write open drops them; until
// one does, every Verify reports them again); then it checks every value against its XXH3, and
// every block of every SST file (the index, inline values) against RocksDB's block checksums,
// and the structure of the MANIFEST's records (a damaged tail RocksDB would take for a torn
// write and drop). `progress` is called with (entries done, entries total) now and then. A
// directory too damaged to open is an error status naming the file.
struct VerifyReport {
  uint64_t entries = 0;
  uint64_t ok = 0;
  uint64_t corrupt = 0;               // a value or an index record failed verification
  uint64_t missing = 0;               // an index record whose value bytes are absent
  uint64_t sst_files = 0;             // SST files checked
  uint64_t corrupt_sst_files = 0;     // SST files with a block failing its checksum
  uint64_t damaged_manifests = 0;     // a MANIFEST whose last record is cut short: its edit lost
  std::vector<std::string> problems;  // one line per bad entry or file (first 1000)
  bool clean() const {
    return corrupt == 0 && missing == 0 && corrupt_sst_files == 0 && damaged_manifests == 0;
  }
};
Result<VerifyReport> Verify(const std::string& dir,
                            void (*progress)(uint64_t done, uint64_t total, void* arg) = nullptr,
                            void* arg = nullptr);

}  // namespace larder
